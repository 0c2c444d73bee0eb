"""Inputs and float64 reference for lie-numerics.tsr.

Checks that the language's lie_attention arguments reach the kernel with
the documented meaning (per-head τ, per-head λ rows, causal mask, heads as
contiguous feature slices) and that pairwise dist2 pairs (i, j) as
‖log(g_i⁻¹g_j)‖²_λ. SO(2): log(g_i⁻¹g_j) = wrap(θ_j − θ_i). Tolerance 1e-5.
"""
import os
import sys

import numpy as np

mode, d = sys.argv[1], sys.argv[2]
L = 6
rng = np.random.default_rng(0)
th = rng.uniform(-3, 3, L)
g = np.stack([[[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]] for t in th])
v = rng.standard_normal((L, 4))
if mode == "gen":
    np.save(os.path.join(d, "g.npy"), g.astype(np.float32))
    np.save(os.path.join(d, "v.npy"), v.astype(np.float32))
    sys.exit(0)

g = g.astype(np.float32).astype(np.float64)
v = v.astype(np.float32).astype(np.float64)
th = np.arctan2(g[:, 1, 0], g[:, 0, 0])
w = np.angle(np.exp(1j * (th[None, :] - th[:, None])))
ref = np.zeros_like(v)
for h, (tau, lam) in enumerate([(0.5, 1.0), (2.0, 0.3)]):
    s = -lam * w ** 2 / tau
    s = np.where(np.tri(L) > 0, s, -np.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    ref[:, 2 * h:2 * h + 2] = p @ v[:, 2 * h:2 * h + 2]
err_y = float(np.abs(np.load(os.path.join(d, "y.npy")) - ref).max())
err_d = float(np.abs(np.load(os.path.join(d, "d.npy")) - 2 * w ** 2).max())
worst = max(err_y, err_d)
print("y %.3e d %.3e %s" % (err_y, err_d, "ok" if worst < 1e-5 else "FAIL"))
