"""test_torch.py - torch tensors in and out, nn.Module, custom op, compile.

Skipped when PyTorch is not importable: it is optional, and `make test`
never installs it (CI's time budget). Run these with an interpreter that
has torch: `python3 test/Python/run_tests.py --build build --in-place`.
"""
import unittest
import warnings

import numpy as np

import common
from common import torsor

try:
    import torch
    import torsor.torch as ttorch
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SKIP_REASON = ("PyTorch is not installed in this environment (it is optional; "
               "make test never installs it)")

MLP = """model Mlp {
  dim L;
  input pose: SE3[L];
  input x: f32[L, 4];
  param W1: f32[4, 8];
  param b1: f32[8];
  param W2: f32[8, 8];
  output y = lie_attention(pose, relu(x @ W1 + b1) @ W2, heads = 2);
  output d = dist2(pose, pose, pairwise = true);
}
"""


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class TorchInterop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = torsor.compile(MLP)
        torch.manual_seed(0)
        # The PyTorch side: nn.Linear layers, weights [out, in].
        cls.fc1, cls.fc2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 8, bias=False)
        sd = {"fc1." + k: v for k, v in cls.fc1.state_dict().items()}
        sd.update({"fc2." + k: v for k, v in cls.fc2.state_dict().items()})
        cls.params = torsor.map_state_dict(sd, {
            "W1": torsor.linear("fc1.weight"), "b1": "fc1.bias",
            "W2": torsor.linear("fc2.weight")}, model=cls.m)
        cls.m.set_params(cls.params)
        cls.pose = torch.from_numpy(torsor.groups.random("SE3", 9, seed=4))
        cls.x = torch.randn(9, 4)

    def test_tensors_in_tensors_out(self):
        out = self.m(pose=self.pose, x=self.x)
        self.assertIsInstance(out["y"], torch.Tensor)
        np_out = self.m(pose=self.pose.numpy(), x=self.x.numpy())
        for k in out:
            self.assertTrue(common.same_bits(out[k].numpy(), np_out[k]), k)
        # Non-contiguous tensors are gathered by the runtime: same bits.
        wide = torch.randn(9, 8)
        xs = wide[:, ::2]
        self.assertFalse(xs.is_contiguous())
        a = self.m(pose=self.pose, x=xs)["y"]
        b = self.m(pose=self.pose, x=xs.contiguous())["y"]
        self.assertTrue(torch.equal(a, b))
        # Tensors that require grad are read, with a warning that the
        # result has no gradient (never a silent detach).
        with self.assertWarns(torsor.TorsorWarning):
            y = self.m(pose=self.pose, x=self.x.clone().requires_grad_())["y"]
        self.assertTrue(torch.equal(y, out["y"]))
        self.assertFalse(y.requires_grad)

    def test_bad_tensors(self):
        # Other float dtypes (f16, bf16, f64) are converted, with a warning
        # only when that rounds (f64); integers are refused (docs/python.md,
        # "dtypes").
        want = self.m(pose=self.pose, x=self.x)["y"]
        for dt in (torch.float16, torch.bfloat16, torch.float64):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always", torsor.TorsorWarning)
                got = self.m(pose=self.pose, x=self.x.to(dt))["y"]
            notes = [str(w.message) for w in seen if w.category is torsor.TorsorWarning]
            self.assertEqual(notes, ["input 'x': converting float64 to the model's dtype "
                                     "f32 (rounded to nearest; a copy)"]
                             if dt == torch.float64 else [], dt)
            self.assertEqual(got.dtype, torch.float32)
            self.assertTrue(torch.equal(got, self.m(pose=self.pose,
                                                    x=self.x.to(dt).float())["y"]))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            self.m(pose=self.pose, x=self.x.long())
        self.assertIn("input 'x': expected f32, got int64", str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            self.m(pose=self.pose, x=self.x.to("meta"))
        self.assertIn("input 'x': tensor is on device 'meta'", str(cm.exception))

    def test_module_matches_pytorch_reference(self):
        layer = ttorch.TorsorModule(self.m)
        self.assertEqual(sorted(layer.state_dict()), sorted(p.name for p in self.m.params))
        layer.load_torsor_params(self.params)
        out = layer(self.pose, self.x)
        self.assertEqual(sorted(out), ["d", "y"])
        want = self.m(pose=self.pose, x=self.x)
        self.assertTrue(torch.equal(out["y"], want["y"]))
        # The value path against PyTorch: v = fc2(relu(fc1(x))), then
        # attention with weights from d (heads = 2, tau = 1, lambda = 1).
        with torch.no_grad():
            v = self.fc2(torch.relu(self.fc1(self.x))).double()
            attn = torch.softmax(-out["d"].double(), dim=-1)
            ref = attn @ v
        self.assertLess(common.rel_err(out["y"].detach(), ref), 1e-5)

    def test_state_dict_round_trip_and_compile(self):
        layer = ttorch.TorsorModule(self.m.path)
        layer.load_state_dict({k: torch.as_tensor(v) for k, v in self.params.items()})

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.pre = torch.nn.Linear(4, 4)
                self.geo = layer

            def forward(self, pose, x):
                return self.geo(pose=pose, x=torch.tanh(self.pre(x)))["y"].sum(-1)

        net = Net()
        with torch.no_grad():
            eager = net(self.pose, self.x)
            compiled = torch.compile(net, fullgraph=True, backend="aot_eager")
            self.assertTrue(torch.equal(compiled(self.pose, self.x), eager))
            pose13 = torch.from_numpy(torsor.groups.random("SE3", 13, seed=9))
            x13 = torch.randn(13, 4)
            self.assertTrue(torch.equal(compiled(pose13, x13), net(pose13, x13)))

    def test_backward_without_grad_entry_is_refused_clearly(self):
        # self.m was compiled without grad=True: no backward entry.
        layer = ttorch.TorsorModule(self.m, params=self.params)
        x = self.x.clone().requires_grad_()
        y = layer(self.pose, x)["y"].sum()
        with self.assertRaises(torsor.FailedPreconditionError) as cm:
            y.backward()
        self.assertIn("torsor.compile(..., grad=True)", str(cm.exception))


# Shortcuts the tutorial test takes: (text in docs/tutorial.md, replacement).
TUTORIAL_SHORTCUTS = [("range(301)", "range(3)"),
                      ("for L in (256, 1024):", "for L in (32,):"),
                      ("def median_ms(fn, n=20):", "def median_ms(fn, n=2):"),
                      ("torch.compile(loss_fn, fullgraph=True)",
                       "torch.compile(loss_fn, fullgraph=True, backend='aot_eager')")]


def tutorial_code(quick=True):
    """(model source, Python code) of docs/tutorial.md's code blocks."""
    import os
    import re
    with open(os.path.join(common.SOURCE, "docs", "tutorial.md")) as f:
        text = f.read()
    tsr = re.findall(r"```tsr\n(.*?)```", text, re.S)
    code = "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))
    if quick:
        for old, new in TUTORIAL_SHORTCUTS:
            assert old in code, "docs/tutorial.md no longer has %r" % old
            code = code.replace(old, new)
    return tsr[0], code


def run_tutorial(quick=True):
    """Runs the tutorial's blocks in order in a scratch folder."""
    import contextlib
    import os
    import tempfile
    tsr, code = tutorial_code(quick)
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        try:
            with open("pose_layer.tsr", "w") as f:
                f.write(tsr)
            scope = {"__name__": "tutorial"}
            exec(compile(code, "docs/tutorial.md", "exec"), scope)
        finally:
            os.chdir(cwd)
    return scope


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class Tutorial(unittest.TestCase):
    def test_tutorial_runs(self):
        """docs/tutorial.md as written (3 training steps, small timings)."""
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()) as out:
            scope = run_tutorial(quick=True)
        text = out.getvalue()
        self.assertIn("symbolic dim 'L' is 10 from input 'pose' but 64 from input 'x'", text)
        self.assertIn("True", text)                          # compiled == eager
        self.assertIn("['Wo', 'Wv', 'ln_b', 'ln_g']", text)  # Torsor's names
        y, y_moved = scope["y"], scope["y_moved"]
        self.assertLess(common.rel_err(y_moved, y), 1e-5)    # invariance
        self.assertLess(common.rel_err(y, scope["y_torch"]), 1e-5)
        grad = scope["grad_torsor"]                          # gradients vs PyTorch
        self.assertLess(common.rel_err(grad, scope["x_check"].grad), 1e-4)
        self.assertIsNotNone(scope["net"].geo.get_parameter("Wv").grad)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--tutorial"]:       # the full tutorial, as users run it
        run_tutorial(quick=False)
    else:
        unittest.main()
