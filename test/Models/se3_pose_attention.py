# End-to-end test of examples/se3_pose_attention.tsr (two pre-norm blocks of
# 4-head SE(3) Lie attention + GELU FFN, per-head tau and (rot, trans) lambda):
# torsorc (f32, f32 -O0, f64) + torsor-run on seeded inputs against the
# independent float64 reference test/lib/model_reference.py (SciPy logm per
# pose pair, block params blocks.<i>.<name>), plus left invariance in `pose`.
#
# Tolerances, max |err| / max |reference|:
#  - f32 2e-5: f32-rounded inputs and f32 SE(3) logs (~1e-7 relative), scores
#    up to |s| ~ 50 (tau 0.5) with ~1e-5 absolute error, then 64- and
#    256-term matmuls and three LayerNorms; measured ~3e-7, so 2e-5 leaves
#    ~50x for fused/reassociated code.
#  - f64 1e-10 (measured ~1e-15). Invariance: f32 2e-5 (h.g_i rounded to f32
#    again, same perturbation size), f64 1e-10. -O0 vs default f32: 2e-5.
# L = 24: 276 SciPy logs, computed once and shared by both blocks.
#
# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
import os

import model_reference as R
from model_runner import example_suite

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                  "se3_pose_attention.tsr")
example_suite(EX, R.se3_pose_attention, {"L": 24}, {"pose": True},
              tol={"f32": 2e-5, "f64": 1e-10, "inv_f32": 2e-5, "inv_f64": 1e-10,
                   "O0": 2e-5}, seed=3)
