# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""SO(2): compiled lie ops vs 50-digit references, f64 and f32.

Adversarial inputs: identity, θ = ±1e-8, θ = π − 1e-7, θ = π exactly
(as cos π, sin π in float64: the sine is 1.2e-16, not 0).
Tolerances: f64 log relative 1e-13, dist2 invariance 1e-12 (the issue's
goals); f32 1e-5 relative (log of an f32-rounded rotation is conditioned
at ~1e-7/θ near θ = 0, which stays within 1e-5 for θ ≥ 1e-2; below that,
f32 rounding of cos θ = 1 makes θ rely only on sin θ, still relative 1e-7).
"""
import numpy as np

from lie_reference import GroupSpec, run_group_suite


def rot(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s], [s, c]])


spec = GroupSpec(
    name="so2", n=2, k=1, point_dim=2, blocks=[1],
    hat=lambda v: [[0, -v[0]], [v[0], 0]],
    vee=lambda X: [X[1, 0]],
    random=lambda rng, m: np.array([rot(t) for t in rng.uniform(-np.pi, np.pi, m)]),
    adversarial=lambda: [
        ("identity", [np.eye(2)] * 4),
        ("theta=1e-8", [rot(1e-8), rot(-1e-8), rot(3e-8), rot(-2e-8)]),
        ("theta=pi-1e-7", [rot(np.pi - 1e-7), rot(-np.pi + 1e-7), rot(np.pi - 2e-7), rot(np.pi - 1e-6)]),
        ("theta=pi", [rot(np.pi), rot(-np.pi), rot(np.pi), rot(np.pi)]),
    ])

tol64 = dict(log=1e-13, exp=1e-15, roundtrip=1e-15, compose=1e-15, inverse=1e-15,
             act=1e-14, dist2=1e-13, invariance=1e-12)
tol32 = dict(log=1e-5, exp=2e-7, roundtrip=3e-7, compose=3e-7, inverse=3e-7,
             act=2e-6, dist2=1e-5, invariance=1e-5)
run_group_suite(spec, tol64, tol32)
