# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""geo.flash_lie_attention_grad against central finite differences.

The flash backward (geo-decompose-attention-grad) returns the gradients of
f = ⟨C, flash_lie_attention(q, kᵀ, v)⟩ with respect to the query features,
the feature-major key features and the values. The reference is the central
finite difference of f, computed by calling the compiled forward op (the
fused, tiled forward kernel, float64, libm) — nothing of the backward is
shared with it.

Every built-in group, 2 heads, causal and not, L = 13 (not a multiple of
the query tile or of the vector width: the remainder paths run) and L = 1.
Pose sets: random; all poses within θ ~ 1e-7 of one another (every pair
next to the identity, where the pair forms switch to series); pairs at
θ = π − 1e-3 from the first pose (the SO(3)/SE(3) near-π branch; the FD
step stays on one side of π). Tolerance 1e-7 relative to the largest
gradient entry (FD error here ≤ 1e-9). The self pair (θ = 0 exactly) is in
every set; all gradients must be finite.

f32 (SO(3) and SE(3)): the same kernel with the polynomial exp/atan2 of
the fused kernels, against the f64 gradients: relative 5e-5 (the f32 backward differentiates
f32 scores whose relative rounding is ~1e-6, amplified by the softmax).
"""
import numpy as np
from scipy.linalg import expm

from torsor_testing import CompiledModule, Report, dps_function

import importlib.util
import os
spec = importlib.util.spec_from_file_location(
    "pb", os.path.join(os.path.dirname(os.path.abspath(__file__)), "lie-pullback.py"))

# The hat maps and feature counts of lie-pullback.py, without running it.
src = open(spec.origin).read().split("\ndef main():")[0]
ns = {}
exec(compile(src, spec.origin, "exec"), ns)
GROUPS, BLOCKS, FEATURES = ns["GROUPS"], ns["BLOCKS"], ns["FEATURES"]


def tt(shape, dt):
    return "tensor<%sx%s>" % ("x".join("?" if s is None else str(s) for s in shape), dt)


def build(name, nq, nk, D, heads, dtypes):
    """One module: fwd/bwd for {full, causal} × {f64, f32}, and the pair
    features (f64), so that each group costs one torsorc run."""
    g = "#lie.group<%s>" % name
    nb = BLOCKS[name]
    tau = ", ".join("%.17e" % (0.7 + 0.6 * h) for h in range(heads))
    lam = ", ".join("%.17e" % (0.5 + 0.25 * i) for i in range(heads * nb))
    text = []
    for causal in (False, True):
        for dt in dtypes:
            attrs = "scores = #geo.scores<group = %s, heads = %d, tau = [%s], lambda = [%s]%s>" % (
                g, heads, tau, lam, ", causal" if causal else "")
            Q, KT, V = [None, nq], [nk, None], [None, D]
            suffix = "_%s_%s" % ("causal" if causal else "full", dt)
            text.append(dps_function("fwd" + suffix, [(Q, dt), (KT, dt), (V, dt)], [(V, dt)], lambda a: (
                "  %%c0 = arith.constant 0 : index\n"
                "  %%n = tensor.dim %s, %%c0 : %s\n"
                "  %%e = tensor.empty(%%n) : %s\n"
                "  %%r = geo.flash_lie_attention %s, %s, %s, %%c0, %%e {%s} : (%s, %s, %s, index, %s) -> %s"
                % (a[2], tt(V, dt), tt(V, dt), a[0], a[1], a[2], attrs, tt(Q, dt), tt(KT, dt),
                   tt(V, dt), tt(V, dt), tt(V, dt)), ["%r"])))
            text.append(dps_function("bwd" + suffix, [(Q, dt), (KT, dt), (V, dt), (V, dt), (V, dt)],
                                     [(Q, dt), (KT, dt), (V, dt)], lambda a: (
                "  %%r:3 = geo.flash_lie_attention_grad %s, %s, %s, %s, %s {%s} : (%s, %s, %s, %s, %s) -> (%s, %s, %s)"
                % (a[0], a[1], a[2], a[3], a[4], attrs, tt(Q, dt), tt(KT, dt), tt(V, dt), tt(V, dt),
                   tt(V, dt), tt(Q, dt), tt(KT, dt), tt(V, dt)), ["%r#0", "%r#1", "%r#2"])))
    return CompiledModule("\n".join(text))


def features(name, gs):
    """Query/key features by the compiled lie.pair_features (f64)."""
    return FEATURE_MODS[name](gs)


FEATURE_MODS = {}
# f32 runs the same kernel with the polynomial exp/atan2; two groups (one
# and two blocks) cover it and keep the test's compile time down.
F32_GROUPS = ("so3", "se3")


def feature_module(name, n, nq, nk):
    G, Q, K = [None, n, n], [None, nq], [None, nk]
    g = "#lie.group<%s>" % name
    mod = CompiledModule(
        dps_function("qf", [(G, "f64")], [(Q, "f64")], lambda a: (
            "  %%r = lie.pair_features %s {group = %s} : %s -> %s" % (a[0], g, tt(G, "f64"), tt(Q, "f64")), ["%r"]))
        + dps_function("kf", [(G, "f64")], [(K, "f64")], lambda a: (
            "  %%r = lie.pair_features %s {group = %s, key} : %s -> %s" % (a[0], g, tt(G, "f64"), tt(K, "f64")), ["%r"])))

    def run(gs):
        q = np.zeros((len(gs), nq))
        k = np.zeros((len(gs), nk))
        mod.call("qf", np.ascontiguousarray(gs), q)
        mod.call("kf", np.ascontiguousarray(gs), k)
        return q, np.ascontiguousarray(k.T)
    return run


def poses(rng, name, k, hat, rot, L, kind):
    out = []
    base = rng.standard_normal(k) * 0.5
    for i in range(L):
        v = rng.standard_normal(k) * 0.7
        if kind == "near-identity":
            v = base + 1e-7 * rng.standard_normal(k)
        elif kind == "near-pi" and i > 0 and rot is not None:
            v = base.copy()
            g0 = expm(hat(base))
            w = np.zeros(k)
            axis = rng.standard_normal(len(rot))
            axis = axis / np.linalg.norm(axis) if len(rot) > 1 else np.sign(axis)
            w[rot] = (np.pi - 1e-3) * axis
            others = [j for j in range(k) if j not in rot]
            w[others] = 0.3 * rng.standard_normal(len(others))
            out.append(g0 @ expm(hat(w)))
            continue
        if name == "aff2":
            v[:4] *= 0.5
        out.append(expm(hat(v)))
    return np.array(out)


def main():
    rng = np.random.default_rng(11)
    report = Report("geo.flash_lie_attention_grad vs finite differences")
    D, heads = 8, 2
    for name, n, k, d, hat, rot in GROUPS:
        nq, nk = FEATURES[name]
        feats = feature_module(name, n, nq, nk)
        f32 = name in F32_GROUPS
        mod = build(name, nq, nk, D, heads, ("f64", "f32") if f32 else ("f64",))
        for causal in (False, True):
            variant = "causal" if causal else "full"
            kinds = ["random", "near-identity"] + (["near-pi"] if rot is not None else [])
            for L, kind in [(13, kk) for kk in kinds] + [(1, "random")]:
                gs = poses(rng, name, k, hat, rot, L, kind)
                q, kT = feats(gs)
                v = rng.standard_normal((L, D))
                C = rng.standard_normal((L, D))

                def fwd(q, kT, v):
                    o = np.zeros((L, D))
                    mod.call("fwd_%s_f64" % variant, np.ascontiguousarray(q), np.ascontiguousarray(kT),
                             np.ascontiguousarray(v), o)
                    return o
                o = fwd(q, kT, v)
                dq, dkT, dv = np.zeros_like(q), np.zeros_like(kT), np.zeros_like(v)
                mod.call("bwd_%s_f64" % variant, q, kT, v, o, C, dq, dkT, dv)
                label = "%s %s L=%d %s" % (name, "causal" if causal else "full", L, kind)
                report.check(label + " finite", int(not all(np.all(np.isfinite(x)) for x in (dq, dkT, dv))), 0)
                h = 1e-6
                for which, x, ours in (("dq", q, dq), ("dk", kT, dkT), ("dv", v, dv)):
                    ref = np.zeros_like(x)
                    for idx in np.ndindex(*x.shape):
                        args = {"dq": [q, kT, v], "dk": [q, kT, v], "dv": [q, kT, v]}[which]
                        pos = {"dq": 0, "dk": 1, "dv": 2}[which]
                        plus = [a.copy() for a in args]
                        minus = [a.copy() for a in args]
                        plus[pos][idx] += h
                        minus[pos][idx] -= h
                        ref[idx] = (np.sum(C * fwd(*plus)) - np.sum(C * fwd(*minus))) / (2 * h)
                    scale = max(np.max(np.abs(ref)), 1.0)
                    report.check("%s %s (rel)" % (label, which), np.max(np.abs(ours - ref)) / scale, 1e-7)
                    if which == "dv":
                        continue
                if not f32:
                    continue
                # f32 against f64.
                a32 = [np.ascontiguousarray(a.astype(np.float32)) for a in (q, kT, v)]
                o32 = np.zeros((L, D), np.float32)
                mod.call("fwd_%s_f32" % variant, *a32, o32)
                g32 = [np.zeros_like(a) for a in a32]
                mod.call("bwd_%s_f32" % variant, *a32, o32, np.ascontiguousarray(C.astype(np.float32)), *g32)
                for which, ours, ref in zip(("dq", "dk", "dv"), g32, (dq, dkT, dv)):
                    scale = max(np.max(np.abs(ref)), 1.0)
                    report.check("%s f32 %s vs f64 (rel)" % (label, which),
                                 np.max(np.abs(ours - ref)) / scale, 5e-5)
    report.finish()


main()
