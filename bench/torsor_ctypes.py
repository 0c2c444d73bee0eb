"""Run a compiled Torsor model in-process through the runtime's C API.

Benchmarks time only the forward call (`torsorModuleRun`), not process
start, model loading, binding or .npy IO, so they bind once and then call
`run()` alone. The C API's declarations are the `torsor` package's
(python/torsor/_capi.py): one ctypes binding of runtime.h in the project.

    rt = Runtime("build/lib/libtorsor_runtime.so")
    rt.set_threads(2)
    m = rt.load("model.so")            # manifest model.json beside it
    m.bind_input("pose", pose_f32)     # numpy arrays, kept alive by `m`
    m.run()                            # torsorModuleRun, nothing else
    y = m.output("y")                  # a copy, as a numpy array
"""
import ctypes
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from torsor import TorsorError  # noqa: E402,F401  (re-exported for callers)
from torsor import _capi  # noqa: E402


class Runtime:
    """The runtime library at `lib_path`, through the package's binding
    (one per process: the package loads one runtime library)."""

    def __init__(self, lib_path):
        if _capi._lib is None:
            os.environ["TORSOR_RUNTIME_LIB"] = os.path.abspath(lib_path)
        self.lib = _capi.lib()

    def set_threads(self, n):
        _capi.check(self.lib.torsorSetNumThreads(n))
        return self.lib.torsorGetNumThreads()

    def load(self, so_path):
        return Module(self, so_path)


class Module:
    """A loaded model; bound arrays stay referenced until the module dies."""

    def __init__(self, rt, so_path):
        self.rt = rt
        handle = ctypes.c_void_p()
        _capi.check(rt.lib.torsorModuleLoad(_capi.encode(so_path), ctypes.byref(handle)))
        self.handle = handle
        self._keep = {}

    def _bind(self, fn, name, array):
        a = np.ascontiguousarray(array)
        code = _capi.DTYPE_CODES[{"float32": "f32", "float64": "f64",
                                  "int64": "i64"}[a.dtype.name]]
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        t = _capi.Tensor(a.ctypes.data, shape, None, a.ndim, code)
        _capi.check(fn(self.handle, _capi.encode(name), ctypes.byref(t)))
        self._keep[name] = (a, shape)

    def bind_input(self, name, array):
        self._bind(self.rt.lib.torsorModuleBindInput, name, array)

    def bind_param(self, name, array):
        self._bind(self.rt.lib.torsorModuleBindParam, name, array)

    def run(self):
        _capi.check(self.rt.lib.torsorModuleRun(self.handle))

    def output(self, name):
        """A copy of output `name` of the last run."""
        t = _capi.Tensor()
        _capi.check(self.rt.lib.torsorModuleGetOutput(self.handle, _capi.encode(name),
                                                      ctypes.byref(t)))
        shape = tuple(t.shape[i] for i in range(t.rank))
        dtype = np.dtype(_capi.NUMPY_NAMES[_capi.DTYPE_NAMES[t.dtype]])
        count = int(np.prod(shape)) if shape else 1
        buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(t.data)
        return np.frombuffer(buf, dtype=dtype).reshape(shape).copy()

    def __del__(self):
        if getattr(self, "handle", None):
            self.rt.lib.torsorModuleFree(self.handle)
            self.handle = None
