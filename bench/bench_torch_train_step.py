#!/usr/bin/env python3
"""bench_torch_train_step.py - one training step of SE(3) pose attention
(examples/se3_pose_attention.tsr, f32) through torsor.torch.TorsorModule
against its plain-PyTorch twin (test/Python/torch_twins.py) with identical
weights: forward, MSE loss, loss.backward(), Adam step.

    /work/bench-venv/bin/python bench/bench_torch_train_step.py [--L 256 1024]
        [--threads 2] [--steps 5]

Prints the median step time of each, the ratio, and the forward+backward
part alone (on a loaded machine, torch's optimizer step with several
intra-op threads can cost more than the layer itself: each parallel region
waits for its sleeping worker threads to be scheduled). The twin is eager
PyTorch with closed-form SE(3) logs of every pair (what a PyTorch user
writes); both use the same thread count. A benchmark: run it on a quiet
machine; never part of make test.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "test", "Python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import torsor  # noqa: E402
import torsor.torch as ttorch  # noqa: E402
import torch_twins  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--L", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torsor.set_num_threads(args.threads)
    t0 = time.time()
    layer = ttorch.TorsorModule(os.path.join(HERE, "..", "examples", "se3_pose_attention.tsr"))
    print("compile (grad, default -O): %.1f s" % (time.time() - t0))
    init = {k: v.detach().clone() for k, v in layer.state_dict().items()}
    twin_params = {k: torch.nn.Parameter(v.clone()) for k, v in init.items()}
    for L in args.L:
        rng = np.random.default_rng(L)
        pose = torch.tensor(torsor.groups.random("SE3", L, seed=rng))
        x = torch.tensor(rng.standard_normal((L, 64)), dtype=torch.float32)
        target = torch.tensor(rng.standard_normal((L, 64)), dtype=torch.float32)
        times = {}
        for name in ("torsor", "torch"):
            params = list(layer.parameters()) if name == "torsor" else list(twin_params.values())
            opt = torch.optim.Adam(params, lr=1e-3)

            fb = []

            def step():
                t = time.perf_counter()
                if name == "torsor":
                    y = layer(pose=pose, x=x)
                else:
                    y = torch_twins.pose_attention({"pose": pose, "x": x}, twin_params)["y"]
                loss = ((y - target) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                fb.append(time.perf_counter() - t)
                opt.step()
                return loss.item()
            step()  # warm-up
            fb.clear()
            ts = []
            for _ in range(args.steps):
                t = time.perf_counter()
                step()
                ts.append(time.perf_counter() - t)
            times[name] = statistics.median(ts)
            times[name + " fb"] = statistics.median(fb)
        print("L = %5d: step: TorsorModule %8.1f ms, PyTorch twin %8.1f ms (%.1fx); "
              "forward+backward alone: %8.1f ms, %8.1f ms (%.1fx)"
              % (L, 1e3 * times["torsor"], 1e3 * times["torch"],
                 times["torch"] / times["torsor"], 1e3 * times["torsor fb"],
                 1e3 * times["torch fb"], times["torch fb"] / times["torsor fb"]))


if __name__ == "__main__":
    main()
