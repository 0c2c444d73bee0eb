"""test_training.py - Model.backward, the optimizers and the training loop.

The gradient values themselves are checked against finite differences in
test/Autodiff/gradients.py; here: the Python API around the backward entry
(errors, shapes, names), SGD and Adam on closed-form problems, and that
`torsor.train.train` lowers a loss and writes a loadable checkpoint.
"""
import io
import os
import tempfile
import unittest

import numpy as np

import common
from common import torsor
from torsor.train import SGD, Adam, init_params, train

FIT = """model Fit {
  dim L;
  input x: f32[L, 3];
  input y: f32[L, 2];
  param W: f32[3, 2];
  param b: f32[2];
  output loss = mse(x @ W + b, y);
}
"""


class Backward(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = torsor.compile(FIT, dtype="f64", grad=True)
        cls.fwd = torsor.compile(FIT, dtype="f64")

    def test_gradient_names_and_values(self):
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
        W, b = rng.standard_normal((3, 2)), rng.standard_normal(2)
        self.m.set_params({"W": W, "b": b})
        g = self.m.backward({"x": x, "y": y}, {"loss": np.array(1.0)})
        self.assertEqual(list(g), ["grad.x", "grad.y", "grad.W", "grad.b"])
        r = x @ W + b - y                     # d mean(r²) = 2 r / N
        np.testing.assert_allclose(g["grad.W"], x.T @ (2 * r / r.size), rtol=1e-12)
        np.testing.assert_allclose(g["grad.b"], (2 * r / r.size).sum(0), rtol=1e-12)
        np.testing.assert_allclose(g["grad.y"], -2 * r / r.size, rtol=1e-12)
        self.assertTrue(self.m.has_backward)

    def test_errors(self):
        x, y = np.zeros((4, 3)), np.zeros((4, 2))
        self.m.set_params({"W": np.zeros((3, 2)), "b": np.zeros(2)})
        with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                    "'cot.loss': expected rank 0"):
            self.m.backward({"x": x, "y": y}, {"loss": np.zeros(3)})
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "unknown output 'los'"):
            self.m.backward({"x": x, "y": y}, {"los": np.array(1.0)})
        self.assertFalse(self.fwd.has_backward)
        with self.assertRaisesRegex(torsor.FailedPreconditionError, "grad=True"):
            self.fwd.backward({"x": x, "y": y}, {"loss": np.array(1.0)})


class Optimizers(unittest.TestCase):
    def run_quadratic(self, opt, steps):
        # f(p) = ½‖p − c‖²: gradient p − c.
        c = np.array([1.0, -2.0, 3.0])
        params = {"p": np.zeros(3)}
        for _ in range(steps):
            opt.step(params, {"p": params["p"] - c})
        return np.abs(params["p"] - c).max()

    def test_sgd(self):
        self.assertLess(self.run_quadratic(SGD(lr=0.5), 40), 1e-9)
        self.assertLess(self.run_quadratic(SGD(lr=0.1, momentum=0.9), 300), 1e-6)

    def test_adam(self):
        # The first Adam step moves every coordinate by lr (bias correction).
        opt, params = Adam(lr=0.01), {"p": np.zeros(2)}
        opt.step(params, {"p": np.array([5.0, -1e-3])})
        np.testing.assert_allclose(params["p"], [-0.01, 0.01], rtol=1e-4)
        self.assertLess(self.run_quadratic(Adam(lr=0.05), 2000), 1e-3)


class Loop(unittest.TestCase):
    def test_train_lowers_loss_and_checkpoints(self):
        m = torsor.compile(FIT, dtype="f32", grad=True)
        rng = np.random.default_rng(1)
        W_true = rng.standard_normal((3, 2)).astype(np.float32)

        def batches():
            while True:
                x = rng.standard_normal((16, 3)).astype(np.float32)
                yield {"x": x, "y": x @ W_true + 0.5}
        params = init_params(m, seed=0)
        lines = io.StringIO()
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "fit.safetensors")
            hist = train(m, params, batches(), Adam(lr=0.05), steps=200, loss="loss",
                         log_every=50, checkpoint=ckpt,
                         out=lambda s: lines.write(s + "\n"))
            self.assertLess(np.mean(hist[-10:]), 1e-2 * np.mean(hist[:10]))
            self.assertRegex(lines.getvalue(), r"step 200 loss [0-9.]+ \([0-9]+ tokens/s\)")
            m2 = torsor.compile(FIT, dtype="f32")
            m2.load_weights(ckpt)
            x = rng.standard_normal((4, 3)).astype(np.float32)
            y = x @ W_true + 0.5
            self.assertLess(float(m2(x=x, y=y)), 1e-2)


if __name__ == "__main__":
    unittest.main()
