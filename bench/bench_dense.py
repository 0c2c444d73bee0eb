#!/usr/bin/env python3
"""Dense layers: Torsor's tiled, vectorized matmul (torsor-tile-dense) vs
NumPy/OpenBLAS sgemm and torch.mm, side by side in one run.

Each shape is y = x @ W with x [L, d] and W [d, n], f32:
- torsor: a one-line .tsr compiled by torsorc -O2 for the host CPU, run by
          torsor-run --time (median of N runs after a warm-up; the time is
          the whole forward call, output allocation included). W is a
          `param`, the user's case: torsor-run binds it from a
          .safetensors file and torsor_prepare packs it once at load,
          outside the timed calls; x is an input;
- numpy:  x @ W (OpenBLAS sgemm), median of N runs;
- torch:  torch.mm, median of N runs (skipped without torch).
All three use the same thread count (--threads, OPENBLAS_NUM_THREADS and
torch.set_num_threads). Outputs are compared (max abs difference vs NumPy).

Not part of `make test`. Usage:
  python3 bench/bench_dense.py [--build build] [--threads 2] [--runs 10]
Writes bench/results/dense.json and bench/results/dense.md.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from harness import matmul_tsr, median_time, torsor_run_time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (L, d, n): the model's shapes (grassmann_lm: d = 256, d_ff = 1024; the
# Plücker layer K = 496; wide layers at d = 1024).
SHAPES = [(64, 256, 256), (1024, 256, 1024), (4096, 256, 1024),
          (4096, 1024, 256), (16384, 496, 256), (4096, 1024, 1024),
          (16384, 256, 256)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--name", default="dense",
                    help="results file stem under bench/results/")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    # Timings on a loaded machine are noise: the report says how loaded.
    load_start = os.getloadavg()
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
    from model_runner import write_safetensors
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory(prefix="torsor-bench-") as tmp:
        for L, d, n in SHAPES:
            tsr = os.path.join(tmp, "mm.tsr")
            with open(tsr, "w") as f:
                f.write(matmul_tsr(d, n))
            so = os.path.join(tmp, "mm_%d_%d.so" % (d, n))
            subprocess.run([os.path.join(args.build, "bin", "torsorc"), tsr,
                            "-o", so, "-O2"], check=True)
            x = rng.standard_normal((L, d)).astype(np.float32)
            w = rng.standard_normal((d, n)).astype(np.float32)
            np.save(os.path.join(tmp, "x.npy"), x)
            write_safetensors(os.path.join(tmp, "w.safetensors"), {"W": w}, "f32")
            out = os.path.join(tmp, "y.npy")
            t_torsor = torsor_run_time(
                args.build, so, {"x": os.path.join(tmp, "x.npy")},
                os.path.join(tmp, "w.safetensors"), {"y": out}, args.threads,
                args.runs)
            ref = x @ w
            diff = float(np.max(np.abs(np.load(out) - ref)))
            t_np = median_time(lambda: x @ w, args.runs)
            t_torch = None
            if torch is not None:
                tx, tw = torch.from_numpy(x), torch.from_numpy(w)
                t_torch = median_time(lambda: torch.mm(tx, tw), args.runs)
            flop = 2.0 * L * d * n
            row = {"L": L, "d": d, "n": n, "torsor_ms": t_torsor * 1e3,
                   "numpy_ms": t_np * 1e3,
                   "torch_ms": t_torch * 1e3 if t_torch else None,
                   "torsor_gflops": flop / t_torsor / 1e9,
                   "numpy_gflops": flop / t_np / 1e9,
                   "torsor_vs_numpy": t_np / t_torsor,
                   "max_abs_diff": diff}
            rows.append(row)
            print("L=%5d d=%4d n=%4d  torsor %8.2f ms (%6.1f GFLOP/s)  numpy "
                  "%8.2f ms (%6.1f)  torch %s  torsor/numpy throughput %.2f  "
                  "max|diff| %.1e" % (
                      L, d, n, row["torsor_ms"], row["torsor_gflops"],
                      row["numpy_ms"], row["numpy_gflops"],
                      "%8.2f ms" % row["torch_ms"] if t_torch else "-",
                      row["torsor_vs_numpy"], diff), flush=True)
    results = os.path.join(ROOT, "bench", "results")
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, args.name + ".json"), "w") as f:
        json.dump({"threads": args.threads, "runs": args.runs,
                   "load_start": load_start, "load_end": os.getloadavg(),
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "rows": rows}, f,
                  indent=1)
    with open(os.path.join(results, args.name + ".md"), "w") as f:
        f.write("%s, %d threads, load average %.1f at the start, %.1f at "
                "the end.\n\n" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                   args.threads, load_start[0], os.getloadavg()[0]))
        f.write("| L | d | n | Torsor ms | GFLOP/s | NumPy ms | GFLOP/s | "
                "torch.mm ms | Torsor / OpenBLAS throughput | max abs diff |\n"
                "|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| %d | %d | %d | %.2f | %.1f | %.2f | %.1f | %s | %.2f | %.1e |\n"
                    % (r["L"], r["d"], r["n"], r["torsor_ms"], r["torsor_gflops"],
                       r["numpy_ms"], r["numpy_gflops"],
                       "%.2f" % r["torch_ms"] if r["torch_ms"] else "-",
                       r["torsor_vs_numpy"], r["max_abs_diff"]))


if __name__ == "__main__":
    main()
