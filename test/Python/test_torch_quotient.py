"""test_torch_quotient.py - training on the quotient from PyTorch.

torsor.quotient's projection against the NumPy reference
(tools/relational/quotient.py, ≤ 1e-12 in float64); then
examples/standard_attention.tsr trained through TorsorModule with AdamW
(weight decay, which is not gauge-invariant), with and without
QuotientOptimizer: the projected run's applied updates have no part along
the gauge orbits (≤ 1e-10 of the update, rounding), the plain run's do,
and both reach a similar loss. Skipped without torch.
"""
import os
import sys
import unittest

import numpy as np

import common
from common import torsor

try:
    import torch
    import torsor.torch as ttorch
    import torsor.quotient as quotient
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SKIP_REASON = ("PyTorch is not installed in this environment (it is optional; "
               "make test never installs it)")


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class Quotient(unittest.TestCase):
    def test_against_numpy_reference(self):
        sys.path.insert(0, os.path.join(common.SOURCE, "tools", "relational"))
        import quotient as ref
        rng = np.random.default_rng(0)
        w = {"Wq": rng.standard_normal((12, 8)), "Wk": rng.standard_normal((12, 8)),
             "Wv": rng.standard_normal((12, 8)), "Wo": rng.standard_normal((8, 10))}
        g = {k: rng.standard_normal(v.shape) for k, v in w.items()}
        want = ref.project_heads(w, g, heads=2)
        got = quotient.project_block({k: torch.tensor(v) for k, v in w.items()},
                                     {k: torch.tensor(v) for k, v in g.items()}, heads=2)
        for k in want:
            self.assertLess(np.abs(got[k].numpy() - want[k]).max(), 1e-12, k)

    def train(self, project):
        torch.manual_seed(0)
        layer = ttorch.TorsorModule(common.example("standard_attention"), dtype="f64", opt=0)
        teacher = ttorch.TorsorModule(layer.model)
        rng = np.random.default_rng(1)
        xs = [torch.tensor(rng.standard_normal((6, 64))) for _ in range(4)]
        with torch.no_grad():
            ys = [teacher(x=x) for x in xs]
        opt = torch.optim.AdamW(layer.parameters(), lr=3e-3, weight_decay=0.5)
        blocks = quotient.blocks_of(layer, "layers", count=2, heads=4)
        if project:
            opt = quotient.QuotientOptimizer(opt, blocks)
        losses, ratios = [], []
        for step in range(30):
            loss = ((layer(x=xs[step % 4]) - ys[step % 4]) ** 2).mean()
            before = [{k: p.detach().clone() for k, p in ps.items()} for _, ps in blocks]
            opt.zero_grad()
            loss.backward()
            opt.step()
            for (heads, ps), old in zip(blocks, before):
                delta = {k: ps[k].detach() - old[k] for k in ps}
                size = sum(float((d ** 2).sum()) for d in delta.values()) ** 0.5
                ratios.append(quotient.vertical_part(old, delta, heads) / size)
            losses.append(loss.item())
        return np.array(losses), max(ratios)

    def test_projected_training_keeps_the_gauge(self):
        plain, plain_ratio = self.train(False)
        proj, proj_ratio = self.train(True)
        self.assertLess(proj_ratio, 1e-10)       # nothing along the orbits
        self.assertGreater(plain_ratio, 1e-3)    # AdamW + weight decay drifts
        self.assertLess(proj[-1], 0.8 * proj[0])
        self.assertLess(abs(proj[-1] - plain[-1]), 0.2 * plain[-1])


if __name__ == "__main__":
    unittest.main()
