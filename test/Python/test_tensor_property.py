"""test_tensor_property.py - a randomized property test of the tensor
conversion every call goes through (torsor.model._tensor_struct).

Random arrays and views - dtypes supported and not, byte orders, ranks 0
to 4 with empty dims, slices with negative and large steps, transposes,
zero (broadcast) and overlapping strides, unaligned and read-only memory,
masked arrays, lists; with torch (when installed): permutes, expands,
as_strided with storage offsets, lazy negation and conjugation views,
half and complex dtypes, sparse layouts and the meta device - go through
_tensor_struct, and one of two things must hold:

- it is refused with an InvalidArgumentError whose message starts with the
  tensor's label (never another exception, never a crash); or
- the TorsorTensor it returns describes exactly the values of the input:
  reading rank, shape, strides, dtype and data back through the struct
  gives the array NumPy (or torch, resolved) says the input holds, and the
  data pointer is aligned to the element size.

A subset also runs end to end through compiled models (y = 2x in f32 and
f64), whose outputs must equal 2x exactly. The cases are seeded:
TENSOR_PROPERTY_CASES (default 1500) and TENSOR_PROPERTY_SEED (default 0)
make longer or other runs, e.g. for a nightly job (run_tests.py drops
TORSOR_* variables, hence the names):

    TENSOR_PROPERTY_CASES=200000 TENSOR_PROPERTY_SEED=7 \\
        python3 test/Python/run_tests.py --build build -k test_tensor_property
"""
import ctypes
import os
import unittest

import numpy as np

import common  # noqa: F401  (puts test/lib on sys.path)
from common import torsor
from torsor import _capi
from torsor.model import _tensor_struct

try:
    import torch
except ImportError:
    torch = None

CASES = int(os.environ.get("TENSOR_PROPERTY_CASES", "1500"))
SEED = int(os.environ.get("TENSOR_PROPERTY_SEED", "0"))

SUPPORTED = ["float32", "float64", "int64"]
UNSUPPORTED = ["float16", "int32", "uint8", "bool", "complex64", "object"]


def read_back(t):
    """The array a TorsorTensor describes, copied out of its memory."""
    dtype = np.dtype(_capi.NUMPY_NAMES[_capi.DTYPE_NAMES[t.dtype]])
    shape = tuple(int(t.shape[i]) for i in range(t.rank))
    strides = tuple(int(t.strides[i]) for i in range(t.rank))
    if any(n == 0 for n in shape):
        return np.zeros(shape, dtype)
    item = dtype.itemsize
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    buf = (ctypes.c_char * ((hi - lo + 1) * item)).from_address(t.data + lo * item)
    return np.ndarray(shape, dtype, buffer=buf, offset=-lo * item,
                      strides=[s * item for s in strides]).copy()


def random_shape(rng, rank=None):
    rank = int(rng.integers(0, 5)) if rank is None else rank
    return tuple(int(rng.choice([0, 1, 2, 3, 4, 5], p=[.05, .2, .25, .2, .15, .15]))
                 for _ in range(rank))


def random_numpy(rng, rank=None, dtypes=None):
    """(value, want_dtype, expect_error): a random NumPy input."""
    dtypes = dtypes or SUPPORTED
    name = (str(rng.choice(UNSUPPORTED)) if rng.random() < 0.1 else str(rng.choice(dtypes)))
    shape = random_shape(rng, rank)
    # A base a little larger than the view, filled with distinct values.
    base_shape = tuple(3 * n + 2 for n in shape)
    count = int(np.prod(base_shape))
    if name == "object":
        base = np.array([float(i) for i in range(count)], dtype=object).reshape(base_shape)
    else:
        base = (rng.standard_normal(count) * 100).astype(name).reshape(base_shape)
    kind = rng.integers(0, 8)
    if kind == 0:  # unaligned copy of the base
        raw = bytearray(base.nbytes + base.itemsize) if name != "object" else None
        if raw is not None:
            arr = np.frombuffer(raw, dtype=base.dtype, offset=1, count=base.size)
            arr = arr.reshape(base_shape)
            arr[...] = base
            base = arr
    elif kind == 1 and name != "object":  # non-native byte order
        base = base.astype(base.dtype.newbyteorder("S"))
    elif kind == 2:
        base = np.asfortranarray(base)
    # The view: a random slice per dim (negative steps included).
    index = []
    for n, m in zip(shape, base_shape):
        step = int(rng.choice([1, 1, 2, -1, -2, 3]))
        if step > 0:
            start = int(rng.integers(0, m - (n - 1) * step)) if n else 0
            index.append(slice(start, start + (n - 1) * step + 1 if n else start, step))
        else:
            start = int(rng.integers((n - 1) * -step, m)) if n else 0
            stop = start + (n - 1) * step - 1 if n else start
            index.append(slice(start, stop if stop >= 0 else None, step))
    view = base[tuple(index)] if shape else base.reshape(-1)[0:1].reshape(())
    if view.ndim >= 2 and rng.random() < 0.3:
        view = view.transpose(rng.permutation(view.ndim))
    if view.ndim >= 1 and rng.random() < 0.15 and view.size:
        view = np.broadcast_to(view[..., :1], view.shape)  # zero strides
    if view.ndim == 1 and view.size >= 2 and rng.random() < 0.2:
        # Overlapping windows over the same memory.
        w = 2
        view = np.lib.stride_tricks.as_strided(
            view, (view.shape[0] - w + 1, w), (view.strides[0], view.strides[0]),
            writeable=False)
    if rng.random() < 0.1 and view.flags.writeable:
        view.flags.writeable = False
    want = None
    if rng.random() < 0.1:
        return np.ma.masked_array(view), None, "masked array"
    if rng.random() < 0.1 and name in SUPPORTED:
        want = {"float32": "f32", "float64": "f64", "int64": "i64"}[name]
        return view.tolist(), want, None
    return view, want, None if name in SUPPORTED else "not supported"


class NumpyConversion(unittest.TestCase):
    def test_struct_describes_the_values(self):
        rng = np.random.default_rng(SEED)
        refused = accepted = 0
        for case in range(CASES):
            value, want, error = random_numpy(rng)
            label = "input 'v%d'" % case
            try:
                t, keep = _tensor_struct(label, value, want)
            except torsor.InvalidArgumentError as e:
                self.assertTrue(str(e).startswith(label + ": "), (case, str(e)))
                self.assertIsNotNone(error, (case, str(e), value))
                self.assertIn(error, str(e), case)
                refused += 1
                continue
            self.assertIsNone(error, (case, type(value), getattr(value, "dtype", None)))
            expect = np.asarray(value, dtype=_capi.NUMPY_NAMES.get(want))
            got = read_back(t)
            self.assertEqual(got.shape, expect.shape, case)
            self.assertEqual(got.dtype, expect.dtype.newbyteorder("="), case)
            self.assertTrue(np.array_equal(got, expect), (case, got, expect))
            if got.size:
                self.assertEqual(t.data % got.dtype.itemsize, 0, case)
            self.assertIs(type(keep[0]), np.ndarray)  # the lent memory, kept alive
            accepted += 1
        self.assertGreater(accepted, CASES // 2)
        self.assertGreater(refused, CASES // 20)

    def test_end_to_end(self):
        """Views of every kind through compiled code: y = 2x exactly."""
        rng = np.random.default_rng(SEED + 1)
        models = {d: torsor.compile("model Twice { dim A; dim B; input x: %s[A, B]; "
                                    "output y = x * 2; }" % d, dtype=d)
                  for d in ("f32", "f64")}
        for case in range(max(CASES // 8, 50)):
            value, want, error = random_numpy(rng, rank=2, dtypes=["float32", "float64"])
            if error or want:
                continue
            m = models["f32" if value.dtype.name == "float32" else "f64"]
            y = m(x=value)
            self.assertTrue(np.array_equal(y, 2 * np.asarray(value)), case)


def random_torch(rng, rank=None):
    """(tensor, expect_error_substring or None, expected values or None)."""
    gen = torch.Generator().manual_seed(int(rng.integers(1 << 31)))
    shape = random_shape(rng, rank)
    dtype = rng.choice(["float32", "float64", "int64", "float16", "bfloat16",
                        "complex64"], p=[.35, .25, .2, .07, .05, .08])
    base_shape = tuple(3 * n + 2 for n in shape)
    if dtype == "complex64":
        z = torch.complex(torch.randn(base_shape, generator=gen),
                          torch.randn(base_shape, generator=gen))
        part = rng.integers(0, 3)
        if part == 0:
            base = z.conj().imag       # the lazy negation bit
        elif part == 1:
            base = z.conj().real
        else:
            base = z.conj()            # complex: refused
    elif dtype == "int64":
        base = torch.randint(-1000, 1000, base_shape, generator=gen)
    else:
        base = (torch.randn(base_shape, generator=gen) * 100).to(getattr(torch, dtype))
    index = []
    for n, m in zip(shape, base_shape):
        step = int(rng.choice([1, 1, 2, 3]))
        start = int(rng.integers(0, m - (n - 1) * step)) if n else 0
        index.append(slice(start, start + (n - 1) * step + 1 if n else start, step))
    view = base[tuple(index)] if shape else base.reshape(-1)[0]
    if view.dim() >= 2 and rng.random() < 0.3:
        view = view.permute(*[int(i) for i in rng.permutation(view.dim())])
    if view.dim() >= 1 and view.numel() and rng.random() < 0.15:
        view = view[..., :1].expand(*view.shape)
    if rng.random() < 0.15 and view.is_floating_point():
        view = torch._neg_view(view)
    if rng.random() < 0.1 and view.dtype in (torch.float32, torch.float64):
        view = view.clone().requires_grad_()
    special = rng.random()
    if special < 0.05 and view.dim() >= 1:
        return view.detach().to_sparse(), "layout sparse_coo", None
    if special < 0.08:
        return view.detach().to("meta"), "on device 'meta'", None
    if view.dtype == torch.complex64:
        return view, "dtype complex64 is not supported", None
    if view.dtype in (torch.float16, torch.bfloat16):
        return view, "is not supported", None
    return view, None, view.detach().resolve_neg().resolve_conj().clone().numpy()


@unittest.skipIf(torch is None, "PyTorch is not installed in this environment "
                 "(it is optional; make test never installs it)")
class TorchConversion(unittest.TestCase):
    def test_struct_describes_the_values(self):
        rng = np.random.default_rng(SEED + 2)
        accepted = 0
        for case in range(CASES):
            value, error, expect = random_torch(rng)
            label = "input 't%d'" % case
            try:
                t, keep = _tensor_struct(label, value, None)
            except torsor.InvalidArgumentError as e:
                self.assertTrue(str(e).startswith(label + ": "), (case, str(e)))
                self.assertIsNotNone(error, (case, str(e)))
                self.assertIn(error, str(e), case)
                continue
            self.assertIsNone(error, (case, value.dtype, value.layout))
            got = read_back(t)
            self.assertEqual(got.shape, expect.shape, case)
            self.assertTrue(np.array_equal(got, expect), (case, got, expect))
            self.assertFalse(keep[0].is_neg() or keep[0].is_conj(), case)
            accepted += 1
        self.assertGreater(accepted, CASES // 2)

    def test_end_to_end(self):
        rng = np.random.default_rng(SEED + 3)
        m = torsor.compile("model Twice { dim A; dim B; input x: f32[A, B]; "
                           "output y = x * 2; }")
        for case in range(max(CASES // 8, 50)):
            value, error, expect = random_torch(rng, rank=2)
            if error or value.dtype != torch.float32:
                continue
            y = m(x=value)
            self.assertTrue(np.array_equal(y.numpy(), 2 * expect), case)


if __name__ == "__main__":
    unittest.main()
