# RUN: %python %s | FileCheck %s
# CHECK: == lie numerics: CO3
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: CO2
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: SE2s
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: SE2p
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: Gal2
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == recognised groups in f32 near pi
# CHECK: all {{[0-9]+}} checks passed
"""Declared groups that run on a built-in's closed forms (GroupStructure.h).

Written as a user might write them, in bases that are not a built-in's:
  CO3   rotations × isotropic scale of ℝ³ (3×3, linear): in sim(3), embedded
        as diag(g, 1);
  CO2   SO(2) × ℝ⁺ of the plane (2×2, linear), rotation and scale in one
        block: in aff(2) as diag(g, 1);
  SE2s  SE(2) with the rotation generator scaled by 2.5 and a sheared
        translation basis (T1 = e_x, T2 = e_x + e_y): se(2) in another
        basis, not block-isotropic (the pair log path);
  SE2p  SE(2) with its generators permuted (Ty, Tx, R);
  Gal2  the 2-D Galilean group (4×4 on (x, y, t, 1): rotation, boosts,
        translations in space and time): SE(2) ⋉ ℝ³ (se2x).

1. The whole lie-op suite (test/lib/lie_reference.py) in f64 and f32
   against 50-digit references, with adversarial sets at θ → 0 and θ → π.
   f64 tolerances 1e-12 (the built-ins' closed forms, composed with a
   fixed linear map); f32 as the built-ins' own suites.
2. f32 next to the singular point, as issue #27 asks: for elements
   exp(v) whose rotation angle is π − δ, δ from 1e-2 to 1e-7, dist2 of
   (identity, g) against the exact ‖v‖²_λ: within 1e-4 relative where
   δ < 1e-4, 1e-5 elsewhere; and the membership residual (what
   torsor-run's default group check compares with its tolerance) of 10⁵
   valid f32 elements, near π and uniformly random, stays below 1e-4, while
   non-members (a reflection, a shear, a wrong last row, a transposed pose,
   an element 1e-3 off the declared manifold) are above it.
"""
import numpy as np
import scipy.linalg

import mpmath

from lie_reference import GroupSpec, declared_attr as attr, mp_polar, run_group_suite
from torsor_testing import CompiledModule, Report, dps_function
from declared_fixtures import (batched_expm, check_default_accepts, check_dist2_near_pi,
                               check_rejected, compile_ops, hat_of, near_pi_thetas,
                               unit, unit_axis)


def so3_hat(n, axis):
    i, j = (axis + 1) % 3, (axis + 2) % 3
    return unit(n, j, i) - unit(n, i, j)


def vee_of(gens):
    """Dual-basis coordinates of X (a NumPy array or an mpmath matrix, whose
    entries keep their precision: the dual basis is exact in binary for
    these generators)."""
    G = np.array([[np.sum(a * b) for b in gens] for a in gens])
    dual = np.tensordot(np.linalg.inv(G), np.array(gens), 1)
    n = len(gens[0])

    def vee(X):
        return [sum(float(D[i, j]) * X[i, j] for i in range(n) for j in range(n) if D[i, j])
                for D in dual]
    return vee


# --- the groups ----------------------------------------------------------------

CO3 = [so3_hat(3, a) for a in range(3)] + [np.eye(3)]
CO2 = [so3_hat(2, 2), np.eye(2)]
R2 = so3_hat(3, 2)
SE2S = [2.5 * R2, unit(3, 0, 2), unit(3, 0, 2) + unit(3, 1, 2)]
SE2P = [unit(3, 1, 2), unit(3, 0, 2), R2]
# The 2-D Galilean group on (x, y, t, 1): rotation, boosts x += v t,
# translations in space and time.
GAL2 = [so3_hat(4, 2), unit(4, 0, 2), unit(4, 1, 2), unit(4, 0, 3), unit(4, 1, 3),
        unit(4, 2, 3)]

GROUPS = {
    # name: (generators, blocks, point_dim, the rotation angle as a
    #        function of the coordinates v)
    "CO3": (CO3, [("rot", 3), ("scale", 1)], 3, lambda v: np.linalg.norm(v[:3])),
    "CO2": (CO2, [("rotscale", 2)], 2, lambda v: abs(v[0])),
    "SE2s": (SE2S, [("rot", 1), ("trans", 2)], 2, lambda v: abs(2.5 * v[0])),
    "SE2p": (SE2P, [("trans", 2), ("rot", 1)], 2, lambda v: abs(v[2])),
    "Gal2": (GAL2, [("rot", 1), ("boost", 2), ("trans", 3)], 3, lambda v: abs(v[0])),
}


def coords_at_angle(name, rng, theta):
    """Coordinates of an element whose rotation turns by θ."""
    gens = GROUPS[name][0]
    k = len(gens)
    v = rng.normal(0, 0.5, k)
    if name == "CO3":
        v[:3] = unit_axis(rng) * theta
    elif name == "CO2":
        v[0] = theta * rng.choice([-1, 1])
    elif name == "SE2s":
        v[0] = theta / 2.5 * rng.choice([-1, 1])
    elif name == "Gal2":
        v[0] = theta * rng.choice([-1, 1])
    else:
        v[2] = theta * rng.choice([-1, 1])
    return v


def project_of(name):
    """The nearest group element of an mpmath matrix (for the references of
    f32-rounded inputs, as test/Numerics/lie-so3.py): the polar factor of
    the rotation(-scale) block, times det^(1/d) for the scaled groups."""
    d = {"CO3": 3, "CO2": 2}.get(name, 2)  # (Gal2: its rotation block)

    def project(M):
        P = M.copy()
        A = mpmath.matrix([[M[i, j] for j in range(d)] for i in range(d)])
        s = mpmath.det(A) ** (mpmath.mpf(1) / d) if name in ("CO3", "CO2") else 1
        R = mp_polar(A / s) * s
        for i in range(d):
            for j in range(d):
                P[i, j] = R[i, j]
        return P
    return project


def spec_of(name):
    gens, blocks, point_dim, angle = GROUPS[name]
    n, k = len(gens[0]), len(gens)

    def random(rng, m):
        out = []
        for _ in range(m):
            v = coords_at_angle(name, rng, rng.uniform(0, 3.0))
            out.append(scipy.linalg.expm(hat_of(gens, v)))
        return np.array(out)

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

    return GroupSpec(name=name, n=n, k=k, point_dim=point_dim, blocks=[s for _, s in blocks],
                     hat=lambda v: hat_of(gens, v), vee=vee_of(gens), random=random,
                     adversarial=adversarial, attr=attr(name, gens, blocks),
                     in_chart=lambda w: angle(np.asarray(w, np.float64)) <= np.pi * (1 + 1e-6),
                     project=project_of(name))


tol64 = dict(log=1e-12, exp=1e-13, roundtrip=1e-13, compose=1e-14, inverse=1e-13,
             act=1e-14, dist2=1e-12, invariance=1e-11)
tol32 = dict(log=2e-5, exp=4e-6, roundtrip=8e-6, compose=2e-6, inverse=8e-6,
             act=4e-6, dist2=2e-5, invariance=1e-4)
for name in GROUPS:
    run_group_suite(spec_of(name), tol64, tol32, count=32)

# --- 2. f32 next to π: dist2 and the default membership check -------------------

def closed_exp(name, vs):
    """exp of many coordinate vectors at once, in f64, by the textbook
    closed forms (Rodrigues through SciPy's Rotation; V(θ) of SE(2)):
    independent of the compiler and fast enough for 10⁵ elements."""
    from scipy.spatial.transform import Rotation
    vs = np.asarray(vs, np.float64)
    m = len(vs)
    if name == "Gal2":
        return batched_expm(np.tensordot(vs, np.array(GAL2), 1))
    if name == "CO3":
        return Rotation.from_rotvec(vs[:, :3]).as_matrix() * np.exp(vs[:, 3])[:, None, None]
    if name == "CO2":
        th, sig = vs[:, 0], vs[:, 1]
        c, s = np.cos(th), np.sin(th)
        return np.exp(sig)[:, None, None] * np.stack([np.stack([c, -s], 1), np.stack([s, c], 1)], 1)
    if name == "SE2s":
        th, rho = 2.5 * vs[:, 0], np.stack([vs[:, 1] + vs[:, 2], vs[:, 2]], 1)
    else:  # SE2p: (ρy, ρx, θ)
        th, rho = vs[:, 2], np.stack([vs[:, 1], vs[:, 0]], 1)
    c, s = np.cos(th), np.sin(th)
    a = np.where(np.abs(th) < 1e-8, 1.0, np.sin(th) / np.where(th == 0, 1, th))
    b = np.where(np.abs(th) < 1e-8, th / 2, (1 - c) / np.where(th == 0, 1, th))
    g = np.zeros((m, 3, 3))
    g[:, 0, 0], g[:, 0, 1], g[:, 1, 0], g[:, 1, 1] = c, -s, s, c
    g[:, 0, 2] = a * rho[:, 0] - b * rho[:, 1]
    g[:, 1, 2] = b * rho[:, 0] + a * rho[:, 1]
    g[:, 2, 2] = 1
    return g


# The closed forms agree with expm (so the acceptance test below checks
# real group elements).
_rng = np.random.default_rng(11)
for _name, (_gens, _, _, _) in GROUPS.items():
    _vs = [coords_at_angle(_name, _rng, th) for th in (0.3, 2.0, np.pi - 1e-3)]
    _err = np.max(np.abs(closed_exp(_name, _vs)
                         - np.array([scipy.linalg.expm(hat_of(_gens, v)) for v in _vs])))
    assert _err < 1e-13, (_name, _err)

report = Report("recognised groups in f32 near pi")
rng = np.random.default_rng(3)


for name, (gens, blocks, _, _) in GROUPS.items():
    n = len(gens[0])
    mod, lam = compile_ops(name, gens, blocks, "f32")
    check_dist2_near_pi(report, name, mod, gens, blocks, lam, coords_at_angle, rng, 64)

    # The default group check: 10^5 valid f32 elements, a fifth of them
    # within 1e-2 .. 1e-7 of a half turn, all below tol 1e-4.
    count = 100000
    vs = np.array([coords_at_angle(name, rng, th) for th in near_pi_thetas(rng, count)])
    check_default_accepts(report, name, mod, closed_exp(name, vs))

    # Non-members stay rejected.
    base = scipy.linalg.expm(hat_of(gens, coords_at_angle(name, rng, 1.0)))
    bad = []
    refl = np.eye(n)
    refl[0, 0] = -1
    bad.append(("reflection", refl @ base))
    shear = np.eye(n)
    shear[0, 1] = 0.2
    bad.append(("shear", shear @ base))
    if name.startswith("SE2") or name == "Gal2":
        wrong = base.copy()
        wrong[-1, 0] = 0.1
        bad.append(("wrong last row", wrong))
        bad.append(("transposed pose", base.T.copy()))
    off = base + 1e-3 * rng.standard_normal(base.shape)
    if name.startswith("SE2") or name == "Gal2":
        off[-1] = base[-1]
    bad.append(("1e-3 off the manifold", off))
    check_rejected(report, name, mod, bad)
report.finish()
