"""The architecture the folders promise, checked on the source: no module cycles (within any
package, between its modules and subpackages either), no upward imports, no oversized classes,
and a loop process that never loads ZMQ or the I/O side."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("models", "stabilizer", "drivers", "controller")
MAX_CLASS_LINES = 400
GENERATED = ("models.generated",)  # written by models/codegen: a class's size is the model's

# What the loop process imports: it is spawned on controller.daemon.run.loop_main, which loads
# the loop, its clocks, the bus and (on the sim backend) the plants.
LOOP_PROCESS = (
    "controller.daemon.run",
    "controller.daemon.loop.loop",
    "controller.daemon.loop.timing",
    "drivers.hal",
    "drivers.sim.plant_leg",
    "drivers.sim.plant",
    "drivers.sim.plant_rig",
    "models.rig.stewart",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


SOURCES = _sources()
TREES = {name: ast.parse(path.read_text(), filename=str(path)) for name, path in SOURCES.items()}


def _known(name: str) -> str | None:
    """The deepest module of ours that `name` (a module or a module's attribute) names."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in SOURCES:
            return ".".join(parts)
        parts.pop()
    return None


def _imports(module: str) -> set[str]:
    """Our modules `module` imports, anywhere in its body (deferred imports included), with
    the packages Python runs on the way (importing a.b.c runs a/b/__init__.py)."""
    is_package = SOURCES[module].name == "__init__.py"
    named: set[str] = set()
    for node in ast.walk(TREES[module]):
        if isinstance(node, ast.Import):
            named.update(n for a in node.names if (n := _known(a.name)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                here = here[:len(here) - node.level + 1]
                base = ".".join(here + ([node.module] if node.module else []))
            if base.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                target = _known(f"{base}.{alias.name}")
                if target is None or target == module:
                    target = _known(base)
                if target:
                    named.add(target)
    own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 2)}
    out = set()
    for target in named:
        parts = target.split(".")
        out.update(p for i in range(1, len(parts) + 1) if (p := ".".join(parts[:i])) in SOURCES)
        if target in own and target != module:
            out.add(target)  # an explicit import of one's own package's __init__
        out -= own - {target}
    out.discard(module)
    return out


GRAPH = {m: _imports(m) for m in SOURCES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each as one cycle
    through its nodes so that the message shows a path to cut."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_path(graph, c) for c in components]  # one cycle per knot: cutting it may leave another


def _path(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A cycle inside `component` from its first node back to it (breadth first)."""
    start = min(component)
    previous = {start: start}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return path[::-1] + [start]
                if w not in previous:
                    previous[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")


def _unit_graphs() -> dict[str, dict[str, set[str]]]:
    """For every package, the graph of its children (modules and subpackages, each subpackage
    standing for everything under it): A -> B if anything under A imports anything under B."""
    graphs: dict[str, dict[str, set[str]]] = {}
    for package in (m for m, p in SOURCES.items() if p.name == "__init__.py"):
        depth = package.count(".") + 1
        prefix = package + "."

        def child(name: str) -> str | None:
            return ".".join(name.split(".")[:depth + 1]) if name.startswith(prefix) else None

        graph: dict[str, set[str]] = {}
        for module, targets in GRAPH.items():
            if (a := child(module)) is None:
                continue
            graph.setdefault(a, set())
            graph[a].update(b for t in targets if (b := child(t)) and b != a)
        graphs[package] = graph
    return graphs


def _format(cycles: list[list[str]]) -> str:
    """One cycle per knot, and the knot's other members when the cycle does not pass them all."""
    return "\n".join(" -> ".join(c) for c in cycles)


def test_no_module_cycles():
    cycles = _cycles(GRAPH)
    assert not cycles, f"module import cycles:\n{_format(cycles)}"


def test_no_cycles_between_a_packages_children():
    cycles = [c for graph in _unit_graphs().values() for c in _cycles(graph)]
    assert not cycles, f"import cycles between a package's modules and subpackages:\n{_format(cycles)}"


def _under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


# (importer, what it may import of ours, what it must never import) per layer.
LAYERS = (
    ("models", ("models",), ()),
    ("stabilizer", ("models", "stabilizer"), ()),
    ("drivers", ("models", "drivers"), ()),
    ("controller.daemon", PACKAGES, ("controller.tools", "controller.cli")),
)
# The managing node: it talks to the simulated side only over a link, never by import.
MANAGING = ("drivers.hal", "drivers.powerlink", "drivers.backends")
MANAGING_EXCEPT = ("drivers.backends.sim",)  # the backend that starts the simulated nodes in-process


def test_no_upward_imports():
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        for layer, allowed, banned in LAYERS:
            if _under(module, layer):
                wrong += [f"{module} imports {t}" for t in sorted(targets)
                          if not _under(t, *allowed) or _under(t, *banned)]
        if _under(module, *MANAGING) and not _under(module, *MANAGING_EXCEPT):
            wrong += [f"{module} (managing side) imports {t}" for t in sorted(targets) if _under(t, "drivers.sim")]
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_no_oversized_classes():
    big = []
    for module, tree in sorted(TREES.items()):
        if _under(module, *GENERATED):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    big.append(f"{module}.{node.name}: {lines} lines")
    assert not big, f"classes over {MAX_CLASS_LINES} lines:\n" + "\n".join(big)


def test_the_graph_sees_deferred_and_relative_imports():
    """The checks above are only as good as the graph: a deferred import inside a function
    counts, and so does the package a submodule's import runs."""
    assert "drivers.hal" in GRAPH["controller.daemon.run"]          # deferred, inside loop_main
    assert "controller.daemon.loop" in GRAPH["controller.daemon.run"]  # run by loop.loop's import
    assert "controller.daemon" not in GRAPH["controller.daemon.run"]   # its own package, already running


def test_loop_process_loads_neither_zmq_nor_the_io_side():
    code = (
        "import importlib, sys\n"
        f"for name in {LOOP_PROCESS!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'zmq' or m.startswith(('zmq.', 'controller.daemon.io'))"
        " or m.startswith('controller.tools'))\n"
        "print(' '.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"the loop process loads {out.stdout.strip()}"
