"""test_device.py - device memory through the C API's device functions
(torsor._device, what torsor.torch uses for CUDA tensors), on the fake
CUDA driver (unittests/Runtime/FakeCuda.cpp: device memory is host memory
handed out as addresses) and the hand-written nvptx model
torsor_fake_gpu_model.so (out = 2 x + w). No GPU and no torch needed."""
import ctypes
import os
import tempfile
import unittest

import numpy as np

import common
from common import torsor

FAKE = os.path.join(common.BUILD, "lib", "fakecuda", "libcuda.so.1")
MODEL = os.path.join(common.BUILD, "lib", "torsor_fake_gpu_model.so")
HAVE_FAKE = os.path.exists(FAKE) and os.path.exists(MODEL)


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
        cls.cuda = ctypes.CDLL(FAKE)   # the instance the runtime opened
        cls.cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        for name in ("cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2"):
            getattr(cls.cuda, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.c_size_t, ctypes.c_void_p]
        cls.cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]

    @classmethod
    def tearDownClass(cls):
        cls.m.close()
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

    def test_errors_name_the_tensor(self):
        from torsor import _device
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            _device.run(self.m, {"y": (8, (5, 8), "f32")}, {})
        self.assertIn("'y'", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
