# End-to-end test of examples/grassmann_lm.tsr at the paper settings (d = 256,
# r = 32, offsets {1, 2, 4, 8, 12, 16}, 6 layers, d_ff = 1024, causal):
# torsorc (f32, f32 -O0, f64) + torsor-run on seeded inputs against the
# independent float64 reference test/lib/model_reference.py (Plücker
# coordinates p_ab = z_t,a z_{t-D},b - z_t,b z_{t-D},a, p/max(|p|, eps), mean
# over the offsets whose partner t - D is inside the sequence, 0 for t = 0,
# sigmoid gate; then LayerNorm, GELU FFN, residual).
# L = 24 < 2*16: most tokens have only some offsets in range, so the edge
# rule of the mean is exercised on every layer.
#
# Params are normal / sqrt(fan_in) with fan_in the contracted dim: shape[-1]
# for w_red [r, d], w_plu [d, C(r,2)], w_gate [d, 2d] (applied as W h), and
# shape[-2] for W1, W2, W_out (applied as h @ W).
#
# Tolerances, max |err| / max |reference|: f32 2e-5 (six layers of 256- and
# 1024-term matmuls, 496-term Plücker norms and LayerNorms; measured ~8e-7),
# f64 1e-10 (measured ~2e-15), -O0 vs default f32 2e-5.
#
# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
import os

import model_reference as R
from model_runner import example_suite

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "grassmann_lm.tsr")


def fan_in(name, shape):
    if name.rsplit(".", 1)[-1] in ("w_red", "w_plu", "w_gate"):
        return shape[-1]
    return shape[-2] if len(shape) >= 2 else 1


example_suite(EX, R.grassmann_lm, {"L": 24}, {},
              tol={"f32": 2e-5, "f64": 1e-10, "inv_f32": 2e-5, "inv_f64": 1e-10,
                   "O0": 2e-5}, seed=5, fan_in=fan_in)
