# lie_attention's f32 backward over SL(2) and Sim(2), whose pair forms in
# f32 use the fused kernels' polynomial log, log1p, expm1 and atan2
# (KernelMath.h) in the backward too: the f32 -O2 gradients against the
# f64 -O2 gradients (which declared-attention-gradients.py checks against
# finite differences) on the same f32-rounded inputs and cotangents, at
# L = 9 and 33 (one and three vectors of 16 keys, partial last ones), on
# random poses, poses within ~1e-4 of one another (θ → 0) and every other
# pose turned by π − 1e-2 (θ → π); the f32 -O0 backward (unfused, libm)
# on the same inputs alongside. Error: the largest entry difference
# relative to the gradient's largest entry; tolerance 1e-4 (measured
# ≤ 1.6e-6 on random poses, ≤ 9e-6 next to a half turn, where the log's
# conditioning is π/(π − θ) ≈ 300), and 2e-3 near the identity: there
# every g_i⁻¹g_j − I is ~1e-4, which f32 forms to ε/1e-4 ≈ 1e-3 relative
# on any path (measured 2.9e-4, -O2 and -O0 alike).
#
# RUN: env TORSOR_CACHE_DIR=%t.cache %python %s | FileCheck %s
# CHECK: ok SL2
# CHECK: ok Sim2
# CHECK: all f32 declared-group attention gradients match f64
import numpy as np

from declared_gradients import generators, model_text, poses
import declared_groups
from gradcheck import torsor  # the package, from the source tree's python/

NEAR_PI = np.pi - 1e-2
GROUPS = {
    "SL2": (declared_groups.SL2, "[1.0, 0.5]", [0, -NEAR_PI / 2, NEAR_PI]),
    "Sim2": (declared_groups.SIM2, "[[1.0, 0.5], [0.25, 2.0]]", [NEAR_PI, 0, 0, 0]),
}

failed = False
for name, (decl, lam, pi_coords) in GROUPS.items():
    gens = generators(decl)
    k = len(gens)

    def hat(v, gens=gens):
        return sum(c * E for c, E in zip(v, gens))
    text = model_text(name, decl, lam, False)
    m32 = torsor.compile(text, dtype="f32", opt=2, grad=True)
    m32o0 = torsor.compile(text, dtype="f32", opt=0, grad=True)
    m64 = torsor.compile(text, dtype="f64", opt=2, grad=True)
    tol = {"random": 1e-4, "near-identity": 2e-3, "near-pi": 1e-4}
    rng = np.random.default_rng(5)
    worst = {}
    for L in (9, 33):
        for kind in ("random", "near-identity", "near-pi"):
            g = poses(rng, hat, k, L, kind, pi_coords).astype(np.float32)
            x = rng.standard_normal((L, 4)).astype(np.float32)
            cot = {"y": rng.standard_normal((L, 4)).astype(np.float32)}
            g32 = m32.backward({"g": g, "x": x}, cot)
            g0 = m32o0.backward({"g": g, "x": x}, cot)
            g64 = m64.backward({"g": g.astype(np.float64), "x": x.astype(np.float64)},
                               {"y": cot["y"].astype(np.float64)})
            for tag, grads in (("-O2", g32), ("-O0", g0)):
                for gname, ref in g64.items():
                    got = np.asarray(grads[gname], np.float64)
                    scale = max(float(np.max(np.abs(ref))), 1e-300)
                    err = float(np.max(np.abs(got - ref))) / scale
                    if not np.isfinite(got).all():
                        err = float("inf")
                    key = (kind, tag)
                    worst[key] = max(worst.get(key, 0.0), err)
    ok = all(e <= tol[kind] for (kind, _), e in worst.items())
    failed |= not ok
    print("%s %s: %s" % ("ok" if ok else "FAIL", name,
                          ", ".join("%s %s %.2e" % (kind, tag, e)
                                    for (kind, tag), e in worst.items())))

print("all f32 declared-group attention gradients match f64" if not failed
      else "some f32 declared-group attention gradients do not match f64")
