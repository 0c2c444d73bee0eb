# lie_attention over declared groups that are direct sums of ideals
# (GroupStructure.h, "Direct sums"; Groups/Product.cpp), compiled with
# --grad in f64: so(3) ⊕ so(2) (factored pair forms side by side), se(2) ⊕ ℝ
# (se(2) next to a 1×1 block of scalings), the torus in a basis that mixes
# its factors (the factors' logs per pair), and so(2) ⊕ ℝ² with a sheared
# translation basis (nilpotent factors); and the Heisenberg group, whose
# pair form is the exact series of a⁻¹b − I on its non-zero entries. The
# flash backward differentiates these formulas formula by formula. Gradients against
# fourth-order central differences as in declared-attention-gradients.py
# (L = 1, 3, 4, 5, 9 on random poses, near the identity, and every other
# pose turned by π − 1e-2 in its first rotation factor); tolerance 1e-7
# relative to the gradient's largest entry; left-invariance to 1e-9. (The
# random poses keep every pair's relative angles away from π by more than
# the differences' steps: there dist2 has a kink.)
#
# RUN: env TORSOR_CACHE_DIR=%t.cache %python %s | FileCheck %s
# CHECK: ok SO3xSO2
# CHECK: ok SE2xR causal
# CHECK: ok Torus
# CHECK: ok SO2xR2 causal
# CHECK: ok Heis3
# CHECK: all declared-group attention gradients match
import numpy as np

import declared_gradients

NEAR_PI = np.pi - 1e-2
PI_COORDS = {
    "SO3xSO2": [0, 0, NEAR_PI, 0],
    "SE2xR": [0, 0, NEAR_PI, 0],
    "Torus": [NEAR_PI, -NEAR_PI],   # θ₁ = π − 1e-2, θ₂ = 0
    "SO2xR2": [NEAR_PI, 0, 0],
    "Heis3": [1.5, -1.0, 2.0],  # (no rotation: a large element instead)
}

GROUPS = {
    "SO3xSO2": ("""
group SO3xSO2 {
  matrix 5;
  generator Wy = [[0, 0, 1, 0, 0], [0, 0, 0, 0, 0], [-1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator Wx = [[0, 0, 0, 0, 0], [0, 0, -1, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator Wz = [[0, -1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator J = [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, -1.5], [0, 0, 0, 1.5, 0]];
  norm rot = Wy, Wx, Wz;
  norm spin = J;
}""", "[[1.0, 0.5], [0.25, 2.0]]", False),
    "SE2xR": ("""
group SE2xR {
  matrix 4;
  generator S = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0.5, 0], [0, 0, 0, 0]];
  generator Tx = [[0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  generator R = [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  generator Ty = [[0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]];
  norm scale = S;
  norm pose = Tx, R, Ty;
}""", "[1.0, 0.5]", True),
    "Torus": ("""
group Torus {
  matrix 4;
  generator A = [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 0, -1], [0, 0, 1, 0]];
  generator B = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, -1], [0, 0, 1, 0]];
  norm a = A;
  norm b = B;
}""", "[[1.0, 0.5], [0.25, 2.0]]", False),
    "SO2xR2": ("""
group SO2xR2 {
  matrix 5;
  generator J = [[0, -1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator P = [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 2], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator Q = [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]];
  norm rot = J;
  norm trans = P, Q;
}""", "[1.0, 0.5]", True),
    "Heis3": ("""
group Heis3 {
  matrix 3;
  generator X = [[0, 1, 0], [0, 0, 0], [0, 0, 0]];
  generator Y = [[0, 0, 0], [0, 0, 1], [0, 0, 0]];
  generator Z = [[0, 0, 2], [0, 0, 0], [0, 0, 0]];
  norm plane = X, Y;
  norm center = Z;
}""", "[[1.0, 0.5], [0.25, 2.0]]", False),
}


declared_gradients.run(GROUPS, PI_COORDS)
