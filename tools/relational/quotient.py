"""Quotient-aware gradients for standard multi-head attention.

A head's output depends on (W_Q, W_K) only through G_QK = W_Q W_Kᵀ and on
(W_V, W_O) only through G_VO = W_V W_O (docs/relational.md). The GL(d_h)
gauge moves

    W_Q -> W_Q A,  W_K -> W_K A⁻ᵀ        W_V -> W_V B,  W_O -> B⁻¹ W_O

leave the model unchanged; their tangents at the current weights are

    T_QK(X) = (W_Q X, −W_K Xᵀ)           T_VO(X) = (W_V X, −X W_O)

for X ∈ gl(d_h) (d_h² directions per pair and head). Optimising "on the
quotient manifold" means moving only in the horizontal space, the
orthogonal complement of those tangents (Frobenius metric on the stacked
factors). `project_qk` / `project_vo` return that component of an update
(g_1, g_2):

    g − T(X*),  X* = argmin ‖g − T(X)‖,  i.e.  A X* + X* B = C

a Sylvester equation with A, B symmetric positive semidefinite, solved in
the eigenbases of A and B (pseudo-inverse where the tangent map is
singular, e.g. rank-deficient weights).

For a loss that sees the weights only through the model output, the plain
gradient is already horizontal (projection leaves it unchanged); the
projection matters for updates that are not gauge-invariant: weight decay
on the factors, Adam's per-coordinate scaling, momentum carried across
steps. Apply it to the update, after the optimiser's transform.

Standalone: NumPy only, float64. Tested by
test/Tools/quotient-projection.py.
"""
import numpy as np

__all__ = ["project_qk", "project_vo", "project_heads", "tangent_qk",
           "tangent_vo", "solve_sylvester_psd"]


def solve_sylvester_psd(a, b, c, rcond=1e-12):
    """X with A X + X B = C for symmetric PSD A (n×n), B (m×m).

    Directions where a_i + b_j <= rcond·max(a_i + b_j) (the tangent map's
    kernel) get X = 0: the least-norm solution."""
    la, ua = np.linalg.eigh(a)
    lb, ub = np.linalg.eigh(b)
    denom = la[:, None] + lb[None, :]
    cut = rcond * max(float(np.max(np.abs(denom))), 1e-300)
    ct = ua.T @ c @ ub
    xt = np.where(np.abs(denom) > cut, ct / np.where(np.abs(denom) > cut, denom, 1.0),
                  0.0)
    return ua @ xt @ ub.T


def tangent_qk(wq, wk, x):
    """T_QK(X) = (W_Q X, −W_K Xᵀ): the gauge direction X at (W_Q, W_K)."""
    return wq @ x, -wk @ x.T


def tangent_vo(wv, wo, x):
    """T_VO(X) = (W_V X, −X W_O): the gauge direction X at (W_V, W_O)."""
    return wv @ x, -x @ wo


def project_qk(wq, wk, gq, gk):
    """Horizontal part of (gq, gk) at (wq, wk); all [d, d_h]."""
    wq, wk, gq, gk = (np.asarray(t, dtype=np.float64) for t in (wq, wk, gq, gk))
    x = solve_sylvester_psd(wq.T @ wq, wk.T @ wk, wq.T @ gq - gk.T @ wk)
    tq, tk = tangent_qk(wq, wk, x)
    return gq - tq, gk - tk


def project_vo(wv, wo, gv, go):
    """Horizontal part of (gv, go) at (wv, wo); wv [d, d_h], wo [d_h, d_out]."""
    wv, wo, gv, go = (np.asarray(t, dtype=np.float64) for t in (wv, wo, gv, go))
    x = solve_sylvester_psd(wv.T @ wv, wo @ wo.T, wv.T @ gv - go @ wo.T)
    tv, to = tangent_vo(wv, wo, x)
    return gv - tv, go - to


def project_heads(weights, grads, heads):
    """Projects the updates of one standard block, laid out as the language
    writes it: weights/grads are dicts with "Wq", "Wk", "Wv" [d, H·d_h] and
    "Wo" [H·d_h, d_out]. Returns a new dict of projected updates."""
    e = weights["Wq"].shape[1]
    if e % heads:
        raise ValueError("H·d_h = %d is not divisible by %d heads" % (e, heads))
    dh = e // heads
    out = {k: np.array(grads[k], dtype=np.float64) for k in ("Wq", "Wk", "Wv", "Wo")}
    for h in range(heads):
        s = slice(h * dh, (h + 1) * dh)
        out["Wq"][:, s], out["Wk"][:, s] = project_qk(
            weights["Wq"][:, s], weights["Wk"][:, s], grads["Wq"][:, s], grads["Wk"][:, s])
        out["Wv"][:, s], out["Wo"][s, :] = project_vo(
            weights["Wv"][:, s], weights["Wo"][s, :], grads["Wv"][:, s], grads["Wo"][s, :])
    return out
