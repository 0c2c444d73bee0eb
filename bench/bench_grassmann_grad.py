#!/usr/bin/env python3
"""Backward vs forward of geo.grassmann_mix (issue #12: the backward on the
bilinear form).

Compiles bench_grassmann.py's model (one causal grassmann_mix, d = 256,
r = 32, offsets {1, 2, 4, 8, 12, 16}, f32) with `torsorc --grad -O2` and
times, through the Python API on the runtime's thread pool:
  fwd  Model.run (the fused forward, geo-fuse-grassmann)
  bwd  Model.backward (the backward entry: the forward recomputed, then
       the reverse sweep, i.e. what a training step pays for gradients)
Each (mode, L) runs in a fresh process; its peak memory is the growth of
the process's VmHWM during the first call (inputs, params and the
compiled model are loaded before it), so it counts the model's own
buffers. Median of --runs calls after that first one.

    bench/bench_grassmann_grad.py --build build --sizes 4096 16384 --threads 2

Point --build at another build folder to measure another version of the
compiler (the numbers in bench/README.md compare two). Never part of
make test.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def vm_hwm_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def child(args):
    import torsor
    from bench_grassmann import MODEL

    torsor.set_num_threads(args.threads)
    m = torsor.compile(MODEL, dtype="f32", opt=2, grad=True)
    rng = np.random.default_rng(0)
    params = {}
    for spec in m.params:
        shape = spec.concrete_shape({})
        fan = shape[-1] if len(shape) > 1 else 1
        params[spec.name] = (rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32)
    m.set_params(params)
    x = rng.standard_normal((args.L, 256)).astype(np.float32)
    cot = rng.standard_normal((args.L, 256)).astype(np.float32)
    if args.mode == "fwd":
        call = lambda: m.run({"x": x})  # noqa: E731
    else:
        call = lambda: m.backward({"x": x}, {"y": cot})  # noqa: E731
    before = vm_hwm_kb()
    t0 = time.perf_counter()
    call()
    first = time.perf_counter() - t0
    peak_mb = (vm_hwm_kb() - before) / 1024.0
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    med = float(np.median(times)) if times else first
    print("RESULT %s %d %.4f %.1f" % (args.mode, args.L, med, peak_mb))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 16384])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="fwd", help=argparse.SUPPRESS)
    ap.add_argument("--L", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    build = os.path.abspath(args.build)
    env = dict(os.environ, TORSOR_BUILD_DIR=build,
               TORSOR_CACHE_DIR=os.path.join(build, "bench-grassmann-grad-cache"))
    print("build %s, %d threads, median of %d runs" % (args.build, args.threads, args.runs))
    print("%6s  %10s  %10s  %7s  %12s  %12s" % ("L", "fwd s", "bwd s", "bwd/fwd",
                                              "fwd peak MB", "bwd peak MB"))
    for L in args.sizes:
        res = {}
        for mode in ("fwd", "bwd"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--mode", mode, "--L", str(L),
                 "--threads", str(args.threads), "--runs", str(args.runs)],
                env=env, capture_output=True, text=True)
            line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
            if out.returncode != 0 or not line:
                sys.exit("%s L=%d failed:\n%s%s" % (mode, L, out.stdout, out.stderr))
            _, _, _, t, mb = line[0].split()
            res[mode] = (float(t), float(mb))
        print("%6d  %10.4f  %10.4f  %7.2f  %12.1f  %12.1f" % (
            L, res["fwd"][0], res["bwd"][0], res["bwd"][0] / res["fwd"][0],
            res["fwd"][1], res["bwd"][1]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
