"""Counting NumPy's array-buffer allocations, for allocation-free checks of Python code.

NumPy (>= 1.22) takes every array's data buffer from the memory handler of the current
context (NEP 49, ``PyDataMem_SetHandler``); :class:`CountingHandler` installs one that
counts its mallocs, callocs and reallocs and serves them from libc, so any array created
while it is installed (np.zeros, a copy, an arithmetic result, a 0-d temporary) counts one.
Views and in-place writes into existing arrays count nothing.
"""
from __future__ import annotations

import ctypes

from numpy._core import _multiarray_umath

_MALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
_CALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
_REALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
_SET_HANDLER = 304          # PyDataMem_SetHandler's slot in NumPy's C API table (numpy/__multiarray_api.h)


class _Allocator(ctypes.Structure):        # PyDataMemAllocator (numpy/ndarraytypes.h)
    _fields_ = [("ctx", ctypes.c_void_p), ("malloc", _MALLOC), ("calloc", _CALLOC),
                ("realloc", _REALLOC), ("free", _FREE)]


class _Handler(ctypes.Structure):          # PyDataMem_Handler, version 1
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8), ("allocator", _Allocator)]


_libc = ctypes.CDLL(None)
_libc.malloc.restype, _libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
_libc.calloc.restype, _libc.calloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]
_libc.realloc.restype, _libc.realloc.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t]
_libc.free.restype, _libc.free.argtypes = None, [ctypes.c_void_p]
_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_table = ctypes.cast(_api.PyCapsule_GetPointer(_multiarray_umath._ARRAY_API, None), ctypes.POINTER(ctypes.c_void_p))
_set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(_table[_SET_HANDLER])


class CountingHandler:
    """``with CountingHandler() as c: ...`` then ``c.count``: array buffers allocated inside."""

    def __init__(self) -> None:
        self.count = 0
        self._fns = (_MALLOC(self._malloc), _CALLOC(self._calloc), _REALLOC(self._realloc), _FREE(self._free))
        self._handler = _Handler(b"counting", 1, _Allocator(None, *self._fns))
        self._name = ctypes.create_string_buffer(b"mem_handler")      # the capsule keeps this pointer
        self._capsule = _api.PyCapsule_New(ctypes.addressof(self._handler), self._name, None)
        self._previous = None

    def _malloc(self, ctx, size):
        self.count += 1
        return _libc.malloc(size)

    def _calloc(self, ctx, nelem, elsize):
        self.count += 1
        return _libc.calloc(nelem, elsize)

    def _realloc(self, ctx, ptr, size):
        self.count += 1
        return _libc.realloc(ptr, size)

    def _free(self, ctx, ptr, size):
        _libc.free(ptr)

    def __enter__(self) -> CountingHandler:
        self._previous = _set_handler(self._capsule)
        return self

    def __exit__(self, *exc) -> None:
        _set_handler(self._previous)
