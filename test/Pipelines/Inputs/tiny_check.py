"""Checks model-to-so.tsr's output against a float64 NumPy reference.

The language's gelu is the exact erf form (docs/language.md). Tolerance
1e-5 absolute: an f32 dot product of 8 terms of size ~3 and an f32 erf.
"""
import math
import os
import sys

import numpy as np

d = sys.argv[1]
x = np.load(os.path.join(d, "x.npy")).astype(np.float64)
w = np.load(os.path.join(d, "w.npy")).astype(np.float64)
y = np.load(os.path.join(d, "y.npy"))
z = x @ w
erf = np.vectorize(math.erf)
ref = 0.5 * z * (1 + erf(z / math.sqrt(2))) + x
err = float(np.max(np.abs(y - ref)))
print("max abs error %.3e %s" % (err, "ok" if err < 1e-5 else "FAIL"))
