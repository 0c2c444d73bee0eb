#!/usr/bin/env python3
"""Backward vs forward of lie_attention over a declared group (Sim(2)).

Sim(2) is declared by generators (examples/sim2_similarity.tsr): its log
is iterative, so the fused forward and the flash backward evaluate the
pair form per lane in scalar code, and the backward takes the log's
derivative from the group model (docs/lie-gradients.md). This compiles

    model { input g: Sim2[L]; input x: f32[L, D];
            output y = lie_attention(g, x, heads = H) }

with `torsorc --grad` (-O2, f32 or f64), runs the forward and the
backward (every gradient: g's left-trivialised one and x's) at length L,
and reports their times (best of --reps) and the backward's peak memory:
the growth of this process's VmHWM during the first backward call, after
the inputs, outputs and one forward exist. O(L) memory shows up as a few
MB; the all-pairs form it replaces held log(g_i⁻¹g_j) of every pair, an
L × L × 3 × 3 tensor (at L = 4096 in f64: 1.2 GB, and the reverse sweep
several of them).

    bench/bench_declared_attention_grad.py --L 4096 --threads 2

Never part of make test.
"""
import argparse
import os
import sys
import time

import numpy as np
from scipy.linalg import expm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torsor  # noqa: E402

GENS = [np.array(x, dtype=float) for x in (
    [[0, -1, 0], [1, 0, 0], [0, 0, 0]], [[1, 0, 0], [0, 1, 0], [0, 0, 0]],
    [[0, 0, 1], [0, 0, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 1], [0, 0, 0]])]

SOURCE = """
group Sim2 {
  matrix 3;
  generator R = [[0, -1, 0], [1, 0, 0], [0, 0, 0]];
  generator S = [[1, 0, 0], [0, 1, 0], [0, 0, 0]];
  generator Tx = [[0, 0, 1], [0, 0, 0], [0, 0, 0]];
  generator Ty = [[0, 0, 0], [0, 0, 1], [0, 0, 0]];
  norm rotscale = R, S;
  norm trans = Tx, Ty;
}
model M {
  dim L;
  dim D = %d;
  input g: Sim2[L];
  input x: f32[L, D];
  output y = lie_attention(g, x, heads = %d, lambda = [1.0, 0.5]%s);
}
"""


def vm_hwm_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--D", type=int, default=16)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--dtype", default="f64", choices=("f32", "f64"))
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=1)
    args = ap.parse_args()

    src = SOURCE % (args.D, args.heads, ", causal = true" if args.causal else "")
    t0 = time.time()
    model = torsor.compile(src, dtype=args.dtype, opt=2, grad=True)
    compile_s = time.time() - t0
    torsor.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    ft = np.float32 if args.dtype == "f32" else np.float64
    g = np.stack([expm(sum(c * E for c, E in zip(rng.standard_normal(4) * 0.5, GENS)))
                  for _ in range(args.L)]).astype(ft)
    x = rng.standard_normal((args.L, args.D)).astype(ft)
    ins = {"g": g, "x": x}
    cot = {"y": rng.standard_normal((args.L, args.D)).astype(ft)}

    fwd = []
    for _ in range(args.reps):
        t = time.perf_counter()
        model.run(ins)
        fwd.append(time.perf_counter() - t)
    before = vm_hwm_kb()
    bwd = []
    for _ in range(args.reps):
        t = time.perf_counter()
        grads = model.backward(ins, cot)
        bwd.append(time.perf_counter() - t)
        if len(bwd) == 1:
            peak = vm_hwm_kb() - before
    finite = all(np.isfinite(v).all() for v in grads.values())
    pairs = args.L * args.L // (2 if args.causal else 1)
    print("Sim2 lie_attention L=%d D=%d heads=%d %s%s threads=%d (load %.2f; compile %.0f s)"
          % (args.L, args.D, args.heads, args.dtype, " causal" if args.causal else "",
             args.threads, os.getloadavg()[0], compile_s))
    print("  forward  %.3f s  (%.0f ns/pair)" % (min(fwd), 1e9 * min(fwd) / pairs))
    print("  backward %.3f s  (%.0f ns/pair)  = %.2f x forward" % (
        min(bwd), 1e9 * min(bwd) / pairs, min(bwd) / min(fwd)))
    print("  backward peak memory growth: %.1f MB (VmHWM); an L x L x 3 x 3 %s tensor: %.0f MB"
          % (peak / 1024, args.dtype, args.L * args.L * 9 * np.dtype(ft).itemsize / 2**20))
    print("  gradients finite: %s" % finite)


main()
