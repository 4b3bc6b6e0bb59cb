"""Where a run's Numba compile time goes, in every process (pytest, the daemons, the HIL servers): with
``BIPD_COMPLOG=DIR`` and this folder on ``PYTHONPATH``, each real compile (a cache miss: cache hits are not
compiles) appends a line to ``DIR/<pid>.tsv``: kernel, self CPU s (nested compiles subtracted), self wall s,
total wall s, nesting depth, the pytest test running (``PYTEST_CURRENT_TEST``), the process' argv, the
argument types. docs/conventions.md "Finding the compile time" shows how to read it."""
import os
import sys

_DIR = os.environ.get("BIPD_COMPLOG")

if _DIR:
    import importlib.abc
    import importlib.util
    import threading
    import time

    def _install() -> None:
        from numba.core import event

        local = threading.local()

        class CompileLog(event.Listener):
            def on_start(self, ev):
                if not hasattr(local, "stack"):
                    local.stack = []
                local.stack.append([time.perf_counter(), time.process_time(), 0.0, 0.0])

            def on_end(self, ev):
                w1, c1 = time.perf_counter(), time.process_time()
                w0, c0, child_w, child_c = local.stack.pop()
                if local.stack:                     # the parent's self time leaves this compile out
                    local.stack[-1][2] += w1 - w0
                    local.stack[-1][3] += c1 - c0
                f = ev.data["dispatcher"].py_func
                types = ",".join(str(a) for a in ev.data["args"])
                line = (f"{f.__module__}.{f.__qualname__}\t{c1 - c0 - child_c:.3f}\t{w1 - w0 - child_w:.3f}\t"
                        f"{w1 - w0:.3f}\t{len(local.stack)}\t{os.environ.get('PYTEST_CURRENT_TEST', '')}\t"
                        f"{' '.join(sys.argv[:3])}\t{types}\n")
                with open(os.path.join(_DIR, f"{os.getpid()}.tsv"), "a") as out:
                    out.write(line)

        event.register("numba:compile", CompileLog())

    class _AfterNumba(importlib.abc.MetaPathFinder):
        """Installs the listener once Numba's dispatcher is imported (a process that never imports Numba
        pays nothing)."""

        def find_spec(self, name, path, target=None):
            if name != "numba.core.dispatcher":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _install()

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _AfterNumba())
