"""_capi.py - ctypes declarations of the runtime's C API (torsor/runtime.h).

Why ctypes: the C API is plain C with opaque handles (a dozen functions), so
ctypes binds it with no compiler, no build step and no dependency beyond
the standard library; the package stays pure Python and installs anywhere
NumPy does. ctypes.CDLL also releases the GIL for the duration of every
foreign call, so torsorModuleRun runs without holding it. (cffi would add a
dependency; nanobind a C++ extension to build per Python version. Neither
buys anything for a dozen calls per forward pass, each microseconds next to
the model itself.)

The library is loaded once, on first use. The runtime re-opens itself
RTLD_GLOBAL before dlopen-ing a model, so models resolve
torsor_parallel_for even though ctypes loads it RTLD_LOCAL.
"""
import ctypes
import operator

from . import _locate
from .errors import FailedPreconditionError, InvalidArgumentError, from_status

INPUT, PARAM, OUTPUT = 0, 1, 2
KINDS = {INPUT: "input", PARAM: "param", OUTPUT: "output"}

# TorsorDType codes <-> manifest spellings <-> NumPy dtype names.
DTYPE_CODES = {"f32": 0, "f64": 1, "i64": 2}
DTYPE_NAMES = {v: k for k, v in DTYPE_CODES.items()}
NUMPY_NAMES = {"f32": "float32", "f64": "float64", "i64": "int64"}


class Tensor(ctypes.Structure):
    """struct TorsorTensor."""
    _fields_ = [("data", ctypes.c_void_p),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("rank", ctypes.c_int32),
                ("dtype", ctypes.c_int32)]


_P = ctypes.c_void_p
_I32 = ctypes.c_int32
_I64 = ctypes.c_int64
_STR = ctypes.c_char_p

# name: (restype, argtypes)
_SIGNATURES = {
    "torsorStatusCode": (ctypes.c_int, [_P]),
    "torsorStatusMessage": (_STR, [_P]),
    "torsorStatusFree": (None, [_P]),
    "torsorModuleLoad": (_P, [_STR, ctypes.POINTER(_P)]),
    "torsorModuleFree": (None, [_P]),
    "torsorModuleName": (_STR, [_P]),
    "torsorModuleNumTensors": (_I32, [_P, ctypes.c_int]),
    "torsorModuleTensorName": (_STR, [_P, ctypes.c_int, _I32]),
    "torsorModuleTensorDType": (_I32, [_P, ctypes.c_int, _I32]),
    "torsorModuleTensorRank": (_I32, [_P, ctypes.c_int, _I32]),
    "torsorModuleTensorDimExtent": (_I64, [_P, ctypes.c_int, _I32, _I32]),
    "torsorModuleTensorDimSymbol": (_STR, [_P, ctypes.c_int, _I32, _I32]),
    "torsorModuleTensorGroup": (_STR, [_P, ctypes.c_int, _I32]),
    "torsorModuleBindInput": (_P, [_P, _STR, ctypes.POINTER(Tensor)]),
    "torsorModuleBindParam": (_P, [_P, _STR, ctypes.POINTER(Tensor)]),
    "torsorModuleUnbindInputs": (None, [_P]),
    "torsorModuleLoadWeights": (_P, [_P, _STR]),
    "torsorModuleSetCheckGroups": (None, [_P, _I32, ctypes.c_double]),
    "torsorModuleSetBufferCache": (None, [_P, _I32]),
    "torsorModuleReleaseBuffers": (None, [_P]),
    "torsorModuleCachedBytes": (ctypes.c_uint64, [_P]),
    "torsorModuleRun": (_P, [_P]),
    "torsorModuleGetOutput": (_P, [_P, _STR, ctypes.POINTER(Tensor)]),
    "torsorModuleHasBackward": (_I32, [_P]),
    "torsorModuleNumGradients": (_I32, [_P]),
    "torsorModuleGradientName": (_STR, [_P, _I32]),
    "torsorModuleRunBackward": (_P, [_P, ctypes.POINTER(Tensor), _I32]),
    "torsorModuleGetGradient": (_P, [_P, _STR, ctypes.POINTER(Tensor)]),
    "torsorSetNumThreads": (_P, [_I32]),
    "torsorGetNumThreads": (_I32, []),
}

# void (*TorsorNoteFn)(const char *message, void *context)
NOTE_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)
_SIGNATURES["torsorModuleLoadWeightsConverting"] = (_P, [_P, _STR, NOTE_FN, _P])

_lib = None


def lib():
    """The runtime library with every signature declared (loaded once)."""
    global _lib
    if _lib is None:
        path = _locate.runtime_library_path()
        handle = ctypes.CDLL(path)
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(handle, name)
            except AttributeError:
                # A runtime older than this package (another build's
                # libtorsor_runtime.so, e.g. through TORSOR_RUNTIME_LIB).
                raise FailedPreconditionError(
                    "the Torsor runtime at %s lacks %s, which this torsor "
                    "package needs: the library comes from an older build. "
                    "Use the package and the runtime of one build (unset "
                    "TORSOR_RUNTIME_LIB / TORSOR_BUILD_DIR, or point them "
                    "at the build this package was installed from)"
                    % (path, name)) from None
            fn.restype, fn.argtypes = restype, argtypes
        _lib = handle
    return _lib


def check(status):
    """Raises the exception for a non-NULL TorsorStatus* (and frees it)."""
    if not status:
        return
    L = lib()
    code = L.torsorStatusCode(status)
    message = L.torsorStatusMessage(status).decode("utf-8", "replace")
    L.torsorStatusFree(status)
    raise from_status(code, message)


def encode(text):
    """A Python str as the bytes a C string argument needs."""
    return text.encode("utf-8") if isinstance(text, str) else bytes(text)


INT32_RANGE = (-2 ** 31, 2 ** 31 - 1)
INT64_RANGE = (-2 ** 63, 2 ** 63 - 1)


def _checked_int(value, what, hint, bounds, ctype):
    """`value` as a Python int inside `bounds`: ctypes converts integers to
    C types modulo 2^N without a word (2**32 + 3 becomes 3 in an int32_t),
    so every integer bound for the C API is checked here first."""
    try:
        n = operator.index(value)  # ints and NumPy integers, not floats
    except TypeError:
        raise InvalidArgumentError("%s must be an integer, got %r%s"
                                   % (what, value, "; " + hint if hint else "")) from None
    lo, hi = bounds
    if not lo <= n <= hi:
        raise InvalidArgumentError(
            "%s = %d is out of range: the C API takes a %s (%d to %d)%s"
            % (what, n, ctype, lo, hi, "; " + hint if hint else ""))
    return n


def int32(value, what, hint=""):
    """`value` checked to fit the C API's int32_t (see _checked_int)."""
    return _checked_int(value, what, hint, INT32_RANGE, "int32_t")


def int64(value, what, hint=""):
    """`value` checked to fit the C API's int64_t (see _checked_int)."""
    return _checked_int(value, what, hint, INT64_RANGE, "int64_t")
