"""model.py - a compiled model loaded through the runtime's C API.

`Model` owns one TorsorModule. A call binds the given arrays as inputs
(NumPy arrays and CPU torch tensors are lent to the runtime without a copy;
strided ones are gathered by the runtime itself), runs the model with the
GIL released (ctypes drops it for every foreign call), copies the outputs
out of the runtime's buffers, and unbinds the inputs again so no pointer
into the caller's memory outlives the call. All checking (names, dtypes,
ranks, extents, symbolic dims, groups) is the runtime's; its messages
become the exceptions of torsor.errors unchanged.
"""
import ctypes
import json
import os
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Optional, Tuple, Union

import numpy as np

from . import _capi
from ._capi import INPUT, KINDS, OUTPUT, PARAM
from .errors import FailedPreconditionError, InvalidArgumentError, TorsorWarning


@dataclass(frozen=True)
class TensorSpec:
    """One manifest entry: an input, a param or an output.

    `shape` holds ints (fixed extents) and strings (symbolic dims such as
    "L"); `group` is the group name of a group-element tensor ("SE3") and
    `left_invariant` the compiler's verdict for group inputs (None for
    other tensors); `residual_conditioned` marks declared-group inputs whose
    membership residual is the generic model's, checked against a tolerance
    scaled by the dtype and the log's conditioning (torsor.groups.check)."""

    name: str
    kind: str
    dtype: str
    shape: Tuple[Union[int, str], ...]
    group: Optional[str] = None
    left_invariant: Optional[bool] = None
    residual_conditioned: bool = False

    @property
    def numpy_dtype(self):
        """The matching NumPy dtype (float32, float64 or int64)."""
        return np.dtype(_capi.NUMPY_NAMES[self.dtype])

    def concrete_shape(self, dims):
        """The shape with symbolic dims taken from `dims` ({"L": 10})."""
        return tuple(dims[d] if isinstance(d, str) else d for d in self.shape)

    def __str__(self):
        dims = lambda ds: ", ".join(str(d) for d in ds)
        if self.group:
            text = "%s: %s[%s] (%s %s)" % (self.name, self.group, dims(self.shape[:-2]),
                                         " x ".join(str(d) for d in self.shape),
                                         self.dtype)
            if self.left_invariant is not None:
                text += ", left_invariant=%s" % self.left_invariant
            return text
        return "%s: %s[%s]" % (self.name, self.dtype, dims(self.shape))


def _is_torch_tensor(value):
    """Whether `value` is a torch tensor (a subclass included), without
    importing torch: only an already imported torch can have made one."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, getattr(torch, "Tensor", ())):
        return True
    return (type(value).__module__.startswith("torch")
            and hasattr(value, "data_ptr") and hasattr(value, "stride"))


_TORCH_DTYPES = {"torch.float32": "f32", "torch.float64": "f64",
                 "torch.int64": "i64"}
_NUMPY_DTYPES = {"float32": "f32", "float64": "f64", "int64": "i64"}


def _torch_layout_problem(label, value):
    """An InvalidArgumentError for a tensor whose memory is not a dense
    strided array (sparse, mkldnn, nested), else None."""
    if getattr(value, "is_nested", False):
        return InvalidArgumentError(
            "%s: torch nested tensors are not supported; Torsor takes dense "
            "strided tensors (pad it with torch.nested.to_padded_tensor, or "
            "call the model per element)" % label)
    layout = str(getattr(value, "layout", "torch.strided"))
    if layout != "torch.strided":
        return InvalidArgumentError(
            "%s: torch tensor has layout %s; Torsor takes dense strided "
            "tensors (convert it with .to_dense())"
            % (label, layout.replace("torch.", "")))
    return None


def _torch_memoryless_problem(label, value):
    """An InvalidArgumentError for a tensor subclass that has no memory of
    its own to lend (FakeTensor, FunctionalTensor, wrapper subclasses such
    as DTensor): their data_ptr() is not their values. None otherwise."""
    torch = sys.modules["torch"]
    if type(value) is torch.Tensor or type(value) is torch.nn.Parameter:
        return None
    memoryless = False
    try:
        from torch._subclasses.fake_tensor import is_fake
        from torch.utils._python_dispatch import is_traceable_wrapper_subclass
        memoryless = is_fake(value) or is_traceable_wrapper_subclass(value)
    except Exception:  # noqa: BLE001 - an older torch without these helpers
        pass
    if not memoryless:
        return None
    return InvalidArgumentError(
        "%s: a %s has no memory of its own holding its values (a fake, "
        "functional or wrapper tensor, e.g. while torch.compile traces); pass "
        "a plain dense CPU tensor, or call the model through torsor.torch's "
        "custom op" % (label, type(value).__name__))


def _resolved_torch(value):
    """`value`, or a copy whose memory holds its values: a tensor with the
    lazy negation or conjugation bit (`z.conj().imag`, `torch._neg_view`) or
    a lazy zero tensor stores something else than it reads as, so its raw
    memory must never be lent to the runtime."""
    if value.is_neg():
        value = value.resolve_neg()
    if value.is_conj():
        value = value.resolve_conj()
    is_zero = getattr(value, "_is_zerotensor", None)
    if is_zero is not None and is_zero():
        import torch
        value = torch.zeros(tuple(value.shape), dtype=value.dtype)
    return value


def _checked_int64s(label, values):
    """`values` as a tuple of ints, each checked to fit in int64."""
    return tuple(_capi.int64(v, "%s: extent or stride" % label) for v in values)


def _tensor_struct(label, value, want_dtype):
    """(TorsorTensor, keep-alive tuple) lending `value`'s memory.

    `label` ("input 'x'") prefixes our own messages; `want_dtype` (a
    manifest dtype or None) converts lists and scalars, never arrays: an
    array of the wrong dtype is passed through so the runtime reports it.
    keep-alive[0] is the array or tensor whose memory is lent.

    Only memory that holds the values is lent: torch tensors with a lazy
    negation or conjugation bit are resolved into a copy; sparse, mkldnn,
    nested and masked arrays are refused with a message naming `label`;
    unaligned NumPy arrays and strides that are not whole elements are
    copied."""
    if _is_torch_tensor(value):
        if value.device.type != "cpu":
            raise InvalidArgumentError(
                "%s: tensor is on device '%s'; Torsor's CPU models take CPU "
                "tensors (use .cpu())" % (label, value.device))
        problem = (_torch_layout_problem(label, value)
                   or _torch_memoryless_problem(label, value))
        if problem is not None:
            raise problem
        code = _TORCH_DTYPES.get(str(value.dtype))
        if code is None:
            raise InvalidArgumentError(
                "%s: torch dtype %s is not supported; expected %s"
                % (label, str(value.dtype).replace("torch.", ""),
                   want_dtype or "f32, f64 or i64"))
        value = _resolved_torch(value)
        try:
            data = value.data_ptr()
        except RuntimeError as e:  # fake, functional or other data-less tensors
            raise InvalidArgumentError(
                "%s: cannot read this tensor's memory (%s); pass a plain dense "
                "CPU tensor" % (label, str(e).split("\n")[0])) from None
        shape, strides = tuple(value.shape), value.stride()
        keep = value
    else:
        if isinstance(value, np.ma.MaskedArray):
            raise InvalidArgumentError(
                "%s: a NumPy masked array; its masked elements have no values "
                "to compute on. Pass arr.filled(fill_value), or arr.data to "
                "ignore the mask" % label)
        if isinstance(value, np.ndarray):
            arr = value
        else:
            dt = _capi.NUMPY_NAMES.get(want_dtype, None)
            arr = np.asarray(value, dtype=dt)
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        code = _NUMPY_DTYPES.get(arr.dtype.name)
        if code is None:
            raise InvalidArgumentError(
                "%s: NumPy dtype %s is not supported; expected %s"
                % (label, arr.dtype.name, want_dtype or "f32, f64 or i64"))
        item = arr.dtype.itemsize
        if any(s % item for s in arr.strides) or not arr.flags.aligned:
            arr = arr.copy(order="C")
        data, shape = arr.ctypes.data, arr.shape
        strides = tuple(s // item for s in arr.strides)
        keep = arr
    rank = _capi.int32(len(shape), "%s: rank" % label)
    c_shape = (ctypes.c_int64 * max(rank, 1))(*_checked_int64s(label, shape))
    c_strides = (ctypes.c_int64 * max(rank, 1))(*_checked_int64s(label, strides))
    t = _capi.Tensor(data, c_shape, c_strides, rank, _capi.DTYPE_CODES[code])
    return t, (keep, c_shape, c_strides)


def _warn_requires_grad(model, inputs):
    """A TorsorWarning when a torch input requires grad while grad mode is
    on: Model calls return plain tensors with no autograd history (never a
    silent detach). torsor.torch.TorsorModule is the differentiable path."""
    import torch
    if not torch.is_grad_enabled():
        return
    names = [n for n, v in inputs.items() if _is_torch_tensor(v) and v.requires_grad]
    if names:
        warnings.warn(
            "model '%s': input(s) %s require grad, but a Model call is not "
            "differentiable (the result has no gradient); use "
            "torsor.torch.TorsorModule(model) for autograd, or pass .detach() / "
            "run under torch.no_grad() to silence this" % (model, ", ".join(names)),
            TorsorWarning, stacklevel=4)


_FLOAT_NAMES = {"float16", "bfloat16", "float32", "float64"}
_INT_NAMES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
_TARGET = {"f32": "float32", "f64": "float64", "i64": "int64"}


# Conversions that round (the only ones that warn): float64 to float32.
_ROUNDING = {("float64", "float32")}


def rounds(have, target):
    """Whether converting dtype `have` to `target` (NumPy/torch names without
    the "torch." prefix) can change a value: the dtype policy warns for
    exactly these conversions."""
    return (have, target) in _ROUNDING


def _convert_dtype(label, value, want):
    """The dtype policy for inputs, params and cotangents (docs/python.md,
    "dtypes"; torsor-run follows it too): an array or tensor of another
    float dtype (f16, bf16, f32, f64) for a float tensor is converted to the
    model's dtype (a copy): silently when exact (f16/bf16 -> f32/f64,
    f32 -> f64), with a TorsorWarning when it rounds (f64 -> f32). Another
    integer dtype for an i64 tensor is converted when every value fits
    (int8 ... uint32 always do; uint64 is checked) and refused otherwise.
    Integers and floats never mix (InvalidArgumentError). Lists and scalars
    are converted silently; other values pass through unchanged."""
    if want not in _TARGET:
        return value
    if _is_torch_tensor(value):
        have = str(value.dtype).replace("torch.", "")
    elif isinstance(value, np.ndarray):
        have = value.dtype.name
    else:
        return value
    target = _TARGET[want]
    if have == target:
        return value
    is_float = want in ("f32", "f64")
    if have in (_FLOAT_NAMES if is_float else _INT_NAMES):
        if rounds(have, target):
            warnings.warn("%s: converting %s to the model's dtype %s (rounded to "
                          "nearest; a copy)" % (label, have, want), TorsorWarning,
                          stacklevel=4)
        count = value.numel() if _is_torch_tensor(value) else value.size
        if have == "uint64" and count and int(value.max()) > np.iinfo(np.int64).max:
            raise InvalidArgumentError(
                "%s: uint64 values above %d do not fit the model's dtype i64; they "
                "are not converted" % (label, np.iinfo(np.int64).max))
        if _is_torch_tensor(value):
            import torch
            return value.detach().to(getattr(torch, target))
        return value.astype(target)
    if have in _FLOAT_NAMES or have in _INT_NAMES:
        fix = (".astype(np.%s) / .to(torch.%s)" % (target, target))
        raise InvalidArgumentError(
            "%s: expected %s, got %s; integer and float tensors are never "
            "converted (cast it yourself: %s)" % (label, want, have, fix))
    return value


def _to_numpy(value, label="tensor"):
    """Any array-like (torch tensors included, on any device) as NumPy.
    Torch tensors are read by value: sparse and mkldnn ones are made dense
    and lazy negation/conjugation bits resolved first."""
    if _is_torch_tensor(value):
        t = value.detach()
        if getattr(t, "is_nested", False):
            raise _torch_layout_problem(label, t)
        if str(getattr(t, "layout", "torch.strided")) != "torch.strided":
            t = t.to_dense()
        t = _resolved_torch(t.cpu())
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        try:
            return t.numpy()
        except (RuntimeError, TypeError) as e:
            raise InvalidArgumentError("%s: cannot read this torch tensor (%s)"
                                       % (label, str(e).split("\n")[0])) from None
    return np.asarray(value)


def _first_non_finite(arr):
    """(flat index, index tuple, "NaN"/"+Inf"/"-Inf") of the first
    non-finite element of a float NumPy array, or None."""
    if not np.issubdtype(arr.dtype, np.floating):
        return None
    finite = np.isfinite(arr)
    if finite.all():
        return None
    flat = int(np.argmin(finite.ravel(order="C")))
    index = np.unravel_index(flat, arr.shape) if arr.ndim else ()
    v = arr[index] if arr.ndim else arr[()]
    return flat, tuple(int(i) for i in index), (
        "NaN" if np.isnan(v) else ("+Inf" if v > 0 else "-Inf"))


class _Native:
    """One loaded TorsorModule, shared by a Model and its copies
    (copy.copy, copy.deepcopy): it is freed when its last owner closes.
    `call` admits one call at a time across all owners; `caller` is the
    thread inside a call; `params` keeps bound params' memory alive."""

    def __init__(self, lib, ptr):
        self.lib, self.ptr = lib, ptr
        self.owners = 1
        self.mutex = threading.Lock()  # owners, ptr
        self.call = threading.Lock()
        self.caller = None
        self.free_pending = False
        self.params = {}
        self.check_inputs = True

    def free(self):
        """Frees the module (the call lock held, or no call possible)."""
        ptr, self.ptr = self.ptr, None
        self.params = {}
        if ptr:
            self.lib.torsorModuleFree(ptr)


class _Call:
    """`with model._lock:` - one call on the model's native module: refused
    with a clear error once the Model is closed, serialised with every other
    call on the module, and holding off close() until it ends."""

    def __init__(self, model):
        self.model = model
        self.native = None

    def __enter__(self):
        model = self.model
        native = model._native_if_open()
        if native.caller == threading.get_ident():
            raise FailedPreconditionError(
                "model '%s' is already running a call on this thread (from a "
                "signal handler or a callback?); one call at a time" % model.name)
        native.call.acquire()
        if model._closed:  # closed while this call waited
            native.call.release()
            model._native_if_open()
        native.caller = threading.get_ident()
        self.native = native
        return native

    def __exit__(self, *exc):
        native = self.native
        native.caller = None
        if native.free_pending:
            native.free_pending = False
            native.free()
        native.call.release()
        return False


class Model:
    """A compiled Torsor model: `Model("pose.so")` (or torsor.load).

    m.inputs, m.params, m.outputs   lists of TensorSpec, in ABI order
    m.load_weights("w.safetensors") bind params from a bundle
    m.set_params({name: array})     bind params from arrays (copied)
    m(pose=poses, x=feats)          run: one output -> the array,
                                    several -> {name: array}
    m.run({"pose": poses, ...})     run: always {name: array}

    Inputs are NumPy arrays or CPU torch tensors; one of another float
    dtype (f16, bf16, f32, f64) is converted to the model's dtype, with a
    torsor.TorsorWarning when that rounds (f64 -> f32), integers and floats
    never mix (an error); lists are converted. Params, weight bundles and
    cotangents follow the same policy, as torsor-run does.
    Outputs are NumPy arrays, or torch tensors when any input was one.
    One call at a time per Model (a lock serialises threads); separate
    Models may run concurrently from separate threads.

    Lifetime: m.close() (or the end of a `with` block) waits for a call
    running on another thread, then unloads; any use after close raises
    FailedPreconditionError. copy.copy(m) and copy.deepcopy(m) give further
    handles to the same loaded module (params bound through one are seen by
    all; one call at a time across them), which is unloaded when the last
    of them is closed or collected; torsor.load(m.path) gives an
    independent one. Models cannot be pickled (pickle m.path instead).
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self._lib = _capi.lib()
        self._closed = False
        handle = ctypes.c_void_p()
        _capi.check(self._lib.torsorModuleLoad(_capi.encode(self.path),
                                               ctypes.byref(handle)))
        self._native = _Native(self._lib, handle)
        manifest_path = os.path.splitext(self.path)[0] + ".json"
        with open(manifest_path) as f:
            self.manifest = json.load(f)
        self.name = self._lib.torsorModuleName(self._handle).decode()
        self.dtype = self.manifest.get("dtype")
        self.dims = list(self.manifest.get("dims", []))
        self.inputs = self._specs(INPUT)
        self.params = self._specs(PARAM)
        self.outputs = self._specs(OUTPUT)
        self._by_name = {s.name: s for s in self.inputs + self.params + self.outputs}

    def _specs(self, kind):
        """TensorSpecs of one kind: names, dtypes, shapes and groups from the
        runtime; left_invariant from the manifest (the C API has no getter)."""
        L, h = self._lib, self._handle
        entries = self.manifest.get(KINDS[kind] + "s", [])
        specs = []
        for i in range(L.torsorModuleNumTensors(h, kind)):
            shape = []
            for d in range(L.torsorModuleTensorRank(h, kind, i)):
                sym = L.torsorModuleTensorDimSymbol(h, kind, i, d)
                shape.append(sym.decode() if sym is not None
                             else int(L.torsorModuleTensorDimExtent(h, kind, i, d)))
            group = L.torsorModuleTensorGroup(h, kind, i)
            entry = entries[i] if i < len(entries) else {}
            specs.append(TensorSpec(
                name=L.torsorModuleTensorName(h, kind, i).decode(),
                kind=KINDS[kind],
                dtype=_capi.DTYPE_NAMES[L.torsorModuleTensorDType(h, kind, i)],
                shape=tuple(shape),
                group=group.decode() if group is not None else None,
                left_invariant=entry.get("left_invariant") if kind == INPUT and group
                else None,
                residual_conditioned=bool(entry.get("residual_conditioned", False))))
        return specs

    # -- weights --------------------------------------------------------------

    def load_weights(self, path):
        """Binds every tensor of a .safetensors bundle to the param of the
        same name (the runtime reads and keeps the data), under the dtype
        policy: a float tensor of the other float dtype is converted, with a
        TorsorWarning when it rounds (F64 weights for an f32 model)."""
        notes = []
        note = _capi.NOTE_FN(lambda message, _ctx: notes.append(message))
        with self._lock:
            status = self._lib.torsorModuleLoadWeightsConverting(
                self._handle, _capi.encode(os.fspath(path)), note, None)
        # Warned after the call: an exception raised inside a ctypes
        # callback (warnings as errors) would be lost.
        for message in notes:
            warnings.warn(message.decode("utf-8", "replace"), TorsorWarning, stacklevel=2)
        _capi.check(status)
        return self

    def set_params(self, params):
        """Binds {param name: array} (NumPy, torch or nested lists).

        Each array is copied, converted to the param's dtype, so later
        changes to the caller's array do not reach the model; the runtime
        checks names, ranks and extents."""
        with self._lock:
            for name, value in params.items():
                spec = self._by_name.get(name)
                if spec is not None and spec.kind == "param":
                    value = _convert_dtype("param '%s'" % name, value, spec.dtype)
                    arr = np.array(_to_numpy(value, "param '%s'" % name),
                                   dtype=spec.numpy_dtype, order="C", copy=True)
                else:  # unknown name: let the runtime say so
                    arr = np.zeros((0,), np.float32)
                t, keep = _tensor_struct("param '%s'" % name, arr, None)
                _capi.check(self._lib.torsorModuleBindParam(
                    self._handle, _capi.encode(name), ctypes.byref(t)))
                self._params[name] = keep
        return self

    def set_check_groups(self, enable=True, tol=1e-4):
        """Makes every run check that group inputs are in their group to
        absolute tolerance `tol`, and that float inputs, params and
        cotangents hold no NaN or Inf (on by default; False passes them
        through unchecked)."""
        tol = float(tol)
        if not (tol >= 0 and np.isfinite(tol)):
            raise InvalidArgumentError(
                "set_check_groups: tol must be a finite number >= 0, got %r" % tol)
        with self._lock as native:
            self._lib.torsorModuleSetCheckGroups(self._handle, 1 if enable else 0,
                                                 tol)
            native.check_inputs = bool(enable)
        return self

    def set_buffer_cache(self, enable=True):
        """Keeps large intermediate buffers (64 KiB and up) that a run frees
        for the model's next runs (on by default), so repeated calls at the
        same sizes do not take their working set from the system each time.
        The kept memory never makes the model hold more than the largest
        working set one of its runs needed; False turns the cache off and
        frees what it keeps."""
        with self._lock:
            self._lib.torsorModuleSetBufferCache(self._handle, 1 if enable else 0)
        return self

    def release_buffers(self):
        """Frees the buffers the cache keeps now (say, after a run at a large
        size when the next ones are small); the cache stays on."""
        with self._lock:
            self._lib.torsorModuleReleaseBuffers(self._handle)
        return self

    @property
    def cached_bytes(self):
        """Bytes of intermediate buffers the model keeps between runs."""
        return int(self._lib.torsorModuleCachedBytes(self._handle))

    # -- running ---------------------------------------------------------------

    def run(self, inputs, borrowed_params=None):
        """Runs on {input name: array}; returns {output name: array}.

        `borrowed_params` ({name: array of the param's dtype}) binds params
        for this call without a copy; the model keeps a reference to each
        until it is bound again (torsor.torch uses this for its buffers)."""
        as_torch = any(_is_torch_tensor(v) for v in inputs.values())
        if as_torch:
            _warn_requires_grad(self.name, inputs)
        with self._lock:
            keep = []
            try:
                self._bind_call(inputs, borrowed_params, keep)
                _capi.check(self._lib.torsorModuleRun(self._handle))
                out = {s.name: self._output(s.name) for s in self.outputs}
            finally:
                self._lib.torsorModuleUnbindInputs(self._handle)
        if as_torch:
            import torch
            out = {k: torch.from_numpy(v) for k, v in out.items()}
        return out

    def _bind_call(self, inputs, borrowed_params, keep):
        """Binds one call's borrowed params and inputs under the dtype
        policy (the caller holds the lock); `keep` collects what must stay
        alive until the inputs are unbound."""
        for name, value in (borrowed_params or {}).items():
            spec = self._by_name.get(name)
            value = _convert_dtype("param '%s'" % name, value,
                                   spec.dtype if spec is not None else None)
            t, k = _tensor_struct("param '%s'" % name, value, None)
            _capi.check(self._lib.torsorModuleBindParam(
                self._handle, _capi.encode(name), ctypes.byref(t)))
            self._params[name] = k
        for name, value in inputs.items():
            spec = self._by_name.get(name)
            want = spec.dtype if spec is not None else None
            value = _convert_dtype("input '%s'" % name, value, want)
            t, k = _tensor_struct("input '%s'" % name, value, want)
            keep.append(k)
            _capi.check(self._lib.torsorModuleBindInput(
                self._handle, _capi.encode(name), ctypes.byref(t)))

    @property
    def has_backward(self):
        """Whether the model was compiled with grad=True (torsorc --grad)."""
        with self._lock:
            return bool(self._lib.torsorModuleHasBackward(self._handle))

    def backward(self, inputs, cotangents, borrowed_params=None):
        """Gradients of <cotangents, outputs> (a vector-Jacobian product).

        inputs      {input name: array}, as for run()
        cotangents  {output name: array of the output's shape and dtype}
                    (a missing output counts as zeros)
        borrowed_params  as for run(): params bound for this call, no copy
        Returns {"grad.<name>": array} for every param and float input, in
        manifest order. Group inputs get the left-trivialised gradient in
        algebra coordinates, [..., k] (docs/training.md). The compiled
        backward recomputes the forward pass: no run() is needed first."""
        if not self.has_backward:
            raise FailedPreconditionError(
                "model '%s' has no backward entry; compile it with grad=True"
                % self.name)
        missing = [s.name for s in self.inputs if s.name not in inputs]
        if missing:
            raise InvalidArgumentError(
                "backward: missing input%s %s; backward takes every input of "
                "the model, as run() does (inputs: %s)"
                % ("s" if len(missing) > 1 else "",
                   ", ".join("'%s'" % n for n in missing),
                   ", ".join(s.name for s in self.inputs)))
        with self._lock:
            keep = []
            try:
                self._bind_call(inputs, borrowed_params, keep)
                unknown = set(cotangents) - {s.name for s in self.outputs}
                if unknown:
                    raise InvalidArgumentError(
                        "cotangent for unknown output '%s'; outputs are: %s"
                        % (sorted(unknown)[0],
                           ", ".join(s.name for s in self.outputs)))
                entries = self.manifest["backward"]["cotangents"]
                structs = (_capi.Tensor * len(entries))()
                dims = self._dims_from(inputs)
                for i, (spec, entry) in enumerate(zip(self.outputs, entries)):
                    value = cotangents.get(spec.name)
                    if value is None:
                        value = np.zeros(spec.concrete_shape(dims),
                                         spec.numpy_dtype)
                    value = _convert_dtype("cotangent '%s'" % spec.name, value,
                                           spec.dtype)
                    t, k = _tensor_struct("cotangent '%s'" % spec.name,
                                          value, spec.dtype)
                    self._check_finite("cotangent '%s'" % spec.name, k[0])
                    structs[i] = t
                    keep.append(k)
                _capi.check(self._lib.torsorModuleRunBackward(
                    self._handle, structs, len(entries)))
                names = [self._lib.torsorModuleGradientName(self._handle, i)
                         .decode() for i in range(
                             self._lib.torsorModuleNumGradients(self._handle))]
                return {n: self._gradient(n) for n in names}
            finally:
                self._lib.torsorModuleUnbindInputs(self._handle)

    def _check_finite(self, label, value):
        """While input checks are on, refuses a NaN or Inf in `value` (the
        array or tensor lent to the runtime) with the runtime's wording."""
        if not self._native.check_inputs:
            return
        arr = value.numpy() if _is_torch_tensor(value) else np.asarray(value)
        bad = _first_non_finite(arr)
        if bad is not None:
            raise InvalidArgumentError(
                "%s element %d (index [%s]) is %s; non-finite values are "
                "rejected while input checks are on (turn them off with "
                "Model.set_check_groups(False) to pass them through)"
                % (label, bad[0], ", ".join(str(i) for i in bad[1]), bad[2]))

    def _dims_from(self, inputs):
        """Symbolic dims read off the input arrays' shapes."""
        dims = {}
        for spec in self.inputs:
            value = inputs.get(spec.name)
            if value is None:
                continue
            shape = (tuple(value.shape) if _is_torch_tensor(value)
                     else np.shape(value))
            for d, n in zip(spec.shape, shape):
                if isinstance(d, str):
                    dims.setdefault(d, int(n))
        return dims

    def _gradient(self, name):
        """A NumPy copy of gradient `name` of the last backward run."""
        t = _capi.Tensor()
        _capi.check(self._lib.torsorModuleGetGradient(
            self._handle, _capi.encode(name), ctypes.byref(t)))
        return self._copy_out(t)

    def __call__(self, *args, **kwargs):
        """m(pose, x) or m(pose=..., x=...): positional arguments follow the
        manifest's input order. One output: the array; several: a dict."""
        if len(args) > len(self.inputs):
            raise TypeError("%s takes %d inputs (%s), got %d positional arguments"
                            % (self.name, len(self.inputs),
                               ", ".join(s.name for s in self.inputs), len(args)))
        inputs = {}
        for spec, value in zip(self.inputs, args):
            inputs[spec.name] = value
        for name, value in kwargs.items():
            if name in inputs:
                raise TypeError("input '%s' given both by position and by name" % name)
            inputs[name] = value
        out = self.run(inputs)
        return next(iter(out.values())) if len(out) == 1 else out

    def _output(self, name):
        """A NumPy copy of output `name` of the last run."""
        t = _capi.Tensor()
        _capi.check(self._lib.torsorModuleGetOutput(
            self._handle, _capi.encode(name), ctypes.byref(t)))
        return self._copy_out(t)

    @staticmethod
    def _copy_out(t):
        """A NumPy copy of the runtime-owned row-major tensor `t`."""
        shape = tuple(t.shape[i] for i in range(t.rank))
        dtype = np.dtype(_capi.NUMPY_NAMES[_capi.DTYPE_NAMES[t.dtype]])
        count = int(np.prod(shape)) if shape else 1
        if count == 0 or not t.data:
            return np.zeros(shape, dtype)
        buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(t.data)
        return np.frombuffer(buf, dtype).reshape(shape).copy()

    # -- lifetime --------------------------------------------------------------
    # A Model owns a share of a _Native (the loaded module). Every use of
    # the module goes through `self._lock` (a _Call: waits its turn, refused
    # after close) and `self._handle` (the module, or the closed error).

    @property
    def _lock(self):
        return _Call(self)

    @property
    def _handle(self):
        return self._native_if_open().ptr

    @property
    def _params(self):
        return self._native_if_open().params

    @property
    def closed(self):
        """Whether close() was called on this Model."""
        return self.__dict__.get("_closed", True)

    def _native_if_open(self):
        """The shared native module; raises when this Model is closed."""
        native = self.__dict__.get("_native")
        if native is None or self._closed or not native.ptr:
            raise FailedPreconditionError(
                "model '%s' (%s) is closed; load it again with torsor.load(%r)"
                % (self.__dict__.get("name", "?"), self.path, self.path))
        return native

    def close(self):
        """Gives up this Model's share of the loaded module; the module is
        unloaded when no copy holds it any more. Waits for a call running on
        another thread to finish first. Closing twice is a no-op; any other
        use after close raises FailedPreconditionError."""
        native = self.__dict__.get("_native")
        if native is None:
            return
        with native.mutex:
            if self._closed:
                return
            self._closed = True  # new calls are refused from here on
            native.owners -= 1
            last = native.owners == 0
        if not last:
            return
        if native.caller == threading.get_ident():
            # Inside a call of this module on this very thread (a signal
            # handler, a callback): unload when that call returns.
            native.free_pending = True
            return
        with native.call:  # waits for a running call
            native.free()

    def _share(self):
        """A new Model object owning a further share of the same module."""
        native = self._native_if_open()
        with native.mutex:
            if self._closed or not native.ptr:
                self._native_if_open()
            native.owners += 1
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._closed = False
        return other

    def __copy__(self):
        return self._share()

    def __deepcopy__(self, memo):
        return self._share()

    def __reduce_ex__(self, protocol):
        raise TypeError(
            "cannot pickle torsor.Model '%s': it holds a loaded native module. "
            "Pickle its path (%r) and call torsor.load(path) on the other side, "
            "then bind its params again" % (self.__dict__.get("name", "?"),
                                            self.__dict__.get("path")))

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: ctypes may be gone
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<torsor.Model %s (%s): inputs %s; %d params; outputs %s>" % (
            self.name, os.path.basename(self.path),
            "; ".join(str(s) for s in self.inputs), len(self.params),
            "; ".join(str(s) for s in self.outputs))


def load(path):
    """Loads a compiled model (`pose.so` plus its manifest `pose.json`)."""
    return Model(path)


def set_num_threads(n):
    """Sizes the runtime's thread pool (the calling thread included) for
    every model; n <= 0 selects the hardware concurrency. Not while a
    model runs. `n` must be an integer in the C API's int32 range (the
    runtime refuses values above its own limit)."""
    n = _capi.int32(n, "set_num_threads(n)",
                    "pass a thread count, or n <= 0 for the hardware concurrency")
    _capi.check(_capi.lib().torsorSetNumThreads(n))


def get_num_threads():
    """The size of the runtime's thread pool."""
    return int(_capi.lib().torsorGetNumThreads())
