# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""SE(3): compiled lie ops vs 50-digit references, f64 and f32.

Adversarial inputs (all with translations unless named otherwise):
identity; θ = 1e-8; both sides of the small-angle series switch
(θ₀ = 1e-3 in f64, 2e-2 in f32; each set runs in both dtypes); both sides
of the near-π switch of the rotation log (cos θ = −½); θ = π − 1e-4 and
π − 1e-7 (where a naive float32 V⁻¹ and axis lose everything), also with
translations along and across the axis; rotations by exactly π with
translation; pure large translations (|t| ~ 1e3, 1e6) and large
translations with near-π rotations.

References are logs of the nearest rigid motion (polar factor of the
rotation block, 100 digits) of the rounded input; see lie-so3.py for why
(the plain logm of an f32-rounded rotation by π − 1e-7 is off by 1e-2).
Rotations by exactly π (`at_cut`): (±πn, ρ±) are both valid logs, with
‖ρ₊‖ = ‖ρ₋‖ (docs/math.md §1, SE(3) pairwise form), so the block norms
(θ, ‖ρ‖), the backward error max|expm(hat w) − g| and ‖ω‖ ≤ π are
checked there instead of the coordinates.

Tolerances: f64 log relative 1e-13, dist2 1e-13, invariance 1e-12 (the
issue's goals); exp/compose/inverse/round trip absolute 1e-14 for entries
|t| ≲ 5 (a few ulps of the largest entry). f32: log and dist2 relative
1e-5, invariance 1e-5; exp/compose/inverse/round trip absolute 2e-6.
Sets with large translations scale the absolute tolerances by |t|
(`abs_scale`): an ulp of a translation entry is |t|·u. dist2 there is still
relative: the pairs have unrelated translations, so ‖Δt‖ ~ |t| and no
cancellation beyond u·|t|/‖Δt‖ ~ u.
"""
import numpy as np

from lie_reference import GroupSpec, mp_polar, run_group_suite

import mpmath


def hat(v):
    return [[0, -v[2], v[1], v[3]], [v[2], 0, -v[0], v[4]],
            [-v[1], v[0], 0, v[5]], [0, 0, 0, 0]]


def vee(X):
    return [(X[2, 1] - X[1, 2]) / 2, (X[0, 2] - X[2, 0]) / 2,
            (X[1, 0] - X[0, 1]) / 2, X[0, 3], X[1, 3], X[2, 3]]


def project(M):
    """Nearest rigid motion: polar factor of the rotation block."""
    P = mpmath.eye(4)
    R = mp_polar(mpmath.matrix([[M[i, j] for j in range(3)] for i in range(3)]))
    for i in range(3):
        for j in range(3):
            P[i, j] = R[i, j]
        P[i, 3] = M[i, 3]
    return P


def rot(axis, theta):
    n = np.asarray(axis, np.float64)
    n = n / np.linalg.norm(n)
    K = np.array([[0, -n[2], n[1]], [n[2], 0, -n[0]], [-n[1], n[0], 0]])
    return np.eye(3) + np.sin(theta) * K + (1 - np.cos(theta)) * (K @ K)


def motion(R, t):
    g = np.eye(4)
    g[:3, :3], g[:3, 3] = R, t
    return g


def half_turn(axis):
    n = np.asarray(axis, np.float64)
    n = n / np.linalg.norm(n)
    return 2 * np.outer(n, n) - np.eye(3)


def at_angles(seed, thetas, tscale=1.0):
    rng = np.random.default_rng(seed)
    out = []
    for t in thetas:
        n = rng.standard_normal(3)
        out.append(motion(rot(n, t), tscale * rng.standard_normal(3)))
    return out


def random_motions(rng, m):
    q = rng.standard_normal((m, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    gs = []
    for (w, x, y, z), t in zip(q, 2 * rng.standard_normal((m, 3))):
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        gs.append(motion(R, t))
    return np.array(gs)


def in_chart(w):
    return np.linalg.norm(w[:3]) <= np.pi * (1 + 1e-6)


def near_pi_along_across(seed, d):
    """Rotations by π − d with t along the axis, across it, and mixed."""
    rng = np.random.default_rng(seed)
    out = []
    for mix in (0.0, 1.0, 0.5, 0.9):
        n = rng.standard_normal(3)
        n /= np.linalg.norm(n)
        p = np.cross(n, rng.standard_normal(3))
        p /= np.linalg.norm(p)
        out.append(motion(rot(n, np.pi - d), 3 * (mix * p + (1 - mix) * n)))
    return out


def adversarial():
    both = lambda t0: [t0 * (1 - 1e-3), t0 * (1 + 1e-3)] * 2
    return [
        ("identity", [np.eye(4)] * 4),
        ("theta=1e-8", at_angles(1, [1e-8, 2e-8, 1e-8, 3e-8])),
        ("theta=1e-3+-0.1% (f64 series switch)", at_angles(2, both(1e-3))),
        ("theta=2e-2+-0.1% (f32 series switch)", at_angles(3, both(2e-2))),
        ("theta=2pi/3+-1e-4 (near-pi switch)",
         at_angles(4, both(2 * np.pi / 3)[:2] + [2 * np.pi / 3 - 1e-4, 2 * np.pi / 3 + 1e-4])),
        ("theta=pi-1e-4", at_angles(5, [np.pi - 1e-4] * 4)),
        ("theta=pi-1e-7", at_angles(6, [np.pi - 1e-7, np.pi - 1e-7, np.pi - 2e-7, np.pi - 1e-7])),
        ("theta=pi-1e-4, t along/across axis", near_pi_along_across(7, 1e-4)),
        ("theta=pi-1e-7, t along/across axis", near_pi_along_across(8, 1e-7)),
        ("theta=pi", [motion(half_turn([1, 0, 0]), [1, 2, 3]),
                      motion(half_turn([0, 1, 0]), [0, 0, 1]),
                      motion(half_turn([0, 0, 1]), [-2, 0.5, 0]),
                      motion(half_turn([1, 1, 1]), [1, -1, 0.25]),
                      motion(half_turn([1, -2, 2]), [0, 3, 1]),
                      motion(half_turn([0, 1, 1]), [1, 1, 1])],
         {"at_cut": ("f64", "f32")}),
        ("large t (1e3), random rotations", random_motions(np.random.default_rng(9), 6)
         * np.array([1, 1, 1, 5e2, 1, 1, 1, 5e2, 1, 1, 1, 5e2, 1, 1, 1, 1.0]).reshape(4, 4),
         {"abs_scale": 3e3}),
        ("large t (1e6), theta=pi-1e-7", at_angles(10, [np.pi - 1e-7] * 6, tscale=1e6),
         {"abs_scale": 5e6}),
        ("large t (1e6), theta=1e-8", at_angles(11, [1e-8] * 6, tscale=1e6),
         {"abs_scale": 5e6}),
    ]


spec = GroupSpec(
    name="se3", n=4, k=6, point_dim=3, blocks=[3, 3],
    hat=hat, vee=vee, random=random_motions, adversarial=adversarial,
    in_chart=in_chart, project=project)

tol64 = dict(log=1e-13, exp=1e-14, roundtrip=1e-14, compose=1e-14, inverse=1e-14,
             act=1e-14, dist2=1e-13, invariance=1e-12)
tol32 = dict(log=1e-5, exp=2e-6, roundtrip=2e-6, compose=2e-6, inverse=2e-6,
             act=5e-6, dist2=1e-5, invariance=1e-5)
run_group_suite(spec, tol64, tol32)
