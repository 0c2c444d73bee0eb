# End-to-end test of examples/heisenberg.tsr: 2-head Lie attention over the
# declared Heisenberg group H(3) (3x3 unitriangular, generators X, Y, Z with
# [X, Y] = Z, lambda blocks plane = (X, Y), center = Z), against the float64
# reference test/lib/model_reference.py (SciPy logm, coordinates by least
# squares on the generators, docs/language.md §7), plus left invariance in
# `g`. Random elements are expm of random generator combinations.
#
# Tolerances, max |err| / max |reference|: f32 2e-5 (nilpotent log is exact
# polynomial arithmetic; scores of size ~10), f64 1e-10, invariance f32 2e-5,
# f64 1e-10, -O0 vs default 2e-5.
#
# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
import os

import model_reference as R
from model_runner import example_suite

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "heisenberg.tsr")
example_suite(EX, R.heisenberg, {"L": 24}, {"g": True},
              tol={"f32": 2e-5, "f64": 1e-10, "inv_f32": 2e-5, "inv_f64": 1e-10,
                   "O0": 2e-5}, seed=6)
