"""nn.py - Torsor's geometric layers as PyTorch modules, no .tsr needed.

    import torsor.nn
    attn = torsor.nn.LieAttention("SE3", heads=4, tau=[0.5, 1, 2, 4],
                                  lam=[[1.0, 0.1], [1.0, 0.5], [1.0, 1.0], [0.5, 2.0]])
    y = attn(g, v)                   # g [..., L, 4, 4], v [..., L, D] -> [..., L, D]
    mix = torsor.nn.GrassmannMix(64, r=8, offsets=[1, 2, 4, 8], causal=True)
    h = mix(h)                       # [..., L, 64], trainable W_red, W_plu, W_gate
    rel = torsor.nn.RelationalAttention(64, heads=4, causal=True)
    y = rel(x)                       # [..., L, 64], trainable G_QK, G_VO

Each module writes a one-op model (`lie_attention`, `grassmann_mix`,
`relational_attention`) on first use at a dtype, compiles it with
torsor.compile (grad=True, cached on disk by source hash) and runs it as a
torsor.torch custom op: forward and backward are Torsor's compiled code,
and torch.compile / torch.export trace through both. The sequence length
L and the batch (all leading dims, flattened into one symbolic dim B) are
symbolic, so there is one compile per (op, its options, dtype, feature
width); modules with identical options share it. f32 and f64 run as
given; f16/bf16 inputs are computed in f32 and the result cast back.

`group` is a built-in name ("SO2", "SE2", "SO3", "SE3", "Aff2", "Sim3") or
the .tsr text of a declared group (`group Sim2 { matrix 3; generator ...}`).

Devices (docs/pytorch.md, "CUDA tensors"): the target follows the inputs'
device. CPU tensors run a `--target=cpu` model; CUDA tensors a
`--target=nvptx` model compiled for that GPU's compute capability
(`sm_<major><minor>`; $TORSOR_GPU_ARCH overrides it, and sm_90 is used
where torch cannot query it), run by the runtime on the device with the
tensors' memory bound as device memory (no host copies, forward and
backward). So there is one compile per (op, options, dtype, width,
target, GPU arch). The runtime runs every nvptx model of a process on one
GPU (TORSOR_CUDA_DEVICE, set here from the first CUDA tensor's device);
tensors of one call on different devices, or CUDA tensors on another GPU
than that one, are a clear error. A machine without torsorc (a GPU
machine without LLVM) loads models prebuilt by torsor.compiler.prebuild
into $TORSOR_PREBUILT_DIR (scripts/gpu-check-prepare.sh stages them).
"""
import math
import os
import re
import threading
import warnings

import torch

from .compiler import compile as _compile
from .errors import InvalidArgumentError, TorsorWarning
from .groups import BUILTIN
from .model import rounds as _rounds
from .torch import custom_op

# λ blocks per built-in group (runtime/include/torsor/GroupFacts.def).
_BLOCKS = {"SO2": 1, "SE2": 2, "SO3": 1, "SE3": 2, "Aff2": 2, "Sim3": 3}
_ops = {}
_ops_lock = threading.Lock()


# The chip nvptx models are compiled for when torch cannot tell (the H200's).
DEFAULT_GPU_ARCH = "sm_90"
_ARCH = re.compile(r"sm_[0-9]{2,3}a?$")
_arch_of_device = {}
_cuda_ordinal = []  # [the GPU this process's nvptx models run on], once chosen


def gpu_arch(device=None):
    """The `--gpu-arch` nvptx models for CUDA `device` are compiled for:
    $TORSOR_GPU_ARCH when set (e.g. "sm_90"), else the device's compute
    capability as sm_<major><minor> (torch.cuda.get_device_capability),
    else DEFAULT_GPU_ARCH."""
    env = os.environ.get("TORSOR_GPU_ARCH", "").strip()
    if env:
        if not _ARCH.match(env):
            raise InvalidArgumentError("TORSOR_GPU_ARCH=%r is not an NVIDIA arch like "
                                       "'sm_90'" % env)
        return env
    index = getattr(device, "index", None)
    arch = _arch_of_device.get(index)
    if arch is None:
        try:
            major, minor = torch.cuda.get_device_capability(device)
            arch = "sm_%d%d" % (major, minor)
        except Exception:  # no CUDA runtime here (e.g. a fake or meta device)
            arch = DEFAULT_GPU_ARCH
        _arch_of_device[index] = arch
    return arch


def _target_of(what, tensors):
    """(target, gpu arch, device) of one call: "cpu" for CPU tensors,
    "nvptx" and the GPU's arch for CUDA tensors; tensors on different
    devices are an error."""
    devices = []
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.device not in devices:
            devices.append(t.device)
    if len(devices) > 1:
        raise InvalidArgumentError(
            "%s: the tensors of one call are on different devices (%s); move them to one "
            "device (.cuda() or .cpu(), and the module's params with module.to(device))"
            % (what, ", ".join(str(d) for d in devices)))
    device = devices[0] if devices else torch.device("cpu")
    if device.type == "cpu":
        return "cpu", None, device
    if device.type == "cuda":
        return "nvptx", gpu_arch(device), device
    raise InvalidArgumentError("%s: tensors on device '%s'; Torsor runs CPU tensors and CUDA "
                               "tensors (.cpu() or .cuda())" % (what, device))


def _claim_cuda_device(what, device):
    """Sets the GPU the runtime runs nvptx models on (TORSOR_CUDA_DEVICE,
    read once per process when the first nvptx model loads) to `device`'s,
    or checks that it is that one."""
    index = device.index
    if index is None:
        try:
            index = torch.cuda.current_device()
        except Exception:
            index = 0
    if not _cuda_ordinal:
        env = os.environ.get("TORSOR_CUDA_DEVICE")
        if env is None:
            os.environ["TORSOR_CUDA_DEVICE"] = str(index)
            _cuda_ordinal.append(index)
        else:
            try:
                _cuda_ordinal.append(int(env))
            except ValueError:
                raise InvalidArgumentError("TORSOR_CUDA_DEVICE=%r is not a device ordinal"
                                           % env) from None
    if index != _cuda_ordinal[0]:
        raise InvalidArgumentError(
            "%s: the tensors are on cuda:%d, but this process's nvptx models run on GPU %d "
            "(TORSOR_CUDA_DEVICE, fixed at the first CUDA call); use one GPU per process "
            "(torch.cuda.set_device, or TORSOR_CUDA_DEVICE=%d before the first call)"
            % (what, index, _cuda_ordinal[0], index))


def _compile_for(source, dtype, opt, grad, target, arch):
    """torsor.compile of a one-op model for the target."""
    if target == "nvptx":
        return _compile(source, dtype=dtype, opt=opt, grad=grad, target="nvptx",
                        flags=["--gpu-arch=" + arch])
    return _compile(source, dtype=dtype, opt=opt, grad=grad)


def _op_for(source, dtype, group_source=None, opt=None, target="cpu", arch=None):
    """The custom op of a one-op model source at dtype for the target
    (compiled once per process, and once per machine through
    torsor.compile's cache)."""
    key = (source, dtype, opt, target, arch)
    with _ops_lock:
        op = _ops.get(key)
        if op is None:
            model = _compile_for(source, dtype, opt, True, target, arch)
            op = custom_op(model, group_source=group_source)
            _ops[key] = op
    return op


def _compute_dtype(t):
    """("f32" | "f64", torch dtype) that a float tensor is computed in."""
    if t.dtype == torch.float64:
        return "f64", torch.float64
    if t.is_floating_point():
        return "f32", torch.float32
    raise InvalidArgumentError("expected a float tensor, got %s (cast it with .float())"
                               % str(t.dtype).replace("torch.", ""))


def _floats(values):
    return "[%s]" % ", ".join(repr(float(v)) for v in values)


class _OneOp(torch.nn.Module):
    """Shared machinery: flatten leading dims into B, pick the op per dtype."""

    opt = None  # torsorc's default -O

    def _run(self, source, inputs, params, out_shape, group_source=None, width=None):
        """Runs the one-op model `source(width)` on inputs; the op is looked
        up per (dtype, width, target, GPU arch) in an instance cache first,
        so a traced call (torch.compile) does not format source text. The
        target follows the tensors' device (_target_of)."""
        name, dtype = _compute_dtype(inputs[-1])
        what = type(self).__name__
        target, arch, device = _target_of(what, list(inputs) + list(params))
        if target == "nvptx":
            _claim_cuda_device(what, device)
        cache = self.__dict__.setdefault("_op_cache", {})
        key = (name, width, target, arch)
        op = cache.get(key)
        if op is None:
            op = _op_for(source(width) if width is not None else source(), name,
                         group_source, self.opt, target, arch)
            cache[key] = op
        # The dtype policy (docs/python.md, "dtypes"): a conversion that
        # rounds (an f64 g with f32 v) warns; exact ones are silent.
        for t in inputs[:-1]:
            have = str(t.dtype).replace("torch.", "")
            if _rounds(have, str(dtype).replace("torch.", "")):
                warnings.warn("%s: converting a %s input to the compute dtype %s (the "
                              "dtype of the last input; rounded to nearest)"
                              % (type(self).__name__, have, name), TorsorWarning,
                              stacklevel=3)
        ins = [t.to(dtype) for t in inputs]
        outs = op(ins, [p.to(dtype) for p in params])
        return outs[0].reshape(out_shape).to(inputs[-1].dtype)


class LieAttention(_OneOp):
    """Multi-head Lie-algebra attention (docs/math.md §1, docs/language.md):
    head h scores s_ij = −‖log(g_i⁻¹g_j)‖²_λh / τ_h and returns
    Σ_j softmax_j(s_ij)·v_j on its slice of the features.

    group   built-in name or a declared group's .tsr text
    heads   number of heads (D must be divisible by it)
    tau     one temperature, or one per head
    lam     one weight per algebra block, or one row of them per head
            (default 1 everywhere)
    causal  keep j ≤ i

    forward(g, v): g [..., L, n, n] group elements, v [..., L, D] values
    (same leading dims); returns [..., L, D]. No params: project v (and
    the output) with torch layers around it.
    """

    def __init__(self, group, heads=1, tau=1.0, lam=1.0, causal=False):
        super().__init__()
        group = group.strip()
        if "{" in group:
            m = re.search(r"\bgroup\s+(\w+)\s*\{", group)
            if not m:
                raise InvalidArgumentError(
                    "group: expected a built-in name (%s) or a declaration "
                    "`group NAME { matrix n; generator ...; }`" % ", ".join(BUILTIN))
            self.group_name, self.group_decl = m.group(1), group
        elif group in BUILTIN:
            self.group_name, self.group_decl = group, ""
        else:
            raise InvalidArgumentError(
                "unknown group %r; expected one of %s or a declared group's .tsr "
                "text (`group NAME { matrix n; generator ...; }`)"
                % (group, ", ".join(BUILTIN)))
        self.heads, self.causal = int(heads), bool(causal)
        self.tau = [float(t) for t in (tau if isinstance(tau, (list, tuple)) else [tau])]
        self.lam = lam

    def _blocks(self):
        """The number of λ blocks of the group's algebra."""
        if self.group_name in _BLOCKS:
            return _BLOCKS[self.group_name]
        return max(1, len(re.findall(r"\bnorm\s+\w+\s*=", self.group_decl)))

    def _lam_text(self):
        lam = self.lam
        if isinstance(lam, (list, tuple)):
            if lam and isinstance(lam[0], (list, tuple)):
                return "[%s]" % ", ".join(_floats(row) for row in lam)
            return _floats(lam)
        return _floats([lam] * self._blocks())

    def source(self, D):
        """The one-op model for feature width D."""
        return """%s
model TorsorNNLieAttention {
  dim B;
  dim L;
  dim D = %d;
  input g: %s[B, L];
  input v: f32[B, L, D];
  output y = lie_attention(g, v, heads = %d, tau = %s, lambda = %s, causal = %s);
}
""" % (self.group_decl, D, self.group_name, self.heads, _floats(self.tau),
            self._lam_text(), "true" if self.causal else "false")

    def forward(self, g, v):
        if v.dim() < 2 or g.dim() != v.dim() + 1 or g.shape[:-2] != v.shape[:-1]:
            raise InvalidArgumentError(
                "LieAttention: expected g [..., L, n, n] and v [..., L, D] with the "
                "same leading dims, got g %s and v %s" % (list(g.shape), list(v.shape)))
        L, D, n = v.shape[-2], int(v.shape[-1]), int(g.shape[-1])
        return self._run(self.source, [g.reshape(-1, L, n, n), v.reshape(-1, L, D)],
                         [], v.shape, group_source=self.group_decl or None, width=D)

    def extra_repr(self):
        return "%s, heads=%d, tau=%s, lam=%s, causal=%s" % (
            self.group_name, self.heads, self.tau, self.lam, self.causal)


class GrassmannMix(_OneOp):
    """Attention-free Plücker mixing (docs/math.md §3): z = W_red h + b_red
    (r dims); per offset Δ the normalised Plücker vector of (z_t, z_{t±Δ})
    through W_plucker; the mean over offsets gated against h:
    α⊙h + (1 − α)⊙g with α = σ(W_gate [h; g] + b_gate).

    d        feature width; r the reduced rank; offsets distinct positive
             ints; causal pairs t with t − Δ (language models)
    Params (nn.Parameters, Torsor's names): w_red [r, d], b_red [r],
    w_plucker [d, r(r−1)/2], b_plucker [d], w_gate [d, 2d], b_gate [d];
    matrices start N(0, 1/fan_in), biases 0.

    forward(h): h [..., L, d] -> [..., L, d].
    """

    def __init__(self, d, r=8, offsets=(1, 2, 4, 8), causal=False, eps=1e-6,
                 dtype=None):
        super().__init__()
        self.d, self.r, self.causal, self.eps = int(d), int(r), bool(causal), float(eps)
        self.offsets = [int(o) for o in offsets]
        c = self.r * (self.r - 1) // 2
        shapes = {"w_red": (self.r, self.d), "b_red": (self.r,),
                  "w_plucker": (self.d, c), "b_plucker": (self.d,),
                  "w_gate": (self.d, 2 * self.d), "b_gate": (self.d,)}
        for name, shape in shapes.items():
            self.register_parameter(name, torch.nn.Parameter(torch.zeros(shape, dtype=dtype)))
        self.reset_parameters()

    def reset_parameters(self):
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]))
                else:
                    p.zero_()

    def source(self):
        return """model TorsorNNGrassmannMix {
  dim B;
  dim L;
  dim D = %d;
  dim R = %d;
  dim C = %d;
  dim D2 = %d;
  input h: f32[B, L, D];
  param w_red: f32[R, D];
  param b_red: f32[R];
  param w_plucker: f32[D, C];
  param b_plucker: f32[D];
  param w_gate: f32[D, D2];
  param b_gate: f32[D];
  output y = grassmann_mix(h, w_red = w_red, b_red = b_red, w_plucker = w_plucker,
                           b_plucker = b_plucker, w_gate = w_gate, b_gate = b_gate,
                           offsets = [%s], causal = %s, eps = %r);
}
""" % (self.d, self.r, self.r * (self.r - 1) // 2, 2 * self.d,
            ", ".join(str(o) for o in self.offsets), "true" if self.causal else "false",
            self.eps)

    def forward(self, h):
        if h.dim() < 2 or h.shape[-1] != self.d:
            raise InvalidArgumentError("GrassmannMix: expected h [..., L, %d], got %s"
                                       % (self.d, list(h.shape)))
        L = h.shape[-2]
        params = [self.w_red, self.b_red, self.w_plucker, self.b_plucker, self.w_gate,
                  self.b_gate]
        return self._run(self.source, [h.reshape(-1, L, self.d)], params, h.shape)

    def extra_repr(self):
        return "d=%d, r=%d, offsets=%s, causal=%s" % (self.d, self.r, self.offsets,
                                                       self.causal)


class RelationalAttention(_OneOp):
    """Attention in the O(d) invariants (docs/math.md §4, docs/relational.md):
    score^h_ij = scale·x_i G_QK^h x_jᵀ, out_i = Σ_h Σ_j softmax_j(score^h)
    x_j G_VO^h.

    d, heads  feature width and number of heads; scale defaults to
              1/√(d/heads); causal keeps j ≤ i
    Params: g_qk, g_vo [heads, d, d]; they start N(0, 1/d²) and
    N(0, 1/(d·heads)).

    forward(x): x [..., L, d] -> [..., L, d] (no norm and no residual:
    write relational_norm / the residual around it).
    """

    def __init__(self, d, heads=1, scale=None, causal=False, dtype=None):
        super().__init__()
        self.d, self.heads, self.causal = int(d), int(heads), bool(causal)
        self.scale = float(scale) if scale is not None else 1.0 / math.sqrt(self.d / self.heads)
        self.g_qk = torch.nn.Parameter(torch.zeros(self.heads, self.d, self.d, dtype=dtype))
        self.g_vo = torch.nn.Parameter(torch.zeros(self.heads, self.d, self.d, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        with torch.no_grad():
            self.g_qk.normal_(0.0, 1.0 / self.d)
            self.g_vo.normal_(0.0, 1.0 / math.sqrt(self.d * self.heads))

    def source(self):
        return """model TorsorNNRelationalAttention {
  dim B;
  dim L;
  dim D = %d;
  dim H = %d;
  input x: f32[B, L, D];
  param g_qk: f32[H, D, D];
  param g_vo: f32[H, D, D];
  output y = relational_attention(x, g_qk = g_qk, g_vo = g_vo, heads = H,
                                  scale = %r, causal = %s);
}
""" % (self.d, self.heads, self.scale, "true" if self.causal else "false")

    def forward(self, x):
        if x.dim() < 2 or x.shape[-1] != self.d:
            raise InvalidArgumentError("RelationalAttention: expected x [..., L, %d], "
                                       "got %s" % (self.d, list(x.shape)))
        L = x.shape[-2]
        return self._run(self.source, [x.reshape(-1, L, self.d)],
                         [self.g_qk, self.g_vo], x.shape)

    def extra_repr(self):
        return "d=%d, heads=%d, scale=%g, causal=%s" % (self.d, self.heads, self.scale,
                                                         self.causal)


# ---------------------------------------------------------------------------
# Block attention between two token sets (what a ring of ranks computes).
# ---------------------------------------------------------------------------

_blocks = {}


def _block_model(source, dtype, opt, target="cpu", arch=None):
    """The compiled one-op block model of `source` at dtype for the target
    (once per process, and once per machine through torsor.compile's
    cache)."""
    key = (source, dtype, opt, target, arch)
    with _ops_lock:
        model = _blocks.get(key)
        if model is None:
            model = _compile_for(source, dtype, opt, False, target, arch)
            _blocks[key] = model
    return model


def _block_target(name, tensors):
    """(target, arch, device) of a block call, the GPU claimed for CUDA."""
    target, arch, device = _target_of(name, tensors)
    if target == "nvptx":
        _claim_cuda_device(name, device)
    return target, arch, device


def _run_block(model, inputs, device):
    """{output name: tensor} of a block model run on `inputs` ({name:
    contiguous tensor}); CUDA tensors are bound as device memory and the
    outputs are fresh CUDA tensors (torsor.torch's device path)."""
    if device.type == "cuda":
        from .torch import _run_cuda
        outs = _run_cuda(model, model.inputs, model.params, model.outputs,
                         [inputs[s.name] for s in model.inputs], [])
        return {s.name: o for s, o in zip(model.outputs, outs)}
    return model.run(inputs)


def _block_spec(group, heads, tau, lam, causal):
    """A LieAttention holding the checked options (group, heads, τ, λ)."""
    spec = LieAttention(group, heads=heads, tau=tau, lam=lam, causal=causal)
    if len(spec.tau) not in (1, spec.heads):
        raise InvalidArgumentError("tau: expected one temperature or one per head "
                                   "(%d), got %d" % (spec.heads, len(spec.tau)))
    return spec


def _block_source(spec, D, backward):
    """The one-op model of the block forward (out, lse) or its backward."""
    attrs = "heads = %d, tau = %s, lambda = %s, causal = %s, " \
            "query_offset = qo, key_offset = ko" % (
                spec.heads, _floats(spec.tau), spec._lam_text(),
                "true" if spec.causal else "false")
    head = """%s
model TorsorNNLieAttentionBlock%s {
  dim B;
  dim Lq;
  dim Lk;
  dim D = %d;
  dim H = %d;
  input gq: %s[B, Lq];
  input gk: %s[B, Lk];
  input v: f32[B, Lk, D];
  input qo: i64;
  input ko: i64;
""" % (spec.group_decl, "Grad" if backward else "", D, spec.heads, spec.group_name,
       spec.group_name)
    if not backward:
        return head + """  let o, l = lie_attention(gq, gk, v, %s);
  output out = o;
  output lse = l;
}
""" % attrs
    return head + """  input out: f32[B, Lq, D];
  input lse: f32[B, Lq, H];
  input dout: f32[B, Lq, D];
  let a, b, c = lie_attention_grad(gq, gk, v, out, lse, dout, %s);
  output dgq = a;
  output dgk = b;
  output dv = c;
}
""" % attrs


def _block_dtype(name, tensors):
    """The compute dtype ("f32" | "f64") of the block's float tensors, which
    must all have it."""
    for label, t in tensors:
        if not isinstance(t, torch.Tensor):
            raise InvalidArgumentError("%s: %s: expected a torch.Tensor, got %s"
                                       % (name, label, type(t).__name__))
    dtypes = {t.dtype for _, t in tensors}
    if len(dtypes) != 1 or next(iter(dtypes)) not in (torch.float32, torch.float64):
        raise InvalidArgumentError(
            "%s: expected float32 or float64 tensors of one dtype, got %s" % (
                name, ", ".join("%s %s" % (label, str(t.dtype).replace("torch.", ""))
                                for label, t in tensors)))
    return ("f64", torch.float64) if dtypes == {torch.float64} else ("f32", torch.float32)


def _check_block_shapes(name, spec, g_q, g_k, v):
    """Checks g_q [B, Lq, n, n], g_k [B, Lk, n, n], v [B, Lk, D] (D divisible
    by heads); returns (B, Lq, Lk, n, D)."""
    if (g_q.dim() != 4 or g_k.dim() != 4 or v.dim() != 3 or g_q.shape[0] != g_k.shape[0]
            or g_k.shape[0] != v.shape[0] or g_k.shape[1] != v.shape[1]
            or g_q.shape[2:] != g_k.shape[2:] or g_q.shape[2] != g_q.shape[3]):
        raise InvalidArgumentError(
            "%s: expected g_q [B, Lq, n, n], g_k [B, Lk, n, n] and v [B, Lk, D], got "
            "g_q %s, g_k %s and v %s" % (name, list(g_q.shape), list(g_k.shape),
                                         list(v.shape)))
    n = int(g_q.shape[-1])
    want = BUILTIN.get(spec.group_name, (None,))[0]
    if want is not None and n != want:
        raise InvalidArgumentError("%s: %s elements are %dx%d matrices, got %dx%d"
                                   % (name, spec.group_name, want, want, n, n))
    D = int(v.shape[-1])
    if D == 0 or D % spec.heads:
        raise InvalidArgumentError("%s: the value width D = %d must be a positive "
                                   "multiple of heads = %d" % (name, D, spec.heads))
    return int(g_q.shape[0]), int(g_q.shape[1]), int(g_k.shape[1]), n, D


def _offset(name, label, value, device=None):
    try:
        return torch.tensor(int(value), dtype=torch.int64, device=device)
    except (TypeError, ValueError):
        raise InvalidArgumentError("%s: %s must be an integer, got %r"
                                   % (name, label, value)) from None


def lie_attention_block(g_q, g_k, v, group, heads=1, tau=1.0, lam=1.0, causal=False,
                        q_offset=0, k_offset=0):
    """Lie attention of queries g_q against one block of keys g_k with
    values v, and the row log-sum-exp: the piece of attention a ring of
    ranks computes per step (docs/language.md, "Two token sets").

    g_q [B, Lq, n, n], g_k [B, Lk, n, n], v [B, Lk, D] -> (out [B, Lq, D],
    lse [B, Lq, heads]). Query row i sits at global position q_offset + i
    and key j at k_offset + j; with `causal`, key j is live for row i iff
    k_offset + j <= q_offset + i. A row with no live key has out 0 and
    lse -inf. group, heads, tau, lam and causal are torsor.nn.LieAttention's.
    Two blocks merge by lse: lse = logaddexp(lse_1, lse_2) and out =
    e^(lse_1 - lse) out_1 + e^(lse_2 - lse) out_2 per head. f32 or f64;
    CPU tensors (the cpu model) or CUDA tensors (the nvptx model on that
    GPU, outputs on it); a plain function (no autograd): see
    lie_attention_block_backward."""
    name = "lie_attention_block"
    spec = _block_spec(group, heads, tau, lam, causal)
    dtype, _ = _block_dtype(name, [("g_q", g_q), ("g_k", g_k), ("v", v)])
    _check_block_shapes(name, spec, g_q, g_k, v)
    target, arch, device = _block_target(name, [g_q, g_k, v])
    model = _block_model(_block_source(spec, int(v.shape[-1]), False), dtype, _OneOp.opt,
                         target, arch)
    outs = _run_block(model, {
        "gq": g_q.detach().contiguous(), "gk": g_k.detach().contiguous(),
        "v": v.detach().contiguous(), "qo": _offset(name, "q_offset", q_offset, device),
        "ko": _offset(name, "k_offset", k_offset, device)}, device)
    return outs["out"], outs["lse"]


def lie_attention_block_backward(g_q, g_k, v, out, lse, dout, group, heads=1, tau=1.0,
                                 lam=1.0, causal=False, q_offset=0, k_offset=0):
    """The block backward of lie_attention_block (FlashAttention-2 style).

    `out` [B, Lq, D] and `lse` [B, Lq, heads] are the GLOBAL ones (merged
    over every key block), `dout` [B, Lq, D] the cotangent of `out`; with
    P = exp(s - lse) and D_i = <dO_i, O_i> per head this returns this key
    block's part of the gradients: (dg_q [B, Lq, n, n], dg_k [B, Lk, n, n],
    dv [B, Lk, D]). Summed over all key blocks (and, for a token that is
    both a query and a key, over both roles) they are the gradients
    torsor.nn.LieAttention's autograd gives, g's in the same ambient
    convention (torsor.torch.ambient_group_gradient)."""
    name = "lie_attention_block_backward"
    spec = _block_spec(group, heads, tau, lam, causal)
    dtype, _ = _block_dtype(name, [("g_q", g_q), ("g_k", g_k), ("v", v), ("out", out),
                                   ("lse", lse), ("dout", dout)])
    B, Lq, Lk, n, D = _check_block_shapes(name, spec, g_q, g_k, v)
    for label, t, want in (("out", out, [B, Lq, D]), ("lse", lse, [B, Lq, spec.heads]),
                           ("dout", dout, [B, Lq, D])):
        if list(t.shape) != want:
            raise InvalidArgumentError("%s: expected %s of shape %s, got %s"
                                       % (name, label, want, list(t.shape)))
    target, arch, device = _block_target(name, [g_q, g_k, v, out, lse, dout])
    model = _block_model(_block_source(spec, D, True), dtype, _OneOp.opt, target, arch)
    g_q, g_k = g_q.detach().contiguous(), g_k.detach().contiguous()
    outs = _run_block(model, {
        "gq": g_q, "gk": g_k, "v": v.detach().contiguous(),
        "out": out.detach().contiguous(), "lse": lse.detach().contiguous(),
        "dout": dout.detach().contiguous(), "qo": _offset(name, "q_offset", q_offset, device),
        "ko": _offset(name, "k_offset", k_offset, device)}, device)
    from .torch import ambient_group_gradient
    source = spec.group_decl or None
    dg_q = ambient_group_gradient(spec.group_name, g_q, outs["dgq"], source)
    dg_k = ambient_group_gradient(spec.group_name, g_k, outs["dgk"], source)
    return dg_q, dg_k, outs["dv"]
