# RUN: %python %s | FileCheck %s
# CHECK: == lie numerics: SO3xSO2
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: SO3xR
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: SE2xR
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: SO2xR2
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: Torus
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: SE2xSO3
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: Dil3
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == direct sums in f32 near pi
# CHECK: all {{[0-9]+}} checks passed
"""Declared groups that are direct sums of ideals (GroupStructure.h,
"Direct sums"; Groups/Product.cpp), written in permuted, scaled and sheared
bases:
  SO3xSO2  so(3) ⊕ so(2) on ℝ³ ⊕ ℝ² (5×5), so(3) permuted, so(2) scaled by 2;
  SO3xR    so(3) ⊕ ℝ: rotations of ℝ³ and a scaling of a fourth axis (4×4);
  SE2xR    se(2) ⊕ ℝ (4×4 affine on (x, y, z, 1)): SE(2) of (x, y),
           generators permuted, and a scaling of z by e^{s/2};
  SO2xR2   so(2) ⊕ ℝ² (5×5 affine): a rotation of (x, y) and translations
           of (z, u) in a sheared basis (two nilpotent factors; the λ
           blocks are not the factors': the pair form's per-pair logs);
  Torus    so(2) ⊕ so(2) (4×4) in the basis J₁ + J₂, J₂ (a generator on
           both blocks; not block-isotropic);
  SE2xSO3  se(2) ⊕ so(3) (6×6 affine), the homogeneous coordinate shared;
  Dil3     rotation and dilation of (x, y) with translations of (x, y, t):
           sim(2) ⊕ ℝ (the t translation a nilpotent factor).

1. The whole lie-op suite (test/lib/lie_reference.py) in f64 and f32 against
   50-digit references, θ → 0 and θ → π, dist2 left invariance.
2. f32 next to a half turn: dist2(I, exp v) against ‖v‖²_λ, within 1e-4
   relative where π − θ < 1e-4 and 1e-5 elsewhere; the membership residual
   of 2·10⁴ valid f32 elements below the default tolerance 1e-4, and
   non-members (a reflection, a shear, an entry outside the blocks, an
   element 1e-3 off the manifold) above it.
"""
import numpy as np
import scipy.linalg

import mpmath

from lie_reference import GroupSpec, declared_attr as attr, mp_polar, run_group_suite
from torsor_testing import CompiledModule, Report, dps_function
from declared_fixtures import (batched_expm, check_default_accepts, check_dist2_near_pi,
                               check_rejected, compile_ops, hat_of, near_pi_thetas,
                               unit, unit_axis)


def hat3(n, axis, at=0):
    """hat(e_axis) of so(3) on the coordinates at, at+1, at+2 of ℝⁿ."""
    i, j = at + (axis + 1) % 3, at + (axis + 2) % 3
    return unit(n, j, i) - unit(n, i, j)


def rot2(n, at=0):
    return unit(n, at + 1, at) - unit(n, at, at + 1)


def vee_of(gens):
    G = np.array([[np.sum(a * b) for b in gens] for a in gens])
    dual = np.tensordot(np.linalg.inv(G), np.array(gens), 1)
    n = len(gens[0])

    def vee(X):
        return [sum(float(D[i, j]) * X[i, j] for i in range(n) for j in range(n) if D[i, j])
                for D in dual]
    return vee


# --- the groups -------------------------------------------------------------------
# name: (generators, blocks, point dim, rotation factors). A rotation factor
# is (the coordinates of its block, the coefficient slices of v that turn it,
# as a function v ↦ angle and a setter (v, rng, θ) ↦ None), used for the
# near-π sets, the chart and the f32 projection.

def so3_angle(sl, scale=1.0):
    return (lambda v: scale * np.linalg.norm(v[sl]),
            lambda v, rng, th: v.__setitem__(sl, unit_axis(rng) * th / scale))


def so2_angle(i, scale=1.0):
    return (lambda v: abs(scale * v[i]),
            lambda v, rng, th: v.__setitem__(i, rng.choice([-1, 1]) * th / scale))


GROUPS = {
    "SO3xSO2": ([hat3(5, 1), hat3(5, 0), hat3(5, 2), 2 * rot2(5, 3)],
                [("rot", 3), ("spin", 1)], 5,
                [([0, 1, 2], so3_angle(slice(0, 3)), False), ([3, 4], so2_angle(3, 2.0), False)]),
    "SO3xR": ([hat3(4, 0), hat3(4, 1), hat3(4, 2), unit(4, 3, 3, 0.5)],
              [("rot", 3), ("scale", 1)], 4,
              [([0, 1, 2], so3_angle(slice(0, 3)), False)]),
    "SE2xR": ([unit(4, 2, 2, 0.5), unit(4, 0, 3), rot2(4), unit(4, 1, 3)],
              [("scale", 1), ("pose", 3)], 3,
              [([0, 1], so2_angle(2), False)]),
    "SO2xR2": ([rot2(5), unit(5, 2, 4, 2.0), unit(5, 2, 4) + unit(5, 3, 4)],
               [("rot", 1), ("trans", 2)], 4,
               [([0, 1], so2_angle(0), False)]),
    "Torus": ([rot2(4) + rot2(4, 2), rot2(4, 2)],
              [("a", 1), ("b", 1)], 4,
              [([0, 1], so2_angle(0), False),
               ([2, 3], (lambda v: abs(v[0] + v[1]),
                         lambda v, rng, th: v.__setitem__(1, rng.choice([-1, 1]) * th - v[0])),
                False)]),
    "SE2xSO3": ([rot2(6), unit(6, 0, 5), unit(6, 1, 5), hat3(6, 0, 2), hat3(6, 1, 2),
                 hat3(6, 2, 2)],
                [("rot", 1), ("trans", 2), ("spin", 3)], 5,
                [([0, 1], so2_angle(0), False), ([2, 3, 4], so3_angle(slice(3, 6)), False)]),
    "Dil3": ([rot2(4), unit(4, 0, 0) + unit(4, 1, 1), unit(4, 0, 3), unit(4, 1, 3),
              unit(4, 2, 3)],
             [("rs", 2), ("trans", 3)], 3,
             [([0, 1], so2_angle(0), True)]),
}


def coords_at_angle(name, rng, theta):
    """Coordinates whose first rotation factor turns by θ, the others by
    random angles below π − 0.1."""
    gens, _, _, rots = GROUPS[name]
    v = rng.normal(0, 0.5, len(gens))
    for r, (_, (_, setter), _) in enumerate(rots):
        setter(v, rng, theta if r == 0 else rng.uniform(0, np.pi - 0.1))
    return v


def project_of(name):
    """The nearest group element of an mpmath matrix: each rotation
    block's polar factor (times det^(1/2) for Dil3's rotation-dilation)."""
    rots = GROUPS[name][3]

    def project(M):
        P = M.copy()
        for idx, _, scaled in rots:
            d = len(idx)
            A = mpmath.matrix([[M[i, j] for j in idx] for i in idx])
            s = mpmath.det(A) ** (mpmath.mpf(1) / d) if scaled else 1
            R = mp_polar(A / s) * s
            for a, i in enumerate(idx):
                for b, j in enumerate(idx):
                    P[i, j] = R[a, b]
        return P
    return project


def spec_of(name):
    gens, blocks, point_dim, rots = GROUPS[name]
    n, k = len(gens[0]), len(gens)

    def random(rng, m):
        return np.array([scipy.linalg.expm(hat_of(gens, coords_at_angle(
            name, rng, rng.uniform(0, 3.0)))) for _ in range(m)])

    def adversarial():
        rng = np.random.default_rng(7)
        near = lambda th: [scipy.linalg.expm(hat_of(gens, coords_at_angle(name, rng, th)))
                           for _ in range(4)]
        return [
            ("identity", [np.eye(n)] * 4),
            ("theta=1e-6", near(1e-6)),
            ("theta=pi-1e-3", near(np.pi - 1e-3)),
            ("theta=pi-1e-6", near(np.pi - 1e-6), dict(at_cut=("f32",))),
        ]

    def in_chart(w):
        w = np.asarray(w, np.float64)
        return all(angle(w) <= np.pi * (1 + 1e-6) for _, (angle, _), _ in rots)

    return GroupSpec(name=name, n=n, k=k, point_dim=point_dim, blocks=[s for _, s in blocks],
                     hat=lambda v: hat_of(gens, v), vee=vee_of(gens), random=random,
                     adversarial=adversarial, attr=attr(name, gens, blocks),
                     in_chart=in_chart, project=project_of(name))


tol64 = dict(log=1e-12, exp=1e-13, roundtrip=1e-13, compose=1e-14, inverse=1e-13,
             act=1e-14, dist2=1e-12, invariance=1e-11)
tol32 = dict(log=2e-5, exp=4e-6, roundtrip=8e-6, compose=2e-6, inverse=8e-6,
             act=4e-6, dist2=2e-5, invariance=1e-4)
for name in GROUPS:
    run_group_suite(spec_of(name), tol64, tol32, count=24)

# --- 2. f32 next to π: dist2 and the default membership check ------------------------

report = Report("direct sums in f32 near pi")
rng = np.random.default_rng(3)


for name, (gens, blocks, _, rots) in GROUPS.items():
    n = len(gens[0])
    mod, lam = compile_ops(name, gens, blocks, "f32")
    check_dist2_near_pi(report, name, mod, gens, blocks, lam, coords_at_angle, rng, 32)

    count = 20000
    vs = np.array([coords_at_angle(name, rng, th) for th in near_pi_thetas(rng, count)])
    check_default_accepts(report, name, mod,
                          batched_expm(np.tensordot(vs, np.array(gens), 1)))

    base = scipy.linalg.expm(hat_of(gens, coords_at_angle(name, rng, 1.0)))
    bad = []
    refl = np.eye(n)
    refl[0, 0] = -1
    bad.append(("reflection", refl @ base))
    shear = np.eye(n)
    shear[0, 1] = 0.2
    bad.append(("shear", shear @ base))
    # An entry that every element has zero: outside the blocks (exp fills
    # each block densely).
    coupled = base.copy()
    i, j = next((i, j) for i in range(n - 1) for j in range(n) if i != j and base[i, j] == 0)
    coupled[i, j] += 0.05
    bad.append(("an entry outside the blocks", coupled))
    off = base + 1e-3 * rng.standard_normal(base.shape)
    bad.append(("1e-3 off the manifold", off))
    check_rejected(report, name, mod, bad)
report.finish()
