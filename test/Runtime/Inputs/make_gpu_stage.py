"""Writes the data and plan.json of a tiny gpu-check stage for
test/Runtime/gpu-check.test: example "axpy" (the fake nvptx model,
out = 2 x + w, with its NumPy reference, and its backward from the fake
model's grad variant) and "notyet", an example whose
nvptx model the compiler could not build.

usage: make_gpu_stage.py STAGE [--corrupt] [--corrupt-grad]
  (a wrong output / gradient reference)
"""
import json
import os
import sys

import numpy as np

from make_inputs import safetensors

stage = sys.argv[1]
d = os.path.join(stage, "data", "axpy")
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(7)
x = rng.standard_normal((4, 8)).astype(np.float32)
w = rng.standard_normal(8).astype(np.float32)
np.save(os.path.join(d, "x.npy"), x)
safetensors(os.path.join(d, "w.safetensors"), {"w": w})
ref = 2 * x + w
if "--corrupt" in sys.argv:
    ref[1, 2] += 1e-3
np.save(os.path.join(d, "ref.out.npy"), ref)
# The backward (the fake model's grad variant): grad.x = 2 cot, grad.w = Σ_l cot.
cot = rng.standard_normal((4, 8)).astype(np.float32)
np.save(os.path.join(d, "cot.out.npy"), cot)
gw = cot.sum(0)
if "--corrupt-grad" in sys.argv:
    gw[3] += 1e-2
np.save(os.path.join(d, "gref.grad.x.npy"), 2 * cot)
np.save(os.path.join(d, "gref.grad.w.npy"), gw)
axpy = {"name": "axpy", "dims": {"L": 4}, "cpu": "models/axpy.cpu.so",
        "nvptx": "models/axpy.nvptx.so", "inputs": {"x": "data/axpy/x.npy"},
        "weights": "data/axpy/w.safetensors",
        "outputs": {"out": "data/axpy/ref.out.npy"},
        "grad": {"nvptx": "models/axpy.grad.nvptx.so",
                 "cotangents": {"out": "data/axpy/cot.out.npy"},
                 "gradients": {"grad.x": "data/axpy/gref.grad.x.npy",
                               "grad.w": "data/axpy/gref.grad.w.npy"}}}
notyet = dict(axpy, name="notyet", nvptx=None, grad=None,
              nvptx_error="torsorc: error: --target=nvptx is not available in this build yet")
with open(os.path.join(stage, "plan.json"), "w") as f:
    json.dump({"gpu_arch": "sm_90", "dim_size": 4, "examples": [axpy, notyet]}, f)
