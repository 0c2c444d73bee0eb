# geo.grassmann_mix's VJP on the bilinear form (compiler/Autodiff/
# GrassmannRules.cpp, compiler/Conversion/GeoToLinalg/GrassmannGrad.cpp)
# in f64, causal and not at -O0, causal with a batch dim at -O2:
#   * every gradient (x, W_red, b_red, W_plu, b_plu, W_gate, b_gate)
#     against fourth-order central differences, ≤ 1e-7 of the gradient
#     tensor's largest entry (test/lib/gradcheck.py), at the lengths where
#     the offsets run off the sequence: L = 1, L < max offset, L = max
#     offset − 1, max offset and max offset + 1 (tokens with t < Δ have no
#     partner Δ, token 0 none at all);
#   * the new rule against the old path (the unfused -O0 lowering swept by
#     the core rules: torsorc --grad-unfused=geo.grassmann_mix) at a longer
#     L (≤ 1e-11 relative) and where z_t = z_{t-1} (p = 0, the eps
#     branch: ≤ 1e-8);
#   * L = 0: the backward runs, every gradient is exactly zero.
#
# RUN: env TORSOR_CACHE_DIR=%t.cache %python %s | FileCheck %s
# CHECK: ok finite differences causal=True -O0:
# CHECK: ok new vs unfused causal=True -O0:
# CHECK: ok L = 0 causal=True -O0
# CHECK: ok finite differences causal=False -O0:
# CHECK: ok new vs unfused causal=False -O0:
# CHECK: ok L = 0 causal=False -O0
# CHECK: ok finite differences causal=True -O2 batch:
# CHECK: ok L = 0 causal=True -O2 batch
# CHECK: all grassmann_mix gradients match
import numpy as np

import gradcheck

OFFSETS = (1, 2, 5)
SOURCE = """model Mix {
  dim B = %(batch)d;
  dim L;
  dim D = 6;
  dim R = 4;
  dim P = 6;
  input x: f32[%(shape)s];
  param w_red: f32[R, D];
  param b_red: f32[R];
  param w_plu: f32[D, P];
  param b_plu: f32[D];
  param w_gate: f32[D, 12];
  param b_gate: f32[D];
  output y = grassmann_mix(x, r = R, w_red = w_red, b_red = b_red,
                           w_plucker = w_plu, b_plucker = b_plu,
                           w_gate = w_gate, b_gate = b_gate,
                           offsets = [%(offsets)s], causal = %(causal)s);
}
"""


def source(causal, batch):
    return SOURCE % {"batch": max(batch, 1), "shape": "B, L, D" if batch else "L, D",
                     "offsets": ", ".join(map(str, OFFSETS)),
                     "causal": "true" if causal else "false"}


def relative(a, b):
    scale = max(np.max(np.abs(a), initial=0.0), np.max(np.abs(b), initial=0.0), 1e-300)
    return float(np.max(np.abs(a - b), initial=0.0) / scale)


failed = False
top = max(OFFSETS)
# (causal, -O, batch dim): the comparison with the unfused path at -O0,
# where both compile in a fraction of a second (the rule emits the same IR
# at every level; -O2 changes only the recomputed forward's lowering and
# the tiling, covered by the -O2 finite differences with a batch dim).
for causal, opt, batch in ((True, 0, 0), (False, 0, 0), (True, 2, 2)):
    tag = "causal=%s -O%d%s" % (causal, opt, " batch" if batch else "")
    new = gradcheck.compile_grad(source(causal, batch), opt=opt)
    shape = (lambda L: (batch, L, 6)) if batch else (lambda L: (L, 6))
    # Finite differences around the offsets' edges.
    worst = 0.0
    for L in (1, 3, top - 1, top, top + 1):
        worst = max(worst, gradcheck.check_gradients(
            new, {"L": L}, seed=L, samples=4).max_error)
    ok = worst <= 1e-7
    failed |= not ok
    print("%s finite differences %s: max relative error %.2e"
          % ("ok" if ok else "FAIL", tag, worst))

    # New vs the unfused path, at a random point (1e-11) and with
    # z_t = z_{t-1} (a pair in the eps branch, its partners' terms weighted
    # 1/eps: 1e-8).
    if opt == 0:
        old = gradcheck.compile_grad(source(causal, batch), opt=opt,
                                     flags=["--grad-unfused=geo.grassmann_mix"])
        rng = np.random.default_rng(3)
        ins, params = gradcheck.random_arrays(new, {"L": 23}, rng)
        cot = {"y": rng.standard_normal(ins["x"].shape)}
        diffs = []
        for repeat, tol in ((False, 1e-11), (True, 1e-8)):
            if repeat:
                ins["x"][9] = ins["x"][8]
            grads = []
            for m in (new, old):
                m.set_params(params)
                grads.append(m.backward(ins, cot))
            diff = max(relative(grads[0][k], grads[1][k]) for k in grads[0])
            finite = all(np.isfinite(g).all() for g in grads[0].values())
            failed |= not finite or diff > tol
            diffs.append(diff if finite else np.inf)
        ok = diffs[0] <= 1e-11 and diffs[1] <= 1e-8
        print("%s new vs unfused %s: max relative difference %.2e, %.2e "
              "with z_9 = z_8" % ("ok" if ok else "FAIL", tag, *diffs))

    # L = 0: empty sequence, zero weight gradients.
    new.set_params(gradcheck.random_arrays(new, {"L": 0}, np.random.default_rng(0))[1])
    grads = new.backward({"x": np.zeros(shape(0))}, {"y": np.zeros(shape(0))})
    ok = grads["grad.x"].shape == shape(0) and all(
        not np.any(g) for g in grads.values())
    failed |= not ok
    print("%s L = 0 %s" % ("ok" if ok else "FAIL", tag))
print("all grassmann_mix gradients match" if not failed
      else "some grassmann_mix gradients do not match")
