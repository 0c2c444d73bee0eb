"""Run a compiled Torsor model in-process through the runtime's C API.

Benchmarks time only the forward call (`torsorModuleRun`), not process
start, model loading or .npy IO, so they use libtorsor_runtime.so through
ctypes rather than the torsor-run tool (runtime/include/torsor/runtime.h is
the contract; docs/runtime.md describes it).

    rt = Runtime("build/lib/libtorsor_runtime.so")
    rt.set_threads(2)
    m = rt.load("model.so")            # manifest model.json beside it
    m.bind_input("pose", pose_f32)     # numpy arrays, kept alive by `m`
    m.run()
    y = m.output("y")                  # a copy, as a numpy array
"""
import ctypes

import numpy as np

_DTYPES = {0: np.float32, 1: np.float64, 2: np.int64}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}


class TorsorError(RuntimeError):
    pass


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("rank", ctypes.c_int32),
                ("dtype", ctypes.c_int32)]


class Runtime:
    """libtorsor_runtime.so loaded with ctypes (one per process)."""

    def __init__(self, lib_path):
        lib = ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)
        vp, cp = ctypes.c_void_p, ctypes.c_char_p
        lib.torsorStatusCode.argtypes = [vp]
        lib.torsorStatusMessage.argtypes = [vp]
        lib.torsorStatusMessage.restype = cp
        lib.torsorStatusFree.argtypes = [vp]
        lib.torsorModuleLoad.argtypes = [cp, ctypes.POINTER(vp)]
        lib.torsorModuleLoad.restype = vp
        lib.torsorModuleFree.argtypes = [vp]
        for name in ("torsorModuleBindInput", "torsorModuleBindParam"):
            getattr(lib, name).argtypes = [vp, cp, ctypes.POINTER(_Tensor)]
            getattr(lib, name).restype = vp
        lib.torsorModuleRun.argtypes = [vp]
        lib.torsorModuleRun.restype = vp
        lib.torsorModuleGetOutput.argtypes = [vp, cp, ctypes.POINTER(_Tensor)]
        lib.torsorModuleGetOutput.restype = vp
        lib.torsorSetNumThreads.argtypes = [ctypes.c_int32]
        lib.torsorSetNumThreads.restype = vp
        lib.torsorGetNumThreads.restype = ctypes.c_int32
        self.lib = lib

    def check(self, status, what):
        """Raises TorsorError with the runtime's message if `status` is set."""
        if status:
            msg = self.lib.torsorStatusMessage(status).decode()
            self.lib.torsorStatusFree(status)
            raise TorsorError("%s: %s" % (what, msg))

    def set_threads(self, n):
        self.check(self.lib.torsorSetNumThreads(n), "torsorSetNumThreads")
        return self.lib.torsorGetNumThreads()

    def load(self, so_path):
        return Module(self, so_path)


class Module:
    """A loaded model; bound arrays stay referenced until the module dies."""

    def __init__(self, rt, so_path):
        self.rt = rt
        handle = ctypes.c_void_p()
        rt.check(rt.lib.torsorModuleLoad(so_path.encode(), ctypes.byref(handle)),
                 "torsorModuleLoad(%s)" % so_path)
        self.handle = handle
        self._keep = {}

    def _bind(self, fn, name, array):
        a = np.ascontiguousarray(array)
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        t = _Tensor(a.ctypes.data, shape, None, a.ndim, _CODES[a.dtype])
        self.rt.check(fn(self.handle, name.encode(), ctypes.byref(t)), "bind %s" % name)
        self._keep[name] = (a, shape)

    def bind_input(self, name, array):
        self._bind(self.rt.lib.torsorModuleBindInput, name, array)

    def bind_param(self, name, array):
        self._bind(self.rt.lib.torsorModuleBindParam, name, array)

    def run(self):
        self.rt.check(self.rt.lib.torsorModuleRun(self.handle), "torsorModuleRun")

    def output(self, name):
        """A copy of output `name` of the last run."""
        t = _Tensor()
        self.rt.check(self.rt.lib.torsorModuleGetOutput(self.handle, name.encode(),
                                                        ctypes.byref(t)),
                      "output %s" % name)
        shape = tuple(t.shape[i] for i in range(t.rank))
        dtype = np.dtype(_DTYPES[t.dtype])
        count = int(np.prod(shape)) if shape else 1
        buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(t.data)
        return np.frombuffer(buf, dtype=dtype).reshape(shape).copy()

    def __del__(self):
        if getattr(self, "handle", None):
            self.rt.lib.torsorModuleFree(self.handle)
            self.handle = None
