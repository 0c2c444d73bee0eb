# Whole-model gradients against PyTorch autograd (f64): the training example
# examples/grassmann_lm_train.tsr (embedding, two causal Grassmann layers,
# layer norm, GELU FFN, cross-entropy), written again in torch from
# docs/language.md and docs/math.md §3. Relative error per gradient:
# max |g_torsor − g_torch| / max |g_torch| ≤ 1e-10. Skipped (and says so)
# when torch is not importable: CI has no torch.
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
from torsor.train import init_params  # noqa: E402

src = sys.argv[1]
model = gradcheck.compile_grad(os.path.join(src, "examples", "grassmann_lm_train.tsr"))
L = 40
rng = np.random.default_rng(3)
params = init_params(model, seed=3)
for k, v in params.items():  # nontrivial gains and biases
    if v.ndim == 1:
        params[k] = v + 0.3 * rng.standard_normal(v.shape)
# Distinct tokens: a repeated token at distance Δ ≤ 8 makes a Plücker vector
# (near) zero, where p/max(‖p‖, eps) is ill-conditioned and the two
# implementations' rounding differs by ~1e-9 (measured), not by a rule.
tokens = rng.permutation(96)[:L]
targets = rng.integers(0, 96, L)
model.set_params(params)
loss = float(model.run({"tokens": tokens, "targets": targets})["loss"])
grads = model.backward({"tokens": tokens, "targets": targets}, {"loss": np.array(1.0)})

T = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
ia, ib = np.triu_indices(8, 1)


def mix(h, q):
    z = h @ q("w_red").T + q("b_red")
    acc = torch.zeros_like(h)
    count = torch.zeros(L, 1, dtype=torch.float64)
    for delta in (1, 2, 4, 8):
        u, v = z[delta:], z[:-delta]              # z_t and z_{t-Δ}, t ≥ Δ
        p = u[:, ia] * v[:, ib] - u[:, ib] * v[:, ia]
        p = p / torch.clamp(p.norm(dim=-1, keepdim=True), min=1e-6)
        acc = acc + torch.nn.functional.pad(p @ q("w_plu").T + q("b_plu"), (0, 0, delta, 0))
        count = count + torch.nn.functional.pad(torch.ones(L - delta, 1, dtype=torch.float64),
                                                (0, 0, delta, 0))
    g = torch.where(count > 0, acc / torch.clamp(count, min=1), torch.zeros_like(acc))
    alpha = torch.sigmoid(torch.cat([h, g], -1) @ q("w_gate").T + q("b_gate"))
    return alpha * h + (1 - alpha) * g


h = T["embed"][torch.tensor(tokens)]
for i in range(2):
    q = lambda n: T["layers.%d.%s" % (i, n)]  # noqa: E731
    n = torch.nn.functional.layer_norm(mix(h, q), (64,), q("ln_g"), q("ln_b"), eps=1e-5)
    h = n + torch.nn.functional.gelu(n @ q("W1") + q("b1")) @ q("W2") + q("b2")
ref = torch.nn.functional.cross_entropy(h @ T["W_out"], torch.tensor(targets))
ref.backward()
worst = abs(loss - ref.item()) / abs(ref.item())
print("loss %.12f torch %.12f" % (loss, ref.item()))
for name, t in T.items():
    g = grads["grad." + name]
    err = np.max(np.abs(g - t.grad.numpy())) / max(np.max(np.abs(t.grad.numpy())), 1e-300)
    worst = max(worst, err)
    print("%-20s %.2e" % (name, err))
print("max relative error %.2e" % worst)
print("torch gradients match" if worst <= 1e-10 else "torch gradients DIFFER")
