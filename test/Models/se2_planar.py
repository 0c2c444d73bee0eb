# End-to-end test of examples/se2_planar.tsr: torsorc (f32, f32 -O0, f64) +
# torsor-run on seeded inputs against the independent float64 reference
# test/lib/model_reference.py (SciPy logm per pose pair), plus left invariance
# of both outputs in `pose` (the manifest must claim it).
#
# Tolerances, max |err| / max |reference| per output:
#  - f32 2e-5: the f32 model sees the inputs rounded to f32 (relative poses
#    off by ~1e-7), computes SE(2) logs in f32 (~1e-7 relative) and softmax
#    scores up to |s| ~ 100 (tau 0.25) whose absolute error ~1e-5 moves the
#    weights by ~1e-5 relative, then two 32-term matmuls and an RMS norm.
#    Measured ~2e-7; 2e-5 leaves room for fused/reassociated code.
#  - f64 1e-10: the same computation in double (measured ~5e-16).
#  - invariance f32 2e-5: h.g_i is rounded to f32 again, the same size of
#    perturbation as above. f64 1e-10.
#  - -O0 vs default (both f32) 2e-5: same bound as the reference check.
# T = 24: the SciPy reference takes T(T-1)/2 = 276 matrix logs (a few s).
#
# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
import os

import model_reference as R
from model_runner import example_suite

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "se2_planar.tsr")
example_suite(EX, R.se2_planar, {"T": 24}, {"pose": True},
              tol={"f32": 2e-5, "f64": 1e-10, "inv_f32": 2e-5, "inv_f64": 1e-10,
                   "O0": 2e-5}, seed=2)
