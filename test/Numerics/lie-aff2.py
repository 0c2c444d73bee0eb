# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""Aff(2) = GL⁺(2) ⋉ ℝ²: compiled lie ops vs 50-digit references, f64 and f32.

Sets given to the suite (every pair g⁻¹h within a set stays in the chart, so
dist2 has a principal log): random elements with ‖A − I‖₂ < 0.9 (then no
relative element has a real eigenvalue ≤ 0); identity; A = I + 1e-8·X;
scaled identities (s = 0, both sides of the ½ ln δ switch |δ − 1| = ½);
scaled shears (nilpotent N, s = 0); near-repeated eigenvalues s = ±η t²(1 ±
1e-3) around the f series switch (η = 1e-2 for f64, 0.1 for f32) and
s = ±1e-20; exp(L) on both sides of the Taylor radius |α| + √|κ| = ½ (κ > 0,
κ < 0, κ = 0), of the split/merged switch √κ = min(1, |α|/2), of the
cosh/sinh series |κ| = 1, and of the (eᶻ−1)/z series at an eigenvalue
μ = 1e-3, 1e-2; rotations by π − 1e-7 (scaled); large scales (1e±3).
A separate wide set (rotations anywhere in (−π, π), anisotropic scales,
shears up to 10) checks log, exp and exp(log g) = g directly; another checks
the out-of-chart policy: A with a real eigenvalue ≤ 0 (−I, det < 0, Jordan
block at −1, diag(−2, −3)) gives NaN in all six coordinates.

Tolerances: f64 log relative 1e-13, dist2 relative 1e-13, invariance 1e-12;
absolute checks 4e-15 × abs_scale (2 ulps of entries up to ~10; the sets
with α up to 4 have entries e⁴ ≈ 55 and use abs_scale 64, the 1e3-scale sets
1e3). f32: log and dist2 relative 1e-5; absolute 2e-6 × abs_scale. The wide
set's f32 log bound is max(1e-5, 2.4e-7·cond(A)): the f32-rounded input is
off by 6e-8 relative and log's relative condition number grows with
‖A‖‖A⁻¹‖ (anisotropic scales e^±2 with shears up to 10).
dist2 goes through the model's deviation form (X = A⁻¹(B − A)), so it stays
relatively accurate for close pairs (measured ≤ 6e-16 at distances ~1e-8).
"""
import mpmath
import numpy as np

from lie_reference import (GroupSpec, build_module, ref_exp, ref_log, rel_err,
                           run_group_suite)
from torsor_testing import Report


def hat(v):
    return [[v[0], v[1], v[4]], [v[2], v[3], v[5]], [0, 0, 0]]


def vee(X):
    return [X[0, 0], X[0, 1], X[1, 0], X[1, 1], X[0, 2], X[1, 2]]


def aff(A, b=(0.0, 0.0)):
    g = np.eye(3)
    g[:2, :2] = A
    g[:2, 2] = b
    return g


def expl(L, u=(0.0, 0.0)):
    """exp of algebra coordinates (L row-major, u), in 50 digits, to float64."""
    with mpmath.workdps(60):
        E = mpmath.expm(mpmath.matrix(hat([mpmath.mpf(x) for x in list(np.ravel(L)) + list(u)])))
        return np.array([[float(E[i, j]) for j in range(3)] for i in range(3)])


def rot(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s], [s, c]])


def random(rng, m):
    out = []
    for _ in range(m):
        E = rng.standard_normal((2, 2))
        E *= rng.uniform(0.0, 0.9) / np.linalg.norm(E, 2)
        out.append(aff(np.eye(2) + E, rng.normal(0.0, 2.0, 2)))
    return np.array(out)


def wide(rng, m):
    out = []
    while len(out) < m:
        A = rot(rng.uniform(-np.pi, np.pi)) @ np.array(
            [[np.exp(rng.normal(0, 1)), rng.normal(0, 3)], [0, np.exp(rng.normal(0, 1))]])
        ev = np.linalg.eigvals(A)
        if np.any((np.abs(ev.imag) < 1e-3 * np.abs(ev)) & (ev.real < 0)):
            continue  # a (nearly) negative real eigenvalue: outside the chart
        out.append(aff(A, rng.normal(0, 2, 2)))
    return np.array(out)


def diag_l(mu_plus, mu_minus, u=(0.3, -0.7)):
    return expl([[mu_plus, 0.0], [0.0, mu_minus]], u)


def rot_l(alpha, omega, u=(0.3, -0.7)):
    return expl([[alpha, -omega], [omega, alpha]], u)


def near_repeated(t, s):
    """A = tI + N with N = [[0, 1], [s, 0]], N² = sI."""
    return aff(np.array([[t, 1.0], [s, t]]), (1.0, -2.0))


def around(x):
    return [x * (1 - 1e-3), x * (1 + 1e-3)]


spec = GroupSpec(
    name="aff2", n=3, k=6, point_dim=2, blocks=[4, 2], hat=hat, vee=vee,
    random=random,
    in_chart=lambda v: (0.5 * (v[0] - v[3])) ** 2 + v[1] * v[2] > -np.pi ** 2,
    adversarial=lambda: [
        ("identity", [np.eye(3)] * 4),
        ("A = I + 1e-8 X", [aff(np.eye(2) + 1e-8 * np.array([[1.0, -2.0], [0.5, 3.0]]), (1e-8, 0)),
                            aff(np.eye(2) + 1e-8 * np.array([[-1.0, 0.0], [2.0, 1.0]]), (0, 1.0)),
                            aff(np.eye(2) + 1e-8 * np.array([[0.0, 1.0], [-1.0, 0.0]])),
                            aff(np.eye(2) + 1e-8 * np.array([[2.0, 0.0], [0.0, -2.0]]), (3.0, 4.0))]),
        ("scaled identity, ln det switch", [aff(c * np.eye(2), (1.0, 2.0)) for c in
                                            [np.sqrt(1.5 * (1 - 1e-3)), np.sqrt(1.5 * (1 + 1e-3)),
                                             np.sqrt(0.5 * (1 - 1e-3)), np.sqrt(0.5 * (1 + 1e-3))]]),
        ("scaled shears (nilpotent N)", [aff(c * np.array([[1.0, x], [0.0, 1.0]]), (1.0, -1.0))
                                         for c, x in [(1.0, 1e-8), (2.0, 0.3), (0.7, 5.0), (1.0, -8.0)]]),
        ("s ~ 0, f64 switch eta=1e-2", [near_repeated(1.3, s) for s in
                                        around(1e-2 * 1.69) + around(-1e-2 * 1.69)]),
        ("s ~ 0, f32 switch eta=0.1", [near_repeated(1.3, s) for s in
                                       around(0.1 * 1.69) + around(-0.1 * 1.69)]),
        ("s = +-1e-20", [near_repeated(1.3, 1e-20), near_repeated(1.3, -1e-20),
                         near_repeated(0.8, 1e-20), near_repeated(1.1, 0.0)]),
        ("Taylor radius 1/2, kappa>0", [diag_l(0.1 + d, 0.1 - d) for d in around(0.4)]
         + [diag_l(0.25 + d, 0.25 - d) for d in around(0.25)]),
        ("Taylor radius 1/2, kappa<0", [rot_l(0.1, w) for w in around(0.4)]
         + [rot_l(-0.3, w) for w in around(0.2)]),
        ("Taylor radius 1/2, kappa=0", [diag_l(a, a) for a in around(0.5) + around(-0.5)]),
        ("split/merged sqrt(kappa) = |alpha|/2", [diag_l(1.2 + d, 1.2 - d) for d in around(0.6)]
         + [diag_l(-1.2 + d, -1.2 - d) for d in around(0.6)]),
        ("split/merged sqrt(kappa) = 1", [diag_l(3.0 + d, 3.0 - d) for d in around(1.0)]
         + [diag_l(-3.0 + d, -3.0 - d) for d in around(1.0)], dict(abs_scale=64.0)),
        ("cosh/sinh series |kappa| = 1", [diag_l(2.5 + d, 2.5 - d) for d in around(1.0)]
         + [rot_l(2.5, w) for w in around(1.0)], dict(abs_scale=64.0)),
        ("phi series at an eigenvalue 1e-3, 1e-2", [diag_l(1.6, m) for m in around(1e-3) + around(1e-2)]),
        ("rotation by pi - 1e-7", [aff(c * rot(np.pi - e), (1.0, 2.0)) for c, e in
                                   [(1.0, 1e-7), (2.0, -1e-7), (0.5, 2e-7), (1.0, 1e-6)]]),
        ("large scales", [aff(np.diag(d), (5.0, -3.0)) for d in
                          [(1e3, 1e-3), (1e-3, 1e3), (50.0, 60.0), (1e3, 1e3)]],
         dict(abs_scale=1e3)),
        ("large rotation-scales", [aff(c * rot(t), (1.0, 1.0)) for c, t in
                                   [(1e3, 1.0), (1e-3, -2.0), (30.0, 3.0), (1.0, -3.1)]],
         dict(abs_scale=1e3)),
    ])


def check_wide(report, rng):
    """log, exp(ref), exp(log g) on elements anywhere in the chart."""
    gs = wide(rng, 48)
    for dtype, np_t, tlog, tabs in (("f64", np.float64, 1e-13, 4e-15), ("f32", np.float32, 1e-5, 2e-6)):
        mod, _ = build_module(spec, dtype)
        g = np.ascontiguousarray(gs.astype(np_t))
        w = np.zeros((len(g), 6), np_t)
        mod.call("lie_log", g, w)
        ref = np.array([ref_log(spec, x) for x in g])
        # f32: the rounded input is off by 6e-8 relative; log's relative
        # condition number there is ‖L‖⁻¹‖A‖‖A⁻¹‖-ish; bound per element.
        cond = np.array([np.linalg.cond(x[:2, :2].astype(np.float64)) for x in g])
        err = np.linalg.norm(w - ref, axis=1) / np.linalg.norm(ref, axis=1)
        bound = tlog if dtype == "f64" else np.maximum(tlog, 6e-8 * 4 * cond)
        report.check("%s wide log (rel / bound)" % dtype, float(np.max(err / bound)), 1.0)
        e = np.zeros_like(g)
        mod.call("lie_exp", np.ascontiguousarray(ref.astype(np_t)), e)
        eref = np.array([ref_exp(spec, x) for x in ref.astype(np_t)])
        scale = np.maximum(1.0, np.max(np.abs(eref), axis=(1, 2)))
        report.check("%s wide exp (abs / max(1, |g|))" % dtype,
                     float(np.max(np.max(np.abs(e - eref), axis=(1, 2)) / scale)), 2 * tabs)
        e2 = np.zeros_like(g)
        mod.call("lie_exp", w, e2)
        report.check("%s wide exp(log g) = g (abs / max(1, |g|))" % dtype,
                     float(np.max(np.max(np.abs(e2 - g.astype(np.float64)), axis=(1, 2)) / scale)),
                     (4 if dtype == "f64" else 8) * tabs)


def check_out_of_chart(report):
    """A real eigenvalue ≤ 0: no real principal log; every coordinate is NaN."""
    bad = [aff(-np.eye(2), (1.0, 2.0)), aff(np.diag([-1.0, 2.0])), aff(np.diag([1.0, -1.0])),
           aff(np.array([[-1.0, 1.0], [0.0, -1.0]])), aff(np.diag([-2.0, -3.0]), (0.5, 0.5)),
           aff(np.array([[0.0, 1.0], [0.0, 0.0]])), aff(np.array([[-1.0, 5.0], [1e-3, -1.0]]))]
    for dtype, np_t in (("f64", np.float64), ("f32", np.float32)):
        mod, _ = build_module(spec, dtype)
        g = np.ascontiguousarray(np.array(bad).astype(np_t))
        w = np.zeros((len(g), 6), np_t)
        mod.call("lie_log", g, w)
        report.check("%s out of chart: log not all NaN (count)" % dtype,
                     float(np.sum(~np.isnan(w))), 0)
        d = np.zeros((len(g),), np_t)
        mod.call("lie_dist2", np.ascontiguousarray(np.broadcast_to(np.eye(3, dtype=np_t), g.shape)), g, d)
        report.check("%s out of chart: dist2 not NaN (count)" % dtype,
                     float(np.sum(~np.isnan(d))), 0)


rng = np.random.default_rng(1)
report = Report("lie numerics: aff2 wide chart and out-of-chart policy")
check_out_of_chart(report)
check_wide(report, rng)
report.finish()

tol64 = dict(log=1e-13, exp=4e-15, roundtrip=4e-15, compose=4e-15, inverse=4e-15,
             act=4e-15, dist2=1e-13, invariance=1e-12)
tol32 = dict(log=1e-5, exp=2e-6, roundtrip=2e-6, compose=2e-6, inverse=2e-6,
             act=2e-6, dist2=1e-5, invariance=1e-5)
run_group_suite(spec, tol64, tol32)
