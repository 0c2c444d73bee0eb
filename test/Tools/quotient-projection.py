# tools/relational/quotient.py: the projection of updates onto the
# horizontal space of the GL(d_h) gauge (docs/relational.md), on random
# float64 examples:
#   - the projected update is orthogonal to every gauge tangent T(E_ij)
#     (relative to ‖g‖·‖T‖), for (W_Q, W_K) and (W_V, W_O);
#   - projecting twice changes nothing; what was removed is a tangent
#     (least-squares residual in the tangent span);
#   - the gradient of a gauge-invariant loss L(G_QK, G_VO) is unchanged;
#   - weight decay on the factors is not: its removed part moves G only at
#     second order;
#   - rank-deficient weights (singular tangent map) stay finite and
#     orthogonal; project_heads on [d, H·d_h] layout matches per head.
#
# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools",
                                "relational"))
from torsor_testing import Report  # noqa: E402
import quotient as Q  # noqa: E402


def inner(a, b):
    return sum(float(np.sum(x * y)) for x, y in zip(a, b))


def norm(a):
    return np.sqrt(inner(a, a))


def orthogonality(w1, w2, g, tangent, dh):
    """max_ij |<g, T(E_ij)>| / (‖g‖ ‖T(E_ij)‖)."""
    worst = 0.0
    for i in range(dh):
        for j in range(dh):
            e = np.zeros((dh, dh))
            e[i, j] = 1.0
            t = tangent(w1, w2, e)
            worst = max(worst, abs(inner(g, t)) / max(norm(g) * norm(t), 1e-300))
    return worst


def tangent_residual(w1, w2, r, tangent, dh):
    """Distance of r from span{T(E_ij)}, relative to ‖r‖."""
    cols = []
    for i in range(dh):
        for j in range(dh):
            e = np.zeros((dh, dh))
            e[i, j] = 1.0
            cols.append(np.concatenate([t.ravel() for t in tangent(w1, w2, e)]))
    m = np.stack(cols, 1)
    v = np.concatenate([t.ravel() for t in r])
    coef = np.linalg.lstsq(m, v, rcond=None)[0]
    return float(np.linalg.norm(m @ coef - v)) / max(float(np.linalg.norm(v)), 1e-300)


def main():
    report = Report("quotient projection of gradients")
    rng = np.random.default_rng(11)
    d, dh, dout = 12, 4, 10
    cases = {
        "QK": (Q.project_qk, Q.tangent_qk,
               lambda: (rng.standard_normal((d, dh)), rng.standard_normal((d, dh)))),
        "VO": (Q.project_vo, Q.tangent_vo,
               lambda: (rng.standard_normal((d, dh)), rng.standard_normal((dh, dout)))),
    }
    for name, (project, tangent, draw) in cases.items():
        w1, w2 = draw()
        g = (rng.standard_normal(w1.shape), rng.standard_normal(w2.shape))
        p = project(w1, w2, *g)
        report.check("%s: projected update orthogonal to all gauge tangents" % name,
                     orthogonality(w1, w2, p, tangent, dh), 1e-12)
        report.check("%s: projection is idempotent" % name,
                     norm([a - b for a, b in zip(project(w1, w2, *p), p)]) / norm(p), 1e-12)
        removed = [a - b for a, b in zip(g, p)]
        report.check("%s: removed part lies in the tangent span" % name,
                     tangent_residual(w1, w2, removed, tangent, dh), 1e-12)
        report.check("%s: a random update has a gauge part (|removed|/|g| > 0.1)" % name,
                     0.0 if norm(removed) / norm(g) > 0.1 else 1.0, 0)

        # Gauge-invariant loss L = sum(sin(G) * C) with G = product(w1, w2).
        c = rng.standard_normal((d, d if name == "QK" else dout))
        if name == "QK":
            gm = np.cos(w1 @ w2.T) * c
            grad = (gm @ w2, gm.T @ w1)
        else:
            gm = np.cos(w1 @ w2) * c
            grad = (gm @ w2.T, w1.T @ gm)
        pg = project(w1, w2, *grad)
        report.check("%s: gradient of an invariant loss is already horizontal" % name,
                     norm([a - b for a, b in zip(pg, grad)]) / norm(grad), 1e-12)

        # Weight decay (gradient = the weights) is not invariant; the part
        # the projection removes changes G only at second order.
        decay = (w1.copy(), w2.copy())
        pd = project(w1, w2, *decay)
        rem = [a - b for a, b in zip(decay, pd)]
        prod = (lambda a, b: a @ b.T) if name == "QK" else (lambda a, b: a @ b)
        eps = 1e-6
        g0 = prod(w1, w2)
        moved = prod(w1 + eps * rem[0], w2 + eps * rem[1])
        first_order = np.linalg.norm(moved - g0) / eps / np.linalg.norm(g0)
        report.check("%s: removed weight-decay part moves G only at O(eps^2)" % name,
                     first_order, 1e-5)

        # Rank-deficient weights: a singular tangent map.
        w1d = rng.standard_normal((d, 2)) @ rng.standard_normal((2, dh))
        pdef = project(w1d, w2, *g)
        finite = all(np.all(np.isfinite(t)) for t in pdef)
        report.check("%s: rank-2 weights: finite and orthogonal" % name,
                     orthogonality(w1d, w2, pdef, tangent, dh) if finite else np.inf, 1e-10)

    # Per-head wrapper on the language's layout.
    H, e = 3, 3 * dh
    w = {"Wq": rng.standard_normal((d, e)), "Wk": rng.standard_normal((d, e)),
         "Wv": rng.standard_normal((d, e)), "Wo": rng.standard_normal((e, d))}
    g = {k: rng.standard_normal(v.shape) for k, v in w.items()}
    p = Q.project_heads(w, g, H)
    worst = 0.0
    for h in range(H):
        s = slice(h * dh, (h + 1) * dh)
        pq, pk = Q.project_qk(w["Wq"][:, s], w["Wk"][:, s], g["Wq"][:, s], g["Wk"][:, s])
        pv, po = Q.project_vo(w["Wv"][:, s], w["Wo"][s, :], g["Wv"][:, s], g["Wo"][s, :])
        worst = max(worst, *(float(np.max(np.abs(a - b))) for a, b in
                             ((p["Wq"][:, s], pq), (p["Wk"][:, s], pk),
                              (p["Wv"][:, s], pv), (p["Wo"][s, :], po))))
    report.check("project_heads matches the per-head projections", worst, 0)
    report.finish()


main()
