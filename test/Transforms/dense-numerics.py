# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""torsor-tile-dense and torsor-fuse-rows (the -O2 dense path) against the
-O0 oracle and an independent NumPy float64 reference.

Each model is compiled by torsorc at -O0 (plain loops, libm) and -O2
(register-tiled matmuls with fused epilogues, polynomial f32 erf/exp/tanh
in elementwise bodies, row kernels for LayerNorm, RMS norm, relational norm
and softmax with reassociated row sums) in f32 and f64.

Adversarial shapes: row counts 0, 1, and one either side of the row
kernels' block (16), the matmul tasks' block (32) and the register tile
(8): 7, 8, 9, 15, 16, 17, 31, 32, 33, plus 100; column counts that are not
multiples of the register tile (33 = 32 + 1, 31 = 32 − 1). Inputs: unit
normal rows plus rows scaled by 40 (pre-activations of ±200: exp
overflows to inf, sigmoid saturates to 0 and 1, erf and tanh to ±1) and
constant rows (LayerNorm's variance is 0, softmax's row is uniform).

Tolerances, max |err| / max |reference| per output: f32 1e-5 against the
float64 reference and against -O0; f64 1e-12.
"""
import os
import tempfile

import numpy as np
from scipy.special import erf

from model_runner import CompiledModel
from torsor_testing import Report

report = Report("dense -O2 (tile-dense, fuse-rows) vs -O0 and float64")
rng = np.random.default_rng(7)

MODELS = {
    # Two kernels with bias + exact GELU and bias epilogues; 33 columns.
    "mlp": ("""model MLP {
  dim L;
  input x: f32[L, 40];
  param W1: f32[40, 96];
  param b1: f32[96];
  param W2: f32[96, 33];
  param b2: f32[33];
  output y = gelu(x @ W1 + b1) @ W2 + b2;
}""", lambda p: {"y": gelu(p["x"] @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]}),
    # Saturating activations in epilogues; 31 and 64 columns.
    "act": ("""model Act {
  dim L;
  input x: f32[L, 24];
  param W: f32[24, 64];
  param b: f32[64];
  param V: f32[24, 31];
  output s = sigmoid(x @ W + b);
  output t = tanh(x @ V);
  output e = exp(0.05 * (x @ V));
}""", lambda p: {"s": 1 / (1 + np.exp(-(p["x"] @ p["W"] + p["b"]))),
                 "t": np.tanh(p["x"] @ p["V"]), "e": np.exp(0.05 * (p["x"] @ p["V"]))}),
    # Row kernels, alone and after a matmul with a residual.
    "rows": ("""model Rows {
  dim L;
  input x: f32[L, 48];
  param g: f32[48];
  param b: f32[48];
  param W: f32[48, 48];
  output ln = layer_norm(x, g, b);
  output rms = rms_norm(x, g);
  output rel = relational_norm(x);
  output sm = softmax(x);
  output res = layer_norm(x + x @ W, g, b);
}""", lambda p: {"ln": layer_norm(p["x"], p["g"], p["b"]),
                 "rms": p["x"] / np.sqrt((p["x"] ** 2).mean(-1, keepdims=True) + 1e-6) * p["g"],
                 "rel": p["x"] / np.sqrt((p["x"] ** 2).mean(-1, keepdims=True) + 1e-5),
                 "sm": softmax(p["x"]),
                 "res": layer_norm(p["x"] + p["x"] @ p["W"], p["g"], p["b"])}),
}


def gelu(x):
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def layer_norm(x, g, b):
    xc = x - x.mean(-1, keepdims=True)
    return xc / np.sqrt((xc ** 2).mean(-1, keepdims=True) + 1e-5) * g + b


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def inputs(model, L):
    """Unit rows, rows scaled by 40 and constant rows, interleaved."""
    x = rng.standard_normal((L, model.input("x")["shape"][1]))
    x[1::3] *= 40
    x[2::5] = 1.5
    return {"x": x}


def rel(a, b):
    """max |a − b| / max |b| over the finite entries of b; infinities of b
    (f32 exp overflow) must be matched exactly."""
    if not b.size:
        return 0.0
    inf = np.isinf(b)
    if np.any(a[inf] != b[inf]) or not np.all(np.isfinite(a[~inf])):
        return float("inf")
    scale = max(np.max(np.abs(b[~inf]), initial=0.0), 1e-300)
    return float(np.max(np.abs(a[~inf] - b[~inf]), initial=0.0) / scale)


with tempfile.TemporaryDirectory(prefix="torsor-dense-") as tmp:
    for name, (text, ref) in MODELS.items():
        tsr = os.path.join(tmp, name + ".tsr")
        with open(tsr, "w") as f:
            f.write(text + "\n")
        builds = {(dt, opt): CompiledModel(tsr, dtype=dt, opt=opt,
                                           workdir=os.path.join(tmp, name))
                  for dt in ("f32", "f64") for opt in (0, 2)}
        params = builds["f64", 2].random_params(rng)
        for L in (0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100):
            x = inputs(builds["f64", 2], L)
            outs = {k: m.run(x, params) for k, m in builds.items()}
            for dt in ("f32", "f64"):
                seen = builds[dt, 2].as_seen({**x, **params})
                with np.errstate(over="ignore"):
                    want = {k: v.astype(builds[dt, 2].np_dtype).astype(np.float64)
                            for k, v in ref(seen).items()}
                tol = 1e-5 if dt == "f32" else 1e-12
                for out in want:
                    got2, got0 = outs[dt, 2][out], outs[dt, 0][out]
                    report.check("%s.%s L=%d %s -O2 vs f64" % (name, out, L, dt),
                                 rel(got2, want[out]), tol)
                    report.check("%s.%s L=%d %s -O0 vs f64" % (name, out, L, dt),
                                 rel(got0, want[out]), tol)
                    report.check("%s.%s L=%d %s -O2 vs -O0" % (name, out, L, dt),
                                 rel(got2, got0), tol)
report.finish()
