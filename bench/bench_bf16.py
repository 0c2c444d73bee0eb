#!/usr/bin/env python3
"""Matrix products in bf16 (issue #26): Torsor `--compute=bf16` (AMX tiles
where the CPU has them, else AVX512-BF16, else bf16-rounded f32) and Torsor
f32 against torch.mm in bfloat16 and float32, side by side in one run.

Each shape is y = x @ W, x [L, d], W [d, n] (the models' shapes, as
bench/bench_dense.py). Torsor: a one-line .tsr compiled by torsorc -O2 for the
host CPU, timed by torsor-run --time (median; whole forward call, packing of
both operands and output allocation included). torch: torch.mm on bfloat16
or float32 tensors, median of N runs (skipped without torch). The same
thread count everywhere. The error column is max|y - y64| / max|y64| against
float64 NumPy.

Not part of `make test`; run it on a quiet machine. Usage:
  python3 bench/bench_bf16.py [--build build] [--threads 2] [--runs 10]
                              [--tiny] [--results DIR]
Writes DIR/bf16_matmul.json and .md (DIR: bench/results). --tiny runs one
small shape (a smoke check of the script, not a measurement).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = [(64, 256, 256), (1024, 256, 1024), (1024, 1024, 1024),
          (4096, 256, 1024), (4096, 1024, 256), (2048, 2048, 2048),
          (16384, 256, 256)]
TINY = [(40, 64, 48)]


def median_time(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def torsor_time(args, tmp, d, n, compute, x, w):
    """(seconds, output) of the Torsor build for `compute`."""
    import numpy as np
    from model_runner import write_safetensors
    tsr = os.path.join(tmp, "mm.tsr")
    with open(tsr, "w") as f:
        f.write("model MM {\n  dim L;\n  dim D = %d;\n  dim N = %d;\n"
                "  input x: f32[L, D];\n  param W: f32[D, N];\n"
                "  output y = x @ W;\n}\n" % (d, n))
    so = os.path.join(tmp, "mm_%s_%d_%d.so" % (compute, d, n))
    subprocess.run([os.path.join(args.build, "bin", "torsorc"), tsr, "-o", so,
                    "-O2", "--compute=" + compute], check=True)
    np.save(os.path.join(tmp, "x.npy"), x)
    write_safetensors(os.path.join(tmp, "w.safetensors"), {"W": w}, "f32")
    out = os.path.join(tmp, "y.npy")
    run = subprocess.run(
        [os.path.join(args.build, "bin", "torsor-run"), so,
         "--input", "x=" + os.path.join(tmp, "x.npy"),
         "--weights", os.path.join(tmp, "w.safetensors"),
         "--output", "y=" + out, "--threads", str(args.threads),
         "--time", str(args.runs)],
        check=True, capture_output=True, text=True)
    line = [s for s in run.stdout.splitlines() if s.startswith("time:")][0]
    with open(so[:-3] + ".json") as f:
        unit = "amx" if json.load(f).get("amx") else compute
    return float(line.split("median")[1].split("ms")[0]) / 1e3, np.load(out), unit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    load_start = os.getloadavg()
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory(prefix="torsor-bench-bf16-") as tmp:
        for L, d, n in (TINY if args.tiny else SHAPES):
            x = rng.standard_normal((L, d)).astype(np.float32)
            w = (rng.standard_normal((d, n)) / np.sqrt(d)).astype(np.float32)
            ref = x.astype(np.float64) @ w.astype(np.float64)
            flop = 2.0 * L * d * n
            row = {"L": L, "d": d, "n": n}
            for compute in ("f32", "bf16"):
                t, y, unit = torsor_time(args, tmp, d, n, compute, x, w)
                row["torsor_%s_ms" % compute] = t * 1e3
                row["torsor_%s_gflops" % compute] = flop / t / 1e9
                row["torsor_%s_err" % compute] = float(
                    np.max(np.abs(y - ref)) / np.max(np.abs(ref)))
                row["torsor_%s_unit" % compute] = unit
            if torch is not None:
                for name, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
                    tx, tw = torch.from_numpy(x).to(dt), torch.from_numpy(w).to(dt)
                    t = median_time(lambda: torch.mm(tx, tw), args.runs)
                    row["torch_%s_ms" % name] = t * 1e3
                    row["torch_%s_gflops" % name] = flop / t / 1e9
            rows.append(row)
            print("L=%5d d=%4d n=%4d  torsor f32 %7.1f  bf16(%s) %7.1f GFLOP/s "
                  "(err %.1e)  torch f32 %s  bf16 %s" % (
                      L, d, n, row["torsor_f32_gflops"], row["torsor_bf16_unit"],
                      row["torsor_bf16_gflops"], row["torsor_bf16_err"],
                      "%7.1f" % row["torch_f32_gflops"] if torch else "-",
                      "%7.1f" % row["torch_bf16_gflops"] if torch else "-"),
                  flush=True)
    os.makedirs(args.results, exist_ok=True)
    meta = {"threads": args.threads, "runs": args.runs, "load_start": load_start,
            "load_end": os.getloadavg(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    with open(os.path.join(args.results, "bf16_matmul.json"), "w") as f:
        json.dump(dict(meta, rows=rows), f, indent=1)
    with open(os.path.join(args.results, "bf16_matmul.md"), "w") as f:
        f.write("# bf16 matmul, %d threads (%s; load %.1f → %.1f)\n\n"
                % (args.threads, meta["date"], load_start[0], meta["load_end"][0]))
        f.write("| L | d | n | Torsor f32 GFLOP/s | Torsor bf16 GFLOP/s (unit) | "
                "torch f32 | torch bf16 | Torsor bf16 / torch bf16 | bf16 err |\n")
        f.write("|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            tb = r.get("torch_bf16_gflops")
            f.write("| %d | %d | %d | %.1f | %.1f (%s) | %s | %s | %s | %.1e |\n" % (
                r["L"], r["d"], r["n"], r["torsor_f32_gflops"],
                r["torsor_bf16_gflops"], r["torsor_bf16_unit"],
                "%.1f" % r["torch_f32_gflops"] if tb else "-",
                "%.1f" % tb if tb else "-",
                "%.2f" % (r["torsor_bf16_gflops"] / tb) if tb else "-",
                r["torsor_bf16_err"]))


if __name__ == "__main__":
    main()
