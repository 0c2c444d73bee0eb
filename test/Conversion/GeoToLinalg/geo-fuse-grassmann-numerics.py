# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""geo-fuse-grassmann (the fused geo.grassmann_mix of -O1 and above) against
the -O0 oracle and an independent NumPy float64 reference.

Every case is compiled twice by torsorc, at -O0 (convert-geo-to-linalg's
unfused lowering) and at -O2 (geo-fuse-grassmann, then torsor-tile-dense on
its linear layers), and both are checked against the reference, which
forms every Plücker vector of every offset explicitly (MATH.md §3).

Adversarial inputs:
  - exactly parallel z_t, z_{t−Δ} (repeated rows of h: p = 0, guarded by
    eps, the pair contributes b_plu only);
  - near-parallel pairs, both above eps (‖p‖ ~ 1e-4) and inside the guard
    (‖p‖ ~ 1e-9 < eps): f64 only, since in f32 the rounding of z alone moves
    p̂ by ~1e-7 / ‖p‖ in *any* evaluation order, the oracle's included;
  - offsets ≥ L (rows without a valid partner: g = 0), L = 0 and L = 1;
  - causal (t − Δ) and looking ahead (t + Δ), a batch dim, d and r large
    enough that the linear layers run on the vectorized register tiles.

Tolerances: f64 1e-10 absolute, except near-parallel pairs (derived at
those cases: the Lagrange norm cancels to ~1e-16 of ‖z_t‖²‖z_Δ‖²); f32
1e-5 on O(1) outputs, also between -O2 and -O0.
"""
import numpy as np

from torsor_testing import CompiledModule, Report, dps_function

rng = np.random.default_rng(11)
report = Report("geo-fuse-grassmann vs -O0 and float64")


def plucker(u, v):
    r = u.shape[-1]
    return np.stack([u[..., a] * v[..., b] - u[..., b] * v[..., a]
                     for a in range(r) for b in range(a + 1, r)], -1)


def reference(h, wr, br, wp, bp, wg, bg, offsets, causal, eps):
    L = h.shape[-2]
    z = h @ wr.T + br
    acc = np.zeros_like(h)
    count = np.zeros(h.shape[:-1] + (1,))
    for delta in offsets:
        for t in range(L):
            s = t - delta if causal else t + delta
            if not 0 <= s < L:
                continue
            p = plucker(z[..., t, :], z[..., s, :])
            p = p / np.maximum(np.linalg.norm(p, axis=-1, keepdims=True), eps)
            acc[..., t, :] += p @ wp.T + bp
            count[..., t, :] += 1
    g = acc / np.maximum(count, 1)
    alpha = 1 / (1 + np.exp(-(np.concatenate([h, g], -1) @ wg.T + bg)))
    return alpha * h + (1 - alpha) * g


CASES = []


def case(label, h, r, offsets, causal, dtypes=("f64", "f32"), eps=1e-6,
         tol64=1e-10):
    d = h.shape[-1]
    pc = r * (r - 1) // 2
    params = [rng.standard_normal(s) / np.sqrt(s[-1]) for s in
              ((r, d), (r,), (d, pc), (d,), (d, 2 * d), (d,))]
    for dt in dtypes:
        CASES.append((label, dt, h, params, offsets, causal, eps,
                      tol64 if dt == "f64" else 1e-5))


def function(name, shape, params, offsets, causal, eps, dt):
    shapes = [[s if i != len(shape) - 2 else None for i, s in enumerate(shape)]]
    shapes += [list(p.shape) for p in params]
    attrs = "offsets = array<i64: %s>, eps = %.6e : f64%s" % (
        ", ".join(map(str, offsets)), eps, ", causal" if causal else "")

    def body(a):
        types = ", ".join("tensor<%s>" % "x".join(
            ["?" if s is None else str(s) for s in sh] + [dt]) for sh in shapes)
        out = "tensor<%s>" % "x".join(
            ["?" if s is None else str(s) for s in shapes[0]] + [dt])
        return ("  %%r = geo.grassmann_mix %s {%s} : (%s) -> %s"
                % (", ".join(a), attrs, types, out), ["%r"])
    return dps_function(name, [(s, dt) for s in shapes], [(shapes[0], dt)], body)


# Well-conditioned: random rows, several offsets, both directions, a batch.
for causal in (True, False):
    case("random d=40 r=12 L=37 %s" % ("causal" if causal else "ahead"),
         rng.standard_normal((2, 37, 40)), 12, (1, 2, 4, 8, 12, 16), causal)
# Offsets ≥ L, and the degenerate lengths.
case("offsets >= L (L=5, offsets 3 5 9)", rng.standard_normal((5, 16)), 6,
     (3, 5, 9), True)
case("L=1", rng.standard_normal((1, 16)), 6, (1, 2), False)
case("L=0", rng.standard_normal((0, 16)), 6, (1, 2), True)
# Exactly parallel pairs: h_1 = h_2 = h_3, so z_1 ∧ z_2 = 0 exactly.
h = rng.standard_normal((9, 16))
h[2] = h[1]
h[3] = h[1]
for causal in (True, False):
    case("parallel rows %s" % ("causal" if causal else "ahead"), h, 6,
         (1, 2), causal)
# Near-parallel pairs (f64), ‖z‖ ≈ 3: ‖p‖ ≈ 1e-4 (above eps) and ≈ 1e-9
# (guarded). Above eps the Lagrange norm is good to ε_mach (‖z‖² / ‖p‖)²
# ≈ 1e-16 · 1e9 relative; inside the guard every evaluation, the oracle's
# included, rounds p to ε_mach ‖z‖² and divides by eps: ≈ 1e-9.
for scale, tol in ((1e-4, 1e-7), (1e-9, 1e-8)):
    h = rng.standard_normal((9, 16))
    h[1:] = h[0] + scale * rng.standard_normal((8, 16))
    case("near-parallel %g causal" % scale, h, 6, (1, 2, 4), True,
         dtypes=("f64",), tol64=tol)

texts = []
for i, (label, dt, h, params, offsets, causal, eps, _) in enumerate(CASES):
    texts.append(function("case%d" % i, h.shape, params, offsets, causal, eps, dt))
text = "\n".join(texts)
modules = {opt: CompiledModule(text, extra_args=(opt,)) for opt in ("-O0", "-O2")}

for i, (label, dt, h, params, offsets, causal, eps, tol) in enumerate(CASES):
    np_dt = np.float64 if dt == "f64" else np.float32
    args = [np.ascontiguousarray(a, np_dt) for a in (h, *params)]
    seen = [a.astype(np.float64) for a in args]
    ref = reference(*seen, offsets, causal, eps)
    outs = {}
    for opt, mod in modules.items():
        out = np.zeros(h.shape, np_dt)
        mod.call("case%d" % i, *args, out)
        outs[opt] = out.astype(np.float64)
    err = lambda a, b: np.max(np.abs(a - b)) if a.size else 0.0
    report.check("%s %s -O2 vs f64" % (label, dt), err(outs["-O2"], ref), tol)
    report.check("%s %s -O0 vs f64" % (label, dt), err(outs["-O0"], ref), tol)
    report.check("%s %s -O2 vs -O0" % (label, dt),
                 err(outs["-O2"], outs["-O0"]), tol)
report.finish()
