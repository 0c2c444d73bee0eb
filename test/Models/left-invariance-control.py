# Negative control for the invariance checks of test/Models/: no example has
# a group input that is NOT left-invariant, so this uses a small model
# (Inputs/invariance_control.tsr) with one invariant input (`a`, only in
# lie_attention) and three that are not (`b` through log, `c`/`d` through
# dist2 of two different inputs). Checks that
#  - the manifest claims left_invariant only for `a`;
#  - the outputs match the float64 reference (so the model is the one meant);
#  - moving `a` by h leaves the outputs unchanged (tolerances as in
#    se3_pose_attention.py: f32 2e-5, f64 1e-10);
#  - moving `b`, or `c` alone, changes them by far more than those
#    tolerances (> 1e-2 relative): the un-made claims would indeed be false,
#    and the invariance check used by the example tests can see a violation;
#  - moving `c` and `d` by the same h leaves z unchanged (dist2 is relative).
#
# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
import os
import tempfile

import numpy as np

import model_reference as R
from model_runner import CompiledModel, left_multiply, random_group_elements, rel_err
from torsor_testing import Report

TSR = os.path.join(os.path.dirname(__file__), "Inputs", "invariance_control.tsr")
SE2, SE3 = R.BUILTIN["SE2"], R.BUILTIN["SE3"]


def reference(inp, p):
    att = R.lie_attention(SE3, inp["a"], inp["x"], heads=2, tau=[1.0, 2.0], lam=[1.0, 0.5])
    logb = np.array([R.log_coords(SE3, g) for g in inp["b"]])
    inv_c = np.linalg.inv(inp["c"])
    w = np.array([R.log_coords(SE2, inv_c[i] @ inp["d"][i]) for i in range(len(inv_c))])
    return {"y": att + logb @ p["W"], "z": w[:, 0] ** 2 + 2.0 * (w[:, 1:] ** 2).sum(-1)}


report = Report("left-invariance control")
work = tempfile.TemporaryDirectory(prefix="torsor-model-")
models = {dt: CompiledModel(TSR, dt, workdir=work.name) for dt in ("f32", "f64")}
tol = {"f32": 2e-5, "f64": 1e-10}
claims = {e["name"]: e.get("left_invariant") for e in models["f32"].group_inputs()}
for name, want in [("a", True), ("b", False), ("c", False), ("d", False)]:
    report.check("manifest: %s left_invariant == %s (got %s)" % (name, want, claims.get(name)),
                 0 if claims.get(name) is want else 1, 0)

rng = np.random.default_rng(7)
inputs = models["f64"].random_inputs(rng, {"L": 12})
params = models["f64"].random_params(rng)
ref = reference(inputs, params)
base = {}
for dt, m in models.items():
    base[dt] = m.run(inputs, params)
    for o in ("y", "z"):
        report.check("%s: %s vs float64 reference" % (o, dt), rel_err(base[dt][o], ref[o]), tol[dt])


def moved(names, group):
    h = random_group_elements(rng, group, 1)[0]
    out = dict(inputs)
    for n in names:
        out[n] = left_multiply(inputs[n], h)
    return out


for dt, m in models.items():
    got = m.run(moved(["a"], "SE3"), params)
    for o in ("y", "z"):
        report.check("%s: unchanged when a -> h.a (%s)" % (o, dt),
                     rel_err(got[o], base[dt][o]), tol[dt])
    got = m.run(moved(["c", "d"], "SE2"), params)
    report.check("z: unchanged when c, d -> h.c, h.d (%s)" % dt,
                 rel_err(got["z"], base[dt]["z"]), tol[dt])
    # A violation must show: 1 / (relative change) has to be small.
    got = m.run(moved(["b"], "SE3"), params)
    report.check("y: changes when b -> h.b (%s): 1/change" % dt,
                 1 / max(rel_err(got["y"], base[dt]["y"]), 1e-300), 1e2)
    got = m.run(moved(["c"], "SE2"), params)
    report.check("z: changes when c -> h.c (%s): 1/change" % dt,
                 1 / max(rel_err(got["z"], base[dt]["z"]), 1e-300), 1e2)
report.finish()
