# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""SO(3): compiled lie ops vs 50-digit references, f64 and f32.

Adversarial inputs: identity; θ = 1e-8; both sides of the small-angle
series switch of log/exp (θ₀ = 1e-3 in f64, 2e-2 in f32; each set runs in
both dtypes); both sides of log's near-π switch (cos θ = −½, θ = 2π/3);
θ = π − 1e-4 and π − 1e-7 about random axes; rotations by exactly π
(diag(1, −1, −1) and its permutations, exact in both dtypes, and axes
(1, 1, 1)/√3, (1, −2, 2)/3 built in float64 as 2nnᵀ − I).

References are logs of the nearest rotation (polar factor, 100 digits) of
the rounded input. Why: an f32-rounded rotation is off SO(3) by ~6e-8, and
the matrix log is conditioned like θ/sin θ in the off-group (symmetric)
directions of the rotation plane — 3e7 at θ = π − 1e-7, where the plain
logm of the f32 matrix has a symmetric part of 0.1–1 and its skew part is
off by up to 1.5e-2. Along the group, log is conditioned by
(θ/2)/sin(θ/2) ≤ π/2, so against the projected reference the f32 log is
held to 1e-5 everywhere, including π − 1e-7. (The axis there is still
well determined: it comes from the symmetric part, which is O(1); only its
sign comes from the antisymmetric part, 2 sin θ ≈ 2e-7, and it agrees with
the polar factor's to first order in the rounding because the rounding's
symmetric part moves vee(R − Rᵀ) only perpendicular to the axis.)

Rotations by exactly π (set "theta=pi", both dtypes, `at_cut`): ±πn are
both valid logs and give the same dist2; the reference exists only after a
1e-40 perturbation with an arbitrary sign. There log is checked by
θ = ‖ω‖ against the reference (relative 1e-13 / 1e-5), by its backward
error max|expm(hat ω) − R| ≤ the round-trip tolerance, and by ‖ω‖ ≤ π.
The compiler returns the axis whose largest-magnitude component is
positive (docs/groups/so3.md).

Tolerances: f64 log relative 1e-13, dist2 1e-13, invariance 1e-12 (the
issue's goals); exp/compose/inverse/round trip absolute 2e-15 (a few
ulps of entries ≤ 1). f32: log and dist2 relative 1e-5, invariance 1e-5
(the left factor is re-rounded to f32, which moves θ by ~1e-7); exp,
compose, inverse, round trip absolute 5e-7 (a few f32 ulps).
"""
import mpmath
import numpy as np

from lie_reference import GroupSpec, mp_polar, run_group_suite


def hat(v):
    return [[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]]


def vee(X):
    # The skew part: exact for so(3), and blind to any symmetric part.
    return [(X[2, 1] - X[1, 2]) / 2, (X[0, 2] - X[2, 0]) / 2,
            (X[1, 0] - X[0, 1]) / 2]


def rot(axis, theta):
    """Rotation by theta about axis, by Rodrigues in float64."""
    n = np.asarray(axis, np.float64)
    n = n / np.linalg.norm(n)
    K = np.array(hat(n), np.float64)
    return np.eye(3) + np.sin(theta) * K + (1 - np.cos(theta)) * (K @ K)


def half_turn(axis):
    n = np.asarray(axis, np.float64)
    n = n / np.linalg.norm(n)
    return 2 * np.outer(n, n) - np.eye(3)


def axes(seed, count):
    v = np.random.default_rng(seed).standard_normal((count, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def at_angles(seed, thetas):
    return [rot(n, t) for n, t in zip(axes(seed, len(thetas)), thetas)]


def random_rotations(rng, m):
    q = rng.standard_normal((m, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def in_chart(w):
    # Closed chart: at exactly π either sign is allowed.
    return np.linalg.norm(w) <= np.pi * (1 + 1e-6)


def adversarial():
    both = lambda t0: [t0 * (1 - 1e-3), t0 * (1 + 1e-3)] * 2
    return [
        ("identity", [np.eye(3)] * 4),
        ("theta=1e-8", at_angles(1, [1e-8, 2e-8, 1e-8, 3e-8])),
        ("theta=1e-3+-0.1% (f64 series switch)", at_angles(2, both(1e-3))),
        ("theta=2e-2+-0.1% (f32 series switch)", at_angles(3, both(2e-2))),
        ("theta=2pi/3+-1e-4 (near-pi switch)",
         at_angles(4, both(2 * np.pi / 3)[:2] + [2 * np.pi / 3 - 1e-4, 2 * np.pi / 3 + 1e-4])),
        ("theta=pi-1e-4", at_angles(5, [np.pi - 1e-4] * 4)),
        ("theta=pi-1e-7", at_angles(6, [np.pi - 1e-7, np.pi - 1e-7, np.pi - 2e-7, np.pi - 1e-7])),
        ("theta=pi", [half_turn([1, 0, 0]), half_turn([0, 1, 0]), half_turn([0, 0, 1]),
                      half_turn([1, 1, 1]), half_turn([1, -2, 2]), half_turn([0, 1, 1])],
         {"at_cut": ("f64", "f32")}),
    ]


spec = GroupSpec(
    name="so3", n=3, k=3, point_dim=3, blocks=[3],
    hat=hat, vee=vee, random=random_rotations, adversarial=adversarial,
    in_chart=in_chart, project=mp_polar)

tol64 = dict(log=1e-13, exp=2e-15, roundtrip=2e-15, compose=2e-15, inverse=2e-15,
             act=1e-14, dist2=1e-13, invariance=1e-12)
tol32 = dict(log=1e-5, exp=5e-7, roundtrip=5e-7, compose=5e-7, inverse=5e-7,
             act=3e-6, dist2=1e-5, invariance=1e-5)
run_group_suite(spec, tol64, tol32)
