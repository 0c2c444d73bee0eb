"""test_examples.py - every example through the API vs torsor-run, bit for bit.

For each examples/*.tsr: torsor.compile (f32, torsorc's default -O), seeded
inputs and params, then three ways to run the same .so on the same data:
  - the API with set_params (arrays),
  - the API with load_weights (a .safetensors written by save_weights),
  - torsor-run with .npy inputs and the same bundle.
All outputs must have identical bytes: the package adds nothing to the
numbers, it only hands memory to the runtime.
"""
import os
import tempfile
import unittest

import numpy as np

import common
from common import torsor


class ExamplesMatchTorsorRun(unittest.TestCase):
    def check_example(self, path):
        import model_runner
        with open(path) as f:
            declared = model_runner.parse_declared_groups(f.read())
        m = torsor.compile(path, dtype="f32")
        rng = np.random.default_rng(7)
        inputs = common.random_inputs(m, rng, size=7, declared=declared)
        params = common.random_params(m, rng)
        torsor.set_num_threads(2)

        m.set_params(params)
        got = m(**inputs)
        if len(m.outputs) == 1:
            got = {m.outputs[0].name: got}
        for s in m.outputs:
            self.assertEqual(got[s.name].dtype, s.numpy_dtype)
            self.assertEqual(got[s.name].shape, s.concrete_shape({d: 7 for d in m.dims}))
            self.assertTrue(np.all(np.isfinite(got[s.name])), s.name)

        with tempfile.TemporaryDirectory() as work:
            weights = os.path.join(work, "w.safetensors")
            torsor.save_weights(weights, params)
            fresh = torsor.load(m.path).load_weights(weights)
            via_file = fresh.run(inputs)
            cli = common.torsor_run(m.path, inputs, weights,
                                    [s.name for s in m.outputs], work)
        for s in m.outputs:
            self.assertTrue(common.same_bits(got[s.name], cli[s.name]),
                            "%s: API (set_params) != torsor-run" % s.name)
            self.assertTrue(common.same_bits(via_file[s.name], cli[s.name]),
                            "%s: API (load_weights) != torsor-run" % s.name)

    def test_every_example(self):
        self.assertGreaterEqual(len(common.EXAMPLES), 6)
        for path in common.EXAMPLES:
            with self.subTest(example=os.path.basename(path)):
                self.check_example(path)


if __name__ == "__main__":
    unittest.main()
