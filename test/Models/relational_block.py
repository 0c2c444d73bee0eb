# End-to-end test of examples/relational_block.tsr (relational_norm, causal
# 4-head relational attention with scale 0.25, residual, relational_norm):
# torsorc (f32, f32 -O0, f64) + torsor-run on seeded inputs against the
# independent float64 reference test/lib/model_reference.py. No group inputs,
# so no invariance check here (the manifest must list none).
#
# Tolerances, max |err| / max |reference|: f32 2e-5 (scores x_i G x_j of
# size ~10 with ~1e-6 absolute error, 64-term products, two RMS norms;
# measured ~7e-7), f64 1e-10 (measured ~1e-15), -O0 vs default f32 2e-5.
# L = 40 also exercises the causal mask beyond one tile of a fused kernel.
#
# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
import os

import model_reference as R
from model_runner import example_suite

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                  "relational_block.tsr")
example_suite(EX, R.relational_block, {"L": 40}, {},
              tol={"f32": 2e-5, "f64": 1e-10, "inv_f32": 2e-5, "inv_f64": 1e-10,
                   "O0": 2e-5}, seed=4)
