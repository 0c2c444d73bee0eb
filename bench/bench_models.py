#!/usr/bin/env python3
"""Whole model: examples/grassmann_lm.tsr compiled by Torsor vs the same
model written in PyTorch (eager and torch.compile), identical weights, in
one run.

- torsor:  torsorc -O2 (host CPU), torsor-run --time N --threads T.
- eager:   the model in PyTorch; grassmann_mix in its fastest eager form
           found here (bench_grassmann.py `wsum`: one W_plü (z_t ∧ w_t) per
           token), LayerNorm, exact GELU FFN, residual, 6 layers, W_out.
- compile: torch.compile of the eager model (--compile).
Outputs are compared with Torsor's (max abs difference on the logits).
se3_pose_attention is not covered yet.

Not part of `make test`. Needs torch. Usage:
  python3 bench/bench_models.py [--build build] [--sizes 256 1024 4096]
      [--threads 2] [--runs 3] [--compile]
Writes bench/results/models_grassmann_lm.json and .md.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
OFFSETS, EPS, LAYERS, R = (1, 2, 4, 8, 12, 16), 1e-6, 6, 32


def torch_model(torch):
    from bench_grassmann import torch_forms
    mix = torch_forms(torch)[2]                      # wsum

    def model(x, W):
        h = x
        for i in range(LAYERS):
            p = {k: W["layers.%d.%s" % (i, k)] for k in
                 ("w_red", "b_red", "w_plu", "b_plu", "w_gate", "b_gate",
                  "ln_g", "ln_b", "W1", "b1", "W2", "b2")}
            m = mix(h, p)
            n = torch.nn.functional.layer_norm(m, (m.shape[-1],), p["ln_g"],
                                               p["ln_b"], 1e-5)
            f = torch.nn.functional.gelu(n @ p["W1"] + p["b1"])
            h = n + f @ p["W2"] + p["b2"]
        return h @ W["W_out"]
    return model


def median_time(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
    from model_runner import write_safetensors
    model = torch_model(torch)
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory(prefix="torsor-bench-") as tmp:
        so = os.path.join(tmp, "glm.so")
        subprocess.run([os.path.join(args.build, "bin", "torsorc"),
                        os.path.join(ROOT, "examples", "grassmann_lm.tsr"),
                        "-o", so, "-O2"], check=True)
        with open(os.path.join(tmp, "glm.json")) as f:
            manifest = json.load(f)
        Wn = {}
        for p in manifest["params"]:
            shape = p["shape"]
            scale = 1 / np.sqrt(shape[-1]) if len(shape) > 1 else 0.1
            Wn[p["name"]] = (rng.standard_normal(shape) * scale).astype(np.float32)
            if p["name"].endswith("ln_g"):
                Wn[p["name"]] += 1
        write_safetensors(os.path.join(tmp, "w.safetensors"), Wn, "f32")
        W = {k: torch.from_numpy(v) for k, v in Wn.items()}
        forms = {"eager": lambda x: model(x, W)}
        if args.compile:
            compiled = torch.compile(model, dynamic=False)
            forms["compile"] = lambda x: compiled(x, W)
        for L in args.sizes:
            x = rng.standard_normal((L, 256)).astype(np.float32)
            np.save(os.path.join(tmp, "x.npy"), x)
            out = os.path.join(tmp, "y.npy")
            run = subprocess.run(
                [os.path.join(args.build, "bin", "torsor-run"), so,
                 "--input", "x=" + os.path.join(tmp, "x.npy"),
                 "--weights", os.path.join(tmp, "w.safetensors"),
                 "--output", "logits=" + out, "--threads", str(args.threads),
                 "--time", str(args.runs)],
                check=True, capture_output=True, text=True)
            line = [s for s in run.stdout.splitlines() if s.startswith("time:")][0]
            row = {"L": L, "torsor_ms": float(line.split("median")[1].split("ms")[0])}
            y = np.load(out)
            xt = torch.from_numpy(x)
            with torch.no_grad():
                for name, fn in forms.items():
                    row[name + "_ms"] = median_time(lambda: fn(xt), args.runs) * 1e3
                    row[name + "_max_abs_diff"] = float(
                        np.max(np.abs(fn(xt).numpy() - y)))
            rows.append(row)
            print(json.dumps(row), flush=True)
    results = os.path.join(ROOT, "bench", "results")
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "models_grassmann_lm.json"), "w") as f:
        json.dump({"threads": args.threads, "runs": args.runs, "rows": rows}, f,
                  indent=1)
    names = list(forms)
    with open(os.path.join(results, "models_grassmann_lm.md"), "w") as f:
        f.write("| L | Torsor ms | " + " | ".join("PyTorch %s ms" % n for n in names)
                + " | max abs diff (logits) |\n" + "|---" * (len(names) + 3) + "|\n")
        for r in rows:
            f.write("| %d | %.1f | " % (r["L"], r["torsor_ms"]) +
                    " | ".join("%.1f" % r[n + "_ms"] for n in names) + " | %.1e |\n"
                    % max(r[n + "_max_abs_diff"] for n in names))


if __name__ == "__main__":
    main()
