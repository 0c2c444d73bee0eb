"""test_api.py - torsor.compile/load, the manifest view, params, threads.

Uses a small model written inline (source text) and the SE(3) example.
"""
import ctypes
import os
import sys
import tempfile
import unittest

import numpy as np

import common
from common import torsor

# y = x @ W + b and a pose output: small, fast to compile, easy to check.
AFFINE = """
model Affine {
  dim L;
  dim D = 3;
  input x: f32[L, D];
  input g: SO3[L];
  param W: f32[D, 2];
  param b: f32[2];
  output y = x @ W + b;
  output w = log(g);
}
"""


class Install(unittest.TestCase):
    def test_package_comes_from_the_venv(self):
        """make test installs the package into a fresh venv: the module
        must be that copy, and it must find the build without TORSOR_*
        variables (run_tests.py removes them)."""
        if os.environ.get("TORSOR_TEST_IN_PLACE"):
            self.skipTest("run with --in-place: testing the source tree")
        venv = os.environ["TORSOR_TEST_VENV"]
        self.assertTrue(os.path.realpath(torsor.__file__).startswith(os.path.realpath(venv)),
                        torsor.__file__)
        from torsor import _locate
        build = os.path.realpath(common.BUILD)
        self.assertEqual(os.path.realpath(_locate.torsorc_path()),
                         os.path.join(build, "bin", "torsorc"))
        self.assertEqual(os.path.realpath(_locate.runtime_library_path()),
                         os.path.join(build, "lib", "libtorsor_runtime.so"))

    def test_a_runtime_without_the_packages_functions_is_named(self):
        """A runtime library from another (older) build: the first call
        names the library and the missing function instead of an
        AttributeError from ctypes. A fresh interpreter, since the package
        loads the runtime once."""
        import subprocess
        other = os.path.join(common.BUILD, "lib", "fakecuda", "libcuda.so.1")
        if not os.path.exists(other):
            self.skipTest("no fake CUDA driver in this build: %s" % other)
        env = dict(os.environ, TORSOR_RUNTIME_LIB=other)
        r = subprocess.run([sys.executable, "-c", "from torsor import _capi; _capi.lib()"],
                           env=env, capture_output=True, text=True, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("FailedPreconditionError: the Torsor runtime at %s lacks "
                      "torsorStatusCode" % other, r.stderr)
        self.assertIn("Use the package and the runtime of one build", r.stderr)

    def test_gil_is_released_during_calls(self):
        """ctypes.CDLL (not PyDLL) drops the GIL around every foreign call,
        torsorModuleRun included."""
        from torsor import _capi
        lib = _capi.lib()
        self.assertNotIsInstance(lib, ctypes.PyDLL)
        self.assertEqual(lib._func_flags_ & ctypes._FUNCFLAG_PYTHONAPI, 0)


class CompileAndLoad(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.old_cache = os.environ.get("TORSOR_CACHE_DIR")
        os.environ["TORSOR_CACHE_DIR"] = os.path.join(self.tmp.name, "cache")

    def tearDown(self):
        if self.old_cache is None:
            os.environ.pop("TORSOR_CACHE_DIR", None)
        else:
            os.environ["TORSOR_CACHE_DIR"] = self.old_cache
        self.tmp.cleanup()

    def test_source_text_path_and_cache(self):
        m1 = torsor.compile(AFFINE)
        self.assertFalse(m1.cached)
        m2 = torsor.compile(AFFINE)
        self.assertTrue(m2.cached)
        self.assertEqual(m1.path, m2.path)
        self.assertTrue(m1.path.startswith(torsor.cache_dir()))
        # The same text from a file: same source hash, same entry.
        path = os.path.join(self.tmp.name, "affine.tsr")
        with open(path, "w") as f:
            f.write(AFFINE)
        m3 = torsor.compile(path)
        self.assertTrue(m3.cached)
        self.assertEqual(m3.path, m1.path)
        # Other options or other text: other entries.
        self.assertNotEqual(torsor.compile(AFFINE, dtype="f64").path, m1.path)
        self.assertNotEqual(torsor.compile(AFFINE, opt=0).path, m1.path)
        self.assertNotEqual(torsor.compile(AFFINE + "\n// changed\n").path, m1.path)
        # cache=False recompiles into the same entry.
        self.assertFalse(torsor.compile(AFFINE, cache=False).cached)

    def test_output_path_and_load(self):
        out = os.path.join(self.tmp.name, "affine.so")
        m = torsor.compile(AFFINE, output=out)
        self.assertEqual(m.path, out)
        self.assertTrue(os.path.exists(os.path.join(self.tmp.name, "affine.json")))
        m2 = torsor.load(out)
        self.assertEqual(m2.name, "Affine")
        self.assertEqual([s.name for s in m2.inputs], ["x", "g"])

    def test_manifest_view(self):
        m = torsor.compile(common.example("se3_pose_attention"), dtype="f32", opt=2)
        self.assertEqual(m.name, "PoseAttention")
        self.assertEqual(m.dtype, "f32")
        self.assertEqual(m.dims, ["L"])
        pose, x = m.inputs
        self.assertEqual((pose.name, pose.shape, pose.dtype, pose.group, pose.left_invariant),
                         ("pose", ("L", 4, 4), "f32", "SE3", True))
        self.assertEqual((x.name, x.shape, x.group, x.left_invariant),
                         ("x", ("L", 64), None, None))
        self.assertEqual(len(m.params), 22)
        self.assertIn("blocks.1.W2", [p.name for p in m.params])
        self.assertEqual([(o.name, o.shape) for o in m.outputs], [("y", ("L", 64))])
        self.assertIn("PoseAttention", repr(m))


# An intermediate of L x 128 f32: 256 KiB at L = 512, above the cache's
# 64 KiB minimum.
TWO_LAYERS = """
model TwoLayers {
  dim L;
  dim D = 128;
  input x: f32[L, D];
  param W: f32[D, D];
  param V: f32[D, D];
  output y = relu(x @ W) @ V;
}
"""


class BufferCache(unittest.TestCase):
    """Model.set_buffer_cache / release_buffers / cached_bytes: freed large
    intermediates are kept for the next run and never change a result."""

    def test_kept_between_runs_and_released(self):
        m = torsor.compile(TWO_LAYERS)
        r = np.random.default_rng(1)
        w = r.standard_normal((128, 128)).astype(np.float32)
        v = r.standard_normal((128, 128)).astype(np.float32)
        m.set_params({"W": w, "V": v})
        x = r.standard_normal((512, 128)).astype(np.float32)
        self.assertEqual(m.cached_bytes, 0)
        first = m.run({"x": x})["y"]
        kept = m.cached_bytes
        self.assertGreaterEqual(kept, 512 * 128 * 4)
        # The next runs reuse the kept buffers: same bits, nothing more kept.
        for _ in range(3):
            np.testing.assert_array_equal(m.run({"x": x})["y"], first)
            self.assertEqual(m.cached_bytes, kept)
        want = np.maximum(x.astype(np.float64) @ w, 0) @ v
        np.testing.assert_allclose(first, want, rtol=1e-4, atol=1e-3)
        # A smaller run reuses or frees, never keeps more than before.
        m.run({"x": x[:100]})
        self.assertLessEqual(m.cached_bytes, kept)
        m.release_buffers()
        self.assertEqual(m.cached_bytes, 0)
        m.set_buffer_cache(False)
        np.testing.assert_array_equal(m.run({"x": x})["y"], first)
        self.assertEqual(m.cached_bytes, 0)
        m.set_buffer_cache(True)
        np.testing.assert_array_equal(m.run({"x": x})["y"], first)
        self.assertEqual(m.cached_bytes, kept)


class Calls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = torsor.compile(AFFINE)
        rng = np.random.default_rng(3)
        cls.W = rng.standard_normal((3, 2)).astype(np.float32)
        cls.b = rng.standard_normal(2).astype(np.float32)
        cls.m.set_params({"W": cls.W, "b": cls.b})
        cls.x = rng.standard_normal((5, 3)).astype(np.float32)
        cls.g = torsor.groups.random("SO3", 5, seed=1)

    def test_outputs_dict_and_values(self):
        out = self.m(x=self.x, g=self.g)
        self.assertEqual(sorted(out), ["w", "y"])
        want = self.x.astype(np.float64) @ self.W + self.b
        self.assertLess(common.rel_err(out["y"], want), 1e-6)
        self.assertTrue(common.same_bits(out["w"], torsor.groups.log("SO3", self.g)))
        # Positional arguments follow the manifest order.
        pos = self.m(self.x, self.g)
        self.assertTrue(common.same_bits(pos["y"], out["y"]))
        self.assertTrue(common.same_bits(self.m.run({"x": self.x, "g": self.g})["y"],
                                         out["y"]))

    def test_single_output_is_the_array(self):
        m = torsor.compile("model One { dim L; input x: f32[L]; output y = x * 2; }")
        y = m(x=np.arange(4, dtype=np.float32))
        self.assertIsInstance(y, np.ndarray)
        self.assertEqual(y.tolist(), [0, 2, 4, 6])
        # Lists are converted to the input's dtype; L = 0 works.
        self.assertEqual(m(x=[1.5, 2]).tolist(), [3, 4])
        self.assertEqual(m(x=np.zeros(0, np.float32)).shape, (0,))

    def test_strided_inputs_equal_contiguous(self):
        wide = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
        view = wide[:, ::2]                   # strides (6, 2) elements
        self.assertFalse(view.flags.c_contiguous)
        a = self.m(x=view, g=self.g)["y"]
        b = self.m(x=np.ascontiguousarray(view), g=self.g)["y"]
        self.assertTrue(common.same_bits(a, b))
        rev = self.x[::-1]                     # negative strides
        self.assertTrue(common.same_bits(self.m(x=rev, g=self.g)["y"],
                                         self.m(x=rev.copy(), g=self.g)["y"]))
        big = self.x.astype(">f4")             # big-endian: converted
        self.assertTrue(common.same_bits(self.m(x=big, g=self.g)["y"],
                                         self.m(x=self.x, g=self.g)["y"]))

    def test_outputs_are_copies(self):
        y1 = self.m(x=self.x, g=self.g)["y"]
        keep = y1.copy()
        self.m(x=self.x * 2, g=self.g)
        self.assertTrue(common.same_bits(y1, keep))

    def test_set_params_copies_and_converts(self):
        m = torsor.compile(AFFINE)
        W = self.W.astype(np.float64)          # converted to f32 on the way in
        m.set_params({"W": W, "b": self.b.tolist()})
        y1 = m(x=self.x, g=self.g)["y"]
        self.assertTrue(common.same_bits(y1, self.m(x=self.x, g=self.g)["y"]))
        W[:] = 100                             # the model kept its own copy
        self.assertTrue(common.same_bits(m(x=self.x, g=self.g)["y"], y1))

    def test_threads(self):
        before = torsor.get_num_threads()
        try:
            torsor.set_num_threads(1)
            self.assertEqual(torsor.get_num_threads(), 1)
            m = torsor.compile(common.example("se3_pose_attention"))
            rng = np.random.default_rng(5)
            m.set_params(common.random_params(m, rng))
            inputs = common.random_inputs(m, rng, size=33)
            one = m(**inputs)
            torsor.set_num_threads(3)
            self.assertEqual(torsor.get_num_threads(), 3)
            # Parallel loops split independent rows: same bits.
            self.assertTrue(common.same_bits(m(**inputs), one))
            torsor.set_num_threads(0)          # hardware concurrency
            self.assertEqual(torsor.get_num_threads(), os.cpu_count())
        finally:
            torsor.set_num_threads(before)

    def test_models_on_two_threads(self):
        """Separate models may run concurrently (the GIL is released)."""
        import threading
        models = [torsor.load(self.m.path).set_params({"W": self.W, "b": self.b})
                  for _ in range(2)]
        want = self.m(x=self.x, g=self.g)["y"]
        results = [None, None]

        def work(i):
            results[i] = [models[i](x=self.x, g=self.g)["y"] for _ in range(50)]

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in results:
            self.assertTrue(all(common.same_bits(y, want) for y in r))


if __name__ == "__main__":
    unittest.main()
