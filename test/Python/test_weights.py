"""test_weights.py - state_dict mapping (nn.Linear layout) and .safetensors.

Uses NumPy arrays as the state_dict, so it runs without PyTorch; the torch
variant with real nn.Linear modules is in test_torch.py.
"""
import os
import tempfile
import unittest

import numpy as np

import common
from common import torsor

MLP = """model Mlp {
  dim L;
  input x: f32[L, 4];
  param W1: f32[4, 3];
  param b1: f32[3];
  param W2: f32[3, 3];
  output y = relu(x @ W1 + b1) @ W2;
}
"""


class StateDictMapping(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = torsor.compile(MLP)
        rng = np.random.default_rng(1)
        # What a PyTorch model with nn.Linear(4, 3) and nn.Linear(3, 3, bias=False)
        # stores: weights [out, in].
        cls.sd = {"fc1.weight": rng.standard_normal((3, 4)).astype(np.float32),
                  "fc1.bias": rng.standard_normal(3).astype(np.float32),
                  "fc2.weight": rng.standard_normal((3, 3)).astype(np.float32)}
        cls.mapping = {"W1": torsor.linear("fc1.weight"), "b1": "fc1.bias",
                       "W2": torsor.linear("fc2.weight")}
        cls.x = rng.standard_normal((5, 4)).astype(np.float32)

    def reference(self, x):
        """What the PyTorch model computes: linear(x) = x @ weight.T + bias."""
        sd = {k: v.astype(np.float64) for k, v in self.sd.items()}
        h = np.maximum(x @ sd["fc1.weight"].T + sd["fc1.bias"], 0)
        return h @ sd["fc2.weight"].T

    def test_linear_weights_are_transposed(self):
        params = torsor.map_state_dict(self.sd, self.mapping, model=self.m)
        self.assertEqual(params["W1"].shape, (4, 3))
        self.assertTrue(np.array_equal(params["W1"], self.sd["fc1.weight"].T))
        self.assertTrue(params["W1"].flags.c_contiguous)
        self.m.set_params(params)
        self.assertLess(common.rel_err(self.m(x=self.x), self.reference(self.x)), 1e-6)

    def test_square_weight_taken_as_is_gives_other_numbers(self):
        """W2 is square: only the explicit mapping can say it is [out, in]."""
        mapping = dict(self.mapping, W2="fc2.weight")
        self.m.set_params(torsor.map_state_dict(self.sd, mapping, model=self.m))
        self.assertGreater(common.rel_err(self.m(x=self.x), self.reference(self.x)), 1e-2)

    def test_shape_errors_hint_at_the_layout(self):
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            torsor.map_state_dict(self.sd, dict(self.mapping, W1="fc1.weight"), model=self.m)
        msg = str(cm.exception)
        self.assertIn("param 'W1': expected shape [4, 3], got [3, 4]", msg)
        self.assertIn("torsor.linear", msg)
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            torsor.map_state_dict(self.sd, dict(self.mapping, b1="fc9.bias"))
        self.assertEqual(str(cm.exception), "param 'b1': state_dict has no entry 'fc9.bias'")
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            torsor.map_state_dict(self.sd, dict(self.mapping, b1=torsor.linear("fc1.bias")))
        self.assertIn("expects an nn.Linear weight [out, in]", str(cm.exception))

    def test_strictness(self):
        partial = {"W1": torsor.linear("fc1.weight"), "b1": "fc1.bias"}
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            torsor.map_state_dict(self.sd, partial, model=self.m)
        self.assertEqual(str(cm.exception), "mapping leaves params unset: W2")
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            torsor.map_state_dict(self.sd, partial)
        self.assertIn("state_dict entries not mapped to any param: fc2.weight",
                      str(cm.exception))
        self.assertEqual(sorted(torsor.map_state_dict(self.sd, partial, strict=False)),
                         ["W1", "b1"])
        # A callable computes a param from the whole state_dict.
        params = torsor.map_state_dict(
            self.sd, dict(self.mapping, W2=lambda sd: 2 * sd["fc2.weight"].T),
            model=self.m)
        self.assertTrue(np.array_equal(params["W2"], 2 * self.sd["fc2.weight"].T))

    def test_safetensors_round_trip(self):
        params = torsor.map_state_dict(self.sd, self.mapping, model=self.m)
        self.m.set_params(params)
        want = self.m(x=self.x)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.safetensors")
            torsor.save_weights(path, params)
            m2 = torsor.load(self.m.path).load_weights(path)
            self.assertTrue(common.same_bits(m2(x=self.x), want))
            # f64 weights for an f32 model are converted with a warning (the
            # dtype policy, as torsor-run): the same outputs, since the values
            # came from f32; integer weights are refused.
            torsor.save_weights(path, params, dtype="f64")
            with self.assertWarns(torsor.TorsorWarning) as cm:
                m3 = torsor.load(self.m.path).load_weights(path)
            self.assertRegex(str(cm.warning), r"w\.safetensors: param '\w+': converting "
                             r"f64 to the model's dtype f32 \(rounded to nearest\)")
            self.assertTrue(common.same_bits(m3(x=self.x), want))
            torsor.save_weights(path, {k: np.arange(np.prod(np.shape(v))).reshape(np.shape(v))
                                       for k, v in params.items()})
            with self.assertRaises(torsor.InvalidArgumentError) as cm:
                torsor.load(self.m.path).load_weights(path)
            self.assertIn("expected dtype f32, got i64", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
