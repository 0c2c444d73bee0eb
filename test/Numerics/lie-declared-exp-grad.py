# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""The gradient of lie.exp for declared non-nilpotent groups, in float64.

A declared group whose algebra is not nilpotent computes exp by scaling and
squaring (loops, not differentiated); its model gives exp's derivative
instead: exp(v + εδ) = exp(v)·exp(ε·hat(J_r(v)δ)) + O(ε²), so the gradient
of a cotangent C on exp(v) is J_r(v)ᵀη with η_k = ⟨exp(v)ᵀC, E_k⟩
(docs/lie-gradients.md). The compiled `lie.pullback "exp"` is compared
with a fourth-order central difference of f(v) = ⟨C, expm(hat(v))⟩ taken
with scipy's expm (nothing of the compiled exp is used by the reference).

Groups: SL(2) (generators H, E, F, not orthonormal; linear, not affine)
and Sim(2) (affine: rotation, dilation, two translations). Coordinates:
random (‖v‖ ~ 1), small (‖v‖ ~ 1e-6), exactly 0 (J_r = I), and large
(‖hat(v)‖_F ~ 3.5–6.5: elliptic SL(2) near a rotation by π, hyperbolic
SL(2) with eigenvalues e^{±3}, Sim(2) with a rotation of 3 rad, a
dilation of e^{1.5} and translations of 5). Tolerance 1e-7 relative to the
largest gradient entry (FD error ≤ ~1e-9 at these scales).
"""
import numpy as np
from scipy.linalg import expm

from torsor_testing import CompiledModule, Report, dps_function

GROUPS = {
    # name: (n, generators, blocks)
    "SL2": (2, [[[1, 0], [0, -1]], [[0, 1], [0, 0]], [[0, 0], [1, 0]]],
            '[["diag", 0], ["off", 1, 2]]'),
    "Sim2": (3, [[[0, -1, 0], [1, 0, 0], [0, 0, 0]], [[1, 0, 0], [0, 1, 0], [0, 0, 0]],
                 [[0, 0, 1], [0, 0, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 1], [0, 0, 0]]],
             '[["rotscale", 0, 1], ["trans", 2, 3]]'),
}

LARGE = {
    "SL2": [[0.0, 3.0, -3.0], [3.0, 0.5, 0.5], [0.2, -3.3, 3.0]],
    "Sim2": [[3.0, 1.5, 5.0, -5.0], [-2.5, -1.0, 3.0, 4.0]],
}


def tt(shape):
    return "tensor<%sxf64>" % "x".join("?" if s is None else str(s) for s in shape)


def build(name, n, gens, blocks):
    k = len(gens)
    entries = ", ".join("%.1f" % x for E in gens for row in E for x in row)
    g = '#lie.group<"%s", n = %d, generators = array<f64: %s>, blocks = %s>' % (
        name, n, entries, blocks)
    G, V = [None, n, n], [None, k]
    text = [
        dps_function("exp", [(V, "f64")], [(G, "f64")], lambda a: (
            "  %%r = lie.exp %s {group = %s} : %s -> %s" % (a[0], g, tt(V), tt(G)), ["%r"])),
        dps_function("pb_exp", [(V, "f64"), (G, "f64")], [(V, "f64")], lambda a: (
            "  %%r = lie.pullback \"exp\"(%s), %s {group = %s, wrt = 0 : i64} : (%s, %s) -> %s"
            % (a[0], a[1], g, tt(V), tt(G), tt(V)), ["%r"])),
    ]
    return CompiledModule("\n".join(text))


def main():
    rng = np.random.default_rng(5)
    report = Report("lie.pullback \"exp\" of declared groups vs finite differences (f64)")
    for name, (n, gens, blocks) in GROUPS.items():
        E = [np.array(x, dtype=float) for x in gens]
        k = len(E)
        mod = build(name, n, gens, blocks)

        def hat(v):
            return sum(c * Ek for c, Ek in zip(v, E))
        sets = [("random", rng.standard_normal((6, k)) * 0.7, 1e-3),
                ("small", rng.standard_normal((4, k)) * 1e-6, 1e-3),
                ("zero", np.zeros((2, k)), 1e-3),
                ("large", np.array(LARGE[name]), 1e-4)]
        for label, v, h in sets:
            m = len(v)
            C = rng.standard_normal((m, n, n))
            y = np.zeros((m, n, n))
            mod.call("exp", np.ascontiguousarray(v), y)
            ref_y = np.array([expm(hat(x)) for x in v])
            report.check("%s %s exp vs expm (rel)" % (name, label),
                         np.max(np.abs(y - ref_y)) / np.max(np.abs(ref_y)), 1e-12)
            ours = np.zeros((m, k))
            mod.call("pb_exp", np.ascontiguousarray(v), np.ascontiguousarray(C), ours)
            ref = np.zeros((m, k))
            for i in range(m):
                for j in range(k):
                    def f(eps):
                        x = v[i].copy()
                        x[j] += eps
                        return float(np.sum(C[i] * expm(hat(x))))
                    ref[i, j] = (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)
            report.check("%s %s finite" % (name, label), int(not np.all(np.isfinite(ours))), 0)
            scale = max(np.max(np.abs(ref)), 1e-300)
            report.check("%s %s d exp (rel)" % (name, label),
                         np.max(np.abs(ours - ref)) / scale, 1e-7)
    report.finish()


main()
