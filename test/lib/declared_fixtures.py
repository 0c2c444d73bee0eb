"""Shared fixtures of the declared-group numerics tests.

test/Numerics/lie-declared-recognized.py (single hosts) and
lie-declared-products.py (direct sums) build their generators from the
same helpers and run the same f32 checks on their own groups:

- `check_dist2_near_pi`: dist2(I, exp v) against ‖v‖²_λ at rotation
  angles π − δ, δ = 1e-2 … 1e-7: within 1e-4 relative where δ < 1e-4 and
  1e-5 elsewhere;
- `check_default_accepts`: every valid f32 element's membership residual
  below the default tolerance 1e-4;
- `check_rejected`: each non-member's residual above it (or NaN), as
  torsor-run compares (!(residual <= tol)).
"""
import numpy as np
import scipy.linalg

from lie_reference import declared_attr as attr
from torsor_testing import CompiledModule, dps_function


def unit(n, i, j, v=1.0):
    m = np.zeros((n, n))
    m[i, j] = v
    return m


def hat_of(gens, v):
    return sum(float(c) * g for c, g in zip(v, gens))


def unit_axis(rng):
    a = rng.standard_normal(3)
    return a / np.linalg.norm(a)


def batched_expm(X):
    """exp of many matrices: scaling and squaring with a degree-18 Taylor
    polynomial (truncation < 1e-20 at norm 0.5), in NumPy f64."""
    norm = np.max(np.abs(X).sum(axis=-1), axis=-1)
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm, 1e-300) / 0.5))).astype(int)
    Y = X / (2.0 ** s)[:, None, None]
    n = X.shape[-1]
    E = np.broadcast_to(np.eye(n), X.shape).copy()
    term = E.copy()
    for k in range(1, 19):
        term = term @ Y / k
        E = E + term
    for i in range(int(s.max())):
        sq = E @ E
        E = np.where((s > i)[:, None, None], sq, E)
    return E


def compile_ops(name, gens, blocks, dtype):
    """lie.membership_residual and lie.dist2 (λ_b = 0.5 + b) of one
    declared group; returns the module and the λs."""
    n = len(gens[0])
    a = attr(name, gens, blocks)
    lam = ", ".join("%.17g" % (0.5 + i) for i in range(len(blocks)))
    t = lambda shape: "tensor<%s>" % "x".join(shape + [dtype])
    G = ([None, n, n], dtype)
    S = ([None], dtype)
    text = "\n".join([
        dps_function("residual", [G], [S], lambda x: (
            "  %%r = lie.membership_residual %s {group = %s} : %s -> %s"
            % (x[0], a, t(["?", str(n), str(n)]), t(["?"])), ["%r"])),
        dps_function("dist2", [G, G], [S], lambda x: (
            "  %%r = lie.dist2 %s, %s {group = %s, lambda = array<f64: %s>} : %s -> %s"
            % (x[0], x[1], a, lam, t(["?", str(n), str(n)]), t(["?"])), ["%r"])),
    ])
    return CompiledModule(text), [0.5 + i for i in range(len(blocks))]


def check_dist2_near_pi(report, name, mod, gens, blocks, lam, coords_at_angle,
                        rng, per_delta):
    """f32 dist2(I, exp v) = ‖v‖²_λ exactly, for v inside the chart, at
    rotation angles π − δ (`per_delta` elements each). The truth is that
    of the unrounded v: rounding the input to f32 moves θ by ~1e-7, i.e.
    dist2 by ~2θ·1e-7 (relative ~1e-7, well inside)."""
    n = len(gens[0])
    worst_near = worst_far = 0.0
    for delta in (1e-2, 1e-3, 1e-4 - 1e-12, 1e-5, 1e-6, 1e-7):
        vs = [coords_at_angle(name, rng, np.pi - delta) for _ in range(per_delta)]
        g64 = np.array([scipy.linalg.expm(hat_of(gens, v)) for v in vs])
        g = np.ascontiguousarray(g64.astype(np.float32))
        eye = np.ascontiguousarray(np.broadcast_to(np.eye(n, dtype=np.float32), g.shape))
        d = np.zeros(len(g), np.float32)
        mod.call("dist2", eye, g, d)
        truth = []
        for v in vs:
            at, s = 0, 0.0
            for (_, size), l in zip(blocks, lam):
                s += l * float(np.sum(np.asarray(v[at:at + size]) ** 2))
                at += size
            truth.append(s)
        err = float(np.max(np.abs(d - truth) / np.abs(truth)))
        if delta < 1e-4:
            worst_near = max(worst_near, err)
        else:
            worst_far = max(worst_far, err)
    report.check("f32 %s dist2(I, g), pi - theta in [1e-7, 1e-4) (rel)" % name, worst_near, 1e-4)
    report.check("f32 %s dist2(I, g), pi - theta in [1e-4, 1e-2] (rel)" % name, worst_far, 1e-5)


def near_pi_thetas(rng, count):
    """A fifth of the angles within 1e-2 … 1e-7 of a half turn, the rest
    uniform in [0, π)."""
    return np.concatenate([np.pi - 10.0 ** rng.uniform(-7, -2, count // 5),
                           rng.uniform(0, np.pi, count - count // 5)])


def check_default_accepts(report, name, mod, g):
    """The default group check: every valid f32 element in `g` below
    tol 1e-4."""
    g = np.ascontiguousarray(g.astype(np.float32))
    r = np.zeros(len(g), np.float32)
    mod.call("residual", g, r)
    report.check("f32 %s default check: valid elements with residual > 1e-4 (count of %d)"
                 % (name, len(g)), float(np.sum(~(r <= 1e-4))), 0)


def check_rejected(report, name, mod, bad):
    """Each (label, matrix) in `bad` rejected: !(residual <= 1e-4), so NaN
    is a rejection, as torsor-run compares."""
    for label, m_ in bad:
        r = np.zeros(1, np.float32)
        mod.call("residual", np.ascontiguousarray(m_[None].astype(np.float32)), r)
        report.check("f32 %s %s rejected (residual > 1e-4 or NaN; 1 = not)" % (name, label),
                     0.0 if not r[0] <= 1e-4 else 1.0, 0)
