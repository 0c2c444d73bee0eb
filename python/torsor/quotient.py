"""quotient.py - optimisation on the quotient for standard attention, in torch.

A standard attention head's output depends on (W_Q, W_K) only through
W_Q W_Kᵀ and on (W_V, W_O) only through W_V W_O (docs/relational.md), so
the GL(d_h) gauge moves W_Q → W_Q A, W_K → W_K A⁻ᵀ (and W_V → W_V B,
W_O → B⁻¹ W_O) change nothing. Their tangents at the current weights are
T_QK(X) = (W_Q X, −W_K Xᵀ) and T_VO(X) = (W_V X, −X W_O), X ∈ gl(d_h).
Training "on the quotient" moves only in the horizontal space, the
Frobenius-orthogonal complement of those tangents. A loss gradient is
horizontal already; Adam's per-coordinate scaling, momentum and weight
decay are not, and drift along the gauge orbits.

    import torsor.quotient as q
    layer = torsor.torch.TorsorModule("examples/standard_attention.tsr")
    blocks = q.blocks_of(layer, "layers", count=2, heads=4)
    opt = q.QuotientOptimizer(torch.optim.AdamW(layer.parameters(), lr=1e-3), blocks)
    ... loss.backward(); opt.step()      # the update, projected per head

The projection solves A X + X B = C (A, B symmetric PSD) in the
eigenbases of A and B, in float64, exactly as tools/relational/quotient.py
(the NumPy reference it is tested against).
"""
import torch

__all__ = ["project_qk", "project_vo", "project_block", "vertical_part", "blocks_of",
           "QuotientOptimizer"]


def _sylvester_psd(a, b, c, rcond=1e-12):
    """X with A X + X B = C for symmetric PSD A, B (least norm where singular)."""
    la, ua = torch.linalg.eigh(a)
    lb, ub = torch.linalg.eigh(b)
    denom = la[:, None] + lb[None, :]
    cut = rcond * max(float(denom.abs().max()), 1e-300)
    ct = ua.T @ c @ ub
    keep = denom.abs() > cut
    xt = torch.where(keep, ct / torch.where(keep, denom, torch.ones_like(denom)),
                     torch.zeros_like(ct))
    return ua @ xt @ ub.T


def project_qk(wq, wk, gq, gk):
    """Horizontal part of the update (gq, gk) at (wq, wk), all [d, d_h]."""
    wq, wk, gq, gk = (t.detach().double() for t in (wq, wk, gq, gk))
    x = _sylvester_psd(wq.T @ wq, wk.T @ wk, wq.T @ gq - gk.T @ wk)
    return gq - wq @ x, gk + wk @ x.T


def project_vo(wv, wo, gv, go):
    """Horizontal part of (gv, go) at (wv, wo); wv [d, d_h], wo [d_h, d_out]."""
    wv, wo, gv, go = (t.detach().double() for t in (wv, wo, gv, go))
    x = _sylvester_psd(wv.T @ wv, wo @ wo.T, wv.T @ gv - go @ wo.T)
    return gv - wv @ x, go + x @ wo


def project_block(weights, updates, heads):
    """The horizontal part of one block's update, per head. `weights` and
    `updates` are dicts with "Wq", "Wk", "Wv" [d, H·d_h] and "Wo"
    [H·d_h, d_out] (the language's `x @ W` layout); returns float64 tensors."""
    e = weights["Wq"].shape[1]
    if e % heads:
        raise ValueError("H·d_h = %d is not divisible by %d heads" % (e, heads))
    dh = e // heads
    out = {k: updates[k].detach().double().clone() for k in ("Wq", "Wk", "Wv", "Wo")}
    for h in range(heads):
        s = slice(h * dh, (h + 1) * dh)
        out["Wq"][:, s], out["Wk"][:, s] = project_qk(
            weights["Wq"][:, s], weights["Wk"][:, s], updates["Wq"][:, s], updates["Wk"][:, s])
        out["Wv"][:, s], out["Wo"][s, :] = project_vo(
            weights["Wv"][:, s], weights["Wo"][s, :], updates["Wv"][:, s], updates["Wo"][s, :])
    return out


def vertical_part(weights, updates, heads):
    """‖update − its horizontal part‖ (Frobenius, over the block's four
    factors): how far an update moves along the gauge orbits."""
    hor = project_block(weights, updates, heads)
    return float(sum(((updates[k].detach().double() - hor[k]) ** 2).sum()
                     for k in hor) ** 0.5)


def blocks_of(module, prefix, count, heads, names=("Wq", "Wk", "Wv", "Wo")):
    """[(heads, {"Wq": param, ...})] for blocks `<prefix>.<i>.<name>` of a
    TorsorModule (e.g. examples/standard_attention.tsr: "layers", 2, 4)."""
    return [(heads, {k: module.get_parameter("%s.%d.%s" % (prefix, i, n))
                     for k, n in zip(("Wq", "Wk", "Wv", "Wo"), names)})
            for i in range(count)]


class QuotientOptimizer:
    """Wraps a torch optimizer: after each step, the change of every listed
    block's factors is replaced by its horizontal part at the weights
    before the step, so momentum, Adam's scaling and weight decay move the
    model only across gauge orbits, never along them. Other params take the
    wrapped optimizer's step unchanged.

    blocks  [(heads, {"Wq": p, "Wk": p, "Wv": p, "Wo": p}), ...]
    `removed` holds, per step, the norm of the part taken out (summed over
    blocks), and `kept` the norm of the update applied."""

    def __init__(self, optimizer, blocks):
        self.optimizer, self.blocks = optimizer, blocks
        self.removed, self.kept = [], []

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state):
        self.optimizer.load_state_dict(state)

    @torch.no_grad()
    def step(self, closure=None):
        before = [{k: p.detach().clone() for k, p in ps.items()} for _, ps in self.blocks]
        loss = self.optimizer.step(closure)
        removed = kept = 0.0
        for (heads, ps), old in zip(self.blocks, before):
            delta = {k: ps[k].detach().double() - old[k].double() for k in ps}
            hor = project_block(old, delta, heads)
            for k, p in ps.items():
                p.copy_((old[k].double() + hor[k]).to(p.dtype))
                removed += float(((delta[k] - hor[k]) ** 2).sum())
                kept += float((hor[k] ** 2).sum())
        self.removed.append(removed ** 0.5)
        self.kept.append(kept ** 0.5)
        return loss
