"""One attention module lowered twice: the CPU kernel and the emulated GPU one.

The harness of test/Numerics/gpu-attention-emulated-{lse,cross}.py. A
module of geo.flash_lie_attention functions (module_text) is compiled by
the CPU pipeline as it is, and again after geo-map-attention-to-gpu with
cpu-emulation=1 (the GPU kernel's per-thread code, its blocks and threads
as host loops; gpu_emulated). each_module builds both for every group and
dtype and hands them to the suite, which draws its inputs, calls both
(run_both) and checks what it is about. The suites keep their own cases,
checks and tolerances; this file holds only what they shared.

The kernel shape GPU_OPTIONS: T = 8 threads × R = 2 rows (BQ = 16 query
rows per block), BK = 8 keys per shared tile and S = 4 keys per softmax
step; D = 8 value features in HEADS = 2 heads.
"""
import subprocess

import numpy as np

from model_runner import tool
from torsor_testing import CompiledModule, Report, dps_function

GPU_OPTIONS = "cpu-emulation=1 threads=8 rows-per-thread=2 key-tile=8 score-chunk=4"
D, HEADS = 8, 2
GROUPS = {"so3": (3, 9, 9, 1), "se3": (4, 12, 12, 2)}  # n, features q, k, blocks
TOL = {"f64": 1e-12, "f32": 1e-5}


def tt(shape, dt):
    """The MLIR tensor type of `shape` (None: a dynamic dim; []: rank 0)."""
    if not shape:
        return "tensor<%s>" % dt
    return "tensor<%sx%s>" % ("x".join("?" if s is None else str(s) for s in shape), dt)


def module_text(name, nq, nk, blocks, dt, offsets=False):
    """fwd_{full,causal}: (q, kᵀ, v) → (out, lse), or with `offsets` the
    cross form (q [Lq], kᵀ [Lk], v [Lk], qo, ko) → (out [Lq], lse [Lq]),
    the offsets rank-0 i64 tensors cast to the op's query offset and
    key_offset. τ_h = 0.7 + 0.6 h, λ_i = 0.5 + 0.25 i."""
    g = "#lie.group<%s>" % name
    tau = ", ".join("%.17e" % (0.7 + 0.6 * h) for h in range(HEADS))
    lam = ", ".join("%.17e" % (0.5 + 0.25 * i) for i in range(HEADS * blocks))
    Q, KT, V, O, S = [None, nq], [nk, None], [None, D], [None, D], [None, HEADS]
    text = []
    for causal in (False, True):
        attrs = "scores = #geo.scores<group = %s, heads = %d, tau = [%s], lambda = [%s]%s>" % (
            g, HEADS, tau, lam, ", causal" if causal else "")
        if offsets:
            args = [(Q, dt), (KT, dt), (V, dt), ([], "i64"), ([], "i64")]
            body = lambda a, attrs=attrs: (  # noqa: E731
                "  %%c0 = arith.constant 0 : index\n"
                "  %%n = tensor.dim %s, %%c0 : %s\n"
                "  %%e = tensor.empty(%%n) : %s\n"
                "  %%s = tensor.empty(%%n) : %s\n"
                "  %%qo64 = tensor.extract %s[] : tensor<i64>\n"
                "  %%ko64 = tensor.extract %s[] : tensor<i64>\n"
                "  %%qo = arith.index_cast %%qo64 : i64 to index\n"
                "  %%ko = arith.index_cast %%ko64 : i64 to index\n"
                "  %%r, %%l = geo.flash_lie_attention %s, %s, %s, %%qo key_offset %%ko, %%e lse %%s {%s} "
                ": (%s, %s, %s, index, index, %s, %s) -> (%s, %s)"
                % (a[0], tt(Q, dt), tt(O, dt), tt(S, dt), a[3], a[4], a[0], a[1], a[2], attrs,
                   tt(Q, dt), tt(KT, dt), tt(V, dt), tt(O, dt), tt(S, dt), tt(O, dt), tt(S, dt)),
                ["%r", "%l"])
        else:
            args = [(Q, dt), (KT, dt), (V, dt)]
            body = lambda a, attrs=attrs: (  # noqa: E731
                "  %%c0 = arith.constant 0 : index\n"
                "  %%n = tensor.dim %s, %%c0 : %s\n"
                "  %%e = tensor.empty(%%n) : %s\n"
                "  %%s = tensor.empty(%%n) : %s\n"
                "  %%r, %%l = geo.flash_lie_attention %s, %s, %s, %%c0, %%e lse %%s {%s} "
                ": (%s, %s, %s, index, %s, %s) -> (%s, %s)"
                % (a[2], tt(V, dt), tt(V, dt), tt(S, dt), a[0], a[1], a[2], attrs,
                   tt(Q, dt), tt(KT, dt), tt(V, dt), tt(V, dt), tt(S, dt), tt(V, dt), tt(S, dt)),
                ["%r", "%l"])
        text.append(dps_function("fwd_" + ("causal" if causal else "full"), args,
                                 [(O, dt), (S, dt)], body))
    return "\n".join(text)


def features_module(name, n, nq, nk):
    """qf, kf: the query and key pair features of elements [L, n, n] (f64)."""
    G, Q, K = [None, n, n], [None, nq], [None, nk]
    g = "#lie.group<%s>" % name
    return CompiledModule(
        dps_function("qf", [(G, "f64")], [(Q, "f64")], lambda a: (
            "  %%r = lie.pair_features %s {group = %s} : %s -> %s"
            % (a[0], g, tt(G, "f64"), tt(Q, "f64")), ["%r"]))
        + dps_function("kf", [(G, "f64")], [(K, "f64")], lambda a: (
            "  %%r = lie.pair_features %s {group = %s, key} : %s -> %s"
            % (a[0], g, tt(G, "f64"), tt(K, "f64")), ["%r"])))


def gpu_emulated(text):
    """The module with its attention mapped by the emulated GPU kernel."""
    opt = subprocess.run([tool("torsor-opt"), "-", "--geo-map-attention-to-gpu=" + GPU_OPTIONS],
                         input=text, capture_output=True, text=True)
    if opt.returncode != 0:
        raise RuntimeError("torsor-opt failed:\n" + opt.stderr)
    return CompiledModule(opt.stdout)


def poses(rng, n, L):
    """L random rotations (SO(3), n = 3) or rigid motions with standard
    normal translations (SE(3), n = 4), [L, n, n]."""
    out = []
    for _ in range(L):
        r, _ = np.linalg.qr(rng.standard_normal((3, 3)))
        r *= np.sign(np.linalg.det(r))
        g = np.eye(n)
        g[:3, :3] = r
        if n == 4:
            g[:3, 3] = rng.standard_normal(3)
        out.append(g)
    return np.array(out).reshape(L, n, n)


def features(feats, g, nq, nk):
    """(q, k): the pair features of elements g [L, n, n], f64."""
    q, k = np.zeros((len(g), nq)), np.zeros((len(g), nk))
    feats.call("qf", g, q)
    feats.call("kf", g, k)
    return q, k


def run_both(modules, fn, args, out, lse):
    """{"cpu": (out, lse), "gpu": (out, lse)}: `fn` of each module on args,
    each into fresh copies of the initial out and lse arrays."""
    results = {}
    for label, mod in (("cpu", modules[0]), ("gpu", modules[1])):
        o, s = out.copy(), lse.copy()
        mod.call(fn, *args, o, s)
        results[label] = (o, s)
    return results


def each_module(title, offsets, suite):
    """Runs suite(report, name, n, nq, nk, feats, dt, np_dt, (cpu, gpu)) for
    every group and dtype (so3, se3; f64, f32, in that order), then
    finishes the report `title`."""
    report = Report(title)
    for name, (n, nq, nk, blocks) in GROUPS.items():
        feats = features_module(name, n, nq, nk)
        for dt in ("f64", "f32"):
            text = module_text(name, nq, nk, blocks, dt, offsets)
            modules = (CompiledModule(text), gpu_emulated(text))
            np_dt = np.float64 if dt == "f64" else np.float32
            suite(report, name, n, nq, nk, feats, dt, np_dt, modules)
    report.finish()
