"""test_nn_nvptx.py - every model torsor.nn and torsor.distributed generate
compiles for the GPU, and the GPU attention kernel of the block forward
matches the CPU kernel (issue #23).

1. nvptx compiles: the one-op sources of LieAttention (--grad),
   GrassmannMix (--grad), RelationalAttention (--grad) and the ring's
   block forward (two token sets at runtime offsets, with the row lse)
   and block backward (f32, and f64), each lowered to PTX for sm_90
   (`torsorc --emit=opt | torsor-opt
   --torsor-nvptx-pipeline=gpu-format=isa`, torsorc --target=nvptx's
   pipeline with the kernels kept as PTX): the PTX has kernels (.entry)
   and calls no function it does not define (no `.extern .func`: every
   math call resolved, libdevice included). One configuration each keeps
   this to about 30 s; scripts/gpu-check-prepare.sh builds the ring's
   and the halo's models as .so (ptxas cubins) for SO(3) and SE(3),
   heads 1 and 4, masked and not, f32 and f64.
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
    import torch
    import torsor.nn as tnn
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SKIP_REASON = ("PyTorch is not installed in this environment (it is optional; "
               "make test never installs it)")
TORSORC = os.path.join(common.BUILD, "bin", "torsorc")
TORSOR_OPT = os.path.join(common.BUILD, "bin", "torsor-opt")


def nvptx_available():
    """Whether this torsorc has the NVPTX target (a build without it says so)."""
    res = subprocess.run([TORSORC, "--help"], capture_output=True, text=True)
    return "nvptx" in res.stdout


def block_sources(group, heads, causal, D=8):
    spec = tnn._block_spec(group, heads, [0.5 + 0.5 * h for h in range(heads)], 1.0, causal)
    return (tnn._block_source(spec, D, False), tnn._block_source(spec, D, True))


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class NvptxCompiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not nvptx_available():
            raise unittest.SkipTest("this torsorc has no --target=nvptx")
        cls.tmp = tempfile.TemporaryDirectory(prefix="torsor-nn-nvptx-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def ptx(self, source, dtype="f32", grad=False):
        """The PTX of `source` for sm_90: torsorc --emit=opt, then the nvptx
        pipeline with gpu-format=isa (torsorc --target=nvptx's pipeline,
        the kernels kept as PTX instead of a ptxas cubin)."""
        path = os.path.join(self.tmp.name, "model.tsr")
        with open(path, "w") as f:
            f.write(source)
        first = source.split("model ")[1].split("{")[0].strip()
        what = "%s %s%s" % (first, dtype, " --grad" if grad else "")
        flags = ["--dtype=" + dtype] + (["--grad"] if grad else [])
        opt = subprocess.run([TORSORC, path, "--emit=opt"] + flags, capture_output=True,
                             text=True)
        self.assertEqual(opt.returncode, 0, "%s:\n%s" % (what, opt.stderr[-3000:]))
        res = subprocess.run([TORSOR_OPT, "-", "--torsor-nvptx-pipeline=gpu-format=isa "
                              "gpu-arch=sm_90"], input=opt.stdout, capture_output=True,
                             text=True)
        self.assertEqual(res.returncode, 0, "%s (PTX):\n%s" % (what, res.stderr[-3000:]))
        text = res.stdout
        self.assertIn(".entry", text, what)
        self.assertNotIn(".extern .func", text, "%s: unresolved calls" % what)
        return text

    def test_lie_attention(self):
        self.ptx(tnn.LieAttention("SO3", heads=1, tau=0.7).source(8), grad=True)

    def test_block_forward_and_backward(self):
        fwd, bwd = block_sources("SE3", 4, True)
        # The two-set forward is the fused GPU attention kernel.
        self.assertIn("__torsor_attention_tile", self.ptx(fwd), "SE3 block forward")
        self.ptx(bwd)
        self.ptx(block_sources("SO3", 1, False)[1], "f64")

    def test_grassmann_mix(self):
        self.ptx(tnn.GrassmannMix(16, r=4, offsets=[1, 2, 5], causal=True).source(),
                 grad=True)

    def test_relational_attention(self):
        self.ptx(tnn.RelationalAttention(16, heads=2, causal=True).source(), grad=True)


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
