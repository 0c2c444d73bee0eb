"""test_device.py - device memory through the C API's device functions
(torsor._device, what torsor.torch uses for CUDA tensors), on the fake
CUDA driver (unittests/Runtime/FakeCuda.cpp: device memory is host memory
handed out as addresses) and the hand-written nvptx model
torsor_fake_gpu_model.so (out = 2 x + w) and its variant with a backward
entry (grad.x = 2 cot, grad.w = sum over rows of cot). No GPU needed; the
torch part (torsor.torch's CUDA forward and backward, CPU tensors over the
fake driver's memory standing in for CUDA tensors) skips without torch."""
import ctypes
import os
import tempfile
import unittest

import numpy as np

import common
from common import torsor

FAKE = os.path.join(common.BUILD, "lib", "fakecuda", "libcuda.so.1")
MODEL = os.path.join(common.BUILD, "lib", "torsor_fake_gpu_model.so")
GRAD_MODEL = os.path.join(common.BUILD, "lib", "torsor_fake_gpu_model_grad.so")
HAVE_FAKE = all(os.path.exists(p) for p in (FAKE, MODEL, GRAD_MODEL))
try:
    import torch
    import torsor.torch as ttorch
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


@unittest.skipUnless(HAVE_FAKE, "the fake CUDA driver and model are not built")
class DeviceMemory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.log = os.path.join(cls.tmp.name, "calls.log")
        cls.env = {k: os.environ.get(k) for k in ("TORSOR_CUDA_DRIVER", "FAKE_CUDA_LOG")}
        os.environ["TORSOR_CUDA_DRIVER"] = FAKE
        os.environ["FAKE_CUDA_LOG"] = cls.log
        cls.m = torsor.load(MODEL)
        cls.g = torsor.load(GRAD_MODEL)
        cls.cuda = ctypes.CDLL(FAKE)   # the instance the runtime opened
        cls.cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        for name in ("cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2"):
            getattr(cls.cuda, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.c_size_t, ctypes.c_void_p]
        cls.cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]

    @classmethod
    def tearDownClass(cls):
        cls.m.close()
        cls.g.close()
        for k, v in cls.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        cls.tmp.cleanup()

    def to_device(self, arr):
        p = ctypes.c_uint64()
        self.assertEqual(self.cuda.cuMemAlloc_v2(ctypes.byref(p), arr.nbytes), 0)
        self.cuda.cuMemcpyHtoDAsync_v2(p.value, arr.ctypes.data, arr.nbytes, None)
        return p.value

    def test_runs_on_device_memory_without_copies(self):
        from torsor import _device
        self.assertTrue(_device.is_cuda_model(self.m))
        rng = np.random.default_rng(0)
        x = rng.standard_normal((5, 8)).astype(np.float32)
        w = rng.standard_normal(8).astype(np.float32)
        dx, dw = self.to_device(x), self.to_device(w)
        open(self.log, "w").close()
        out = _device.run(self.m, {"x": (dx, x.shape, "f32")}, {"w": (dw, w.shape, "f32")})
        with open(self.log) as f:
            calls = f.read()
        self.assertNotIn("cuMemcpyHtoD", calls)
        self.assertNotIn("cuMemcpyDtoH", calls)
        ptr, shape, dtype = out["out"]
        self.assertEqual((shape, dtype), ((5, 8), "f32"))
        host = np.zeros(shape, np.float32)
        self.cuda.cuMemcpyDtoHAsync_v2(host.ctypes.data, ptr, host.nbytes, None)
        self.assertTrue(np.array_equal(host, 2 * x + w))
        # Host-memory calls still work afterwards (outputs copied back again).
        self.m.set_params({"w": w})
        self.assertTrue(np.array_equal(self.m(x=x), 2 * x + w))
        for p in (dx, dw):
            self.cuda.cuMemFree_v2(p)

    def calls(self):
        with open(self.log) as f:
            return f.read()

    def from_device(self, ptr, shape, dtype=np.float32):
        host = np.zeros(shape, dtype)
        self.cuda.cuMemcpyDtoHAsync_v2(host.ctypes.data, ptr, host.nbytes, None)
        return host

    def test_backward_on_device_memory_without_copies(self):
        from torsor import _device
        rng = np.random.default_rng(1)
        x = rng.standard_normal((4, 8)).astype(np.float32)
        w = rng.standard_normal(8).astype(np.float32)
        cot = rng.standard_normal((4, 8)).astype(np.float32)
        ptrs = [self.to_device(a) for a in (x, w, cot)]
        open(self.log, "w").close()
        grads = _device.backward(self.g, {"x": (ptrs[0], x.shape, "f32")},
                                 {"w": (ptrs[1], w.shape, "f32")},
                                 {"out": (ptrs[2], cot.shape, "f32")})
        calls = self.calls()
        self.assertIn("cuLaunchKernel torsor_fake_axpy_grad", calls)
        self.assertNotIn("cuMemcpyHtoD", calls)
        self.assertNotIn("cuMemcpyDtoH", calls)
        self.assertEqual(list(grads), ["grad.x", "grad.w"])
        ptr, shape, dtype = grads["grad.x"]
        self.assertEqual((shape, dtype), ((4, 8), "f32"))
        self.assertTrue(np.array_equal(self.from_device(ptr, shape), 2 * cot))
        ptr, shape, _ = grads["grad.w"]
        self.assertTrue(np.allclose(self.from_device(ptr, shape), cot.sum(0), rtol=1e-6))
        # The host backward still works afterwards (gradients copied back).
        got = self.g.backward({"x": x}, {"out": cot}, borrowed_params={"w": w})
        self.assertTrue(np.array_equal(got["grad.x"], 2 * cot))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            _device.backward(self.g, {"x": (ptrs[0], x.shape, "f32")},
                             {"w": (ptrs[1], w.shape, "f32")}, {})
        self.assertIn("needs a cotangent for every output; missing: out", str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            _device.backward(self.g, {"x": (ptrs[0], x.shape, "f32")},
                             {"w": (ptrs[1], w.shape, "f32")},
                             {"out": (ptrs[2], (5, 8), "f32")})
        self.assertIn("cotangent 'cot.out' does not have the shape of its output",
                      str(cm.exception))
        for p in ptrs:
            self.cuda.cuMemFree_v2(p)

    @unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed in this environment "
                         "(it is optional; make test never installs it)")
    def test_torch_cuda_forward_and_backward_stay_on_the_device(self):
        """torsor.torch's CUDA forward and backward (_run_cuda,
        _backward_cuda, and the backward op's body) on tensors whose memory
        is the fake driver's: no host round trip, the current stream waited
        for, and the gradients those of out = 2 x + w. Two seams stand in
        for torch's CUDA calls: the stream wait is recorded, and the
        device-to-device copy of module memory is a host copy (the fake
        device memory is host memory)."""
        ptrs = []

        def on_device(arr):
            p = self.to_device(arr)
            ptrs.append(p)
            buf = (ctypes.c_char * arr.nbytes).from_address(p)
            t = torch.frombuffer(buf, dtype=torch.float32).reshape(arr.shape)
            self.assertEqual(t.data_ptr(), p)
            return t

        waited = []
        saved = ttorch._sync_current_stream, ttorch._from_device
        ttorch._sync_current_stream = waited.append
        ttorch._from_device = lambda ptr, shape, dtype, device: torch.frombuffer(
            bytearray((ctypes.c_char * (4 * int(np.prod(shape)))).from_address(ptr)),
            dtype=torch.float32).reshape(shape)
        try:
            layer = ttorch.TorsorModule(GRAD_MODEL, params={"w": np.zeros(8, np.float32)})
            model = layer.model
            rng = np.random.default_rng(2)
            x, w, cot = (rng.standard_normal(s).astype(np.float32) for s in ((3, 8), 8, (3, 8)))
            tx, tw, tc = on_device(x), on_device(w), on_device(cot)
            open(self.log, "w").close()
            (y,) = ttorch._run_cuda(model, model.inputs, model.params, model.outputs, [tx], [tw])
            specs = model.manifest["backward"]["gradients"]
            gx, gw = ttorch._backward_cuda(model, model.inputs, model.params, model.outputs,
                                           specs, [tx], [tw], [tc])
            calls = self.calls()
            self.assertEqual(calls.count("cuLaunchKernel torsor_fake_axpy_grad"), 1)
            self.assertNotIn("cuMemcpyHtoD", calls)
            self.assertNotIn("cuMemcpyDtoH", calls)
            self.assertEqual(len(waited), 2)
            self.assertTrue(torch.equal(y, torch.from_numpy(2 * x + w)))
            self.assertTrue(torch.equal(gx, torch.from_numpy(2 * cot)))
            self.assertTrue(torch.allclose(gw, torch.from_numpy(cot.sum(0))))
            # The registered backward op's body takes the same path.
            body = getattr(layer._op.backward_op, "_init_fn", None)
            if body is not None:
                open(self.log, "w").close()
                gx2, gw2 = body([tx], [tw], [tc])
                self.assertNotIn("cuMemcpy", self.calls().replace("cuMemcpyAsync", ""))
                self.assertTrue(torch.equal(gx2, gx) and torch.equal(gw2, gw))
            # A CUDA op has no CPU kernel for its backward either.
            has = torch._C._dispatch_has_kernel_for_dispatch_key
            self.assertTrue(has(layer._op.backward_op._qualname, "CUDA"))
            self.assertFalse(has(layer._op.backward_op._qualname, "CPU"))
            layer.model.close()
        finally:
            ttorch._sync_current_stream, ttorch._from_device = saved
            for p in ptrs:
                self.cuda.cuMemFree_v2(p)

    def test_errors_name_the_tensor(self):
        from torsor import _device
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            _device.run(self.m, {"y": (8, (5, 8), "f32")}, {})
        self.assertIn("'y'", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
