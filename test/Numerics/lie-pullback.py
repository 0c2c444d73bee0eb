# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""lie.pullback (the VJP of every lie op) against central finite differences.

For every built-in group and every differentiable operand of compose,
inverse, log, exp, act, dist2 and the pair features (query and key side),
in float64: the compiled pullback of a random cotangent C is compared with
the central finite difference of f = ⟨C, op(...)⟩, computed by calling the
compiled forward op. Group operands are perturbed on the group,
x ↦ x·expm(±h E_k), so the reference is the left-trivialised gradient
η_k = d/dε f(x·exp(ε E_k)); the pullback returns the ambient cotangent Ḡ
and η_k = ⟨Ḡ, x E_k⟩ is formed here (E_k are this file's own hat maps).
Group results get an ambient cotangent C: only its tangent part matters.

Points: random elements; θ ~ 1e-7 (near the identity, where the models
switch to series); θ = π − 1e-3 (near the cut of log; the FD step 1e-7
stays on one side). Tolerance 1e-7 relative to the largest gradient entry
of the set (the issue's bound); the FD error itself is ≤ 1e-9 here.

At θ = 0 and θ = π exactly the pullbacks must be finite (docs/training.md:
at θ = π the derivative of θ² through ‖vee(R − Rᵀ)‖ is taken as 0, its
minimum-norm subgradient); checked as "finite".
"""
import numpy as np
from scipy.linalg import expm

from torsor_testing import CompiledModule, Report, dps_function


def skew3(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def hat_so2(v):
    return np.array([[0, -v[0]], [v[0], 0]])


def hat_se2(v):
    return np.array([[0, -v[0], v[1]], [v[0], 0, v[2]], [0, 0, 0]])


def hat_so3(v):
    return skew3(v)


def hat_se3(v):
    X = np.zeros((4, 4))
    X[:3, :3] = skew3(v[:3])
    X[:3, 3] = v[3:6]
    return X


def hat_aff2(v):
    return np.array([[v[0], v[1], v[4]], [v[2], v[3], v[5]], [0, 0, 0]])


def hat_sim3(v):
    X = np.zeros((4, 4))
    X[:3, :3] = skew3(v[:3]) + v[6] * np.eye(3)
    X[:3, 3] = v[3:6]
    return X


# name, n, k, point dim, hat, rotation coordinates (for θ-controlled sets)
GROUPS = [
    ("so2", 2, 1, 2, hat_so2, [0]),
    ("se2", 3, 3, 2, hat_se2, [0]),
    ("so3", 3, 3, 3, hat_so3, [0, 1, 2]),
    ("se3", 4, 6, 3, hat_se3, [0, 1, 2]),
    ("aff2", 3, 6, 2, hat_aff2, None),
    ("sim3", 4, 7, 3, hat_sim3, [0, 1, 2]),
]
BLOCKS = {"so2": 1, "se2": 2, "so3": 1, "se3": 2, "aff2": 2, "sim3": 3}
FEATURES = {"so2": (2, 2), "se2": (4, 4), "so3": (9, 9), "se3": (12, 12),
            "aff2": (9, 9), "sim3": (16, 16)}


def gens(hat, k):
    return [hat(np.eye(k)[i]) for i in range(k)]


def elements(rng, name, k, hat, rot, theta, m):
    """m elements exp(hat v) with the rotation part at angle `theta`
    (random when None) and the other coordinates O(1)."""
    out = []
    for _ in range(m):
        v = rng.standard_normal(k) * 0.7
        if name == "aff2":
            v[:4] *= 0.5
            if theta is not None:  # L = θ·J + small symmetric part
                v[:4] = [theta * 1e-1 * rng.standard_normal(), -theta,
                         theta, 0.0]
        elif theta is not None and rot is not None:
            axis = rng.standard_normal(len(rot))
            axis = axis / np.linalg.norm(axis) if len(rot) > 1 else np.sign(axis)
            v[rot] = theta * axis
        out.append(expm(hat(v)))
    return np.array(out)


def tt(shape):
    return "tensor<%sxf64>" % "x".join("?" if s is None else str(s) for s in shape)


def build(name, n, k, d, nq, nk):
    g = "#lie.group<%s>" % name
    lam = ", ".join("%.17g" % (0.5 + i) for i in range(BLOCKS[name]))
    G, V, P, S = [None, n, n], [None, k], [None, d], [None]
    Q, K = [None, nq], [None, nk]
    fns = []

    def fwd(fname, ins, out, text):
        fns.append(dps_function(fname, [(s, "f64") for s in ins], [(out, "f64")],
                                lambda a: (text(a), ["%r"])))

    fwd("log", [G], V, lambda a: "  %%r = lie.log %s {group = %s} : %s -> %s" % (a[0], g, tt(G), tt(V)))
    fwd("exp", [V], G, lambda a: "  %%r = lie.exp %s {group = %s} : %s -> %s" % (a[0], g, tt(V), tt(G)))
    fwd("compose", [G, G], G, lambda a: "  %%r = lie.compose %s, %s {group = %s} : %s" % (a[0], a[1], g, tt(G)))
    fwd("inverse", [G], G, lambda a: "  %%r = lie.inverse %s {group = %s} : %s" % (a[0], g, tt(G)))
    fwd("act", [G, P], P, lambda a: "  %%r = lie.act %s, %s {group = %s} : %s, %s -> %s"
        % (a[0], a[1], g, tt(G), tt(P), tt(P)))
    fwd("dist2", [G, G], S, lambda a: "  %%r = lie.dist2 %s, %s {group = %s, lambda = array<f64: %s>} : %s -> %s"
        % (a[0], a[1], g, lam, tt(G), tt(S)))
    fwd("query_features", [G], Q, lambda a: "  %%r = lie.pair_features %s {group = %s} : %s -> %s"
        % (a[0], g, tt(G), tt(Q)))
    fwd("key_features", [G], K, lambda a: "  %%r = lie.pair_features %s {group = %s, key} : %s -> %s"
        % (a[0], g, tt(G), tt(K)))
    sig = {"log": ([G], V), "exp": ([V], G), "compose": ([G, G], G), "inverse": ([G], G),
           "act": ([G, P], P), "dist2": ([G, G], S), "query_features": ([G], Q),
           "key_features": ([G], K)}
    for op, (ins, out) in sig.items():
        for wrt in range(len(ins)):
            extra = ", lambda = array<f64: %s>" % lam if op == "dist2" else ""
            types = ", ".join(tt(s) for s in ins + [out])
            fwd("pb_%s_%d" % (op, wrt), ins + [out], ins[wrt], lambda a, op=op, wrt=wrt, extra=extra, types=types, ins=ins:
                "  %%r = lie.pullback \"%s\"(%s), %s {group = %s, wrt = %d : i64%s} : (%s) -> %s"
                % (op, ", ".join(a[:len(ins)]), a[len(ins)], g, wrt, extra, types, tt(ins[wrt])))
    return CompiledModule("\n".join(fns)), sig


def call(mod, fname, args, out_shape):
    out = np.zeros(out_shape)
    mod.call(fname, *[np.ascontiguousarray(a) for a in args], out)
    return out


def main():
    rng = np.random.default_rng(7)
    report = Report("lie.pullback vs central finite differences (f64)")
    m = 6
    for name, n, k, d, hat, rot in GROUPS:
        nq, nk = FEATURES[name]
        mod, sig = build(name, n, k, d, nq, nk)
        E = gens(hat, k)
        sets = [("random", None, 1e-5), ("theta=1e-7", 1e-7, 1e-5)]
        if rot is not None or name == "aff2":
            sets.append(("theta=pi-1e-3", np.pi - 1e-3, 1e-7))
        for label, theta, h in sets:
            # Operands per kind: group elements near the set's angle, and
            # for binary ops a partner b = a·exp(small) or random.
            a = elements(rng, name, k, hat, rot, theta, m)
            b = elements(rng, name, k, hat, rot, theta, m)
            if theta is not None:
                # Relative elements a⁻¹b at the set's angle too.
                b = np.array([x @ y for x, y in zip(a, b)])
            v = np.array([np.real(np.array(np.linalg.norm(0) + 0)) for _ in range(0)])
            v = call(mod, "log", [a], (m, k))
            pts = rng.standard_normal((m, d))
            operands = {"log": [a], "exp": [v], "compose": [a, b], "inverse": [a],
                        "act": [a, pts], "dist2": [a, b], "query_features": [a],
                        "key_features": [a]}
            for op, (ins, out) in sig.items():
                args = operands[op]
                out_shape = (m,) + tuple(out[1:])
                C = rng.standard_normal(out_shape)
                f = lambda xs: np.sum(C * call(mod, op, xs, out_shape), axis=tuple(range(1, len(out_shape))))
                for wrt in range(len(ins)):
                    grad = call(mod, "pb_%s_%d" % (op, wrt), args + [C], args[wrt].shape)
                    group = len(ins[wrt]) == 3
                    if group:
                        ours = np.array([[np.sum(grad[i] * (args[wrt][i] @ Ek)) for Ek in E]
                                         for i in range(m)])
                        ref = np.zeros((m, k))
                        for j, Ek in enumerate(E):
                            plus = [x.copy() for x in args]
                            minus = [x.copy() for x in args]
                            plus[wrt] = np.array([x @ expm(h * Ek) for x in args[wrt]])
                            minus[wrt] = np.array([x @ expm(-h * Ek) for x in args[wrt]])
                            ref[:, j] = (f(plus) - f(minus)) / (2 * h)
                    else:
                        ours = grad.reshape(m, -1)
                        ref = np.zeros_like(ours)
                        for j in range(ours.shape[1]):
                            e = np.zeros(ours.shape[1])
                            e[j] = h
                            plus = [x.copy() for x in args]
                            minus = [x.copy() for x in args]
                            plus[wrt] = args[wrt] + e.reshape(args[wrt].shape[1:])
                            minus[wrt] = args[wrt] - e.reshape(args[wrt].shape[1:])
                            ref[:, j] = (f(plus) - f(minus)) / (2 * h)
                    scale = max(np.max(np.abs(ref)), 1.0)
                    report.check("%s %s %s d/d%d (rel)" % (name, label, op, wrt),
                                 np.max(np.abs(ours - ref)) / scale, 1e-7)
        # Exactly at the identity and at θ = π: finite.
        special = [("identity", np.array([np.eye(n)] * 2))]
        if rot is not None:
            vv = np.zeros((2, k))
            vv[0, rot[0]] = np.pi
            if len(rot) == 3:
                vv[1, rot] = np.pi * np.array([1, 1, 1]) / np.sqrt(3)
            else:
                vv[1, rot[0]] = -np.pi
            special.append(("theta=pi", np.array([expm(hat(x)) for x in vv])))
        for label, g in special:
            for op in ("log", "dist2", "query_features", "key_features", "compose"):
                ins, out = sig[op]
                args = [g, np.array([np.eye(n)] * len(g))] if len(ins) == 2 else [g]
                if op == "dist2":  # dist2(I, g): θ of the pair is the set's
                    args = [np.array([np.eye(n)] * len(g)), g]
                C = np.ones((len(g),) + tuple(out[1:]))
                bad = 0
                for wrt in range(len(ins)):
                    grad = call(mod, "pb_%s_%d" % (op, wrt), args + [C], args[wrt].shape)
                    bad += int(not np.all(np.isfinite(grad)))
                report.check("%s %s %s finite" % (name, label, op), bad, 0)
    report.finish()


main()
