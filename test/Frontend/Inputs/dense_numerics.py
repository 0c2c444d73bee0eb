"""Inputs and float64 reference for dense-numerics.tsr.

`gen DIR` writes seeded inputs (x, y) and a safetensors weight bundle;
`check DIR` compares every output of the compiled model against NumPy in
float64. Tolerance 1e-5 absolute: f32 sums of at most 8 terms of size ~3,
f32 exp/erf/tanh and an f32 rsqrt.
"""
import json
import math
import os
import struct
import sys

import numpy as np

B, L, D, H = 2, 5, 8, 2
mode, d = sys.argv[1], sys.argv[2]


def weights(rng):
    return {
        "W": rng.standard_normal((D, 4)),
        "b": rng.standard_normal(4),
        "g": rng.standard_normal(D),
        "be": rng.standard_normal(D),
    }


rng = np.random.default_rng(1)
x = rng.standard_normal((B, L, D))
y = rng.standard_normal((L, D))
w = weights(rng)

if mode == "gen":
    np.save(os.path.join(d, "x.npy"), x.astype(np.float32))
    np.save(os.path.join(d, "y.npy"), y.astype(np.float32))
    header, blob = {}, b""
    for name, value in w.items():
        data = value.astype(np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(value.shape),
                        "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(os.path.join(d, "w.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob)
    sys.exit(0)

# Round the inputs through f32 as the model saw them.
x = x.astype(np.float32).astype(np.float64)
y = y.astype(np.float32).astype(np.float64)
w = {k: v.astype(np.float32).astype(np.float64) for k, v in w.items()}


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def softmax(v, axis):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


xw = x @ w["W"]
mean = x.mean(-1, keepdims=True)
var = ((x - mean) ** 2).mean(-1, keepdims=True)
ref = {
    "o1": np.maximum(xw + w["b"], 0) - sigmoid(xw) / 2,
    "o2": (x - mean) / np.sqrt(var + 1e-5) * w["g"] + w["be"],
    "o3": y / np.sqrt((y ** 2).mean(-1, keepdims=True) + 1e-6) * w["g"],
    "o4": softmax(y, -1) + softmax(y, 0),
    "o5": y - y + y * D,
    "o6": np.tanh(-y),
    "o7": 0.5 * y * (1 + np.vectorize(math.erf)(y / math.sqrt(2))),
}
worst = 0.0
for name, want in ref.items():
    got = np.load(os.path.join(d, name + ".npy"))
    if got.shape != want.shape:
        print("%s: shape %s, expected %s FAIL" % (name, got.shape, want.shape))
        sys.exit(1)
    err = float(np.max(np.abs(got - want)))
    print("%s max abs error %.3e" % (name, err))
    worst = max(worst, err)
print("worst %.3e %s" % (worst, "ok" if worst < 1e-5 else "FAIL"))
