"""test_nn_nvptx.py - every model torsor.nn and torsor.distributed generate
compiles for the GPU, and the GPU attention kernel of the block forward
matches the CPU kernel (issue #23).

1. nvptx compiles: test/GPU/nvptx-nn-sources.test lowers the one-op
   sources of LieAttention, GrassmannMix and RelationalAttention (with
   --grad) and the ring's block forward (two token sets at runtime
   offsets, with the row lse) and backward (f32 and f64) to PTX for sm_90
   and checks that every call is resolved (no `.extern .func`). Its
   inputs are torsor.nn's sources verbatim; NvptxSources here checks that
   they still are (the lit test runs without torch, this one needs it).
2. The block forward's GPU kernel (geo-map-attention-to-gpu with
   cpu-emulation=1: the kernel's per-thread code with its blocks and
   threads as host loops, test/lib/gpu_attention_emulation.py), built from
   the very source torsor.nn generates, against the CPU model torsor.nn
   runs, on query/key blocks before, after and across each other: f64
   within 1e-12, f32 within 1e-5 relative; rows with no live key out 0
   and lse -inf in both.

torsor.nn generates the sources, so this needs torch (skipped without).
The block backward's GPU code is the CPU's flash backward loops
(geo-decompose-attention-grad) with their query and key loops mapped onto
threads (torsor-map-parallel-loops-to-gpu), the same loop bodies; its
on-device check is scripts/gpu-check.sh's (ring_check.py).
"""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import common
from common import torsor

try:
    import torch  # noqa: F401  (torsor.nn needs it)
    import torsor.nn as tnn
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SKIP_REASON = ("PyTorch is not installed in this environment (it is optional; "
               "make test never installs it)")
TORSORC = os.path.join(common.BUILD, "bin", "torsorc")


def block_sources(group, heads, causal, D=8):
    spec = tnn._block_spec(group, heads, [0.5 + 0.5 * h for h in range(heads)], 1.0, causal)
    return (tnn._block_source(spec, D, False), tnn._block_source(spec, D, True))


INPUTS = os.path.join(common.SOURCE, "test", "GPU", "Inputs")


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class NvptxSources(unittest.TestCase):
    """test/GPU/nvptx-nn-sources.test lowers these files to PTX (in CI too,
    where there is no torch): they must be what torsor.nn generates."""

    def generated(self):
        spec = tnn._block_spec("SE3", 4, [0.5, 1.0, 1.5, 2.0], 1.0, True)
        return {
            "nn_block_forward.tsr": tnn._block_source(spec, 8, False),
            "nn_block_backward.tsr": tnn._block_source(spec, 8, True),
            "nn_lie_attention.tsr": tnn.LieAttention("SO3", heads=1, tau=0.7).source(8),
            "nn_grassmann_mix.tsr": tnn.GrassmannMix(16, r=4, offsets=[1, 2, 5],
                                                     causal=True).source(),
            "nn_relational_attention.tsr": tnn.RelationalAttention(16, heads=2,
                                                                   causal=True).source(),
        }

    def test_lit_inputs_are_the_generated_sources(self):
        for name, text in self.generated().items():
            with open(os.path.join(INPUTS, name)) as f:
                lines = f.read().split("\n")
            self.assertTrue(lines[0].startswith("// torsor.nn's generated source"), name)
            self.assertEqual("\n".join(lines[1:]), text,
                             "%s differs from what torsor.nn generates now; regenerate it "
                             "(this test's generated())" % name)

    def test_block_sources_are_the_ring_models(self):
        # The ring (torsor.distributed) calls exactly these block models.
        fwd, bwd = block_sources("SE3", 4, True)
        self.assertIn("lie_attention(gq, gk, v,", fwd)
        self.assertIn("query_offset = qo, key_offset = ko", fwd)
        self.assertIn("lie_attention_grad(gq, gk, v, out, lse, dout,", bwd)


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class EmulatedBlockKernel(unittest.TestCase):
    """The GPU kernel of torsor.nn's block forward, emulated on the CPU,
    against the CPU model torsor.nn runs."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(common.SOURCE, "test", "lib"))
        os.environ.setdefault("TORSOR_BIN", os.path.join(common.BUILD, "bin"))
        cls.tmp = tempfile.TemporaryDirectory(prefix="torsor-nn-emulated-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def emulated(self, source, dtype):
        import gpu_attention_emulation as E
        tsr = os.path.join(self.tmp.name, "block.tsr")
        with open(tsr, "w") as f:
            f.write(source)
        mlir = os.path.join(self.tmp.name, "block-%s.mlir" % dtype)
        E.emulated_mlir(tsr, dtype, E.SUITE_OPTIONS, mlir)
        with open(mlir) as f:
            text = f.read()
        # The cross attention became the kernel: its shared tiles (stack
        # buffers here) and host loops, no attention op and no launch left.
        self.assertIn("memref.alloca", text)
        for op in ("geo.lie_cross_attention", "geo.flash_lie_attention", "gpu.launch"):
            self.assertNotIn(op, text)
        so = os.path.join(self.tmp.name, "block-%s.so" % dtype)
        res = subprocess.run([TORSORC, mlir, "-O1", "--dtype=" + dtype, "-o", so],
                             capture_output=True, text=True)
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        return torsor.load(so)

    def poses(self, rng, group, L):
        from model_runner import random_group_elements
        return random_group_elements(rng, group, L).reshape(1, L, *([4 if group == "SE3"
                                                                     else 3] * 2))

    def test_block_forward_matches_the_cpu_kernel(self):
        rng = np.random.default_rng(23)
        checked = 0
        for group, heads, causal in (("SO3", 1, True), ("SE3", 2, True)):
            fwd, _ = block_sources(group, heads, causal)
            for dtype, tol in (("f64", 1e-12), ("f32", 1e-5)):
                gpu = self.emulated(fwd, dtype)
                cpu = torsor.compile(fwd, dtype=dtype)
                np_dt = np.float64 if dtype == "f64" else np.float32
                # (Lq, Lk, qo, ko): queries before, after and across the
                # keys; blocks longer than the kernel's 16 rows / 8 keys.
                for Lq, Lk, qo, ko in ((5, 7, 0, 0), (17, 9, 3, 12), (20, 19, 25, 0),
                                       (9, 33, 30, 2), (4, 6, 0, 10), (1, 1, 0, 0)):
                    ins = {"gq": self.poses(rng, group, Lq).astype(np_dt),
                           "gk": self.poses(rng, group, Lk).astype(np_dt),
                           "v": rng.standard_normal((1, Lk, 8)).astype(np_dt),
                           "qo": np.array(qo, np.int64), "ko": np.array(ko, np.int64)}
                    a, b = gpu.run(ins), cpu.run(ins)
                    case = "%s h%d %s %s Lq=%d Lk=%d qo=%d ko=%d" % (
                        group, heads, "causal" if causal else "full", dtype, Lq, Lk, qo, ko)
                    for name in ("out", "lse"):
                        x = np.asarray(a[name], np.float64)
                        y = np.asarray(b[name], np.float64)
                        self.assertFalse(np.isnan(x).any() or np.isnan(y).any(), case)
                        np.testing.assert_array_equal(np.isneginf(x), np.isneginf(y), case)
                        fin = np.isfinite(y)
                        scale = max(float(np.abs(y[fin]).max(initial=0.0)), 1.0)
                        err = float(np.abs(x[fin] - y[fin]).max(initial=0.0)) / scale
                        self.assertLessEqual(err, tol, "%s %s: %.3g" % (case, name, err))
                    if causal and qo + Lq <= ko:  # every key in the future: empty rows
                        self.assertEqual(float(np.abs(np.asarray(a["out"])).max()), 0.0, case)
                        self.assertTrue(np.isneginf(np.asarray(a["lse"])).all(), case)
                    checked += 1
                gpu.close()
        self.assertEqual(checked, 24)


if __name__ == "__main__":
    unittest.main()
