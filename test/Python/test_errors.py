"""test_errors.py - bad input raises a located, specific exception.

Compiler errors keep torsorc's `file:line:col: error:` and caret line;
runtime errors keep the runtime's message (naming the tensor, expected vs.
found) and map its status code to an exception class. Nothing crashes,
and a failed call leaves the model usable.
"""
import os
import tempfile
import unittest
import warnings

import numpy as np

import common
from common import torsor

MODEL = """model Pair {
  dim L;
  input pose: SE3[L];
  input x: f32[L, 4];
  param w: f32[4];
  output y = lie_attention(pose, x * w);
}
"""


class CompileErrors(unittest.TestCase):
    def test_source_text_error_is_located(self):
        bad = "model M {\n  dim L;\n  input g: SE4[L];\n  output y = log(g);\n}\n"
        with self.assertRaises(torsor.CompileError) as cm:
            torsor.compile(bad)
        msg = str(cm.exception)
        self.assertIn("<source>:3:12: error: unknown group 'SE4'", msg)
        self.assertIn("  input g: SE4[L];\n", msg)          # the source line
        self.assertIn("           ^", msg)                   # and the caret
        self.assertEqual(cm.exception.diagnostics.strip(), msg)
        self.assertIn("--dtype=f32", cm.exception.command)

    def test_file_error_names_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "broken.tsr")
            with open(path, "w") as f:
                f.write("model M {\n  output y = nope(1);\n}\n")
            with self.assertRaises(torsor.CompileError) as cm:
                torsor.compile(path)
        self.assertRegex(str(cm.exception), r"broken\.tsr:2:\d+: error: ")

    def test_missing_file_and_bad_options(self):
        with self.assertRaises(FileNotFoundError):
            torsor.compile("no/such/model.tsr")
        with self.assertRaises(ValueError):
            torsor.compile(MODEL, opt=7)
        with self.assertRaises(torsor.CompileError) as cm:
            torsor.compile(MODEL, dtype="f16")
        self.assertIn("f16", str(cm.exception))


class SeveralModels(unittest.TestCase):
    def test_compile_picks_a_model_by_name(self):
        text = ("model A { dim L; input x: f32[L, 4]; output y = x * 2.0; }\n"
                "model B { dim L; input x: f32[L, 4]; output y = x * 3.0; }\n")
        x = np.ones((2, 4), np.float32)
        self.assertEqual(float(torsor.compile(text, model="B")(x=x)[0, 0]), 3.0)
        self.assertEqual(float(torsor.compile(text, model="A")(x=x)[0, 0]), 2.0)
        with self.assertRaises(torsor.CompileError) as cm:
            torsor.compile(text)
        self.assertIn("pick it with torsor.compile(..., model='NAME')", str(cm.exception))
        self.assertIn("torsorc --model NAME", cm.exception.diagnostics)  # verbatim


class LoadErrors(unittest.TestCase):
    def test_missing_and_broken_model_files(self):
        with self.assertRaises(torsor.TorsorIOError) as cm:
            torsor.load("/no/such/model.so")
        self.assertIn("/no/such/model.so", str(cm.exception))
        self.assertIsInstance(cm.exception, OSError)
        with tempfile.TemporaryDirectory() as d:
            so = os.path.join(d, "junk.so")
            with open(so, "w") as f:
                f.write("not a library")
            with self.assertRaises(torsor.TorsorError) as cm:
                torsor.load(so)             # no manifest next to it
            self.assertIn("junk.json", str(cm.exception))


class RunErrors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = torsor.compile(MODEL)
        cls.m.set_params({"w": np.ones(4, np.float32)})
        cls.pose = torsor.groups.random("SE3", 6, seed=0)
        cls.x = np.ones((6, 4), np.float32)

    def expect(self, cls, text, **inputs):
        with self.assertRaises(cls) as cm:
            self.m(**inputs)
        self.assertEqual(str(cm.exception), text)
        # The model still works after the error.
        self.assertEqual(self.m(pose=self.pose, x=self.x).shape, (6, 4))

    def test_wrong_dtype(self):
        # Another float dtype is converted: with a warning when it rounds
        # (f64 -> f32), silently when exact (f16 -> f32); integers and floats
        # never mix (docs/python.md, "dtypes"; torsor-run does the same).
        want = self.m(pose=self.pose, x=self.x)
        with self.assertWarns(torsor.TorsorWarning) as cm:
            got = self.m(pose=self.pose, x=self.x.astype(np.float64))
        self.assertEqual("input 'x': converting float64 to the model's dtype f32 "
                         "(rounded to nearest; a copy)", str(cm.warning))
        self.assertTrue(common.same_bits(got, want))
        with warnings.catch_warnings():
            warnings.simplefilter("error", torsor.TorsorWarning)
            got = self.m(pose=self.pose, x=self.x.astype(np.float16))
        self.assertTrue(common.same_bits(got, want))
        self.expect(torsor.InvalidArgumentError,
                    "input 'x': expected f32, got int64; integer and float tensors "
                    "are never converted (cast it yourself: .astype(np.float32) / "
                    ".to(torch.float32))",
                    pose=self.pose, x=self.x.astype(np.int64))

    def test_integer_dtypes(self):
        """Token ids of another integer dtype convert silently when every
        value fits i64; uint64 values that do not are refused, and floats
        are never taken for ids."""
        m = torsor.compile("model Tokens { dim L; dim V = 16; input tokens: i64[L]; "
                           "param table: f32[V, 4]; output y = embedding(tokens, table); }",
                           opt=0)
        m.set_params({"table": np.arange(64, dtype=np.float32).reshape(16, 4)})
        ids = np.array([3, 0, 15, 7])
        want = m(tokens=ids)
        with warnings.catch_warnings():
            warnings.simplefilter("error", torsor.TorsorWarning)
            for dt in (np.int32, np.uint8, np.uint64):
                self.assertTrue(common.same_bits(m(tokens=ids.astype(dt)), want), dt)
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            m(tokens=np.array([2 ** 63, 1], np.uint64))
        self.assertIn("input 'tokens': uint64 values above 9223372036854775807 do not "
                      "fit the model's dtype i64", str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            m(tokens=ids.astype(np.float32))
        self.assertIn("input 'tokens': expected i64, got float32; integer and float "
                      "tensors are never converted", str(cm.exception))
        m.close()

    def test_messages_name_python_calls(self):
        self.assertEqual(
            torsor.errors.pythonic("input 'x': expected dtype f32, got f64; cast it "
                                   "(arr.astype(np.float32)) or compile the model "
                                   "with --dtype=f64"),
            "input 'x': expected dtype f32, got f64; cast it (arr.astype(np.float32)) "
            "or compile it with torsor.compile(..., dtype='f64')")
        self.assertIn("m.set_check_groups(False)", torsor.errors.pythonic(
            "(turn them off with --no-check-groups or torsorModuleSetCheckGroups "
            "to pass them through)"))

    def test_wrong_rank_and_extent(self):
        self.expect(torsor.InvalidArgumentError,
                    "input 'pose': expected rank 3 (L x 4 x 4), got rank 2 (6 x 16)",
                    pose=self.pose.reshape(6, 16), x=self.x)
        self.expect(torsor.InvalidArgumentError,
                    "input 'x': dim 1 expected 4, got 3", pose=self.pose, x=self.x[:, :3])

    def test_symbolic_dim_mismatch(self):
        self.expect(torsor.InvalidArgumentError,
                    "symbolic dim 'L' is 6 from input 'pose' but 5 from input 'x'",
                    pose=self.pose, x=self.x[:5])

    def test_unknown_and_missing_inputs(self):
        self.expect(torsor.InvalidArgumentError,
                    "unknown input 'posee'; model inputs are: pose, x",
                    posee=self.pose, x=self.x)
        # A successful call first, so a stale binding would exist if the
        # package did not unbind after each call.
        self.m(pose=self.pose, x=self.x)
        self.expect(torsor.FailedPreconditionError, "missing input 'x'", pose=self.pose)
        with self.assertRaises(TypeError):
            self.m(self.pose, self.x, self.x)

    def test_group_check(self):
        bad = self.pose.copy()
        bad[3, 0, 1] += 0.25
        # On by default (the runtime's contract), and it can be turned off.
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            self.m(pose=bad, x=self.x)
        self.assertRegex(str(cm.exception),
                         r"^input 'pose' element 3 is not in SE3: ")
        self.m(pose=self.pose, x=self.x)
        self.m.set_check_groups(False)
        try:
            self.m(pose=bad, x=self.x)
        finally:
            self.m.set_check_groups(True)

    def test_param_errors(self):
        m = torsor.load(self.m.path)
        with self.assertRaises(torsor.FailedPreconditionError) as cm:
            m(pose=self.pose, x=self.x)
        self.assertEqual(str(cm.exception), "missing param 'w'")
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            m.set_params({"ww": np.ones(4)})
        self.assertEqual(str(cm.exception), "unknown param 'ww'; model params are: w")
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            m.set_params({"w": np.ones(5)})
        self.assertEqual(str(cm.exception), "param 'w': dim 0 expected 4, got 5")
        with self.assertRaises(torsor.TorsorIOError) as cm:
            m.load_weights("/no/such/w.safetensors")
        self.assertIn("/no/such/w.safetensors", str(cm.exception))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.safetensors")
            torsor.save_weights(path, {"v": np.ones(4, np.float32)})
            with self.assertRaises(torsor.InvalidArgumentError) as cm:
                m.load_weights(path)
            self.assertEqual(str(cm.exception),
                             "%s: unknown param 'v'; model params are: w" % path)

    def test_threads_out_of_range(self):
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            torsor.set_num_threads(100000)
        self.assertIn("too large", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
