# geo.lie_attention with batch dims ([B, C, L] poses) differentiated by the
# flash backward (geo.flash_lie_attention_grad over the batch, with the
# fused forward's log-sum-exp at -O2), in f64, against fourth-order
# central differences of f = Σ_k <cot_k, out_k> (the forward alone is
# evaluated for them, not the backward).
#
# The batch handling of the kernel is the same for every group (the
# group only enters the pair form, which test/Numerics/flash-attention-
# grad.py checks for every built-in group); to keep the compile short
# (~10 s), one model with two attentions of 2 heads: SO(2) not causal and
# SE(3) (two blocks) causal; B = 2, C = 2 batch dims.
# L = 0 (empty gradients), 1, 3 and 5 (the query tile R = 4 ± 1), 9 (the
# f64 vector width 8 + 1 on AVX-512; on AVX2, 4 + 5); random poses, and
# for SE(3) also every pose within ~1e-7 of one another (the series
# branches next to the identity) and pairs at θ = π − 1e-2 from the first
# pose (the near-π branch; the FD step stays on one side of π). Group inputs
# are perturbed as g·exp(ε·hat(e_k)) (the left-trivialised gradient of
# docs/training.md). Tolerance 1e-7 relative to the gradient's largest
# entry; near the identity the pose gradients are O(θ) ~ 1e-7, below what
# a difference quotient resolves relatively, so there the scale is
# max(largest entry, 1) (an absolute 1e-7, as flash-attention-grad.py).
# Every gradient must be finite.
#
# RUN: env TORSOR_CACHE_DIR=%t.cache %python %s %torsor_src | FileCheck %s
# CHECK: ok L=0
# CHECK: ok L=1
# CHECK: ok L=3
# CHECK: ok L=5
# CHECK: ok L=9
# CHECK: ok near-identity
# CHECK: ok near-pi
# CHECK: all batched attention gradients match
import os
import sys

import numpy as np
from scipy.linalg import expm

import gradcheck

src = sys.argv[1]
# The hat maps and block counts of test/Numerics/lie-pullback.py, without
# running it.
path = os.path.join(src, "test", "Numerics", "lie-pullback.py")
ns = {}
exec(compile(open(path).read().split("\ndef main():")[0], path, "exec"), ns)
GROUPS, BLOCKS = ns["GROUPS"], ns["BLOCKS"]
NAMES = {"so2": "SO2", "se2": "SE2", "so3": "SO3", "se3": "SE3", "aff2": "Aff2", "sim3": "Sim3"}

lines = ["model BatchGrad {", "  dim B;", "  dim C;", "  dim L;", "  dim D = 4;",
         "  input x: f32[B, C, L, D];"]
GROUPS = [g for g in GROUPS if g[0] in ("so2", "se3")]
CAUSAL = {"so2": False, "se3": True}
for name, *_ in GROUPS:
    lines.append("  input g_%s: %s[B, C, L];" % (name, NAMES[name]))
for name, *_ in GROUPS:
    nb = BLOCKS[name]
    lam = "[%s]" % ", ".join("[%s]" % ", ".join("%.2f" % (0.5 + 0.25 * (h * nb + b)) for b in range(nb))
                             for h in range(2))
    for causal in (CAUSAL[name],):
        lines.append("  output %s_%s = lie_attention(g_%s, x, heads = 2, tau = [0.7, 1.3], "
                     "lambda = %s%s);" % (name, "causal" if causal else "full", name, lam,
                                          ", causal = true" if causal else ""))
lines.append("}")
model = gradcheck.compile_grad("\n".join(lines) + "\n", opt=2)

B, C = 2, 2


def poses(rng, name, k, hat, rot, L, kind):
    out = np.zeros((B, C, L) + hat(np.zeros(k)).shape)
    for b in range(B):
        for c in range(C):
            base = rng.standard_normal(k) * 0.5
            for i in range(L):
                v = rng.standard_normal(k) * 0.6
                if name == "aff2":
                    v[:4] *= 0.5
                if kind == "near-identity":
                    v = base + 1e-7 * rng.standard_normal(k)
                elif kind == "near-pi" and i > 0:
                    w = np.zeros(k)
                    axis = rng.standard_normal(len(rot))
                    w[rot] = (np.pi - 1e-2) * axis / np.linalg.norm(axis)
                    others = [j for j in range(k) if j not in rot]
                    w[others] = 0.3 * rng.standard_normal(len(others))
                    out[b, c, i] = expm(hat(base)) @ expm(hat(w))
                    continue
                out[b, c, i] = expm(hat(v))
    return out


def check(L, kind, groups, seed):
    rng = np.random.default_rng(seed)
    ins = {"x": rng.standard_normal((B, C, L, 4))}
    for name, n, k, d, hat, rot in GROUPS:
        ins["g_" + name] = poses(rng, name, k, hat, rot, L, kind if name in groups else "random")
    outs = model.run(ins)
    cots = {o: rng.standard_normal(np.shape(v)) for o, v in outs.items()}
    grads = model.backward(ins, cots)
    finite = all(np.isfinite(v).all() for v in grads.values())
    if L == 0:
        shapes = all(grads["grad." + a].shape[:3] == (B, C, 0) for a in ins)
        return (0.0 if finite and shapes else 1.0), finite

    def objective(trial):
        out = model.run(trial)
        return sum(float(np.sum(np.asarray(out[o]) * cots[o])) for o in cots)

    h = {"near-pi": 1e-4, "near-identity": 1e-5}.get(kind, 1e-3)
    worst = 0.0
    # The values: a few entries (every output depends on x).
    picks = [tuple(rng.integers(0, s) for s in ins["x"].shape) for _ in range(3)]
    fds, gs = [], []
    for idx in picks:
        def f(eps):
            x = ins["x"].copy()
            x[idx] += eps
            return objective({**ins, "x": x})
        fds.append((8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h))
        gs.append(grads["grad.x"][idx])
    err = np.max(np.abs(np.array(fds) - gs)) / max(np.max(np.abs(grads["grad.x"])), 1e-300)
    worst = max(worst, float(err))
    # Each group's poses: a few (b, c, i, k) entries of the algebra gradient.
    for name, n, k, d, hat, rot in GROUPS:
        if name not in groups:
            continue
        gname = "g_" + name
        grad = grads["grad." + gname]
        fds, gs = [], []
        for _ in range(3):
            b, c, i, e = (int(rng.integers(0, s)) for s in (B, C, L, k))

            def f(eps):
                g = ins[gname].copy()
                g[b, c, i] = g[b, c, i] @ expm(hat(np.eye(k)[e] * eps))
                return objective({**ins, gname: g})
            fds.append((8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h))
            gs.append(grad[b, c, i, e])
        floor = 1.0 if kind == "near-identity" else 1e-300
        err = np.max(np.abs(np.array(fds) - gs)) / max(np.max(np.abs(grad)), floor)
        worst = max(worst, float(err))
    return worst, finite


failed = False
all_groups = [g[0] for g in GROUPS]
cases = [("L=%d" % L, L, "random", all_groups) for L in (0, 1, 3, 5, 9)]
cases += [("near-identity", 5, "near-identity", ["se3"]),
          ("near-pi", 5, "near-pi", ["se3"])]
for seed, (label, L, kind, groups) in enumerate(cases):
    worst, finite = check(L, kind, groups, seed)
    ok = worst <= 1e-7 and finite
    failed |= not ok
    print("%s %s: max relative error %.2e%s" % ("ok" if ok else "FAIL", label, worst,
                                                "" if finite else " NON-FINITE"))
print("all batched attention gradients match" if not failed else "some batched gradients do not match")
