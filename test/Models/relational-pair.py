# The relational pair (examples/standard_attention.tsr and
# examples/relational_attention.tsr) and the standard-to-relational
# conversion, end to end through the shipped tools:
#   1. the standard model (random f64 weights) against a float64 NumPy
#      reference written with the factors W_Q, W_K, W_V, W_O;
#   2. `torsorc --relationalize --weights --convert-weights` converts the
#      checkpoint; its G_QK, G_VO against NumPy products of the factors;
#   3. the relationalized standard model and the hand-written relational
#      model, both on the converted checkpoint, against the standard
#      model's output: f64, max|diff| / max|y| <= 1e-12 (measured ~1e-15);
#   4. a GL(d_h) gauge move of the standard weights changes neither the
#      output (1e-12) nor the converted checkpoint (1e-12): the redundancy
#      the report counts is real;
#   5. f32 builds of both forms agree to 2e-5 (f32 rounding of ~64-term
#      products, two layers);
#   6. L = 1 (softmax over one key) as well as L = 24.
#
# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from model_runner import CompiledModel, rel_err, tool, write_safetensors  # noqa: E402
from torsor_testing import Report  # noqa: E402

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
STD = os.path.join(EX, "standard_attention.tsr")
REL = os.path.join(EX, "relational_attention.tsr")
D, H, DH, LAYERS, SCALE = 64, 4, 16, 2, 0.25


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = {"F32": np.float32, "F64": np.float64}[info["dtype"]]
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=dt).reshape(info["shape"])
    return out


def rnorm(x, eps=1e-5):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps)


def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def standard_reference(x, p):
    """The standard model, with the factors, as the language defines it."""
    h = x
    for i in range(LAYERS):
        w = {k: p["layers.%d.%s" % (i, k)] for k in ("Wq", "Wk", "Wv", "Wo")}
        n = rnorm(h)
        split = lambda t: t.reshape(len(n), H, DH).transpose(1, 0, 2)
        q, k, v = split(n @ w["Wq"]), split(n @ w["Wk"]), split(n @ w["Wv"])
        pr = softmax(q @ k.transpose(0, 2, 1) * SCALE)
        merged = (pr @ v).transpose(1, 0, 2).reshape(len(n), H * DH)
        h = h + merged @ w["Wo"]
    return rnorm(h)


def convert(work, params, tag):
    src = os.path.join(work, "std-%s.safetensors" % tag)
    dst = os.path.join(work, "rel-%s.safetensors" % tag)
    write_safetensors(src, params, "f64")
    # -o into the work dir: without it torsorc writes the relationalized
    # library next to the example, in the source tree.
    cmd = [tool("torsorc"), STD, "--relationalize", "--weights=" + src,
           "--convert-weights=" + dst,
           "-o", os.path.join(work, "rel-%s.so" % tag)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(cmd), res.stderr))
    return {k: v.astype(np.float64) for k, v in read_safetensors(dst).items()}


def main():
    report = Report("relational pair: standard vs relational attention")
    work = tempfile.TemporaryDirectory(prefix="torsor-relpair-")
    std64 = CompiledModel(STD, "f64", workdir=os.path.join(work.name, "std"))
    conv64 = CompiledModel(STD, "f64", extra_args=("--relationalize",),
                           workdir=os.path.join(work.name, "conv"))
    rel64 = CompiledModel(REL, "f64", workdir=os.path.join(work.name, "rel"))
    std32 = CompiledModel(STD, "f32", workdir=os.path.join(work.name, "std32"))
    rel32 = CompiledModel(REL, "f32", workdir=os.path.join(work.name, "rel32"))

    names = sorted(e["name"] for e in conv64.params)
    report.check("relationalized params are %s" % names,
                 0 if names == sorted(e["name"] for e in rel64.params) else 1, 0)

    rng = np.random.default_rng(13)
    params = std64.random_params(rng)
    g = convert(work.name, params, "a")
    for i in range(LAYERS):
        w = {k: params["layers.%d.%s" % (i, k)] for k in ("Wq", "Wk", "Wv", "Wo")}
        sl = lambda h: slice(h * DH, (h + 1) * DH)
        gqk = np.stack([w["Wq"][:, sl(h)] @ w["Wk"][:, sl(h)].T for h in range(H)])
        gvo = np.stack([w["Wv"][:, sl(h)] @ w["Wo"][sl(h), :] for h in range(H)])
        report.check("layers.%d: converted G_QK vs NumPy" % i,
                     rel_err(g["layers.%d.g_qk" % i], gqk), 1e-14)
        report.check("layers.%d: converted G_VO vs NumPy" % i,
                     rel_err(g["layers.%d.g_vo" % i], gvo), 1e-14)

    # A GL(d_h) gauge move per head: W_Q A, W_K A^-T, W_V B, B^-1 W_O.
    moved = dict(params)
    for i in range(LAYERS):
        p = lambda k: moved["layers.%d.%s" % (i, k)].copy()
        wq, wk, wv, wo = p("Wq"), p("Wk"), p("Wv"), p("Wo")
        for h in range(H):
            s = slice(h * DH, (h + 1) * DH)
            a = np.eye(DH) + 0.3 * rng.standard_normal((DH, DH))
            b = np.eye(DH) + 0.3 * rng.standard_normal((DH, DH))
            wq[:, s], wk[:, s] = wq[:, s] @ a, wk[:, s] @ np.linalg.inv(a).T
            wv[:, s], wo[s, :] = wv[:, s] @ b, np.linalg.inv(b) @ wo[s, :]
        for k, v in zip(("Wq", "Wk", "Wv", "Wo"), (wq, wk, wv, wo)):
            moved["layers.%d.%s" % (i, k)] = v
    g_moved = convert(work.name, moved, "moved")
    report.check("gauge-moved checkpoint converts to the same G",
                 max(rel_err(g_moved[k], g[k]) for k in g), 1e-12)

    for L in (24, 1):
        x = rng.standard_normal((L, D))
        y_std = std64.run({"x": x}, params)["y"]
        want = standard_reference(x, params)
        report.check("L=%d: standard f64 vs NumPy reference" % L,
                     rel_err(y_std, want), 1e-12)
        report.check("L=%d: relationalized standard (f64) vs standard" % L,
                     rel_err(conv64.run({"x": x}, g)["y"], y_std), 1e-12)
        report.check("L=%d: hand-written relational (f64) vs standard" % L,
                     rel_err(rel64.run({"x": x}, g)["y"], y_std), 1e-12)
        report.check("L=%d: standard after a GL(d_h) gauge move" % L,
                     rel_err(std64.run({"x": x}, moved)["y"], y_std), 1e-12)
        report.check("L=%d: f32 relational vs f32 standard" % L,
                     rel_err(rel32.run({"x": x}, g)["y"],
                             std32.run({"x": x}, params)["y"]), 2e-5)
    report.finish()


main()
