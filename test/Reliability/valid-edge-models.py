# RUN: %python %s %t | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""Valid models that once failed to compile or crashed the compiler.

Each compiles at -O0 and -O2 and runs through torsor-run; outputs are
compared with float64 NumPy references (tolerance 1e-6 relative in f32,
exact where the output is a copy or a constant):
  - element-wise ops on rank-7 and rank-8 tensors (a use-after-scope over
    the induction variables of rank > 6 loops crashed the optimised build);
  - a group input returned as an output next to its log (bufferization
    left a clone that reached LLVM as unrealized_conversion_cast);
  - a constant output next to a computed one;
  - a scalar group input (`SO2` with no sequence dims).
"""
import os
import subprocess
import sys

import numpy as np

from torsor_testing import Report

TMP = sys.argv[1]
os.makedirs(TMP, exist_ok=True)
BIN = os.environ["TORSOR_BIN"]

MODELS = {
    "rank7": ("""model M {
  dim A = 2;
  input x: f32[A, A, A, A, A, A, 3];
  output y = relu(x + x);
}""", lambda x: {"y": np.maximum(2 * x, 0)}),
    "rank8": ("""model M {
  dim L;
  input x: f32[L, 2, 2, 2, 2, 2, 2, 3];
  output y = x * x - x;
}""", lambda x: {"y": x * x - x}),
    "pose_and_log": ("""model M {
  dim L;
  input g: SO2[L];
  output w = log(g);
  output pose = g;
}""", None),
    "constant_output": ("""model M {
  dim L;
  input x: f32[L, 4];
  output y = relu(x);
  output c = 2;
}""", lambda x: {"y": np.maximum(x, 0), "c": np.float32(2)}),
    "scalar_group": ("""model M {
  input g: SO2;
  output w = log(compose(g, g));
}""", None),
}


def rot(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s], [s, c]])


def run(name, src, opt, inputs, outputs):
    tsr = os.path.join(TMP, name + ".tsr")
    so = os.path.join(TMP, "%s-O%d.so" % (name, opt))
    with open(tsr, "w") as f:
        f.write(src + "\n")
    subprocess.run([os.path.join(BIN, "torsorc"), tsr, "-O%d" % opt, "-o", so],
                   check=True)
    cmd = [os.path.join(BIN, "torsor-run"), so]
    for k, v in inputs.items():
        path = os.path.join(TMP, "%s-%s.npy" % (name, k))
        np.save(path, v)
        cmd += ["--input", "%s=%s" % (k, path)]
    paths = {}
    for k in outputs:
        paths[k] = os.path.join(TMP, "%s-O%d-out-%s.npy" % (name, opt, k))
        cmd += ["--output", "%s=%s" % (k, paths[k])]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return {k: np.load(p) for k, p in paths.items()}


def rel(got, want):
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return np.inf
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1.0), initial=0.0))


rng = np.random.default_rng(15)
report = Report("valid edge-case models, -O0 and -O2")
for opt in (0, 2):
    x7 = rng.standard_normal((2, 2, 2, 2, 2, 2, 3)).astype(np.float32)
    got = run("rank7", MODELS["rank7"][0], opt, {"x": x7}, ["y"])
    report.check("rank-7 relu(x + x) -O%d" % opt, rel(got["y"], MODELS["rank7"][1](x7)["y"]), 1e-6)

    x8 = rng.standard_normal((5, 2, 2, 2, 2, 2, 2, 3)).astype(np.float32)
    got = run("rank8", MODELS["rank8"][0], opt, {"x": x8}, ["y"])
    want = x8.astype(np.float64) ** 2 - x8
    report.check("rank-8 x * x - x -O%d" % opt, rel(got["y"], want), 1e-6)

    theta = rng.uniform(-3, 3, 6)
    g = np.array([rot(t) for t in theta], dtype=np.float32)
    got = run("pose_and_log", MODELS["pose_and_log"][0], opt, {"g": g}, ["w", "pose"])
    report.check("group input returned unchanged -O%d" % opt,
                 0.0 if np.array_equal(got["pose"], g) else 1.0, 0.0)
    ref = np.arctan2(g[:, 1, 0].astype(np.float64), g[:, 0, 0]).reshape(6, 1)
    report.check("log next to the returned input -O%d" % opt, rel(got["w"], ref), 1e-6)

    xc = rng.standard_normal((3, 4)).astype(np.float32)
    got = run("constant_output", MODELS["constant_output"][0], opt, {"x": xc}, ["y", "c"])
    report.check("computed output next to a constant -O%d" % opt, rel(got["y"], np.maximum(xc, 0)), 0.0)
    report.check("constant output c = 2 -O%d" % opt, rel(got["c"], np.float64(2)), 0.0)

    gs = rot(0.7).astype(np.float32)
    got = run("scalar_group", MODELS["scalar_group"][0], opt, {"g": gs}, ["w"])
    report.check("scalar SO2: log(g g) = 2 theta -O%d" % opt, rel(got["w"], [1.4]), 1e-6)
report.finish()
