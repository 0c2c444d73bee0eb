# The examples with group inputs, compiled with --grad in f64: every
# gradient against fourth-order central differences, group inputs included
# (perturbed as g_i·exp(ε·hat(e_k)), the left-trivialised convention of
# docs/training.md), and the invariance of the gradients under a left
# translation of every pose (g ↦ h·g leaves every relative pose, so the
# outputs and every gradient, unchanged).
#
# The declared groups (Heis3 nilpotent, Sim2 not) differentiate their log
# through the generic model's J_r⁻ᵀ (dialects/Lie/IR/Groups/GenericGrad.cpp)
# and their attention through the flash backward, per lane; SE(2) and SE(3)
# through the flash backward. Tolerance: 1e-7 relative to the gradient
# tensor's largest entry (measured ~1e-10); invariance 1e-9 relative.
#
# RUN: env TORSOR_CACHE_DIR=%t.cache %python %s %torsor_src | FileCheck %s
# CHECK: ok heisenberg
# CHECK: ok sim2_similarity
# CHECK: ok se2_planar
# CHECK: ok se3_pose_attention
# CHECK: ok invariance se3_pose_attention
# CHECK: ok invariance sim2_similarity
# CHECK: all example gradients match
import os
import re
import sys

import numpy as np
from scipy.linalg import expm

import gradcheck

src = sys.argv[1]


def skew3(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def hat_se2(v):
    return np.array([[0, -v[0], v[1]], [v[0], 0, v[2]], [0, 0, 0]])


def hat_se3(v):
    X = np.zeros((4, 4))
    X[:3, :3] = skew3(v[:3])
    X[:3, 3] = v[3:6]
    return X


def declared_generators(path):
    """The generators of the group declared in an example, in order."""
    gens = []
    for m in re.finditer(r"generator\s+\w+\s*=\s*(\[\[.*?\]\])\s*;", open(path).read()):
        gens.append(np.array(eval(m.group(1)), dtype=float))
    return gens


def hat_of(gens):
    return lambda v: sum(c * E for c, E in zip(v, gens))


def random_elements(rng, hat, k, L, scale):
    return np.stack([expm(hat(rng.standard_normal(k) * scale)) for _ in range(L)])


CASES = [
    # example, group input, hat, algebra dim, dims, element scale
    ("heisenberg", "g", None, 3, {"L": 5}, 0.8),
    ("sim2_similarity", "g", None, 4, {"L": 5}, 0.6),
    ("se2_planar", "pose", hat_se2, 3, {"T": 5}, 0.8),
    ("se3_pose_attention", "pose", hat_se3, 6, {"L": 4}, 0.8),
]

failed = False
models = {}
for name, gname, hat, k, dims, scale in CASES:
    path = os.path.join(src, "examples", name + ".tsr")
    if hat is None:
        hat = hat_of(declared_generators(path))
    model = gradcheck.compile_grad(path, opt=2)
    models[name] = (model, gname, hat, k, dims, scale)
    rng = np.random.default_rng(3)
    L = list(dims.values())[0]
    g = random_elements(rng, hat, k, L, scale)
    # Non-group inputs and params against finite differences.
    report = gradcheck.check_gradients(model, dims, seed=2, samples=5,
                                       inputs={gname: g}, scale=0.5)
    worst = report.max_error
    # The group input: f(g_i·exp(ε hat(e_k))) against grad[i, k].
    ins, params = gradcheck.random_arrays(model, dims, np.random.default_rng(5), scale=0.5)
    ins[gname] = g
    model.set_params(params)
    outs = model.run(ins)
    cots = {o: rng.standard_normal(np.shape(v)) for o, v in outs.items()}
    grad = model.backward(ins, cots)["grad." + gname]
    h = 1e-3
    fds, gs = [], []
    for i in range(L):
        for c in range(k):
            def f(eps):
                trial = dict(ins)
                gi = g.copy()
                gi[i] = g[i] @ expm(hat(np.eye(k)[c] * eps))
                trial[gname] = gi
                out = model.run(trial)
                return sum(float(np.sum(np.asarray(out[o]) * cots[o])) for o in cots)
            fds.append((8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h))
            gs.append(grad[i, c])
    fds, gs = np.array(fds), np.array(gs)
    err = float(np.max(np.abs(fds - gs)) / max(np.max(np.abs(gs)), np.max(np.abs(fds)), 1e-300))
    finite = all(np.isfinite(v).all() for v in model.backward(ins, cots).values())
    worst = max(worst, err)
    ok = worst <= 1e-7 and finite
    failed |= not ok
    print("%s %s: max relative error %.2e (group input %.2e)%s"
          % ("ok" if ok else "FAIL", name, worst, err, "" if finite else " NON-FINITE"))
    if not ok:
        print(report)

# Invariance: g ↦ h·g with one random h for every pose.
for name in ("se3_pose_attention", "sim2_similarity"):
    model, gname, hat, k, dims, scale = models[name]
    rng = np.random.default_rng(11)
    L = list(dims.values())[0]
    ins, params = gradcheck.random_arrays(model, dims, rng, scale=0.5)
    ins[gname] = random_elements(rng, hat, k, L, scale)
    model.set_params(params)
    outs = model.run(ins)
    cots = {o: rng.standard_normal(np.shape(v)) for o, v in outs.items()}
    base = model.backward(ins, cots)
    moved = dict(ins)
    hmat = expm(hat(rng.standard_normal(k)))
    moved[gname] = np.einsum("ab,lbc->lac", hmat, ins[gname])
    other = model.backward(moved, cots)
    worst = 0.0
    for gn, v in base.items():
        d = np.max(np.abs(other[gn] - v)) / max(np.max(np.abs(v)), 1e-300)
        worst = max(worst, float(d))
    ok = worst <= 1e-9
    failed |= not ok
    print("%s invariance %s: %d gradients, max relative change %.2e"
          % ("ok" if ok else "FAIL", name, len(base), worst))

print("all example gradients match" if not failed else "some example gradients do not match")
