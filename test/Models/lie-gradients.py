# RUN: %python %s %torsor_src | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""Whole-model gradients through the Lie rules: finite differences and
left-invariance, on examples/se3_pose_attention.tsr and
examples/se2_planar.tsr compiled with `torsorc --grad --dtype=f64`.

The backward entry (torsor_backward) returns the gradient of ⟨C, y⟩ for a
random output cotangent C with respect to every float input and param, and
the left-trivialised gradient η_i of every pose (docs/lie-gradients.md).
Checks, on random weights (scaled to keep activations O(1)) and L = 7:
  - directional derivatives against central finite differences of the
    compiled forward: params and float inputs along one random direction
    d (⟨grad, d⟩), poses along g_i ↦ g_i·exp(h ξ_i^) for random ξ
    (⟨η, ξ⟩); relative 1e-7 (the issue's bound; FD error ~1e-10);
  - left-invariance: with every pose left-multiplied by one random group
    element h, the param, input and pose gradients are unchanged
    (relative 1e-10): the model only sees relative poses, and the
    gradients of the flash backward see them only through the pair
    features' products.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.linalg import expm

sys.path.insert(0, os.path.join(sys.argv[1], "test", "lib"))
from torsor_testing import Report, memref_descriptor, tool  # noqa: E402


def skew3(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def hat_se3(v):
    X = np.zeros((4, 4))
    X[:3, :3] = skew3(v[:3])
    X[:3, 3] = v[3:6]
    return X


def hat_se2(v):
    return np.array([[0, -v[0], v[1]], [v[0], 0, v[2]], [0, 0, 0]])


HATS = {"SE3": (hat_se3, 6), "SE2": (hat_se2, 3)}


class Model:
    def __init__(self, path, workdir):
        so = os.path.join(workdir, os.path.basename(path) + ".so")
        subprocess.run([tool("torsorc"), path, "-o", so, "--grad", "--dtype=f64"], check=True)
        self.manifest = json.load(open(so[:-3] + ".json"))
        self.lib = ctypes.CDLL(so)
        # Params' packed copies (the manifest's "prepare", docs/runtime.md):
        # one 64-byte aligned buffer the prepare entry fills from the params
        # and the forward reads as its last argument.
        self.prepare = self.manifest.get("prepare")
        self.packed = []
        if self.prepare:
            raw = np.zeros(self.prepare["bytes"] + 64, np.uint8)
            start = -raw.ctypes.data % 64
            self.packed = [raw[start:start + self.prepare["bytes"]]]

    def forward(self, inputs, params, outputs):
        """torsor_forward as the runtime calls it: prepare, then run."""
        if self.prepare:
            self._call(self.prepare["entry"], params + self.packed)
        self._call("torsor_forward", inputs + params + outputs + self.packed)

    def _call(self, entry, arrays):
        descs = [memref_descriptor(a) for a in arrays]
        ptrs = (ctypes.c_void_p * len(descs))(*[ctypes.addressof(d) for d in descs])
        fn = getattr(self.lib, entry)
        fn.restype = None
        fn(ptrs)


def main():
    root = sys.argv[1]
    report = Report("Lie model gradients: finite differences and invariance")
    rng = np.random.default_rng(5)
    L = 7
    with tempfile.TemporaryDirectory() as tmp:
        for example in ("se3_pose_attention.tsr", "se2_planar.tsr"):
            m = Model(os.path.join(root, "examples", example), tmp)
            man = m.manifest
            dims = {"L": L}

            def shape(t):
                return [L if isinstance(s, str) else s for s in t["shape"]]
            inputs, params = man["inputs"], man["params"]
            outs = man["outputs"]
            vals = {}
            for t in inputs + params:
                sh = shape(t)
                if t.get("group"):
                    hat, k = HATS[t["group"].upper()]
                    vals[t["name"]] = np.array([expm(hat(rng.standard_normal(k))) for _ in range(sh[0])])
                else:
                    fan = sh[0] if len(sh) > 1 else 1
                    vals[t["name"]] = rng.standard_normal(sh) / np.sqrt(fan)
            out_shapes = [shape(t) for t in outs]
            C = [rng.standard_normal(s) for s in out_shapes]

            def forward(v):
                ys = [np.zeros(s) for s in out_shapes]
                m.forward([np.ascontiguousarray(v[t["name"]]) for t in inputs],
                          [np.ascontiguousarray(v[t["name"]]) for t in params], ys)
                return sum(np.sum(c * y) for c, y in zip(C, ys))

            grads_spec = man["backward"]["gradients"]

            def backward(v):
                gs = [np.zeros(shape(g)) for g in grads_spec]
                m._call("torsor_backward", [np.ascontiguousarray(v[t["name"]]) for t in inputs + params]
                        + [np.ascontiguousarray(c) for c in C] + gs)
                return {g["of"]: x for g, x in zip(grads_spec, gs)}

            grads = backward(vals)
            h = 1e-6
            for t in inputs + params:
                name = t["name"]
                if name not in grads:
                    continue
                if t.get("group"):
                    hat, k = HATS[t["group"].upper()]
                    xi = rng.standard_normal((len(vals[name]), k))
                    plus, minus = dict(vals), dict(vals)
                    plus[name] = np.array([g @ expm(h * hat(x)) for g, x in zip(vals[name], xi)])
                    minus[name] = np.array([g @ expm(-h * hat(x)) for g, x in zip(vals[name], xi)])
                    ours = np.sum(grads[name] * xi)
                else:
                    d = rng.standard_normal(vals[name].shape)
                    plus, minus = dict(vals), dict(vals)
                    plus[name] = vals[name] + h * d
                    minus[name] = vals[name] - h * d
                    ours = np.sum(grads[name] * d)
                ref = (forward(plus) - forward(minus)) / (2 * h)
                report.check("%s d/d%s (FD, rel)" % (example, name),
                             abs(ours - ref) / max(abs(ref), 1e-3), 1e-7)
            # Left-invariance.
            moved = dict(vals)
            for t in inputs:
                if t.get("group"):
                    hat, k = HATS[t["group"].upper()]
                    hg = expm(hat(rng.standard_normal(k) * 2))
                    moved[t["name"]] = np.array([hg @ g for g in vals[t["name"]]])
            grads2 = backward(moved)
            for name, g in grads.items():
                report.check("%s d/d%s invariant under h·g (rel)" % (example, name),
                             np.max(np.abs(grads2[name] - g)) / max(np.max(np.abs(g)), 1e-12), 1e-10)
    report.finish()


main()
