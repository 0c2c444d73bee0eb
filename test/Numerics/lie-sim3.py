# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""Sim(3): compiled lie ops vs 50-digit references, f64 and f32.

Adversarial inputs: identity; θ = 1e-8 (σ = 0 and 1e-8); σ = 1e-8 at
θ = 1; σ on both sides of the (eᶻ−1)/z series switch (1e-3 f64, 1e-2 f32)
at θ = 1; θ on both sides of the sin θ/θ series switch (1e-2 f64, 0.1 f32)
at σ = ±2; both small (1e-8); the Taylor boundary |σ| + θ = ½ (mixed
directions); the B switch θ = |σ|; the H series switch θ = 1 (σ-dominant);
the axis switch θ = π/2; θ = π − 1e-7, π − 1e-6 with σ ∈ {0, ±½}; large
scales σ = ±5. θ = π exactly (R = diag(−1, −1, 1)) is checked directly:
|ω| = π, exp(log g) = g.

Tolerances: f64 log relative 1e-13, dist2 relative 1e-13, invariance 1e-12;
absolute checks 4e-15 × abs_scale (2 ulps of entries up to ~10; the σ = ±5
set has entries up to 150·|t| and scales by 1e3). f32: log and dist2 1e-5;
absolute 2e-6 × abs_scale. Near θ = π the f32-rounded rotation is off SO(3)
by 6e-8 and the log's derivative across the cut is ~1/(π − θ); the reference
projects onto the group (spec.project) as lie-so3.py does.
"""
import mpmath
import numpy as np

from lie_reference import GroupSpec, build_module, run_group_suite
from torsor_testing import Report


def hat(v):
    w0, w1, w2, r0, r1, r2, s = v
    return [[s, -w2, w1, r0], [w2, s, -w0, r1], [-w1, w0, s, r2], [0, 0, 0, 0]]


def vee(X):
    return [(X[2, 1] - X[1, 2]) / 2, (X[0, 2] - X[2, 0]) / 2, (X[1, 0] - X[0, 1]) / 2,
            X[0, 3], X[1, 3], X[2, 3], (X[0, 0] + X[1, 1] + X[2, 2]) / 3]


def rodrigues(w):
    th = np.linalg.norm(w)
    W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    if th < 1e-12:
        return np.eye(3) + W + W @ W / 2
    return np.eye(3) + np.sin(th) / th * W + (1 - np.cos(th)) / th ** 2 * W @ W


def sim3(axis, theta, sigma, t=(0.5, -1.0, 2.0)):
    a = np.asarray(axis, np.float64)
    g = np.eye(4)
    g[:3, :3] = np.exp(sigma) * rodrigues(a / np.linalg.norm(a) * theta)
    g[:3, 3] = t
    return g


def random(rng, m):
    out = []
    for _ in range(m):
        out.append(sim3(rng.standard_normal(3), rng.uniform(0, np.pi), rng.uniform(-1, 1),
                        rng.normal(0, 1, 3)))
    return np.array(out)


def project(M):
    """Nearest similarity to M (mpmath): s·polar(A/s), s = det(A)^(1/3)."""
    A = mpmath.matrix(3, 3)
    for i in range(3):
        for j in range(3):
            A[i, j] = M[i, j]
    s = mpmath.cbrt(mpmath.det(A))
    Y = A / s
    for _ in range(100):  # Newton for the polar factor: Y ← (Y + Y⁻ᵀ)/2
        Z = (Y + (Y ** -1).T) / 2
        done = mpmath.mnorm(Z - Y, 1) < mpmath.mpf(10) ** -90
        Y = Z
        if done:
            break
    out = M.copy()
    for i in range(3):
        for j in range(3):
            out[i, j] = s * Y[i, j]
    return out


e1, e2, e3, ed = (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, -2, 0.5)


def around(x):
    return [x * (1 - 1e-3), x * (1 + 1e-3)]


spec = GroupSpec(
    name="sim3", n=4, k=7, point_dim=3, blocks=[3, 3, 1], hat=hat, vee=vee,
    random=random, project=project,
    in_chart=lambda v: v[0] ** 2 + v[1] ** 2 + v[2] ** 2 < np.pi ** 2,
    adversarial=lambda: [
        ("identity", [np.eye(4)] * 4),
        ("theta=1e-8", [sim3(ed, 1e-8, 0.0), sim3(e1, -1e-8, 0.0, (0, 0, 0)),
                        sim3(e3, 3e-8, 1e-8), sim3(ed, 2e-8, 1e-8, (1e-8, 0, 0))]),
        ("sigma=1e-8, theta=1", [sim3(ed, 1.0, 1e-8), sim3(e2, 1.0, -1e-8),
                                 sim3(ed, 1.0, 3e-8, (0, 0, 0)), sim3(e1, 1.0, 0.0)]),
        ("sigma series switch", [sim3(ed, 1.0, x) for x in around(1e-3) + around(1e-2)]),
        ("theta series switch", [sim3(ed, x, 2.0) for x in around(1e-2)]
         + [sim3(e2, x, -2.0) for x in around(0.1)], dict(abs_scale=8.0)),
        ("both small", [sim3(ed, 1e-8, 1e-8), sim3(e1, 1e-8, -1e-8, (1e-8, 1e-8, 0)),
                        sim3(e2, 0.0, 1e-8), sim3(ed, 1e-8, 0.0, (0, 0, 0))]),
        ("Taylor boundary |sigma|+theta=1/2", [sim3(ed, x, x) for x in around(0.25)]
         + [sim3(e3, x, -4 * x) for x in around(0.1)]
         + [sim3(ed, 0.0, x) for x in around(0.5)] + [sim3(e1, x, 0.0) for x in around(0.5)]),
        ("B switch theta=|sigma|", [sim3(ed, x, 0.8) for x in around(0.8)]
         + [sim3(e2, x, -2.0) for x in around(2.0)]),
        ("H series switch theta=1", [sim3(ed, x, 1.5) for x in around(1.0)]
         + [sim3(e1, x, -1.5) for x in around(1.0)]),
        ("axis switch theta=pi/2", [sim3(ed, x, 0.3) for x in around(np.pi / 2)]
         + [sim3(e3, x, -0.3) for x in around(np.pi / 2)]),
        ("theta=pi-1e-7", [sim3(ed, np.pi - 1e-7, 0.0), sim3(e1, np.pi - 1e-7, 0.5),
                           sim3(e2, np.pi - 1e-6, -0.5), sim3(ed, np.pi - 2e-7, 0.5)]),
        ("large scale sigma=+-5", [sim3(ed, 1.0, 5.0), sim3(e1, 2.0, -5.0),
                                   sim3(e3, 0.3, 5.0, (10, 0, 0)), sim3(ed, 3.0, -5.0)],
         dict(abs_scale=1e3)),
    ])


def check_exact_pi(report):
    for dtype, np_t, tol in (("f64", np.float64, 4e-15), ("f32", np.float32, 2e-6)):
        mod, _ = build_module(spec, dtype)
        g = np.array([np.diag([-1.0, -1.0, 1.0, 1.0]), np.diag([2.0, -2.0, -2.0, 1.0]),
                      np.diag([-0.5, 0.5, -0.5, 1.0])], np_t)
        g[:, :3, 3] = [1.0, 2.0, 3.0]
        w = np.zeros((3, 7), np_t)
        mod.call("lie_log", g, w)
        report.check("%s theta=pi exact: |omega| = pi (abs)" % dtype,
                     float(np.max(np.abs(np.linalg.norm(w[:, :3].astype(np.float64), axis=1) - np.pi))),
                     4 * tol)
        e = np.zeros_like(g)
        mod.call("lie_exp", w, e)
        report.check("%s theta=pi exact: exp(log g) = g (abs)" % dtype,
                     float(np.max(np.abs(e.astype(np.float64) - g))), 8 * tol)


report = Report("lie numerics: sim3 at theta = pi exactly")
check_exact_pi(report)
report.finish()

tol64 = dict(log=1e-13, exp=4e-15, roundtrip=4e-15, compose=4e-15, inverse=4e-15,
             act=4e-15, dist2=1e-13, invariance=1e-12)
tol32 = dict(log=1e-5, exp=2e-6, roundtrip=2e-6, compose=2e-6, inverse=2e-6,
             act=2e-6, dist2=1e-5, invariance=1e-5)
run_group_suite(spec, tol64, tol32)
