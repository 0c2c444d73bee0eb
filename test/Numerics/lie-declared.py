# RUN: %python %s | FileCheck %s
# CHECK: == lie numerics: Heis3
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: SL2
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == SL2 chart limits
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == lie numerics: Sim2
# CHECK: all {{[0-9]+}} checks passed
# CHECK: == declared vs built-in
# CHECK: all {{[0-9]+}} checks passed
"""Groups declared by their generators (#lie.group<"Name", n, generators, blocks>).

1. Heisenberg H(3) (nilpotent: exp, log and inverse are exact finite
   series) through the full lie-op suite against 50-digit references.
2. SL(2) (generators H, E, F; not orthonormal: the coordinates go through
   the Gram matrix) through the same suite on elements near the identity,
   then its chart limits: exp is not surjective (−[[1, 1], [0, 1]] and
   diag(−2, −1/2) have no real log: log gives NaN, the documented policy of
   MatrixFunctions), rotations by θ → π stay accurate, large hyperbolic
   elements (outside the conservative isInsideChart bound) still log
   correctly, and elements within 1e-8 of the identity log to an absolute
   2.3e-16 (one ulp of the entries; the generic log is not relatively
   accurate there as the built-in closed forms are).
   Sim(2) (affine, not nilpotent, linear part neither orthogonal nor
   nilpotent: Gauss–Jordan inverse) through the same suite.
3. SE(2), SO(3), SE(3), Aff(2), Sim(3) declared in the built-in bases, compiled both
   specialised (the built-in closed forms) and with `generic` (the generic
   matrix functions), against the built-in groups: every op agrees to
   1e-12 in f64 on random inputs (dist2: times max(1, 1e-2/(π − θ)) for a
   relative rotation by θ, where log is ill-conditioned), and generic dist2
   is left-invariant.

SL(2) and Sim(2) run on built-in closed forms since they are recognised
(Aff(2)'s on diag(g, 1), and the sim2 host's; docs/groups/declared.md,
"Built-in closed forms"); the declared built-ins' `generic` variants keep
the generic model.

Tolerances: nilpotent H(3) is exact up to rounding (f64 1e-14 relative on
entries of size ~3). The generic exp/log of the `generic` variants use
scaling and squaring / inverse scaling and squaring, whose f64 error is a
few hundred ulps at most (1e-12 as the issue asks); the closed forms are
held to the same bounds.
"""
import numpy as np
import scipy.linalg

from lie_reference import GroupSpec, build_module, declared_attr as attr, ref_log, run_group_suite
from torsor_testing import Report


def unit(n, i, j, v=1.0):
    m = np.zeros((n, n))
    m[i, j] = v
    return m


def so3_hat(n, axis):
    """hat(e_axis) of so(3) in the top-left of an n×n matrix."""
    i, j = (axis + 1) % 3, (axis + 2) % 3
    return unit(n, j, i) - unit(n, i, j)


# --- 1. Heisenberg ----------------------------------------------------------

HEIS = [unit(3, 0, 1), unit(3, 1, 2), unit(3, 0, 2)]


def heis(a, b, c):
    return np.array([[1.0, a, c], [0.0, 1.0, b], [0.0, 0.0, 1.0]])


heis_spec = GroupSpec(
    name="Heis3", n=3, k=3, point_dim=2, blocks=[2, 1],
    hat=lambda v: [[0, v[0], v[2]], [0, 0, v[1]], [0, 0, 0]],
    vee=lambda X: [X[0, 1], X[1, 2], X[0, 2]],
    random=lambda rng, m: np.array([heis(*x) for x in rng.normal(0, 2, (m, 3))]),
    adversarial=lambda: [
        ("identity", [np.eye(3)] * 4),
        ("tiny", [heis(1e-9, -2e-9, 3e-12), heis(0, 0, 1e-12), heis(1e-8, 0, 0), heis(0, 1e-8, 0)]),
        ("large", [heis(30, -20, 50), heis(-40, 35, 10), heis(25, 25, -60), heis(1, 50, 3)],
         dict(abs_scale=64)),
    ],
    attr=attr("Heis3", HEIS, [("plane", 2), ("center", 1)]))
tol64 = dict(log=1e-14, exp=4e-15, roundtrip=8e-15, compose=8e-15, inverse=8e-15,
             act=2e-14, dist2=1e-14, invariance=1e-12)
tol32 = dict(log=2e-6, exp=2e-6, roundtrip=4e-6, compose=4e-6, inverse=4e-6,
             act=8e-6, dist2=4e-6, invariance=5e-5)
run_group_suite(heis_spec, tol64, tol32, count=32)

# --- 2. SL(2) ---------------------------------------------------------------

SL2 = [np.diag([1.0, -1.0]), unit(2, 0, 1), unit(2, 1, 0)]
SL2_ATTR = attr("SL2", SL2, [("h", 1), ("ef", 2)])


def sl2_hat(v):
    return [[v[0], v[1]], [v[2], -v[0]]]


def sl2_exp(v):
    return scipy.linalg.expm(np.array(sl2_hat(v), np.float64))


sl2_spec = GroupSpec(
    name="SL2", n=2, k=3, point_dim=2, blocks=[1, 2],
    hat=sl2_hat,
    vee=lambda X: [X[0, 0], X[0, 1], X[1, 0]],
    random=lambda rng, m: np.array([sl2_exp(v) for v in rng.normal(0, 0.3, (m, 3))]),
    adversarial=lambda: [
        ("identity", [np.eye(2)] * 4),
        ("parabolic", [np.array([[1.0, 5.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [-3.0, 1.0]]),
                       np.array([[1.0, 0.5], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.25, 1.0]])]),
    ],
    attr=SL2_ATTR)
tol64 = dict(log=1e-12, exp=1e-13, roundtrip=1e-13, compose=1e-15, inverse=1e-14,
             act=1e-14, dist2=1e-12, invariance=1e-11)
tol32 = dict(log=2e-5, exp=2e-6, roundtrip=4e-6, compose=4e-7, inverse=2e-6,
             act=2e-6, dist2=2e-5, invariance=1e-4)
run_group_suite(sl2_spec, tol64, tol32, count=32)

report = Report("SL2 chart limits")
mod, _ = build_module(sl2_spec, "f64")


def sl2_log(gs):
    g = np.ascontiguousarray(np.asarray(gs, np.float64))
    w = np.zeros((len(g), 3))
    mod.call("lie_log", g, w)
    return w


# Near the identity the generic log is accurate to ~1 ulp of the entries
# of g (absolute: log is 1-conditioned there), not relative to |w| as the
# closed forms of the built-in groups are.
vs = np.array([[1e-9, 0, 0], [0, 1e-9, -1e-9], [1e-8, 2e-8, 3e-8], [0, 0, 1e-10]])
gs = [sl2_exp(v) for v in vs]
w = sl2_log(gs)
ref = np.array([ref_log(sl2_spec, g) for g in np.asarray(gs)])
report.check("f64 log near the identity (abs)", float(np.max(np.abs(w - ref))), 2.3e-16)
# Not in the image of exp: eigenvalues on the negative real axis.
w = sl2_log([-np.array([[1.0, 1.0], [0.0, 1.0]]), np.diag([-2.0, -0.5]), -np.eye(2)])
report.check("f64 log of -[[1,1],[0,1]], diag(-2,-1/2), -I is NaN (count not NaN)",
             float(sum(not np.isnan(row).any() for row in w)), 0)
# Elliptic elements: rotations by θ up to π − 1e-6 (log coordinates (0, θ, −θ)).
thetas = np.array([1.0, 2.5, 3.0, np.pi - 1e-3, np.pi - 1e-6])
gs = [sl2_exp([0.0, t, -t]) for t in thetas]
w = sl2_log(gs)
ref = np.stack([np.zeros_like(thetas), thetas, -thetas], axis=1)
# The log of a rotation by θ ≈ π is conditioned like 1/(π − θ) off the
# group; measure against the exact coordinates with that allowance.
err = np.max(np.abs(w - ref), axis=1) / np.maximum(1.0, 1e-3 / (np.pi - thetas))
report.check("f64 log of rotations theta -> pi (abs, conditioned)", float(np.max(err)), 1e-12)
# Hyperbolic elements far from the identity (‖X‖_F > π: isInsideChart is
# conservative there) still have a principal log, recovered exactly.
vs = np.array([[3.0, 0.0, 0.0], [2.0, 4.0, 1.0], [-2.5, 0.0, 6.0], [0.0, 3.0, 2.0]])
w = sl2_log([sl2_exp(v) for v in vs])
report.check("f64 log of large hyperbolic elements (rel)",
             float(np.max(np.linalg.norm(w - vs, axis=1) / np.linalg.norm(vs, axis=1))), 1e-12)
report.finish()

# --- 2b. Sim(2): affine, not nilpotent, linear part not orthogonal ----------

SIM2 = [so3_hat(3, 2), np.diag([1.0, 1.0, 0.0]), unit(3, 0, 2), unit(3, 1, 2)]


def sim2_hat(v):
    return [[v[1], -v[0], v[2]], [v[0], v[1], v[3]], [0, 0, 0]]


def sim2_exp(v):
    return scipy.linalg.expm(np.array(sim2_hat(v), np.float64))


def sim2_random(rng, m):
    v = np.concatenate([rng.uniform(-3.0, 3.0, (m, 1)), rng.normal(0, 0.5, (m, 1)),
                        rng.normal(0, 2, (m, 2))], axis=1)
    return np.array([sim2_exp(x) for x in v])


sim2_spec = GroupSpec(
    name="Sim2", n=3, k=4, point_dim=2, blocks=[2, 2],
    hat=sim2_hat,
    vee=lambda X: [(X[1, 0] - X[0, 1]) / 2, (X[0, 0] + X[1, 1]) / 2, X[0, 2], X[1, 2]],
    random=sim2_random,
    adversarial=lambda: [
        ("identity", [np.eye(3)] * 4),
        ("theta=3.1", [sim2_exp([3.1, 0.2, 1, -1]), sim2_exp([-3.1, -0.3, 0, 2]),
                       sim2_exp([3.1, 0, 0, 0]), sim2_exp([-3.1, 1.0, -2, 0])]),
        ("pure scale", [sim2_exp([0, 2.0, 0, 0]), sim2_exp([0, -2.0, 1, 1]),
                        sim2_exp([0, 0.5, 3, 0]), sim2_exp([0, -0.1, 0, 0])]),
    ],
    attr=attr("Sim2", SIM2, [("rotscale", 2), ("trans", 2)]))
tol64 = dict(log=1e-12, exp=1e-13, roundtrip=1e-13, compose=1e-14, inverse=1e-13,
             act=1e-14, dist2=1e-12, invariance=1e-11)
tol32 = dict(log=5e-5, exp=4e-6, roundtrip=8e-6, compose=2e-6, inverse=8e-6,
             act=4e-6, dist2=5e-5, invariance=2e-4)
run_group_suite(sim2_spec, tol64, tol32, count=32)

# --- 3. Declared SE(2), SO(3), SE(3) vs the built-in models -------------------

rng = np.random.default_rng(1)


def random_rotation_vectors(m, max_angle):
    axes = rng.standard_normal((m, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    return axes * rng.uniform(0, max_angle, (m, 1))


def hat_of(gens, v):
    return sum(c * g for c, g in zip(v, gens))


DECLARED = [
    ("se2", [so3_hat(3, 2), unit(3, 0, 2), unit(3, 1, 2)], [("rot", 1), ("trans", 2)],
     lambda m: np.concatenate([rng.uniform(-3.0, 3.0, (m, 1)), rng.normal(0, 2, (m, 2))], axis=1), 2),
    ("so3", [so3_hat(3, a) for a in range(3)], [("rot", 3)],
     lambda m: random_rotation_vectors(m, 3.0), 3),
    ("se3", [so3_hat(4, a) for a in range(3)] + [unit(4, a, 3) for a in range(3)],
     [("rot", 3), ("trans", 3)],
     lambda m: np.concatenate([random_rotation_vectors(m, 3.0), rng.normal(0, 2, (m, 3))], axis=1), 3),
    ("aff2", [unit(3, 0, 0), unit(3, 0, 1), unit(3, 1, 0), unit(3, 1, 1), unit(3, 0, 2), unit(3, 1, 2)],
     [("lin", 4), ("trans", 2)],
     lambda m: np.concatenate([rng.normal(0, 0.5, (m, 4)), rng.normal(0, 2, (m, 2))], axis=1), 2),
    ("sim3", [so3_hat(4, a) for a in range(3)] + [unit(4, a, 3) for a in range(3)]
     + [np.diag([1.0, 1.0, 1.0, 0.0])], [("rot", 3), ("trans", 3), ("scale", 1)],
     lambda m: np.concatenate([random_rotation_vectors(m, 3.0), rng.normal(0, 2, (m, 3)),
                               rng.normal(0, 0.5, (m, 1))], axis=1), 3),
]

report = Report("declared vs built-in")
m = 256
for key, gens, blocks, sample, point_dim in DECLARED:
    n, k = len(gens[0]), len(gens)
    base = dict(n=n, k=k, point_dim=point_dim, blocks=[s for _, s in blocks], hat=None, vee=None,
                random=None, adversarial=None)
    builtin, lam = build_module(GroupSpec(name=key, **base), "f64")
    variants = {
        "specialised": build_module(GroupSpec(name=key, attr=attr("D" + key, gens, blocks), **base), "f64")[0],
        "generic": build_module(GroupSpec(name=key, attr=attr("D" + key, gens, blocks, True), **base), "f64")[0],
    }
    v = sample(m)
    g = np.ascontiguousarray(np.array([scipy.linalg.expm(hat_of(gens, x)) for x in v]))
    h = np.ascontiguousarray(g[rng.permutation(m)])
    pts = np.ascontiguousarray(rng.standard_normal((m, point_dim)))
    left = scipy.linalg.expm(hat_of(gens, sample(1)[0]))
    lg, lh = np.ascontiguousarray(left @ g), np.ascontiguousarray(left @ h)

    def run(mod):
        out = {}
        out["log"] = np.zeros((m, k)); mod.call("lie_log", g, out["log"])
        out["exp"] = np.zeros((m, n, n)); mod.call("lie_exp", np.ascontiguousarray(v), out["exp"])
        out["compose"] = np.zeros((m, n, n)); mod.call("lie_compose", g, h, out["compose"])
        out["inverse"] = np.zeros((m, n, n)); mod.call("lie_inverse", g, out["inverse"])
        out["act"] = np.zeros((m, point_dim)); mod.call("lie_act", g, pts, out["act"])
        out["dist2"] = np.zeros((m,)); mod.call("lie_dist2", g, h, out["dist2"])
        out["dist2_left"] = np.zeros((m,)); mod.call("lie_dist2", lg, lh, out["dist2_left"])
        return out

    ref = run(builtin)
    # Margin π − θ of the relative rotation of each pair (∞ without rotation).
    rel = np.ascontiguousarray(np.linalg.solve(g, h))
    wrel = np.zeros((m, k))
    builtin.call("lie_log", rel, wrel)
    if blocks[0][0] == "rot":
        rel_margin = np.pi - np.linalg.norm(wrel[:, :blocks[0][1]], axis=1)
    else:
        rel_margin = np.full(m, np.inf)
    for variant, mod in variants.items():
        ours = run(mod)
        for op in ("log", "exp", "compose", "inverse", "act", "dist2"):
            a, b = ours[op].reshape(m, -1), ref[op].reshape(m, -1)
            errs = np.linalg.norm(a - b, axis=1) / np.maximum(np.linalg.norm(b, axis=1), 1.0)
            if op == "dist2":
                # log(a⁻¹b) is conditioned like 1/(π − θ) as the relative
                # rotation angle θ nears π, and both models round
                # differently there: allow 1e-12 · max(1, 1e-2/(π − θ)).
                # (Worst case seen, sim3 at π − θ = 1e-3: built-in 3.6e-12,
                # generic 7e-14 from the 50-digit value.)
                errs = errs / np.maximum(1.0, 1e-2 / rel_margin)
            err = float(np.max(errs))
            report.check("f64 %s %s %s vs built-in (rel to max(|x|,1))" % (key, variant, op), err, 1e-12)
        d, dl = ours["dist2"], ours["dist2_left"]
        report.check("f64 %s %s dist2 left-invariance (rel to max(d,1))" % (key, variant),
                     float(np.max(np.abs(dl - d) / np.maximum(np.abs(d), 1.0))), 1e-11)
report.finish()
