#!/usr/bin/env python3
"""SE(3) Lie-algebra attention: Torsor vs PyTorch eager, torch.compile and
plain dot-product attention, side by side in one run.

The workload is one multi-head `lie_attention` layer (docs/math.md §1) over L
poses with value dim D: s_ij = −‖log(g_i⁻¹g_j)‖²_λ / τ_h, softmax, @ v.
- torsor:   examples-style .tsr compiled by torsorc (-O2, host CPU), run by
            torsor-run --time (median of N runs after a warm-up).
- eager:    the same math written in PyTorch the way a user would (batched
            relative poses, atan2 log, V⁻¹ via the closed form of docs/math.md).
- compile:  torch.compile of the eager function (inductor, CPU).
- sdpa:     torch's scaled_dot_product_attention on random q, k, v of the same
            size: what plain (non-geometric) attention costs.
Threads: all runs use the same thread count (--threads / torch.set_num_threads).

Not part of `make test`. Needs torch (`pip install torch`).
Usage: python3 bench/bench_lie_attention.py [--build build] [--sizes 256 512 1024]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADS, D = 4, 64
TAU = [0.5, 1.0, 2.0, 4.0]
LAMBDA = [1.0, 0.25] * HEADS

MODEL = """model Bench {
  dim L;
  dim D = %d;
  input pose: SE3[L];
  input v: f32[L, D];
  output y = lie_attention(pose, v, heads = %d, tau = [%s],
                           lambda = [%s]);
}
""" % (D, HEADS, ", ".join(map(str, TAU)), ", ".join(map(str, LAMBDA[:2])))


def random_se3(rng, n):
    from scipy.spatial.transform import Rotation
    g = np.tile(np.eye(4), (n, 1, 1))
    g[:, :3, :3] = Rotation.random(n, random_state=rng.integers(1 << 31)).as_matrix()
    g[:, :3, 3] = rng.standard_normal((n, 3))
    return g


def torch_lie_attention(torch, pose, v):
    """Pairwise SE(3) log distance → multi-head softmax attention."""
    R, t = pose[:, :3, :3], pose[:, :3, 3]
    Rrel = torch.einsum("iba,jbc->ijac", R, R)                 # R_iᵀ R_j
    u = torch.einsum("iba,ijb->ija", R, t[None, :, :] - t[:, None, :])
    tr = Rrel[..., 0, 0] + Rrel[..., 1, 1] + Rrel[..., 2, 2]
    a = torch.stack([Rrel[..., 2, 1] - Rrel[..., 1, 2],
                     Rrel[..., 0, 2] - Rrel[..., 2, 0],
                     Rrel[..., 1, 0] - Rrel[..., 0, 1]], -1)
    s = 0.5 * a.norm(dim=-1)
    theta = torch.atan2(s, 0.5 * (tr - 1))
    n = a / (2 * s.clamp_min(1e-12))[..., None]
    nu = (n * u).sum(-1)
    half = 0.5 * theta
    ratio = torch.where(half < 1e-4, 1 + half * half / 6, half / torch.sin(half))
    rho2 = nu * nu + ratio * ratio * ((u * u).sum(-1) - nu * nu)
    rot2 = theta * theta
    L = pose.shape[0]
    vh = v.view(L, HEADS, D // HEADS).transpose(0, 1)           # H, L, d
    lam = torch.tensor(LAMBDA, dtype=v.dtype).view(HEADS, 2)
    tau = torch.tensor(TAU, dtype=v.dtype)
    scores = -(lam[:, 0, None, None] * rot2 + lam[:, 1, None, None] * rho2) / tau[:, None, None]
    out = torch.softmax(scores, -1) @ vh                       # H, L, d
    return out.transpose(0, 1).reshape(L, D)


def time_fn(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    import torch
    torch.set_num_threads(args.threads)
    bin_dir = os.path.join(os.path.abspath(args.build), "bin")
    work = tempfile.mkdtemp(prefix="torsor-bench-")
    tsr = os.path.join(work, "bench.tsr")
    open(tsr, "w").write(MODEL)
    so = os.path.join(work, "bench.so")
    subprocess.run([os.path.join(bin_dir, "torsorc"), tsr, "-o", so], check=True)
    compiled = torch.compile(lambda p, v: torch_lie_attention(torch, p, v))

    rows = []
    rng = np.random.default_rng(0)
    for L in args.sizes:
        pose = random_se3(rng, L).astype(np.float32)
        v = rng.standard_normal((L, D)).astype(np.float32)
        np.save(os.path.join(work, "pose.npy"), pose)
        np.save(os.path.join(work, "v.npy"), v)
        out = os.path.join(work, "y.npy")
        r = subprocess.run([os.path.join(bin_dir, "torsor-run"), so,
                            "--input", "pose=" + os.path.join(work, "pose.npy"),
                            "--input", "v=" + os.path.join(work, "v.npy"),
                            "--output", "y=" + out, "--threads", str(args.threads),
                            "--time", str(args.repeats)],
                           capture_output=True, text=True, check=True)
        line = [l for l in r.stdout.splitlines() if "median" in l][0]
        torsor_ms = float(line.split("median")[1].split("ms")[0])
        P, V = torch.from_numpy(pose), torch.from_numpy(v)
        with torch.no_grad():
            ref = torch_lie_attention(torch, P, V).numpy()
            agree = float(np.max(np.abs(np.load(out) - ref)))
            eager_ms = time_fn(lambda: torch_lie_attention(torch, P, V), args.repeats)
            compile_ms = time_fn(lambda: compiled(P, V), args.repeats)
            q = torch.randn(1, HEADS, L, D // HEADS)
            sdpa_ms = time_fn(lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q),
                              args.repeats)
        rows.append(dict(L=L, torsor_ms=torsor_ms, eager_ms=eager_ms,
                         compile_ms=compile_ms, sdpa_ms=sdpa_ms, max_abs_diff=agree))

    print("SE(3) lie_attention, H=%d, D=%d, f32, %d threads, median of %d"
          % (HEADS, D, args.threads, args.repeats))
    print("%6s %10s %10s %10s %10s %12s %12s %10s" % (
        "L", "torsor ms", "eager ms", "compile ms", "sdpa ms",
        "eager/torsor", "compile/tors", "|diff|"))
    for r in rows:
        print("%6d %10.2f %10.2f %10.2f %10.2f %12.2f %12.2f %10.1e" % (
            r["L"], r["torsor_ms"], r["eager_ms"], r["compile_ms"], r["sdpa_ms"],
            r["eager_ms"] / r["torsor_ms"], r["compile_ms"] / r["torsor_ms"],
            r["max_abs_diff"]))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "lie_attention.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
