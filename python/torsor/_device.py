"""_device.py - the C API's device functions (runtime.h, API versions 2-3).

An nvptx model (`torsorc --target=nvptx`) can take device memory directly:
torsorModuleBindInputDevice / BindParamDevice lend CUdeviceptrs (no copy),
torsorModuleSetHostOutputs(0) keeps the outputs on the device, and
torsorModuleGetOutputDevice describes them (module-owned, valid until the
next run). The backward likewise: torsorModuleRunBackwardDevice takes
device cotangents and keeps the gradients on the device, described by
torsorModuleGetGradientDevice. torsor.torch uses this for CUDA tensors; it
is tested through the fake CUDA driver (unittests/Runtime/FakeCuda.cpp),
which hands out host memory as device addresses.

The declarations extend the package's one binding (_capi.lib()): the same
library handle, the same Tensor struct, the same status handling.
"""
import ctypes

from . import _capi
from .errors import InvalidArgumentError

_P = ctypes.c_void_p
_T = ctypes.POINTER(_capi.Tensor)
_SIGNATURES = {
    "torsorCudaAvailable": (_P, []),
    "torsorModuleDevice": (ctypes.c_int32, [_P]),
    "torsorModuleTarget": (ctypes.c_char_p, [_P]),
    "torsorModuleCudaStream": (_P, [_P]),
    "torsorModuleBindInputDevice": (_P, [_P, ctypes.c_char_p, _T]),
    "torsorModuleBindParamDevice": (_P, [_P, ctypes.c_char_p, _T]),
    "torsorModuleSetHostOutputs": (_P, [_P, ctypes.c_int32]),
    "torsorModuleGetOutputDevice": (_P, [_P, ctypes.c_char_p, _T]),
    "torsorModuleRunBackwardDevice": (_P, [_P, _T, ctypes.c_int32]),
    "torsorModuleGetGradientDevice": (_P, [_P, ctypes.c_char_p, _T]),
}
_declared = None


def lib():
    """The runtime library with the device functions declared too."""
    global _declared
    L = _capi.lib()
    if _declared is not L:
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(L, name)
            fn.restype, fn.argtypes = restype, argtypes
        _declared = L
    return L


def is_cuda_model(model):
    """Whether `model` (a torsor.Model) runs on a CUDA GPU."""
    return bool(lib().torsorModuleDevice(model._handle) == 1)


def _struct(ptr, shape, dtype):
    rank = len(shape)
    c_shape = (ctypes.c_int64 * max(rank, 1))(*shape)
    return _capi.Tensor(ptr, c_shape, None, rank, _capi.DTYPE_CODES[dtype]), c_shape


def _bind(L, h, inputs, params, keep):
    """Binds {name: (pointer, shape, dtype)} params and inputs as device memory."""
    for fn, items in ((L.torsorModuleBindParamDevice, params),
                      (L.torsorModuleBindInputDevice, inputs)):
        for name, (ptr, shape, dtype) in items.items():
            t, c_shape = _struct(ptr, shape, dtype)
            keep.append((t, c_shape))
            _capi.check(fn(h, _capi.encode(name), ctypes.byref(t)))


def _describe(t):
    return t.data, tuple(t.shape[i] for i in range(t.rank)), _capi.DTYPE_NAMES[t.dtype]


def run(model, inputs, params):
    """Runs a CUDA model on device memory, with no host copies.

    inputs, params  {name: (device pointer, shape, dtype "f32"|"f64"|"i64")},
                    row-major, borrowed for the call
    Returns {output name: (device pointer, shape, dtype)}: module-owned
    memory, valid until the model's next run; copy it out before then.
    The run synchronises the model's stream before it returns; the caller
    must have finished writing the inputs (on any stream) before the call.
    """
    L = lib()
    h = model._handle
    with model._lock:
        keep = []
        try:
            _bind(L, h, inputs, params, keep)
            _capi.check(L.torsorModuleSetHostOutputs(h, 0))
            _capi.check(L.torsorModuleRun(h))
            out = {}
            for spec in model.outputs:
                t = _capi.Tensor()
                _capi.check(L.torsorModuleGetOutputDevice(h, _capi.encode(spec.name),
                                                          ctypes.byref(t)))
                out[spec.name] = _describe(t)
            return out
        finally:
            L.torsorModuleUnbindInputs(h)
            # Later host-memory runs (Model.run, backward) copy outputs back.
            status = L.torsorModuleSetHostOutputs(h, 1)
            if status:
                L.torsorStatusFree(status)


def backward(model, inputs, params, cotangents):
    """Runs a CUDA model's backward entry on device memory, with no host
    copies (torsorModuleRunBackwardDevice).

    inputs, params  as for run()
    cotangents      {output name: (device pointer, shape, dtype)}, one per
                    output, row-major, borrowed for the call
    Returns {gradient name ("grad.x"): (device pointer, shape, dtype)}, in
    manifest order: module-owned memory, valid until the model's next
    backward run. Synchronised as run() is.
    """
    L = lib()
    h = model._handle
    missing = [s.name for s in model.outputs if s.name not in cotangents]
    if missing:
        raise InvalidArgumentError(
            "backward on device memory needs a cotangent for every output; "
            "missing: %s" % ", ".join(missing))
    with model._lock:
        keep = []
        try:
            _bind(L, h, inputs, params, keep)
            structs = (_capi.Tensor * max(len(model.outputs), 1))()
            for i, spec in enumerate(model.outputs):
                ptr, shape, dtype = cotangents[spec.name]
                t, c_shape = _struct(ptr, shape, dtype)
                keep.append((t, c_shape))
                structs[i] = t
            _capi.check(L.torsorModuleRunBackwardDevice(h, structs, len(model.outputs)))
            out = {}
            for i in range(L.torsorModuleNumGradients(h)):
                name = L.torsorModuleGradientName(h, i)
                t = _capi.Tensor()
                _capi.check(L.torsorModuleGetGradientDevice(h, name, ctypes.byref(t)))
                out[name.decode()] = _describe(t)
            return out
        finally:
            L.torsorModuleUnbindInputs(h)
