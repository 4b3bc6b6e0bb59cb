"""Flat float64 buffers declared once, as a field list.

A :class:`Layout` is the ordered list of the :class:`Field` s packed in one flat
float64 buffer, each with a shape written in terms of the model's sizes (``"n"``,
``("nb", 4, 4)``, ``("n + 2", 4, 4)``). Everything else is derived from it: the
offsets, the buffer size, the field names, numpy views for Python
(:meth:`Layout.views`) and the Numba view function the kernels call
(:attr:`Layout.kernel_views`), which returns the views as a named tuple in the
declared order, so a kernel reads ``d.Tb``, never the 2nd element of a tuple.

A field of shape ``()`` is a scalar slot: kernels read it as ``buf[offset]`` (its
offset from :meth:`Layout.offset`) and it is not among the views. Inside kernels the
views are ``carray`` views on the buffer's address (free, unlike ``slice().reshape()``);
they never leave a kernel.
"""
from __future__ import annotations

import ast
import operator
from collections import namedtuple
from typing import NamedTuple

import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

Dim = int | str


class Field(NamedTuple):
    """One field of a buffer: its name and its shape, each dimension an int or an
    expression of the layout's sizes (``"n"``, ``"9 * n + 9"``); ``()`` a scalar."""

    name: str
    shape: tuple[Dim, ...] = ()


@intrinsic
def _f64_pointer(typingctx, address):
    """uintp address -> float64* (for carray views on a live buffer)."""
    sig = types.CPointer(types.float64)(types.uintp)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float64)))

    return sig, codegen


@njit(cache=True, inline="always")
def at(buf, offset):
    """float64* to ``buf[offset]`` (the first argument of a ``carray`` view)."""
    return _f64_pointer(buf.ctypes.data + 8 * offset)


def _dim_text(d: Dim) -> str:
    return str(d) if isinstance(d, int) else f"({d})"


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def dim_value(expr: str, sizes: dict[str, int]) -> int:
    """A dimension written in a layout's sizes (``"n + 2"``, ``"4 * ng"``): size names, integers and
    ``+ - * //`` only, so that nothing else ever reaches the view code generated from it."""
    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in sizes:
            return sizes[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"dimension {expr!r}: only the sizes {sorted(sizes)}, integers and + - * // are allowed")
    return value(ast.parse(expr, mode="eval").body)


class Layout:
    """An ordered field list over one flat float64 buffer (see the module's docstring)."""

    def __init__(self, name: str, fields: list[Field], sizes: tuple[str, ...] = ()) -> None:
        names = [f.name for f in fields]
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise ValueError(f"layout {name!r} declares the fields {dup} twice")
        for f in fields:
            if not f.name.isidentifier():
                raise ValueError(f"layout {name!r}: field name {f.name!r} is not an identifier")
            for d in f.shape:
                if isinstance(d, str):
                    used = compile(d, f"<{name}.{f.name}>", "eval").co_names
                    unknown = sorted(set(used) - set(sizes))
                    if unknown:
                        raise ValueError(f"layout {name!r}: field {f.name!r} uses unknown sizes {unknown}")
                    dim_value(d, dict.fromkeys(sizes, 1))          # the grammar the generated views may hold
                elif not isinstance(d, int) or d < 0:
                    raise ValueError(f"layout {name!r}: field {f.name!r} has a bad dimension {d!r}")
        self.name, self.fields, self.sizes = name, tuple(fields), tuple(sizes)
        self.names = tuple(names)
        self.array_names = tuple(f.name for f in fields if f.shape)
        self.Views = namedtuple(name.title().replace(" ", "") + "Views", self.array_names)
        self.kernel_views, self.kernel_size = self._kernels()

    def _kernels(self):
        """The Numba view function ``(buf, *sizes) -> (Views, size)`` and size function
        ``(*sizes) -> size``, inlined in their callers."""
        args = ", ".join(self.sizes)
        total = " + ".join(" * ".join(_dim_text(d) for d in f.shape) if f.shape else "1" for f in self.fields)
        lines = [f"def size({args}):", f"    return {total or 0}",
                 f"def views(buf{''.join(', ' + s for s in self.sizes)}):", "    o = 0"]
        for f in self.fields:
            if not f.shape:
                lines.append("    o += 1")
                continue
            dims = ", ".join(_dim_text(d) for d in f.shape)
            count = " * ".join(_dim_text(d) for d in f.shape)
            lines.append(f"    {f.name} = carray(at(buf, o), ({dims},)); o += {count}")
        lines.append(f"    return Views({', '.join(self.array_names)}), o")
        scope = {"carray": carray, "at": at, "Views": self.Views}   # generated from the checked declaration only
        exec(compile("\n".join(lines), f"<layout {self.name}>", "exec"), scope)
        return njit(inline="always")(scope["views"]), njit(inline="always")(scope["size"])

    def _check_sizes(self, sizes: dict[str, int]) -> dict[str, int]:
        if set(sizes) != set(self.sizes):
            raise ValueError(f"layout {self.name!r} takes the sizes {list(self.sizes)}, not {sorted(sizes)}")
        return {k: int(v) for k, v in sizes.items()}

    def shapes(self, **sizes: int) -> dict[str, tuple[int, ...]]:
        """Each field's shape for these sizes."""
        env = self._check_sizes(sizes)
        return {f.name: tuple(d if isinstance(d, int) else dim_value(d, env) for d in f.shape)
                for f in self.fields}

    def offsets(self, **sizes: int) -> dict[str, int]:
        """Each field's offset (in float64 slots) for these sizes."""
        out, o = {}, 0
        for name, shape in self.shapes(**sizes).items():
            out[name] = o
            o += int(np.prod(shape, dtype=np.int64))
        return out

    def size(self, **sizes: int) -> int:
        """Number of float64 slots of the buffer for these sizes."""
        return sum(int(np.prod(s, dtype=np.int64)) for s in self.shapes(**sizes).values())

    def offset(self, name: str) -> int:
        """Offset of a field that does not move with the sizes (a header slot)."""
        if name not in self.names:
            raise KeyError(f"layout {self.name!r} has no field {name!r}")
        o = 0
        for f in self.fields:
            if f.name == name:
                return o
            if any(isinstance(d, str) for d in f.shape):
                raise ValueError(f"field {name!r} of layout {self.name!r} moves with the sizes")
            o += int(np.prod(f.shape, dtype=np.int64))
        raise AssertionError("unreachable")

    def views(self, buf: np.ndarray, **sizes: int):
        """Numpy views of ``buf``'s array fields (a :attr:`Views` named tuple), after
        checking the buffer's size."""
        shapes, offs = self.shapes(**sizes), self.offsets(**sizes)
        need = self.size(**sizes)
        if buf.dtype != np.float64 or buf.ndim != 1 or buf.shape[0] != need:
            raise ValueError(f"{self.name} buffer has {buf.shape} {buf.dtype}, the layout needs ({need},) float64")
        return self.Views(*(np.ndarray(shapes[k], np.float64, buffer=buf, offset=8 * offs[k])
                            for k in self.array_names))
