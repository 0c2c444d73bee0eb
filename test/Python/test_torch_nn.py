"""test_torch_nn.py - torsor.nn's modules against plain-PyTorch twins.

LieAttention (built-in and declared groups, batch dims, causal),
GrassmannMix and RelationalAttention: outputs and every gradient (inputs
and params) against torch_twins.py in float64 (≤ 1e-10 relative); one
compile for two sequence lengths and two batch shapes; torch.compile with
fullgraph through forward and backward. Skipped without torch.
"""
import unittest

import numpy as np

import common
from common import torsor

try:
    import torch
    import torsor.nn as tnn
    import torch_twins as twins
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SKIP_REASON = ("PyTorch is not installed in this environment (it is optional; "
               "make test never installs it)")

SIM2 = """group Sim2 {
  matrix 3;
  generator R = [[0, -1, 0], [1, 0, 0], [0, 0, 0]];
  generator S = [[1, 0, 0], [0, 1, 0], [0, 0, 0]];
  generator Tx = [[0, 0, 1], [0, 0, 0], [0, 0, 0]];
  generator Ty = [[0, 0, 0], [0, 0, 1], [0, 0, 0]];
  norm rotscale = R, S;
  norm trans = Tx, Ty;
}"""

HEIS3 = """group Heis3 {
  matrix 3;
  generator X = [[0, 1, 0], [0, 0, 0], [0, 0, 0]];
  generator Y = [[0, 0, 0], [0, 0, 1], [0, 0, 0]];
  generator Z = [[0, 0, 1], [0, 0, 0], [0, 0, 0]];
  norm plane = X, Y;
  norm center = Z;
}"""


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def grads_of(fn, leaves):
    for t in leaves:
        t.grad = None
    out = fn()
    cot = torch.sin(torch.arange(out.numel(), dtype=out.dtype)).reshape(out.shape)
    (out * cot).sum().backward()
    return [out.detach()] + [t.grad.clone() for t in leaves]


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class LieAttentionModule(unittest.TestCase):
    def test_se3_batched_causal(self):
        attn = tnn.LieAttention("SE3", heads=2, tau=[0.5, 2.0], lam=[[1.0, 0.3], [0.5, 1.0]],
                                causal=True)
        before = len(tnn._ops)
        for shape in ((3, 5), (2, 2, 9)):
            L = shape[-1]
            g = torch.tensor(torsor.groups.random("SE3", shape, seed=L, dtype="f64"))
            v = torch.randn(shape + (8,), dtype=torch.float64, requires_grad=True)

            def ref():
                gf, vf = g.reshape(-1, L, 4, 4), v.reshape(-1, L, 8)
                return torch.stack([twins.lie_attention(
                    twins.pair_coords(gf[b], twins.log_se3, twins._SAFE_SE3), vf[b],
                    [3, 3], 2, [0.5, 2.0], [[1.0, 0.3], [0.5, 1.0]], causal=True)
                    for b in range(gf.shape[0])]).reshape(v.shape)
            got = grads_of(lambda: attn(g, v), [v])
            want = grads_of(ref, [v])
            for a, b in zip(got, want):
                self.assertLess(rel(a, b), 1e-10, shape)
        # One compile for both lengths and batch shapes.
        self.assertLessEqual(len(tnn._ops) - before, 1)

    def test_declared_group_and_group_gradient(self):
        attn = tnn.LieAttention(HEIS3, heads=2, lam=[1.0, 0.25])
        rng = np.random.default_rng(0)
        L = 6
        g0 = np.tile(np.eye(3), (L, 1, 1))
        g0[:, 0, 1], g0[:, 1, 2], g0[:, 0, 2] = rng.standard_normal((3, L))
        g0 = torch.tensor(g0)
        E = torch.tensor(torsor.groups.basis("Heis3", 3, HEIS3))
        w = torch.zeros(L, 3, dtype=torch.float64, requires_grad=True)
        v = torch.randn(L, 16, dtype=torch.float64, requires_grad=True)

        def g():
            return g0 @ torch.linalg.matrix_exp(torch.einsum("lk,kij->lij", w, E))
        got = grads_of(lambda: attn(g(), v), [v, w])
        want = grads_of(lambda: twins.lie_attention(
            twins.pair_coords(g(), twins.log_heis3, twins._SAFE_HEIS), v, [2, 1], 2, 1.0,
            [1.0, 0.25]), [v, w])
        for a, b in zip(got, want):
            self.assertLess(rel(a, b), 1e-10)

    def test_declared_sim2_runs_and_differentiates(self):
        attn = tnn.LieAttention(SIM2, heads=1, lam=[1.0, 0.5])
        E = torch.tensor(torsor.groups.basis("Sim2", 4, SIM2))
        c = torch.randn(5, 4, dtype=torch.float64) * 0.3
        g = torch.linalg.matrix_exp(torch.einsum("lk,kij->lij", c, E)).requires_grad_()
        v = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
        attn(g, v).sum().backward()
        self.assertTrue(torch.isfinite(g.grad).all() and torch.isfinite(v.grad).all())

    def test_bad_arguments(self):
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            tnn.LieAttention("SE4")
        self.assertIn("unknown group 'SE4'", str(cm.exception))
        attn = tnn.LieAttention("SO3")
        with self.assertRaises(torsor.InvalidArgumentError):
            attn(torch.zeros(4, 3, 3), torch.zeros(5, 8))

    def test_low_precision_inputs(self):
        attn = tnn.LieAttention("SO2")
        g = torch.tensor(torsor.groups.random("SO2", 6, seed=1))
        v = torch.randn(6, 4)
        # bf16 values, computed in f32, returned as bf16. (Group elements
        # rounded to bf16 are not in the group: keep them f32.)
        y = attn(g, v.bfloat16())
        self.assertEqual(y.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(y, attn(g, v.bfloat16().float()).bfloat16()))

    def test_torch_compile_fullgraph(self):
        attn = tnn.LieAttention("SE2", heads=1, causal=True)
        lin = torch.nn.Linear(4, 4, dtype=torch.float64)

        def loss(g, x):
            return (attn(g, lin(x)) ** 2).sum()
        compiled = torch.compile(loss, fullgraph=True, backend="aot_eager", dynamic=True)
        for L in (4, 7):
            g = torch.tensor(torsor.groups.random("SE2", L, seed=L, dtype="f64"))
            x = torch.randn(L, 4, dtype=torch.float64, requires_grad=True)
            want = grads_of(lambda: loss(g, x)[None], [x, lin.weight])
            got = grads_of(lambda: compiled(g, x)[None], [x, lin.weight])
            for a, b in zip(got, want):
                self.assertLess(rel(a, b), 1e-13)


def grassmann_twin(h, p, offsets, causal):
    """grassmann_mix in torch (docs/language.md), h [L, d]."""
    L, d = h.shape
    r = p["w_red"].shape[0]
    ia, ib = np.triu_indices(r, 1)
    z = h @ p["w_red"].T + p["b_red"]
    acc = torch.zeros_like(h)
    count = torch.zeros(L, 1, dtype=h.dtype)
    for delta in offsets:
        if delta >= L:
            continue
        u, v = (z[delta:], z[:-delta]) if causal else (z[:-delta], z[delta:])
        q = u[:, ia] * v[:, ib] - u[:, ib] * v[:, ia]
        q = q / torch.clamp(q.norm(dim=-1, keepdim=True), min=1e-6)
        pad = (0, 0, delta, 0) if causal else (0, 0, 0, delta)
        acc = acc + torch.nn.functional.pad(q @ p["w_plucker"].T + p["b_plucker"], pad)
        count = count + torch.nn.functional.pad(torch.ones(L - delta, 1, dtype=h.dtype), pad)
    g = torch.where(count > 0, acc / torch.clamp(count, min=1), torch.zeros_like(acc))
    alpha = torch.sigmoid(torch.cat([h, g], -1) @ p["w_gate"].T + p["b_gate"])
    return alpha * h + (1 - alpha) * g


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class ParamModules(unittest.TestCase):
    def check(self, mod, twin, x):
        with torch.no_grad():
            for p in mod.parameters():   # nonzero biases too
                if p.dim() == 1:
                    p.normal_()
        leaves = [x] + list(mod.parameters())
        got = grads_of(lambda: mod(x), leaves)
        want = grads_of(lambda: torch.stack([twin(x[b], dict(mod.named_parameters()))
                                             for b in range(x.shape[0])]), leaves)
        for i, (a, b) in enumerate(zip(got, want)):
            self.assertLess(rel(a, b), 1e-10, i)

    def test_grassmann_mix(self):
        torch.manual_seed(0)
        for causal in (True, False):
            mod = tnn.GrassmannMix(12, r=4, offsets=[1, 3], causal=causal,
                                   dtype=torch.float64)
            self.assertEqual(sorted(n for n, _ in mod.named_parameters()),
                             ["b_gate", "b_plucker", "b_red", "w_gate", "w_plucker", "w_red"])
            x = torch.randn(2, 7, 12, dtype=torch.float64, requires_grad=True)
            self.check(mod, lambda h, p: grassmann_twin(h, p, [1, 3], causal), x)

    def test_relational_attention(self):
        torch.manual_seed(1)
        mod = tnn.RelationalAttention(8, heads=2, causal=True, dtype=torch.float64)
        x = torch.randn(3, 6, 8, dtype=torch.float64, requires_grad=True)

        def twin(xb, p):
            L = xb.shape[0]
            mask = ~torch.tril(torch.ones(L, L, dtype=torch.bool))
            out = torch.zeros_like(xb)
            for h in range(2):
                s = (mod.scale * (xb @ p["g_qk"][h] @ xb.T)).masked_fill(mask, -float("inf"))
                out = out + torch.softmax(s, -1) @ (xb @ p["g_vo"][h])
            return out
        self.check(mod, twin, x)

    def test_training_step_lowers_the_loss(self):
        torch.manual_seed(2)
        mod = tnn.RelationalAttention(8, heads=2, dtype=torch.float64)
        x = torch.randn(4, 6, 8, dtype=torch.float64)
        target = torch.randn(4, 6, 8, dtype=torch.float64)
        opt = torch.optim.Adam(mod.parameters(), lr=3e-2)
        losses = []
        for _ in range(10):
            loss = ((mod(x) - target) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        self.assertLess(losses[-1], losses[0])


if __name__ == "__main__":
    unittest.main()
