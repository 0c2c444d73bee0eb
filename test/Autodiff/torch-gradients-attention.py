# Whole-model gradients against PyTorch autograd (f64) for the attention
# examples: examples/se3_pose_attention.tsr (Lie attention over SE(3) poses,
# including the poses' left-trivialised gradient), standard_attention.tsr
# and relational_attention.tsr, each written again in torch from
# docs/math.md §1/§5 and docs/language.md. Relative error per gradient:
# max |g_torsor − g_torch| / max |g_torch| ≤ 1e-10, at -O0 (the unfused
# oracle) and -O2 (the flash backward). Skipped (and says so) when torch is
# not importable: CI has no torch.
#
# The pose gradient in torch: perturb every pose as g_i·exp(hat(ξ_i)) with
# ξ = 0 and read ∂/∂ξ, the convention of docs/training.md. The torch SE(3)
# log is the closed form away from θ = 0 and π; self pairs (θ = 0 exactly,
# whose gradient is 0) are given score 0 directly.
#
# RUN: env TORSOR_CACHE_DIR=%t.cache %python %s %torsor_src | FileCheck %s
# CHECK: {{(torch gradients match|skipped: torch is not importable)}}
import os
import sys

import numpy as np

try:
    import torch
except ImportError:
    print("skipped: torch is not importable")
    sys.exit(0)

import gradcheck  # noqa: E402  (puts python/ on sys.path)
import torsor  # noqa: E402
from torsor.train import init_params  # noqa: E402

F = torch.nn.functional
src = sys.argv[1]
L = 13  # not a multiple of any tile size
rng = np.random.default_rng(5)
worst_all = 0.0


def hat3(w):
    z = torch.zeros(w.shape[:-1], dtype=w.dtype)
    return torch.stack([torch.stack([z, -w[..., 2], w[..., 1]], -1),
                        torch.stack([w[..., 2], z, -w[..., 0]], -1),
                        torch.stack([-w[..., 1], w[..., 0], z], -1)], -2)


def hat_se3(xi):
    """[[hat ω, ρ], [0, 0]] for ξ = (ω, ρ), the coordinates of docs/math.md §1."""
    m = torch.zeros(xi.shape[:-1] + (4, 4), dtype=xi.dtype)
    m[..., :3, :3] = hat3(xi[..., :3])
    m[..., :3, 3] = xi[..., 3:]
    return m


def log_se3(g):
    """Coordinates (ω, ρ) of log g in the same basis; θ in (0, π)."""
    R, t = g[..., :3, :3], g[..., :3, 3]
    a = torch.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0],
                     R[..., 1, 0] - R[..., 0, 1]], -1)
    s = 0.5 * a.norm(dim=-1)
    c = 0.5 * (R.diagonal(dim1=-2, dim2=-1).sum(-1) - 1)
    theta = torch.atan2(s, c)
    phi = (theta / (2 * s)).unsqueeze(-1) * a  # rotation vector
    W = hat3(phi)
    th = theta[..., None, None]
    eye = torch.eye(3, dtype=g.dtype)
    # V⁻¹ = I − W/2 + (1 − θ sin θ / (2(1 − cos θ))) W²/θ²
    k = (1 - th * torch.sin(th) / (2 * (1 - torch.cos(th)))) / th**2
    Vinv = eye - 0.5 * W + k * (W @ W)
    rho = (Vinv @ t.unsqueeze(-1)).squeeze(-1)
    return torch.cat([phi, rho], -1)


def lie_attention_se3(g, v, heads, tau, lam):
    n = g.shape[0]
    ii, jj = np.where(~np.eye(n, dtype=bool))
    rel = torch.linalg.inv(g[ii]) @ g[jj]
    w = log_se3(rel)
    rot, trans = (w[:, :3] ** 2).sum(-1), (w[:, 3:] ** 2).sum(-1)
    dh = v.shape[1] // heads
    out = []
    for h in range(heads):
        d = lam[h][0] * rot + lam[h][1] * trans
        s = torch.zeros(n, n, dtype=g.dtype).index_put((torch.tensor(ii), torch.tensor(jj)),
                                                       -d / tau[h])
        out.append(torch.softmax(s, -1) @ v[:, h * dh:(h + 1) * dh])
    return torch.cat(out, -1)


def random_se3(n):
    axis = rng.standard_normal((n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    theta = rng.uniform(0.2, 2.8, n)  # away from 0 and π: the torch log is closed form
    K = np.zeros((n, 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    K -= K.transpose(0, 2, 1)
    R = (np.eye(3) + np.sin(theta)[:, None, None] * K
         + (1 - np.cos(theta))[:, None, None] * (K @ K))
    g = np.tile(np.eye(4), (n, 1, 1))
    g[:, :3, :3], g[:, :3, 3] = R, rng.standard_normal((n, 3))
    return g


def compare(name, model, inputs, params, cots, torch_fn):
    """Torsor's backward vs torch autograd on the same params and inputs."""
    global worst_all
    model.set_params(params)
    outs = model.run(inputs)
    grads = model.backward(inputs, cots)
    T = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    X = {k: torch.tensor(v, dtype=torch.float64, requires_grad=v.dtype.kind == "f")
         for k, v in inputs.items()}
    ref = torch_fn(T, X)
    total = sum((ref[k] * torch.tensor(c)).sum() for k, c in cots.items())
    total.backward()
    worst = max(np.max(np.abs(outs[k] - ref[k].detach().numpy())) /
                np.max(np.abs(ref[k].detach().numpy())) for k in cots)
    print("%s: outputs %.2e" % (name, worst))
    leaves = dict(T)
    leaves.update({k: X[k] for k in inputs if k != "pose"})
    if "pose" in X:
        leaves["pose"] = X["xi"]
    for k, t in leaves.items():
        g = grads["grad." + k]
        err = np.max(np.abs(g - t.grad.numpy())) / max(np.max(np.abs(t.grad.numpy())), 1e-300)
        worst = max(worst, err)
        print("  %-18s %.2e" % (k, err))
    print("%s: max relative error %.2e" % (name, worst))
    worst_all = max(worst_all, worst)


# --- SE(3) pose attention -----------------------------------------------------
def pose_torch(T, X):
    xi = torch.zeros(L, 6, dtype=torch.float64, requires_grad=True)
    X["xi"] = xi
    g = X["pose"] @ torch.linalg.matrix_exp(hat_se3(xi))
    h = X["x"]
    tau = [0.5, 1.0, 2.0, 4.0]
    lam = [[1.0, 0.1], [1.0, 0.5], [1.0, 1.0], [0.5, 2.0]]
    for i in range(2):
        q = lambda n: T["blocks.%d.%s" % (i, n)]  # noqa: E731
        v = F.layer_norm(h, (64,), q("ln1_g"), q("ln1_b"), eps=1e-5) @ q("Wv")
        h1 = h + lie_attention_se3(g, v, 4, tau, lam) @ q("Wo")
        f = F.gelu(F.layer_norm(h1, (64,), q("ln2_g"), q("ln2_b"), eps=1e-5) @ q("W1")
                   + q("b1")) @ q("W2") + q("b2")
        h = h1 + f
    return {"y": F.layer_norm(h, (64,), T["lnf_g"], T["lnf_b"], eps=1e-5)}


def rms(x, eps=1e-5):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def standard_torch(T, X):
    h = X["x"]
    for i in range(2):
        q = lambda n: T["layers.%d.%s" % (i, n)]  # noqa: E731
        n = rms(h)
        split = lambda m: m.reshape(L, 4, 16).transpose(0, 1)  # noqa: E731
        Q, K, V = split(n @ q("Wq")), split(n @ q("Wk")), split(n @ q("Wv"))
        p = torch.softmax(Q @ K.transpose(1, 2) * 0.25, -1)
        h = h + (p @ V).transpose(0, 1).reshape(L, 64) @ q("Wo")
    return {"y": rms(h)}


def relational_torch(T, X):
    h = X["x"]
    for i in range(2):
        gqk, gvo = T["layers.%d.g_qk" % i], T["layers.%d.g_vo" % i]
        n = rms(h)
        s = torch.einsum("id,hde,je->hij", n, gqk, n) * 0.25
        h = h + torch.einsum("hij,jd,hde->ie", torch.softmax(s, -1), n, gvo)
    return {"y": rms(h)}


def perturbed(params):
    out = {}
    for k, v in params.items():  # nontrivial gains and biases
        out[k] = v + 0.3 * rng.standard_normal(v.shape) if v.ndim == 1 else v
    return out


for opt in (0, 2):
    m = gradcheck.compile_grad(os.path.join(src, "examples", "se3_pose_attention.tsr"), opt=opt)
    params = perturbed(init_params(m, seed=1))
    inputs = {"pose": random_se3(L), "x": rng.standard_normal((L, 64))}
    compare("se3_pose_attention -O%d" % opt, m, inputs, params,
            {"y": rng.standard_normal((L, 64))}, pose_torch)

for opt in (0, 2):
    m = gradcheck.compile_grad(os.path.join(src, "examples", "standard_attention.tsr"), opt=opt)
    params = {k: 0.3 * v for k, v in init_params(m, seed=2).items()}
    compare("standard_attention -O%d" % opt, m, {"x": rng.standard_normal((L, 64))},
            params, {"y": rng.standard_normal((L, 64))}, standard_torch)

    m = gradcheck.compile_grad(os.path.join(src, "examples", "relational_attention.tsr"),
                               opt=opt)
    params = {k: 0.02 * rng.standard_normal(v.shape) for k, v in init_params(m, seed=3).items()}
    compare("relational_attention -O%d" % opt, m, {"x": rng.standard_normal((L, 64))},
            params, {"y": rng.standard_normal((L, 64))}, relational_torch)

print("max relative error %.2e" % worst_all)
print("torch gradients match" if worst_all <= 1e-10 else "torch gradients DIFFER")
