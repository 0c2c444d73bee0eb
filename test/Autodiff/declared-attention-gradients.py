# lie_attention over declared groups (Sim(2) affine, SL(2) linear with
# non-orthonormal generators, rotation × scale of ℝ³, SE(2) in a scaled and
# sheared basis, the 2-D Galilean group), compiled with --grad in f64. All five are recognised
# (GroupStructure.h): the flash backward differentiates the host built-in's
# closed-form pair form formula by formula (docs/lie-gradients.md).
# Sim(2) and CO3 full attention, SL(2) and SE2s causal (one
# attention per model keeps the compile time down; the kernel code is the
# same for every group). Gradients against fourth-order central
# differences: the group input along g_i ↦ g_i·exp(ε·hat(e_k))
# (left-trivialised, every entry) and the values input (6 entries), at
# L = 1, 3, 4, 5 (around the query tile, 4, and the f64 vector width)
# and 9 (several key vectors, a partial last one), on random
# poses, and at L = 5 on poses all within ~1e-4 of one another (every pair
# near the identity, where J_r → I; closer sets make the pose gradients so
# small that the differences' rounding, ~1e-12 absolute, exceeds the
# bound), and at L = 5 on poses of which every other one is turned by
# π − 1e-2 (pairs next to a half turn). Tolerance 1e-7 relative to the
# gradient's largest entry.
# Left-invariance: with every pose left-multiplied by one random h, every
# gradient is unchanged (1e-9 relative).
#
# RUN: env TORSOR_CACHE_DIR=%t.cache %python %s | FileCheck %s
# CHECK: ok Sim2
# CHECK: ok SL2 causal
# CHECK: ok CO3
# CHECK: ok SE2s causal
# CHECK: ok Gal2
# CHECK: all declared-group attention gradients match
import numpy as np

import declared_gradients
import declared_groups

# The coordinates of a rotation by π − 1e-2 in each group's basis (the
# near-π poses: the fourth-order differences stay on one side of the cut,
# where dist2 has a kink).
NEAR_PI = np.pi - 1e-2
PI_COORDS = {
    "Sim2": [NEAR_PI, 0, 0, 0],
    "SL2": [0, -NEAR_PI / 2, NEAR_PI],       # F − E/2 = [[0, −1], [1, 0]]
    "CO3": [0, 0, NEAR_PI, 0],
    "SE2s": [NEAR_PI / 2.5, 0, 0],
    "Gal2": [NEAR_PI, 0, 0, 0, 0, 0],
}

GROUPS = {
    # name: (declaration, lambda, causal)
    "Sim2": (declared_groups.SIM2, "[[1.0, 0.5], [0.25, 2.0]]", False),
    "SL2": (declared_groups.SL2, "[1.0, 0.5]", True),
    # Recognised in other bases (GroupStructure.h): rotation × scale of ℝ³
    # on Sim(3)'s closed forms, SE(2) scaled and sheared on SE(2)'s log per
    # pair.
    "CO3": ("""
group CO3 {
  matrix 3;
  generator Wx = [[0, 0, 0], [0, 0, -1], [0, 1, 0]];
  generator Wy = [[0, 0, 1], [0, 0, 0], [-1, 0, 0]];
  generator Wz = [[0, -1, 0], [1, 0, 0], [0, 0, 0]];
  generator S = [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
  norm rot = Wx, Wy, Wz;
  norm scale = S;
}""", "[[1.0, 0.5], [0.25, 2.0]]", False),
    "SE2s": ("""
group SE2s {
  matrix 3;
  generator R = [[0, -2.5, 0], [2.5, 0, 0], [0, 0, 0]];
  generator T1 = [[0, 0, 1], [0, 0, 0], [0, 0, 0]];
  generator T2 = [[0, 0, 1], [0, 0, 1], [0, 0, 0]];
  norm rot = R;
  norm trans = T1, T2;
}""", "[1.0, 0.5]", True),
    # The 2-D Galilean group on se2x's closed forms (SE(2) ⋉ ℝ³).
    "Gal2": ("""
group Gal2 {
  matrix 4;
  generator J = [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  generator Bx = [[0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  generator By = [[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  generator Px = [[0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  generator Py = [[0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]];
  generator Pt = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]];
  norm rot = J;
  norm boost = Bx, By;
  norm trans = Px, Py, Pt;
}""", "[[1.0, 0.5, 0.25], [0.5, 2.0, 1.0]]", False),
}


declared_gradients.run(GROUPS, PI_COORDS)
