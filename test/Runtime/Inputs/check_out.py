"""Checks torsor-run's .npy outputs for the fake model against NumPy:
out = 2 x + pose[:, 0, 0, None] + w and rowsum = out.sum(1) in float64.

usage: check_out.py INDIR OUT.npy ROWSUM.npy   (prints "outputs match")
"""
import sys

import numpy as np

import make_inputs

indir, out_path, rowsum_path = sys.argv[1:4]
out = np.load(out_path)
rowsum = np.load(rowsum_path)
want = 2 * make_inputs.x() + make_inputs.pose()[:, 0, 0, None] + make_inputs.w()
assert out.dtype == np.float32 and out.shape == (5, 8), (out.dtype, out.shape)
assert rowsum.dtype == np.float64 and rowsum.shape == (5,), rowsum.shape
np.testing.assert_allclose(out, want, rtol=1e-6)
np.testing.assert_allclose(rowsum, want.astype(np.float64).sum(1), rtol=1e-6)
print("outputs match")
