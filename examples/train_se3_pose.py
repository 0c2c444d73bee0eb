#!/usr/bin/env python3
"""train_se3_pose.py - train an SE(3) pose-attention model on relative poses.

`make train-pose-demo` runs this. The task (docs/training.md): a scene is
L rigid bodies, each a pose g_i ∈ SE(3) and a charge q_i = ±1. The target
of body i is the mean charge of the *other* bodies, weighted by how close
their poses are to g_i:

    y_i = Σ_{j≠i} k_ij q_j / Σ_{j≠i} k_ij,   k_ij = exp(−‖log(g_i⁻¹g_j)‖²_λ / σ)

with rotation weight λ_rot = 0.5, translation weight λ_trans = 1 and
σ = 1.5 (none of the model's heads uses these). y depends on the poses
only through g_i⁻¹g_j, so it is unchanged when every pose is moved by one
rigid motion h (g_i ↦ h·g_i). The charges are independent fair coins, so
E[y_i | q_i, g_i] = 0: no predictor that looks at one body alone beats the
constant 0, whose mean squared error (printed first as the baseline) is
E[y²]. Beating it requires attention over the poses.

The script compiles examples/se3_pose_train.tsr with its backward entry
(torsor.compile(..., grad=True); lie_attention's gradient on SE(3) is the
flash backward), generates a fixed training set and a held-out set of
scenes offline, trains with Adam one scene per step (torsor.train), prints
`step N loss X`, then the held-out loss against the baseline, and checks
that the trained model's predictions do not change when every pose of a
held-out scene is left-multiplied by a random element of SE(3).

    python3 examples/train_se3_pose.py [--steps N] [--tokens L] [--lr LR]
        [--scenes N] [--opt O] [--log LOSS.csv] [--checkpoint OUT.safetensors]
        [--require R]

--require R exits non-zero unless the held-out loss ends below R times
the baseline and the invariance holds (test/Models/se3_pose_train.py).
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import torsor  # noqa: E402
from torsor.train import Adam, init_params, train  # noqa: E402

#: The target's kernel: (rotation, translation) weights and width σ.
TARGET_LAMBDA = (0.5, 1.0)
TARGET_SIGMA = 1.5
#: Scenes: translations uniform in a cube of this side, rotations exp of
#: N(0, ROT_SCALE²) coordinates.
BOX = 3.0
ROT_SCALE = 0.8


def random_scene(rng, L, dtype):
    """L poses [L, 4, 4] and charges [L] of one scene."""
    # exp of pure rotations (zero translation coordinates), then the
    # translation set directly: one group helper (SE3) serves the script.
    v = np.zeros((L, 6))
    v[:, :3] = rng.standard_normal((L, 3)) * ROT_SCALE
    g = torsor.groups.exp("SE3", v)
    g[:, :3, 3] = rng.uniform(-BOX / 2, BOX / 2, (L, 3))
    q = rng.choice([-1.0, 1.0], L)
    return g.astype(dtype), q


def targets(g, q):
    """y_i of one scene (float64): the kernel-weighted mean charge of the
    other bodies, from the logs of every relative pose g_i⁻¹g_j."""
    g = g.astype(np.float64)
    rel = np.einsum("iab,jbc->ijac", np.linalg.inv(g), g)
    w = torsor.groups.log("SE3", rel)                      # [L, L, 6]
    d2 = TARGET_LAMBDA[0] * (w[..., :3] ** 2).sum(-1) + \
        TARGET_LAMBDA[1] * (w[..., 3:] ** 2).sum(-1)
    k = np.exp(-d2 / TARGET_SIGMA)
    np.fill_diagonal(k, 0.0)
    return (k @ q) / np.maximum(k.sum(1), 1e-30)


def make_set(rng, count, L, dtype):
    """`count` scenes as model inputs {pose, x, target}."""
    out = []
    for _ in range(count):
        g, q = random_scene(rng, L, dtype)
        x = np.stack([q, np.ones_like(q)], 1).astype(dtype)
        out.append({"pose": g, "x": x, "target": targets(g, q)[:, None].astype(dtype)})
    return out


def mean_loss(model, scenes):
    """Mean of the model's loss over scenes."""
    return float(np.mean([float(model.run(s)["loss"]) for s in scenes]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--tokens", type=int, default=64, help="bodies per scene (L)")
    ap.add_argument("--scenes", type=int, default=512, help="training scenes")
    ap.add_argument("--heldout", type=int, default=64, help="held-out scenes")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opt", type=int, default=None, help="torsorc -O level")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--log", default=None, help="write step,loss CSV here")
    ap.add_argument("--require", type=float, default=None, metavar="R",
                    help="fail unless the held-out loss is below R x the "
                         "baseline and the predictions are left-invariant")
    args = ap.parse_args()
    dtype = np.float32 if args.dtype == "f32" else np.float64

    torsor.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    train_set = make_set(rng, args.scenes, args.tokens, dtype)
    held = make_set(rng, args.heldout, args.tokens, dtype)
    baseline = float(np.mean([np.mean(s["target"].astype(np.float64) ** 2)
                              for s in held]))
    print("generated %d training and %d held-out scenes of %d bodies in %.1f s"
          % (len(train_set), len(held), args.tokens, time.perf_counter() - t0))
    print("baseline (constant 0, the best one-body predictor) held-out loss %.4f"
          % baseline, flush=True)

    t0 = time.perf_counter()
    model = torsor.compile(os.path.join(HERE, "se3_pose_train.tsr"), dtype=args.dtype,
                           opt=args.opt, grad=True)
    print("compiled %s with its backward entry in %.1f s (%d params)"
          % (model.name, time.perf_counter() - t0,
             sum(int(np.prod(s.concrete_shape({}))) for s in model.params)),
          flush=True)
    params = init_params(model, seed=args.seed)
    # A small read-out, so the untrained model starts near the constant
    # predictor instead of far above it (a common zero-ish init of the
    # last layer; init_params draws N(0, 1/fan_in)).
    params["W2"] *= 0.1
    model.set_params(params)
    print("initial held-out loss %.4f" % mean_loss(model, held), flush=True)

    order = np.random.default_rng(args.seed + 1)

    def batches():
        while True:
            for i in order.permutation(len(train_set)):
                yield train_set[i]

    history = train(model, params, batches(), Adam(lr=args.lr), args.steps,
                    loss="loss", log_every=args.log_every,
                    checkpoint=args.checkpoint, clip=1.0,
                    out=lambda s: print(s, flush=True))
    model.set_params(params)
    final = mean_loss(model, held)
    print("held-out loss %.4f = %.3f x baseline %.4f"
          % (final, final / baseline, baseline), flush=True)

    # Left invariance of the trained model: move every pose of each held-out
    # scene by one random rigid motion h; the predictions must not change
    # beyond rounding (h·g_i is rounded to the model's dtype again).
    hrng = np.random.default_rng(args.seed + 2)
    worst, scale = 0.0, 0.0
    probe = held[:8]
    for s in probe:
        h = torsor.groups.random("SE3", 1, seed=hrng, dtype="f64",
                                 scale=[1.0] * 3 + [2.0] * 3)[0]
        moved = dict(s, pose=np.einsum("ab,lbc->lac", h,
                                       s["pose"].astype(np.float64)).astype(dtype))
        a, b = model.run(s)["pred"], model.run(moved)["pred"]
        worst = max(worst, float(np.max(np.abs(a - b))))
        scale = max(scale, float(np.max(np.abs(a))))
    tol = (1e-4 if dtype == np.float32 else 1e-10) * max(scale, 1.0)
    invariant = worst <= tol
    print("left invariance: max |pred(h·g) - pred(g)| = %.2e over %d scenes "
          "(max |pred| %.2f, tolerance %.0e): %s"
          % (worst, len(probe), scale, tol, "ok" if invariant else "FAILED"),
          flush=True)

    if args.log:
        os.makedirs(os.path.dirname(os.path.abspath(args.log)), exist_ok=True)
        with open(args.log, "w") as f:
            f.write("step,loss\n")
            for i, v in enumerate(history, 1):
                f.write("%d,%.6f\n" % (i, v))
    if args.require is not None:
        if not invariant:
            sys.exit("FAIL: the predictions changed under a left translation")
        if not final < args.require * baseline:
            sys.exit("FAIL: held-out loss %.4f is not below %g x the baseline %.4f"
                     % (final, args.require, baseline))
        print("ok: held-out loss below %g x the baseline; left-invariant"
              % args.require)


if __name__ == "__main__":
    main()
