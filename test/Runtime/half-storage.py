# f16 and bf16 storage (issue #14, item 5): weights in .safetensors as F16
# or BF16 and inputs in .npy as '<f2' load and are widened to the model's
# compute dtype (f32, or f64 with --dtype=f64). References: the same
# half-precision values widened by NumPy (f16) and ml_dtypes (bf16), then
# the layer in float64. There is no compute in half precision.
#
# REQUIRES: ml_dtypes
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %S/Inputs/half_model.tsr %t | FileCheck %s
# CHECK: f32 model: bf16 W, f16 b, f16 x: max rel err {{.*}} ok
# CHECK: f32 model: f32 W (unrounded) differs from bf16 W: ok
# CHECK: f64 model: bf16 W, f16 b, f16 x: max rel err {{.*}} ok
import json
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from torsor_testing import tool  # noqa: E402

src, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
L = 16
x = rng.normal(size=(L, 8)).astype(np.float32)
W = rng.normal(size=(8, 4)).astype(np.float32)
b = rng.normal(size=4).astype(np.float32)
W_bf16 = W.astype(ml_dtypes.bfloat16)
b_f16 = b.astype(np.float16)
x_f16 = x.astype(np.float16)


def save_safetensors(path, tensors):
    """Writes {name: (tag, uint16 bits)} as a .safetensors file."""
    header, blobs, off = {}, [], 0
    for name, (tag, arr) in tensors.items():
        data = arr.tobytes()
        header[name] = {"dtype": tag, "shape": list(arr.shape),
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


weights = os.path.join(out, "w_half.safetensors")
save_safetensors(weights, {"W": ("BF16", W_bf16.view(np.uint16)),
                           "b": ("F16", b_f16.view(np.uint16))})
np.save(os.path.join(out, "x_f16.npy"), x_f16)
np.save(os.path.join(out, "x.npy"), x)

# Independent float64 reference from the stored values.
ref = (x_f16.astype(np.float64) @ W_bf16.astype(np.float64)
       + b_f16.astype(np.float64))


def run(dtype_flag, tag, xfile, tol):
    so = os.path.join(out, "half%s.so" % tag)
    subprocess.run([tool("torsorc"), src, "-o", so] + dtype_flag, check=True)
    y_path = os.path.join(out, "y%s.npy" % tag)
    subprocess.run([tool("torsor-run"), so, "--input", "x=" + xfile,
                    "--weights", weights, "--output", "y=" + y_path],
                   check=True)
    y = np.load(y_path)
    return y


y = run([], "32", os.path.join(out, "x_f16.npy"), 1e-5)
assert y.dtype == np.float32, y.dtype
err = np.max(np.abs(y - ref) / (np.abs(ref) + 1))
assert err < 1e-5, err
print("f32 model: bf16 W, f16 b, f16 x: max rel err %.1e ok" % err)
# The loaded weights really are the bf16 values, not something closer to W.
unrounded = x_f16.astype(np.float64) @ W.astype(np.float64) + b_f16
gap = np.max(np.abs(unrounded - ref) / (np.abs(ref) + 1))
assert gap > 100 * err, (gap, err)
print("f32 model: f32 W (unrounded) differs from bf16 W: ok")

y = run(["--dtype=f64"], "64", os.path.join(out, "x_f16.npy"), 1e-12)
assert y.dtype == np.float64, y.dtype
err = np.max(np.abs(y - ref) / (np.abs(ref) + 1))
assert err < 1e-12, err
print("f64 model: bf16 W, f16 b, f16 x: max rel err %.1e ok" % err)
