#!/usr/bin/env python3
"""Whole-model gradients of the Lie examples against PyTorch autograd.

examples/se3_pose_attention.tsr and examples/se2_planar.tsr, compiled with
`torsorc --grad --dtype=f64`, against the same models written in PyTorch
(float64) from the NumPy references of test/lib/model_reference.py. The
pair coordinates log(g_i⁻¹g_j) (scipy logm + vee, as the reference) are
constants for the param and float-input gradients, so autograd covers
everything but the poses (whose gradients test/Models/lie-gradients.py
checks by finite differences). Needs torch, so it is not part of make
test:

    /work/bench-venv/bin/python bench/grad_vs_torch.py --build build
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.linalg import expm
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
sys.path.insert(0, os.path.join(ROOT, "test", "Models"))
import model_reference as ref  # noqa: E402
import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location("lg", os.path.join(ROOT, "test", "Models", "lie-gradients.py"))
src = open(spec.origin).read().split("\ndef main():")[0]
ns = {}
exec(compile(src, spec.origin, "exec"), ns)
Model, HATS = ns["Model"], ns["HATS"]


def ln(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdim=True)
    v = ((x - m) ** 2).mean(-1, keepdim=True)
    return (x - m) / torch.sqrt(v + eps) * g + b


def attention(w2, v, heads, tau, lam, blk, causal):
    L, D = v.shape
    vh = v.reshape(L, heads, D // heads)
    outs = []
    for h in range(heads):
        d2 = (w2 * torch.tensor(np.asarray(lam[h])[blk])).sum(-1)
        s = -d2 / tau[h]
        if causal:
            s = s.masked_fill(~torch.tril(torch.ones(L, L, dtype=torch.bool)), float("-inf"))
        outs.append(torch.softmax(s, -1) @ vh[:, h, :])
    return torch.stack(outs, 1).reshape(L, D)


def se3_model(inp, p, w2, blk):
    h = inp["x"]
    for i in range(2):
        q = lambda n: p["blocks.%d.%s" % (i, n)]
        v = ln(h, q("ln1_g"), q("ln1_b")) @ q("Wv")
        a = attention(w2, v, 4, [0.5, 1.0, 2.0, 4.0],
                      [[1.0, 0.1], [1.0, 0.5], [1.0, 1.0], [0.5, 2.0]], blk, False)
        h1 = h + a @ q("Wo")
        f = torch.nn.functional.gelu(ln(h1, q("ln2_g"), q("ln2_b")) @ q("W1") + q("b1")) @ q("W2") + q("b2")
        h = h1 + f
    return {"y": ln(h, p["lnf_g"], p["lnf_b"])}


def se2_model(inp, p, w2, blk):
    obs = inp["obs"]
    a = attention(w2, obs @ p["Wv"], 2, [1.0, 0.25], [[2.0, 1.0]] * 2, blk, True)
    x = obs + a @ p["Wo"]
    h = x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + 1e-6) * p["gain"]
    d = (w2 * torch.tensor(np.asarray([2.0, 1.0])[blk])).sum(-1)
    return {"control": torch.relu(h) @ p["Wh"], "distances": d}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    os.environ["TORSOR_BIN"] = os.path.join(os.path.abspath(a.build), "bin")
    rng = np.random.default_rng(3)
    L = 9
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for example, group, torch_model in (("se3_pose_attention.tsr", "SE3", se3_model),
                                            ("se2_planar.tsr", "SE2", se2_model)):
            m = Model(os.path.join(ROOT, "examples", example), tmp)
            man = m.manifest
            shape = lambda t: [L if isinstance(s, str) else s for s in t["shape"]]
            vals = {}
            for t in man["inputs"] + man["params"]:
                sh = shape(t)
                if t.get("group"):
                    hat, k = HATS[group]
                    vals[t["name"]] = np.array([expm(hat(rng.standard_normal(k))) for _ in range(sh[0])])
                else:
                    vals[t["name"]] = rng.standard_normal(sh) / np.sqrt(sh[0] if len(sh) > 1 else 1)
            outs = man["outputs"]
            C = [rng.standard_normal(shape(t)) for t in outs]
            gs = [np.zeros(shape(g)) for g in man["backward"]["gradients"]]
            m._call("torsor_backward", [np.ascontiguousarray(vals[t["name"]]) for t in man["inputs"] + man["params"]]
                    + [np.ascontiguousarray(c) for c in C] + gs)
            ours = {g["of"]: x for g, x in zip(man["backward"]["gradients"], gs)}

            G = ref.BUILTIN[group]
            w = ref.pairwise_coords(G, vals["pose"])
            w2 = torch.tensor(w ** 2)
            blk = G.block_of_coord()
            tv = {n: torch.tensor(x, requires_grad=True) for n, x in vals.items() if n != "pose"}
            res = torch_model(tv, tv, w2, blk)
            loss = sum((torch.tensor(c) * res[t["name"]]).sum() for c, t in zip(C, outs))
            loss.backward()
            for n, t in tv.items():
                if n not in ours:
                    continue
                g = t.grad.numpy()
                err = np.max(np.abs(ours[n] - g)) / max(np.max(np.abs(g)), 1e-300)
                worst = max(worst, err)
                print("%-24s %-22s rel err %.3e" % (example, n, err))
    print("worst relative error vs torch autograd: %.3e (goal 1e-10)" % worst)
    sys.exit(0 if worst <= 1e-10 else 1)


if __name__ == "__main__":
    main()
