"""torch.py - a compiled Torsor model inside PyTorch, forward and backward.

    import torsor.torch
    layer = torsor.torch.TorsorModule("examples/se3_pose_attention.tsr")  # compiled with grad
    opt = torch.optim.Adam(layer.parameters(), lr=1e-3)
    loss = layer(pose=poses, x=feats).square().mean()
    loss.backward()                                  # the compiled backward entry
    opt.step()
    y = torch.compile(net, fullgraph=True)(...)      # no graph break at the layer

Each model becomes one `torch.library` custom op, `torch.ops.torsor.<name>`,
with schema `(Tensor[] inputs, Tensor[] params) -> Tensor[]` in manifest
order, a fake (meta) kernel that derives output shapes from the manifest's
symbolic dims, so torch.compile / torch.export trace through it, and an
autograd rule backed by the model's compiled backward entry (`torsorc
--grad`), itself a second custom op `torch.ops.torsor.<name>_backward`
with its own fake kernel, so AOTAutograd traces the backward too.

Gradients (docs/pytorch.md, "Gradients"):
  - params and float inputs get the compiled gradients; integer inputs
    (token ids) none; nothing is computed when nothing requires grad;
  - group inputs (g: SE3[L], [..., n, n] matrices) get an ambient n×n
    gradient G whose tangent projection is the compiled left-trivialised
    gradient ξ: ⟨G, g·E_k⟩ = ξ_k for the group's basis E_k
    (torsor.groups.basis). We return G = g⁻ᵀ Σ_a (Γ⁻¹ξ)_a E_a with
    Γ_ab = ⟨E_a, E_b⟩, so a pose parametrised in torch (g = exp(ω^),
    quaternions, ...) gets the exact chain rule for every perturbation
    that stays in the group. The component of G normal to the group is
    not meaningful (the model is only defined on the group).

`TorsorModule` wraps the op as an nn.Module whose nn.Parameters are the
model's params, named exactly as in the manifest ("blocks.0.Wv"), so
state_dict() / load_state_dict() and optimizers speak Torsor's names.
Inputs and params are lent to the runtime without a copy; outputs and
gradients are fresh tensors. CPU models take CPU tensors; nvptx models
(compiled with target="nvptx") take CUDA tensors, bound as device memory
without host copies, forward and backward (the gradients stay on the
device), synchronised with the caller's current stream (docs/pytorch.md,
"CUDA tensors").
"""
import itertools
import os
import re
import threading
import warnings
from typing import List

import numpy as np
import torch

from . import _device
from . import groups as _groups
from .compiler import compile as _compile
from .errors import FailedPreconditionError, InvalidArgumentError, TorsorError, TorsorWarning
from .model import Model
from .model import rounds as _rounds

_TORCH_DTYPE = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64}
_counter = itertools.count()
_lock = threading.Lock()


def _model_source(model):
    """The .tsr text a model was compiled from, when it can be found: the
    cache keeps it next to the library (model.tsr), or NAME.tsr beside it."""
    stem = os.path.splitext(model.path)[0]
    for cand in (os.path.join(os.path.dirname(model.path), "model.tsr"), stem + ".tsr"):
        if os.path.exists(cand):
            with open(cand, encoding="utf-8", errors="surrogateescape") as f:
                return f.read()
    return None


class _GroupGrad:
    """Per group input: the basis E [k, n, n] and Γ⁻¹, computed on first
    use (one tiny compile per group, cached), as tensors of each dtype."""

    def __init__(self, group, k, source):
        self.group, self.k, self.source = group, k, source
        self._np = None

    def tensors(self, dtype, device=None):
        if self._np is None:
            E = _groups.basis(self.group, self.k, self.source)
            gram = np.einsum("aij,bij->ab", E, E)
            self._np = (E, np.linalg.inv(gram))
        # Fresh tensors per call: under torch.compile / export tracing they
        # become the graph's constants (a cached real tensor would leak
        # into fake-tensor tracing).
        E, ginv = self._np
        return (torch.tensor(E, dtype=dtype, device=device),
                torch.tensor(ginv, dtype=dtype, device=device))

    def ambient(self, g, xi):
        """G = g⁻ᵀ Σ_a (Γ⁻¹ξ)_a E_a, [..., n, n], from ξ [..., k]."""
        E, ginv = self.tensors(xi.dtype, xi.device)
        M = torch.einsum("...k,kij->...ij", xi @ ginv, E)
        return torch.linalg.solve(g.mT, M)


def ambient_group_gradient(group, g, xi, source=None):
    """The ambient gradient G [..., n, n] of group elements g [..., n, n]
    whose tangent projection is the left-trivialised gradient xi [..., k]:
    ⟨G, g·E_a⟩ = xi_a for the basis E_a of `group` (a built-in name, or a
    declared group found in the .tsr `source`). What the autograd rule of
    a group input returns; exposed for users of Model.backward."""
    return _GroupGrad(group, xi.shape[-1], source).ambient(g, xi)


def custom_op(model, group_source=None):
    """Registers `model` (a torsor.Model) as a torch.library custom op and
    returns it: op(inputs: list, params: list) -> list of outputs, each in
    manifest order. Differentiable when the model has a backward entry
    (compiled with grad=True); otherwise backward raises a clear error.
    Every call binds all params, so the op owns `model`: do not also set
    params on it directly. `group_source`: the .tsr text declaring the
    model's declared groups (found automatically for cached compiles),
    needed only for gradients of declared-group inputs."""
    cuda = _device.is_cuda_model(model)
    device_types = "cuda" if cuda else "cpu"
    with _lock:
        name = "%s_%d" % (re.sub(r"\W", "_", model.name), next(_counter))
    qualname = "torsor::" + name
    in_specs, param_specs, out_specs = model.inputs, model.params, model.outputs
    n_in = len(in_specs)

    def dims_of(inputs, params):
        dims = {}
        for spec, t in zip(list(in_specs) + list(param_specs), list(inputs) + list(params)):
            for sym, size in zip(spec.shape, t.shape):
                if isinstance(sym, str):
                    dims.setdefault(sym, size)
        return dims

    def check_counts(inputs, params):
        if len(inputs) != len(in_specs) or len(params) != len(param_specs):
            raise TorsorError("%s: expected %d inputs and %d params, got %d and %d"
                              % (qualname, len(in_specs), len(param_specs),
                                 len(inputs), len(params)))

    @torch.library.custom_op(qualname, mutates_args=(), device_types=device_types)
    def op(inputs: List[torch.Tensor], params: List[torch.Tensor]) -> List[torch.Tensor]:
        check_counts(inputs, params)
        if cuda:
            return _run_cuda(model, in_specs, param_specs, out_specs, inputs, params)
        out = model.run({s.name: t for s, t in zip(in_specs, inputs)},
                        borrowed_params={s.name: t for s, t in zip(param_specs, params)})
        return [out[s.name] for s in out_specs]

    @op.register_fake
    def _fake(inputs, params):
        dims = dims_of(inputs, params)
        device = _device_of(inputs, params)
        return [torch.empty(s.concrete_shape(dims), dtype=_TORCH_DTYPE[s.dtype], device=device)
                for s in out_specs]

    op.model = model
    op.backward_op = None
    if not model.has_backward:
        def _setup(ctx, inputs, output):
            pass

        def _refuse(ctx, grads):
            raise FailedPreconditionError(
                "%s: model '%s' was compiled without a backward entry, so it has "
                "no gradients; compile it with torsor.compile(..., grad=True) "
                "(TorsorModule does so when it compiles from source), or run it "
                "under torch.no_grad()" % (qualname, model.name))

        op.register_autograd(_refuse, setup_context=_setup)
        return op

    grad_specs = model.manifest["backward"]["gradients"]
    grad_of = [g.get("of", g["name"][len("grad."):]) for g in grad_specs]
    grad_shape = [tuple(g["shape"]) for g in grad_specs]
    grad_dtype = [_TORCH_DTYPE[g["dtype"]] for g in grad_specs]
    source = group_source if group_source is not None else _model_source(model)
    group_grads = {}
    for s in in_specs:
        if s.group and s.name in grad_of:
            k = grad_shape[grad_of.index(s.name)][-1]
            group_grads[s.name] = _GroupGrad(s.group, k, source)

    @torch.library.custom_op(qualname + "_backward", mutates_args=(),
                             device_types=device_types)
    def backward_op(inputs: List[torch.Tensor], params: List[torch.Tensor],
                    cotangents: List[torch.Tensor]) -> List[torch.Tensor]:
        check_counts(inputs, params)
        if cuda:  # device cotangents in, device gradients out: no host copies
            return _backward_cuda(model, in_specs, param_specs, out_specs, grad_specs,
                                  inputs, params, cotangents)
        grads = model.backward(
            {s.name: t for s, t in zip(in_specs, inputs)},
            {s.name: c.contiguous() for s, c in zip(out_specs, cotangents)},
            borrowed_params={s.name: t for s, t in zip(param_specs, params)})
        return [torch.from_numpy(grads[g["name"]]) for g in grad_specs]

    def _setup_double(ctx, inputs, output):
        pass

    def _refuse_double(ctx, grads):
        raise FailedPreconditionError(
            "%s: second derivatives are not supported through a Torsor layer: the "
            "compiled backward entry (torsorc --grad) has no derivative of its own, so "
            "a backward through this layer's gradient (create_graph=True, then "
            "differentiating the gradient: double backward, gradient penalties, "
            "Hessian-vector products) cannot run. Compute such terms on a PyTorch "
            "twin of the layer, or keep this layer's gradient out of them "
            "(.detach() it)" % qualname)

    # A double backward reaches this rule and gets the error above, instead
    # of torch's "no autograd formula was registered".
    backward_op.register_autograd(_refuse_double, setup_context=_setup_double)

    @backward_op.register_fake
    def _fake_backward(inputs, params, cotangents):
        dims = dims_of(inputs, params)
        device = _device_of(inputs, params)
        return [torch.empty(tuple(dims[d] if isinstance(d, str) else d for d in shape),
                            dtype=dt, device=device) for shape, dt in zip(grad_shape, grad_dtype)]

    def _setup(ctx, inputs, output):
        ins, ps = inputs
        ctx.save_for_backward(*ins, *ps)
        ctx.req = ([t.requires_grad for t in ins], [t.requires_grad for t in ps])
        ctx.out_shapes = [o.shape for o in output]

    def _backward(ctx, grads):
        saved = ctx.saved_tensors
        ins, ps = list(saved[:n_in]), list(saved[n_in:])
        req_in, req_p = ctx.req
        if not (any(req_in) or any(req_p)):  # nothing to do
            return [None] * len(ins), [None] * len(ps)
        cots = [g if g is not None else
                torch.zeros(shape, dtype=_TORCH_DTYPE[s.dtype], device=_device_of(ins, ps))
                for g, shape, s in zip(grads, ctx.out_shapes, out_specs)]
        by_name = dict(zip(grad_of, backward_op(ins, ps, cots)))
        d_in = []
        for s, t, req in zip(in_specs, ins, req_in):
            g = by_name.get(s.name) if req else None
            if g is not None and s.name in group_grads:
                g = group_grads[s.name].ambient(t, g)
            d_in.append(g)
        d_p = [by_name.get(s.name) if req else None for s, req in zip(param_specs, req_p)]
        return d_in, d_p

    op.register_autograd(_backward, setup_context=_setup)
    op.backward_op = backward_op
    return op


class _CudaArray:
    """Module-owned device memory described for torch.as_tensor
    (__cuda_array_interface__, version 2)."""

    _TYPESTR = {"f32": "<f4", "f64": "<f8", "i64": "<i8"}

    def __init__(self, ptr, shape, dtype):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": self._TYPESTR[dtype],
                                         "data": (int(ptr or 0), False), "version": 2,
                                         "strides": None}


def _sync_current_stream(device):
    """Waits for the caller's current CUDA stream on `device`, so the
    tensors it wrote are complete before the runtime reads them."""
    torch.cuda.current_stream(device).synchronize()


def _from_device(ptr, shape, dtype, device):
    """A fresh tensor on `device` holding a copy of module-owned device
    memory (a device-to-device copy on the current stream)."""
    if not ptr or 0 in shape:
        return torch.empty(shape, dtype=_TORCH_DTYPE[dtype], device=device)
    return torch.as_tensor(_CudaArray(ptr, shape, dtype), device=device).clone()


def _device_args(specs, tensors):
    """{name: (device pointer, shape, dtype)} of contiguous tensors."""
    return {s.name: (t.data_ptr(), tuple(t.shape), s.dtype) for s, t in zip(specs, tensors)}


def _run_cuda(model, in_specs, param_specs, out_specs, inputs, params):
    """One forward run of an nvptx model on CUDA tensors, without host
    copies: the tensors' memory is bound as device memory, and each output
    is copied device-to-device into a fresh tensor. Synchronised with the
    caller's current stream: it is waited for before the run (so inputs it
    wrote are complete), the run finishes its own stream before returning,
    and the output copies are queued on the current stream."""
    ins = [t.contiguous() for t in inputs]
    ps = [t.contiguous() for t in params]
    device = _device_of(ins, ps)
    _sync_current_stream(device)
    out = _device.run(model, _device_args(in_specs, ins), _device_args(param_specs, ps))
    return [_from_device(*out[s.name], device) for s in out_specs]


def _backward_cuda(model, in_specs, param_specs, out_specs, grad_specs, inputs, params,
                   cotangents):
    """The backward of an nvptx model on CUDA tensors, without host copies
    (torsorModuleRunBackwardDevice): inputs, params and cotangents are bound
    as device memory, and each gradient is copied device-to-device into a
    fresh tensor, synchronised with the current stream as _run_cuda is."""
    ins = [t.contiguous() for t in inputs]
    ps = [t.contiguous() for t in params]
    cots = [c.contiguous() for c in cotangents]
    device = _device_of(ins, ps)
    _sync_current_stream(device)
    grads = _device.backward(model, _device_args(in_specs, ins), _device_args(param_specs, ps),
                             _device_args(out_specs, cots))
    return [_from_device(*grads[g["name"]], device) for g in grad_specs]


def _device_of(inputs, params):
    """The device of the op's tensors (the first one's)."""
    for t in list(inputs) + list(params):
        return t.device
    return torch.device("cpu")


def _check_device(spec, value, cuda, model, what="input"):
    """CPU models take CPU tensors, nvptx models CUDA tensors: one line each."""
    if not isinstance(value, torch.Tensor):
        if cuda:
            raise InvalidArgumentError(
                "%s '%s': model '%s' is an nvptx model and takes CUDA tensors, got %s "
                "(use torch.as_tensor(..., device='cuda'))"
                % (what, spec.name, model.name, type(value).__name__))
        return
    if cuda and value.device.type != "cuda":
        raise InvalidArgumentError(
            "%s '%s': tensor is on device '%s', but model '%s' is an nvptx model and "
            "takes CUDA tensors (use .cuda(); move the module's params with "
            "module.cuda())" % (what, spec.name, value.device, model.name))
    if not cuda and value.device.type != "cpu":
        raise InvalidArgumentError(
            "%s '%s': tensor is on device '%s', but model '%s' is a CPU model and takes "
            "CPU tensors (use .cpu(), or compile with target=\"nvptx\" for CUDA tensors)"
            % (what, spec.name, value.device, model.name))


def _check_dtype(spec, value, what="input"):
    """The dtype policy (docs/python.md, "dtypes"): a float tensor of another
    float dtype (f16, bf16, f32, f64) is converted to the model's dtype,
    differentiably, with a TorsorWarning when that rounds (f64 -> f32);
    integers and floats never mix."""
    want = _TORCH_DTYPE[spec.dtype]
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(np.ascontiguousarray(value))
    elif not isinstance(value, torch.Tensor):  # lists and scalars
        return torch.as_tensor(np.asarray(value, dtype=spec.numpy_dtype))
    if value.dtype == want:
        return value
    if value.is_floating_point() and want.is_floating_point:
        have = str(value.dtype).replace("torch.", "")
        if _rounds(have, str(want).replace("torch.", "")):
            warnings.warn("%s '%s': converting %s to the model's dtype %s (rounded to "
                          "nearest; a copy)" % (what, spec.name, have, spec.dtype),
                          TorsorWarning, stacklevel=4)
        return value.to(want)
    hint = (".long()" if spec.dtype == "i64" else ".to(torch.%s)" % str(want)[6:])
    raise InvalidArgumentError(
        "%s '%s': expected %s, got torch %s; integer and float tensors are never "
        "converted (pass %s%s)" % (what, spec.name, spec.dtype,
                                    str(value.dtype).replace("torch.", ""),
                                    spec.name, hint))


class TorsorModule(torch.nn.Module):
    """A compiled Torsor model as a trainable nn.Module.

    model         a torsor.Model, a compiled .so path, or a .tsr path /
                  source text (compiled with torsor.compile(grad=True,
                  **compile_args); pass grad=False for forward only)
    params        optional {Torsor param name: tensor or array} to load;
                  otherwise params start from torsor.train.init_params
                  drawn from torch's random generator
    group_source  .tsr text declaring the model's declared groups (only
                  for gradients of declared-group inputs of a Model whose
                  source cannot be found)

    The model's params are nn.Parameters named as in the manifest, so
    `parameters()` feeds a torch optimizer and `state_dict()` keys are
    Torsor's param names. forward(*inputs, **inputs) follows the
    manifest's input order and returns the output tensor, or {name:
    tensor} when the model has several outputs. loss.backward() runs the
    compiled backward entry (model compiled with grad=True).
    """

    def __init__(self, model, params=None, group_source=None, **compile_args):
        super().__init__()
        source = group_source
        if not isinstance(model, Model):
            if isinstance(model, (str, os.PathLike)) and os.fspath(model).endswith(".so"):
                model = Model(os.fspath(model))
            else:
                compile_args.setdefault("grad", True)
                text = model
                if isinstance(model, os.PathLike) or (
                        isinstance(model, str) and "\n" not in model and "{" not in model):
                    with open(os.fspath(model), encoding="utf-8") as f:
                        text = f.read()
                source = source if source is not None else text
                model = _compile(model, **compile_args)
        # A private handle: the op binds this module's parameters on every call.
        self.model = Model(model.path)
        if source is None:
            source = _model_source(model)
        self.group_source = source
        self._cuda = _device.is_cuda_model(self.model)
        self._op = custom_op(self.model, group_source=source)
        self._param_paths = []
        for spec in self.model.params:
            holder, leaf = self._holder(spec.name)
            shape = spec.concrete_shape({})
            holder.register_parameter(leaf, torch.nn.Parameter(
                torch.zeros(shape, dtype=_TORCH_DTYPE[spec.dtype])))
            self._param_paths.append(spec.name)
        if params is not None:
            self.load_torsor_params(params)
        else:
            self.reset_parameters()

    def _holder(self, dotted):
        """(submodule, leaf name) for a dotted param name, creating empty
        submodules on the way: "blocks.0.Wv" -> (self.blocks.0, "Wv")."""
        parts = dotted.split(".")
        mod = self
        for p in parts[:-1]:
            sub = mod._modules.get(p)
            if sub is None:
                sub = torch.nn.Module()
                mod.add_module(p, sub)
            mod = sub
        return mod, parts[-1]

    def reset_parameters(self, seed=None):
        """Fresh params from torsor.train.init_params (matrices N(0, 1/fan_in),
        gains 1, other vectors 0); `seed` defaults to a draw from torch's
        generator, so torch.manual_seed makes it reproducible."""
        from .train import init_params
        if seed is None:
            seed = int(torch.randint(0, 2 ** 31 - 1, ()).item())
        return self.load_torsor_params(init_params(self.model, seed=seed))

    def load_torsor_params(self, params):
        """Copies {Torsor param name: tensor or array} into the parameters
        (converted to the model's dtype; every param required)."""
        state = {k: torch.as_tensor(v) for k, v in params.items()}
        with torch.no_grad():
            self.load_state_dict(state, strict=True)
        return self

    def forward(self, *args, **kwargs):
        specs = self.model.inputs
        if len(args) > len(specs):
            raise TypeError("%s takes %d inputs (%s), got %d positional arguments"
                            % (self.model.name, len(specs),
                               ", ".join(s.name for s in specs), len(args)))
        given = dict(zip((s.name for s in specs), args))
        for k, v in kwargs.items():
            if k in given:
                raise TypeError("input '%s' given both by position and by name" % k)
            given[k] = v
        unknown = [k for k in given if k not in {s.name for s in specs}]
        missing = [s.name for s in specs if s.name not in given]
        if unknown or missing:
            raise TypeError("%s: %s%s; model inputs are: %s" % (
                self.model.name,
                "unknown input(s) %s" % ", ".join(unknown) if unknown else "",
                ("; " if unknown and missing else "") +
                ("missing input(s) %s" % ", ".join(missing) if missing else ""),
                ", ".join(s.name for s in specs)))
        cuda = self._cuda
        for s in specs:
            _check_device(s, given[s.name], cuda, self.model)
        inputs = [_check_dtype(s, given[s.name]) for s in specs]
        params = [self.get_parameter(p) for p in self._param_paths]
        for s, p in zip(self.model.params, params):
            _check_device(s, p, cuda, self.model, what="param")
        outs = self._op(inputs, params)
        if len(outs) == 1:
            return outs[0]
        return {s.name: o for s, o in zip(self.model.outputs, outs)}

    def extra_repr(self):
        return "%s (%s)" % (self.model.name, os.path.basename(self.model.path))
