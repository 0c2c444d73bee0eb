"""Writes the inputs of torsor-run-backward.test, and checks torsor-run's
outputs and gradients against the closed forms in float64.

usage: backward_check.py write|check DIR
"""
import os
import sys

import numpy as np

mode, d = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
x = rng.standard_normal((5, 3))
W = rng.standard_normal((3, 2))
b = rng.standard_normal(2)
cy = rng.standard_normal((5, 2))
cz = np.array(0.7)
if mode == "write":
    for name, a in dict(x=x, W=W, b=b, cy=cy, cz=cz).items():
        np.save(os.path.join(d, name + ".npy"), a)
    sys.exit(0)
xw = x @ W
n = xw.size
want = {
    "y": xw + b,
    "grad.W": x.T @ cy + (2.0 / n) * cz * x.T @ xw,
    "grad.x": cy @ W.T + (2.0 / n) * cz * xw @ W.T,
    "grad.b": cy.sum(0),
}
files = {"y": "y", "grad.W": "gW", "grad.x": "gx", "grad.b": "gb"}
for name, ref in want.items():
    got = np.load(os.path.join(d, files[name] + ".npy"))
    err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
    print("%s %s (%.1e)" % (name, "ok" if got.shape == ref.shape and err <= 1e-13
                            else "WRONG", err))
