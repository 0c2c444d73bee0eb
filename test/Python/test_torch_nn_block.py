"""test_torch_nn_block.py - torsor.nn.lie_attention_block and its backward.

The ring-attention building blocks (issue #23): a sequence cut into uneven
blocks, each query block attending to every key block with the global
offsets, the pieces merged through their lse, must equal
torsor.nn.LieAttention over the whole sequence; the block backward with
the merged out and lse, summed over the blocks (a token's query and key
parts alike), must equal LieAttention's autograd gradients of g (ambient)
and v. SO(3) and SE(3), heads 1 and 4, causal and not, f64 (1e-10) and
f32 (1e-5); empty blocks; clear errors for bad arguments. Skipped without
torch.
"""
import unittest

import common
from common import torsor

try:
    import torch
    import torsor.nn as tnn
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SKIP_REASON = ("PyTorch is not installed in this environment (it is optional; "
               "make test never installs it)")


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def merge(parts, heads):
    """Merges (out, lse) pieces of disjoint key blocks, per head."""
    lse = torch.logsumexp(torch.stack([l for _, l in parts]), dim=0)
    safe = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    out = 0
    for o, l in parts:
        w = torch.exp(l - safe)
        w = torch.where(torch.isfinite(l), w, torch.zeros_like(w))
        dh = o.shape[-1] // heads
        out = out + w.repeat_interleave(dh, dim=-1) * o
    return out, lse


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class LieAttentionBlock(unittest.TestCase):
    def run_case(self, group, heads, causal, dtype, tol, cuts=(0, 3, 4, 9, 11)):
        L, D = cuts[-1], 8
        n = 4 if group == "SE3" else 3
        g = torch.tensor(torsor.groups.random(group, (2, L), seed=heads + 7 * causal,
                                              dtype="f64")).to(dtype)
        v = torch.randn(2, L, D, dtype=dtype)
        tau = [0.5 + 0.5 * h for h in range(heads)]
        lam = [[1.0, 0.3]] * heads if group == "SE3" else 0.7
        opts = dict(heads=heads, tau=tau, lam=lam, causal=causal)
        blocks = list(zip(cuts[:-1], cuts[1:]))

        # Forward: blocks merged by lse vs the whole sequence.
        gl, vl = g.clone().requires_grad_(), v.clone().requires_grad_()
        want = tnn.LieAttention(group, **opts)(gl, vl)
        out, lse = torch.zeros(2, L, D, dtype=dtype), torch.zeros(2, L, heads, dtype=dtype)
        for q0, q1 in blocks:
            pieces = [tnn.lie_attention_block(g[:, q0:q1], g[:, k0:k1], v[:, k0:k1], group,
                                              q_offset=q0, k_offset=k0, **opts)
                      for k0, k1 in blocks]
            for (o, l), (k0, k1) in zip(pieces, blocks):
                self.assertEqual(tuple(o.shape), (2, q1 - q0, D))
                self.assertEqual(tuple(l.shape), (2, q1 - q0, heads))
                self.assertTrue(torch.isfinite(o).all())
            out[:, q0:q1], lse[:, q0:q1] = merge(pieces, heads)
        self.assertLess(rel(out, want), tol, (group, heads, causal, dtype))

        # Backward: summed block gradients vs autograd through LieAttention.
        dout = torch.sin(torch.arange(2 * L * D, dtype=dtype)).reshape(2, L, D)
        (want * dout).sum().backward()
        dg, dv = torch.zeros(2, L, n, n, dtype=dtype), torch.zeros(2, L, D, dtype=dtype)
        for q0, q1 in blocks:
            for k0, k1 in blocks:
                a, b, c = tnn.lie_attention_block_backward(
                    g[:, q0:q1], g[:, k0:k1], v[:, k0:k1], out[:, q0:q1], lse[:, q0:q1],
                    dout[:, q0:q1], group, q_offset=q0, k_offset=k0, **opts)
                dg[:, q0:q1] += a
                dg[:, k0:k1] += b
                dv[:, k0:k1] += c
        self.assertLess(rel(dv, vl.grad), tol, "dv")
        self.assertLess(rel(dg, gl.grad), tol, "dg")

    def test_so3_heads1(self):
        self.run_case("SO3", 1, False, torch.float64, 1e-10)

    def test_so3_heads4_causal(self):
        self.run_case("SO3", 4, True, torch.float64, 1e-10)

    def test_se3_heads1_causal(self):
        self.run_case("SE3", 1, True, torch.float64, 1e-10)

    def test_se3_heads4(self):
        self.run_case("SE3", 4, False, torch.float64, 1e-10)

    def test_se3_f32_causal(self):
        self.run_case("SE3", 4, True, torch.float32, 1e-5)

    def test_empty_and_masked_rows(self):
        g = torch.tensor(torsor.groups.random("SO3", (1, 5), seed=1, dtype="f64"))
        v = torch.randn(1, 5, 4, dtype=torch.float64)
        # A query block entirely before the key block: no live key.
        o, l = tnn.lie_attention_block(g[:, :2], g[:, 2:], v[:, 2:], "SO3", causal=True,
                                       q_offset=0, k_offset=2)
        self.assertTrue(torch.equal(o, torch.zeros_like(o)))
        self.assertTrue(torch.isneginf(l).all())
        # Lq = 0 and Lk = 0.
        o, l = tnn.lie_attention_block(g[:, :0], g, v, "SO3")
        self.assertEqual(tuple(o.shape), (1, 0, 4))
        self.assertEqual(tuple(l.shape), (1, 0, 1))
        o, l = tnn.lie_attention_block(g, g[:, :0], v[:, :0], "SO3")
        self.assertTrue(torch.equal(o, torch.zeros(1, 5, 4, dtype=torch.float64)))
        self.assertTrue(torch.isneginf(l).all())
        a, b, c = tnn.lie_attention_block_backward(
            g, g[:, :0], v[:, :0], o, torch.zeros_like(l), o, "SO3")
        self.assertEqual(tuple(b.shape), (1, 0, 3, 3))
        self.assertTrue(torch.equal(a, torch.zeros_like(a)))

    def test_bad_arguments(self):
        g = torch.tensor(torsor.groups.random("SO3", (1, 4), seed=2, dtype="f64"))
        v = torch.zeros(1, 4, 8, dtype=torch.float64)
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            tnn.lie_attention_block(g, g, v[:, :3], "SO3")
        self.assertIn("expected g_q [B, Lq, n, n], g_k [B, Lk, n, n] and v [B, Lk, D]",
                      str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            tnn.lie_attention_block(g, g, v.float(), "SO3")
        self.assertIn("of one dtype", str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            tnn.lie_attention_block(g, g, v, "SO3", heads=3)
        self.assertIn("multiple of heads = 3", str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            tnn.lie_attention_block(g, g, v, "SE3")
        self.assertIn("SE3 elements are 4x4 matrices, got 3x3", str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            tnn.lie_attention_block(g, g, v, "SE4")
        self.assertIn("unknown group 'SE4'", str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            tnn.lie_attention_block_backward(g, g, v, v, v, v, "SO3")
        self.assertIn("expected lse of shape [1, 4, 1]", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
