"""test_nn_devices.py - torsor.nn's target follows its inputs' device (issue #23).

CPU tensors run the cpu model, CUDA tensors the nvptx model compiled for
the device's compute capability (TORSOR_GPU_ARCH overrides it), with the
runtime on that GPU and the tensors bound as device memory (torsor.torch's
device path); tensors of one call on different devices are a clear error.
There is no GPU here: CUDA tensors are stand-ins (a torch.Tensor subclass
whose .device says cuda:N) and the compile / run seams are recorded, as
test_distributed.py's Devices does for NCCL. Prebuilt models
(torsor.compiler.prebuild + $TORSOR_PREBUILT_DIR, what a GPU machine
without torsorc loads) are tested for real on the CPU; that part needs no
torch. The nvptx compiles of every source torsor.nn generates are
test_nn_nvptx.py's.
"""
import os
import shutil
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

if HAVE_TORCH:
    class FakeCuda(torch.Tensor):
        """A CPU tensor that says it lives on cuda:N (the device only; its
        memory stays host memory)."""

        @staticmethod
        def of(t, index=0):
            out = torch.Tensor._make_subclass(FakeCuda, t)
            out.index = index
            return out

        @property
        def device(self):
            return torch.device("cuda", self.index)

        @property
        def is_cuda(self):
            return True

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            # Results are plain tensors (the seams below never compute on
            # these), except .to / .contiguous / detach / reshape, which keep
            # the stand-in so the device travels as with a real CUDA tensor.
            kwargs = kwargs or {}
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
            name = getattr(func, "__name__", "")
            if (name in ("to", "contiguous", "detach", "reshape")
                    and isinstance(out, torch.Tensor) and isinstance(args[0], FakeCuda)):
                return FakeCuda.of(out, args[0].index)
            return out


class _Env:
    """Saves and restores environment variables and torsor.nn's GPU state."""

    NAMES = ("TORSOR_GPU_ARCH", "TORSOR_CUDA_DEVICE", "TORSOR_PREBUILT_DIR", "TORSOR_BIN",
             "TORSOR_BUILD_DIR")

    def setUp(self):
        self.saved_env = {k: os.environ.get(k) for k in self.NAMES}
        for k in ("TORSOR_GPU_ARCH", "TORSOR_CUDA_DEVICE"):
            os.environ.pop(k, None)
        if HAVE_TORCH:
            self.saved_nn = (list(tnn._cuda_ordinal), dict(tnn._arch_of_device))
            tnn._cuda_ordinal.clear()
            tnn._arch_of_device.clear()

    def tearDown(self):
        for k, v in self.saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if HAVE_TORCH:
            tnn._cuda_ordinal[:] = self.saved_nn[0]
            tnn._arch_of_device.clear()
            tnn._arch_of_device.update(self.saved_nn[1])


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class TargetChoice(_Env, unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.compiled = []
        self.ran = []
        self.saved = (tnn._op_for, tnn._block_model, tnn._run_block,
                      torch.cuda.get_device_capability)
        torch.cuda.get_device_capability = lambda device=None: (9, 0)

        def op_for(source, dtype, group_source=None, opt=None, target="cpu", arch=None):
            self.compiled.append((source.splitlines()[1] if "{" in source else source,
                                  dtype, target, arch))

            def op(inputs, params):
                self.ran.append([t.device for t in list(inputs) + list(params)])
                return [torch.zeros(inputs[-1].shape, dtype=inputs[-1].dtype)]
            return op
        tnn._op_for = op_for

    def tearDown(self):
        (tnn._op_for, tnn._block_model, tnn._run_block,
         torch.cuda.get_device_capability) = self.saved
        super().tearDown()

    def poses(self, L=5, n=4):
        return torch.eye(n, dtype=torch.float64).repeat(1, L, 1, 1)

    def test_cpu_tensors_run_the_cpu_model(self):
        attn = tnn.LieAttention("SE3", heads=2)
        attn(self.poses(), torch.zeros(1, 5, 4, dtype=torch.float64))
        self.assertEqual([c[2:] for c in self.compiled], [("cpu", None)])
        self.assertEqual(tnn._cuda_ordinal, [])  # no GPU claimed
        self.assertNotIn("TORSOR_CUDA_DEVICE", os.environ)

    def test_cuda_tensors_run_the_nvptx_model_of_the_device(self):
        attn = tnn.LieAttention("SE3", heads=2)
        g, v = FakeCuda.of(self.poses()), FakeCuda.of(torch.zeros(1, 5, 4, dtype=torch.float64))
        attn(g, v)
        self.assertEqual(self.compiled[-1][1:], ("f64", "nvptx", "sm_90"))
        # The tensors reach the op on the device (no host copy on the way).
        self.assertEqual(self.ran[-1], [torch.device("cuda", 0)] * 2)
        self.assertEqual(os.environ.get("TORSOR_CUDA_DEVICE"), "0")
        # One compile per target: CPU tensors afterwards compile the cpu
        # model, and the CUDA one is reused from the module's cache.
        attn(self.poses(), torch.zeros(1, 5, 4, dtype=torch.float64))
        attn(g, v)
        self.assertEqual([c[2] for c in self.compiled], ["nvptx", "cpu"])

    def test_gpu_arch_follows_the_capability_and_the_override(self):
        torch.cuda.get_device_capability = lambda device=None: (8, 6)
        self.assertEqual(tnn.gpu_arch(torch.device("cuda", 0)), "sm_86")
        os.environ["TORSOR_GPU_ARCH"] = "sm_90a"
        self.assertEqual(tnn.gpu_arch(torch.device("cuda", 0)), "sm_90a")
        os.environ["TORSOR_GPU_ARCH"] = "ampere"
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "TORSOR_GPU_ARCH.*sm_90"):
            tnn.gpu_arch(torch.device("cuda", 0))
        del os.environ["TORSOR_GPU_ARCH"]

        def no_cuda(device=None):
            raise RuntimeError("Torch not compiled with CUDA enabled")
        torch.cuda.get_device_capability = no_cuda
        self.assertEqual(tnn.gpu_arch(torch.device("cuda", 3)), tnn.DEFAULT_GPU_ARCH)
        # GrassmannMix with its params: arch from the override, params
        # and input on the device.
        os.environ["TORSOR_GPU_ARCH"] = "sm_80"
        mix = tnn.GrassmannMix(8, r=4, offsets=[1, 2])
        for name, p in list(mix._parameters.items()):
            mix._parameters[name] = FakeCuda.of(p.detach())  # as after mix.cuda()
        mix(FakeCuda.of(torch.zeros(1, 6, 8)))
        self.assertEqual(self.compiled[-1][2:], ("nvptx", "sm_80"))
        self.assertEqual(len(self.ran[-1]), 7)
        self.assertTrue(all(d.type == "cuda" for d in self.ran[-1]))

    def test_mixed_devices_are_an_error(self):
        attn = tnn.LieAttention("SO3")
        g = self.poses(n=3)
        v = FakeCuda.of(torch.zeros(1, 5, 2, dtype=torch.float64))
        with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                    r"LieAttention: the tensors of one call are on different "
                                    r"devices \(cpu, cuda:0\).*\.cuda\(\) or \.cpu\(\)"):
            attn(g, v)
        # CPU params with a CUDA input (a module not moved with .to()).
        mix = tnn.GrassmannMix(8, r=4, offsets=[1])
        with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                    r"GrassmannMix: .*different devices.*module.to\(device\)"):
            mix(FakeCuda.of(torch.zeros(1, 6, 8)))
        # Two GPUs in one call.
        with self.assertRaisesRegex(torsor.InvalidArgumentError, r"cuda:0, cuda:1"):
            attn(FakeCuda.of(g, 0), FakeCuda.of(v, 1))
        self.assertEqual(self.compiled, [])

    def test_one_gpu_per_process(self):
        attn = tnn.LieAttention("SO3")
        g = self.poses(n=3)
        v = torch.zeros(1, 5, 2, dtype=torch.float64)
        attn(FakeCuda.of(g, 1), FakeCuda.of(v, 1))
        self.assertEqual(os.environ.get("TORSOR_CUDA_DEVICE"), "1")
        with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                    r"on cuda:0, but this process's nvptx models run on GPU 1 "
                                    r"\(TORSOR_CUDA_DEVICE.*one GPU per process"):
            attn(FakeCuda.of(g, 0), FakeCuda.of(v, 0))
        # A TORSOR_CUDA_DEVICE set by the user is respected, not overwritten.
        tnn._cuda_ordinal.clear()
        os.environ["TORSOR_CUDA_DEVICE"] = "2"
        with self.assertRaisesRegex(torsor.InvalidArgumentError, r"run on GPU 2"):
            attn(FakeCuda.of(g, 0), FakeCuda.of(v, 0))
        self.assertEqual(os.environ["TORSOR_CUDA_DEVICE"], "2")

    def test_block_kernels_follow_the_device(self):
        models, runs = [], []

        class FakeModel:
            pass

        def block_model(source, dtype, opt, target="cpu", arch=None):
            models.append((source.split("model ")[1].split()[0], dtype, target, arch))
            return FakeModel()

        def run_block(model, inputs, device):
            runs.append((device, {k: (v.device, tuple(v.shape)) for k, v in inputs.items()}))
            B, Lq = inputs["gq"].shape[:2]
            Lk, D = inputs["v"].shape[1:]
            if "dout" in inputs:
                return {"dgq": torch.zeros(B, Lq, 3, dtype=torch.float64),
                        "dgk": torch.zeros(B, Lk, 3, dtype=torch.float64),
                        "dv": torch.zeros(B, Lk, D, dtype=torch.float64)}
            return {"out": torch.zeros(B, Lq, D, dtype=torch.float64),
                    "lse": torch.zeros(B, Lq, 1, dtype=torch.float64)}
        tnn._block_model, tnn._run_block = block_model, run_block
        saved_offset = tnn._offset
        tnn._offset = lambda name, label, value, device=None: FakeCuda.of(
            saved_offset(name, label, value), device.index) if device.type == "cuda" \
            else saved_offset(name, label, value)
        try:
            gq, gk = self.poses(4, 3), self.poses(6, 3)
            v = torch.zeros(1, 6, 4, dtype=torch.float64)
            tnn.lie_attention_block(gq, gk, v, "SO3", q_offset=6, k_offset=0)
            self.assertEqual(models[-1], ("TorsorNNLieAttentionBlock", "f64", "cpu", None))
            self.assertEqual(runs[-1][0], torch.device("cpu"))
            cq, ck, cv = FakeCuda.of(gq), FakeCuda.of(gk), FakeCuda.of(v)
            tnn.lie_attention_block(cq, ck, cv, "SO3", q_offset=6, k_offset=0)
            self.assertEqual(models[-1], ("TorsorNNLieAttentionBlock", "f64", "nvptx", "sm_90"))
            device, ins = runs[-1]
            self.assertEqual(device, torch.device("cuda", 0))
            self.assertEqual(set(ins), {"gq", "gk", "v", "qo", "ko"})
            self.assertTrue(all(d.type == "cuda" for d, _ in ins.values()), ins)
            self.assertEqual(ins["qo"][1], ())  # the offsets: rank-0 i64 on the device
            out = torch.zeros(1, 4, 4, dtype=torch.float64)
            lse = torch.zeros(1, 4, 1, dtype=torch.float64)
            with self.assertRaisesRegex(torsor.InvalidArgumentError, "different devices"):
                tnn.lie_attention_block_backward(cq, ck, cv, out, lse, out, "SO3")
            self.assertEqual(models[-1][2], "nvptx")  # the failed call compiled nothing
            self.assertEqual(len(models), 2)
        finally:
            tnn._offset = saved_offset


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class CudaRunPath(_Env, unittest.TestCase):
    """_run_block on CUDA tensors goes through torsor.torch's device path
    (_run_cuda: inputs in manifest order, bound as device memory)."""

    def test_run_block_uses_the_device_path(self):
        import torsor.torch as ttorch
        calls = []

        class Spec:
            def __init__(self, name):
                self.name = name

        class Model:
            inputs = [Spec("gq"), Spec("gk"), Spec("v"), Spec("qo"), Spec("ko")]
            params = []
            outputs = [Spec("out"), Spec("lse")]

            def run(self, inputs):
                raise AssertionError("a CUDA block must not run through host memory")

        saved = ttorch._run_cuda
        ttorch._run_cuda = lambda model, i, p, o, ins, ps: calls.append(
            ([s.name for s in i], ins, ps)) or [torch.ones(1), torch.zeros(1)]
        try:
            ins = {k: torch.full((1,), float(n)) for n, k in enumerate(["ko", "v", "gq", "qo",
                                                                      "gk"])}
            out = tnn._run_block(Model(), ins, torch.device("cuda", 0))
        finally:
            ttorch._run_cuda = saved
        self.assertEqual(calls[0][0], ["gq", "gk", "v", "qo", "ko"])
        self.assertEqual([float(t) for t in calls[0][1]], [2.0, 4.0, 1.0, 3.0, 0.0])
        self.assertEqual(set(out), {"out", "lse"})


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class StagedModels(_Env, unittest.TestCase):
    """scripts/gpu_ring_check.py --stage-models (what gpu-check-prepare.sh
    runs) prebuilds exactly the models torsor.nn asks for on the GPU
    machine: for every ring case on CUDA tensors, the nvptx block forward
    and backward (masked and unmasked, as the ring calls them) and the
    groups' basis models; for the halo case, GrassmannMix for nvptx (the
    ranks) and cpu (the single-process reference); LieAttention of the
    one-process CUDA-against-CPU case, both targets. Recorded by name
    (torsor.compiler.prebuilt_name), nothing compiled."""

    def test_stage_covers_what_torsor_nn_loads(self):
        import importlib.util
        import torsor.compiler as tc
        import torsor.groups as tg
        path = os.path.join(common.SOURCE, "scripts", "gpu_ring_check.py")
        spec = importlib.util.spec_from_file_location("gpu_ring_check_under_test", path)
        rc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(rc)

        staged, wanted = set(), []

        def prebuild(source, folder, **kw):
            args = tc._torsorc_args(kw.get("dtype", "f32"), kw.get("opt"),
                                    kw.get("target", "cpu"), kw.get("flags", ()),
                                    kw.get("grad", False), None, "f32")
            staged.add(tc.prebuilt_name(source, args))
            return os.path.join(folder, tc.prebuilt_name(source, args) + ".so")

        class Stop(Exception):
            pass

        def compile_(source, dtype="f32", opt=None, target="cpu", flags=(), grad=False,
                     **kw):
            args = tc._torsorc_args(dtype, opt, target, flags, grad, None, "f32")
            wanted.append((source.split("model ")[1].split()[0], target,
                           tc.prebuilt_name(source, args)))
            raise Stop()

        saved = (tc.prebuild, tnn._compile, tc.compile)
        tc.prebuild, tnn._compile, tc.compile = prebuild, compile_, compile_
        tg_saved = dict(tg._bases)
        tg._bases.clear()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                rc.stage_models(tmp, "sm_90", verbose=False)
                with open(os.path.join(tmp, "prebuilt", "gpu_arch")) as f:
                    self.assertEqual(f.read().strip(), "sm_90")
            os.environ["TORSOR_GPU_ARCH"] = "sm_90"
            dt = {"f32": torch.float32, "f64": torch.float64}
            for _, group, heads, tau, lam, causal, _, d, _ in rc.RING_CASES:
                n = tg.BUILTIN[group][0]
                g = FakeCuda.of(torch.eye(n, dtype=dt[d]).repeat(1, 3, 1, 1))
                v = FakeCuda.of(torch.zeros(1, 3, rc.D, dtype=dt[d]))
                for masked in {causal, False}:
                    with self.assertRaises(Stop):
                        tnn.lie_attention_block(g, g, v, group, heads, tau, lam, masked)
                    with self.assertRaises(Stop):
                        tnn.lie_attention_block_backward(
                            g, g, v, v, FakeCuda.of(torch.zeros(1, 3, heads, dtype=dt[d])),
                            v, group, heads, tau, lam, masked)
                with self.assertRaises(Stop):
                    tg.basis(group)
            _, group, heads, tau, lam, causal, d, _ = rc.NN_CASE
            n = tg.BUILTIN[group][0]
            attn = tnn.LieAttention(group, heads=heads, tau=tau, lam=lam, causal=causal)
            for wrap in (lambda t: t, FakeCuda.of):
                with self.assertRaises(Stop):
                    attn(wrap(torch.eye(n, dtype=dt[d]).repeat(1, 3, 1, 1)),
                         wrap(torch.zeros(1, 3, rc.D, dtype=dt[d])))
            for _, dd, r, offsets, causal, _, d, _ in rc.GRASSMANN_CASES:
                mix = tnn.GrassmannMix(dd, r=r, offsets=offsets, causal=causal, dtype=dt[d])
                with self.assertRaises(Stop):
                    mix(torch.zeros(1, 5, dd, dtype=dt[d]))  # the reference, on the CPU
                for name, p in list(mix._parameters.items()):
                    mix._parameters[name] = FakeCuda.of(p.detach())
                with self.assertRaises(Stop):
                    mix(FakeCuda.of(torch.zeros(1, 5, dd, dtype=dt[d])))
        finally:
            tc.prebuild, tnn._compile, tc.compile = saved
            tg._bases.clear()
            tg._bases.update(tg_saved)
        targets = [t for _, t, _ in wanted]
        # The blocks (fwd + bwd per mask), LieAttention, the halo.
        self.assertEqual(targets.count("nvptx"), 4 * 2 - 2 + 1 + 1)
        missing = [(m, t) for m, t, name in wanted if name not in staged]
        self.assertEqual(missing, [], "asked for on the GPU machine but not staged")
        self.assertEqual(len(staged), len({name for _, _, name in wanted}))


MODEL = """model Twice {
  dim N;
  input x: f32[N];
  output y = x * 2.0;
}
"""


class Prebuilt(_Env, unittest.TestCase):
    """torsor.compiler.prebuild writes a model under a name of its source
    and options; compile() loads it from $TORSOR_PREBUILT_DIR without
    torsorc (the GPU machine's case), and only for the same options."""

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="torsor-prebuilt-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        super().tearDown()

    def test_prebuilt_model_loads_without_torsorc(self):
        import torsor.compiler as tc
        folder = os.path.join(self.tmp, "prebuilt")
        so = tc.prebuild(MODEL, folder, dtype="f32", opt=1)
        self.assertTrue(os.path.basename(so).startswith("prebuilt-"))
        self.assertTrue(os.path.exists(so[:-3] + ".json"))
        mtime = os.stat(so).st_mtime_ns
        self.assertEqual(tc.prebuild(MODEL, folder, dtype="f32", opt=1), so)  # kept
        self.assertEqual(os.stat(so).st_mtime_ns, mtime)
        # No torsorc anywhere: a fake torsorc folder first, and the
        # locator's other places made unusable by a PATH without it.
        saved_locate = tc._locate.torsorc_path

        def no_torsorc():
            raise torsor.TorsorError("cannot find torsorc (looked in nowhere)")
        tc._locate.torsorc_path = no_torsorc
        try:
            os.environ["TORSOR_PREBUILT_DIR"] = os.pathsep.join(
                [os.path.join(self.tmp, "absent"), folder])
            m = torsor.compile(MODEL, dtype="f32", opt=1)
            self.assertEqual(os.path.realpath(m.path), os.path.realpath(so))
            y = m.run({"x": np.arange(3, dtype=np.float32)})["y"]
            np.testing.assert_array_equal(np.asarray(y), [0.0, 2.0, 4.0])
            m.close()
            # Other options are another model: not served, and the error
            # names the folder, the file it looked for and how to stage it.
            with self.assertRaises(torsor.TorsorError) as cm:
                torsor.compile(MODEL, dtype="f32", opt=2)
            msg = str(cm.exception)
            self.assertIn("cannot find torsorc", msg)
            self.assertIn("TORSOR_PREBUILT_DIR=", msg)
            self.assertIn(tc.prebuilt_name(MODEL, tc._torsorc_args(
                "f32", 2, "cpu", (), False, None, "f32")) + ".so", msg)
            self.assertIn("torsor.compiler.prebuild", msg)
            del os.environ["TORSOR_PREBUILT_DIR"]
            with self.assertRaisesRegex(torsor.TorsorError, r"^cannot find torsorc \(looked"):
                torsor.compile(MODEL, dtype="f32", opt=1)
        finally:
            tc._locate.torsorc_path = saved_locate

    def test_name_covers_source_and_options(self):
        import torsor.compiler as tc
        a = tc._torsorc_args("f32", None, "nvptx", ["--gpu-arch=sm_90"], True, None, "f32")
        b = tc._torsorc_args("f32", None, "nvptx", ["--gpu-arch=sm_80"], True, None, "f32")
        self.assertEqual(a, ["--dtype=f32", "--target=nvptx", "--grad", "--gpu-arch=sm_90"])
        names = {tc.prebuilt_name(MODEL, a), tc.prebuilt_name(MODEL, b),
                 tc.prebuilt_name(MODEL + " ", a)}
        self.assertEqual(len(names), 3)


if __name__ == "__main__":
    unittest.main()
