"""torch_twins.py - plain-PyTorch twins of the example models (needs torch).

Each twin is written from the language reference (docs/language.md §5),
docs/geo.md and docs/math.md in ordinary torch ops, so torch autograd
differentiates it; nothing here calls Torsor. A twin takes the same inputs
and a {Torsor param name: tensor} dict and returns {output: tensor}, so it
can share weights with a TorsorModule (its state_dict has the same keys).
Group logs are closed forms (so(3)/se(3): Rodrigues; Heisenberg: the finite
series), with the i = j pairs (log = 0) masked before the log so that the
gradient at θ = 0 is never formed.
"""
import math

import torch
import torch.nn.functional as F


def hat_so3(w):
    z = torch.zeros_like(w[..., 0])
    return torch.stack([torch.stack([z, -w[..., 2], w[..., 1]], -1),
                        torch.stack([w[..., 2], z, -w[..., 0]], -1),
                        torch.stack([-w[..., 1], w[..., 0], z], -1)], -2)


def log_se3(T):
    """(ω, ρ) [..., 6] of the principal log of T [..., 4, 4] (θ away from 0, π)."""
    R, t = T[..., :3, :3], T[..., :3, 3]
    A = 0.5 * (R - R.mT)
    a = torch.stack([A[..., 2, 1], A[..., 0, 2], A[..., 1, 0]], -1)
    s = a.norm(dim=-1)
    c = 0.5 * (R.diagonal(dim1=-2, dim2=-1).sum(-1) - 1)
    theta = torch.atan2(s, c)
    w = (theta / s)[..., None] * a
    W = hat_so3(w)
    coef = (1 - theta * torch.sin(theta) / (2 * (1 - torch.cos(theta)))) / theta ** 2
    eye = torch.eye(3, dtype=T.dtype)
    Vinv = eye - 0.5 * W + coef[..., None, None] * (W @ W)
    rho = (Vinv @ t[..., None])[..., 0]
    return torch.cat([w, rho], -1)


def log_heis3(T):
    """(X, Y, Z) coordinates of log T for upper unitriangular 3×3 T."""
    N = T - torch.eye(3, dtype=T.dtype)
    Lg = N - 0.5 * (N @ N)
    return torch.stack([Lg[..., 0, 1], Lg[..., 1, 2], Lg[..., 0, 2]], -1)


def pair_coords(g, log, safe):
    """log(g_i⁻¹ g_j) [L, L, k]; the diagonal is computed on `safe` (a
    constant element) instead of the identity, then zeroed."""
    L = g.shape[0]
    rel = torch.linalg.inv(g)[:, None] @ g[None, :]
    diag = torch.eye(L, dtype=torch.bool)[:, :, None, None]
    rel = torch.where(diag, safe.to(g.dtype), rel)
    w = log(rel)
    return torch.where(diag[..., 0], torch.zeros_like(w), w)


_SAFE_SE3 = torch.tensor([[0.36, -0.48, 0.8, 1.0], [0.8, 0.6, 0.0, 2.0],
                          [-0.48, 0.64, 0.6, 3.0], [0.0, 0.0, 0.0, 1.0]],
                         dtype=torch.float64)
_SAFE_HEIS = torch.tensor([[1.0, 0.5, 0.25], [0.0, 1.0, 0.75], [0.0, 0.0, 1.0]],
                          dtype=torch.float64)


def lie_attention(w, v, blocks, heads, tau, lam, causal=False):
    """Per head h: softmax_j(−‖w_ij‖²_λh / τ_h) · v_j on the head's slice."""
    L, D = v.shape
    tau = list(tau) if isinstance(tau, (list, tuple)) else [tau] * heads
    lam = [list(x) for x in lam] if isinstance(lam[0], (list, tuple)) else [list(lam)] * heads
    vh = v.reshape(L, heads, D // heads)
    outs = []
    for h in range(heads):
        weights = torch.cat([torch.full((n,), lam[h][b], dtype=v.dtype)
                             for b, n in enumerate(blocks)])
        s = -(w ** 2 * weights).sum(-1) / tau[h]
        if causal:
            s = s.masked_fill(~torch.tril(torch.ones(L, L, dtype=torch.bool)), -math.inf)
        outs.append(torch.softmax(s, -1) @ vh[:, h, :])
    return torch.stack(outs, 1).reshape(L, D)


def pose_attention(inp, p):
    """examples/se3_pose_attention.tsr (PoseAttention)."""
    g, h = inp["pose"], inp["x"]
    w = pair_coords(g, log_se3, _SAFE_SE3)
    for i in range(2):
        q = lambda n: p["blocks.%d.%s" % (i, n)]  # noqa: E731
        v = F.layer_norm(h, (64,), q("ln1_g"), q("ln1_b"), eps=1e-5) @ q("Wv")
        a = lie_attention(w, v, [3, 3], 4, [0.5, 1.0, 2.0, 4.0],
                          [[1.0, 0.1], [1.0, 0.5], [1.0, 1.0], [0.5, 2.0]])
        h1 = h + a @ q("Wo")
        n = F.layer_norm(h1, (64,), q("ln2_g"), q("ln2_b"), eps=1e-5)
        h = h1 + F.gelu(n @ q("W1") + q("b1")) @ q("W2") + q("b2")
    return {"y": F.layer_norm(h, (64,), p["lnf_g"], p["lnf_b"], eps=1e-5)}


def heisenberg(inp, p):
    """examples/heisenberg.tsr (HeisenbergAttention)."""
    w = pair_coords(inp["g"], log_heis3, _SAFE_HEIS)
    return {"y": lie_attention(w, inp["x"] @ p["Wv"], [2, 1], 2, 1.0, [1.0, 0.25])}


def relational_norm(x, eps=1e-5):
    return x * torch.rsqrt((x ** 2).mean(-1, keepdim=True) + eps)


def standard_attention(inp, p):
    """examples/standard_attention.tsr (StandardAttention)."""
    h = inp["x"]
    L = h.shape[0]
    for i in range(2):
        q = lambda n: p["layers.%d.%s" % (i, n)]  # noqa: E731
        n = relational_norm(h)
        split = lambda t: t.reshape(L, 4, 16).transpose(0, 1)  # noqa: E731
        Q, K, V = split(n @ q("Wq")), split(n @ q("Wk")), split(n @ q("Wv"))
        P = torch.softmax(Q @ K.mT * 0.25, -1)
        h = h + (P @ V).transpose(0, 1).reshape(L, 64) @ q("Wo")
    return {"y": relational_norm(h)}


def relational_block(inp, p):
    """examples/relational_block.tsr (RelationalBlock)."""
    x = inp["x"]
    L = x.shape[0]
    n = relational_norm(x)
    a = torch.zeros_like(x)
    mask = ~torch.tril(torch.ones(L, L, dtype=torch.bool))
    for h in range(p["g_qk"].shape[0]):
        s = (0.25 * (n @ p["g_qk"][h] @ n.T)).masked_fill(mask, -math.inf)
        a = a + torch.softmax(s, -1) @ (n @ p["g_vo"][h])
    return {"y": relational_norm(x + a)}


TWINS = {"se3_pose_attention": pose_attention, "heisenberg": heisenberg,
         "standard_attention": standard_attention, "relational_block": relational_block}
