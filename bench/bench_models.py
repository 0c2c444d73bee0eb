#!/usr/bin/env python3
"""Whole models, Torsor vs PyTorch (eager and torch.compile), identical
weights, side by side in one run (issue #9 item 4).

Models (examples/):
- grassmann_lm:       6 layers of Grassmann mixing (d = 256, r = 32, offsets
                      {1, 2, 4, 8, 12, 16}, causal), LayerNorm, GELU FFN
                      (d_ff = 1024), residual, W_out [256, 1000].
- se3_pose_attention: 2 pre-norm blocks of 4-head SE(3) Lie attention
                      (D = 64) + GELU FFN (256), final LayerNorm.

Peers:
- torsor:        torsorc -O2 (host CPU) --compute=f32 or bf16 (--compute),
                 run in-process through the C API (bench/torsor_ctypes.py;
                 the forward call only).
- torch-eager:   the same model in PyTorch. grassmann_mix in its fastest
                 eager form (bench_grassmann.py `wsum`); Lie attention as the
                 chunked closed form of bench/lie_peers.py (the fastest
                 PyTorch form of bench_lie_attention.py).
- torch-compile: torch.compile(dynamic=False) of the eager model.
With --compute=bf16 both torch peers run under
torch.autocast("cpu", torch.bfloat16), the PyTorch user's bf16 mode.

Every point runs in a fresh process pinned to --threads CPUs with the tuned
allocator of harness.py; the report gives median, interquartile range, peak
RSS above the inputs, the ratios, and the max |difference| of every peer's
output from Torsor's (plus the outputs' max |value| for scale).

Not part of `make test`. Needs torch. Usage:
  /work/bench-venv/bin/python bench/bench_models.py [--models ...]
      [--sizes 256 1024 4096] [--peers torsor torch-eager torch-compile]
      [--threads 2] [--min-reps 3] [--budget-s 2] [--name models]
      [--compute f32|bf16] [--build build]
Writes bench/results/<name>.{json,md,png}.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import harness  # noqa: E402

OFFSETS, EPS, LAYERS = (1, 2, 4, 8, 12, 16), 1e-6, 6
MODELS = ("grassmann_lm", "se3_pose_attention")
PEERS = ("torsor", "torch-eager", "torch-compile")


# --- the PyTorch models -------------------------------------------------------------

def grassmann_lm_torch(torch):
    from bench_grassmann import torch_forms
    mix = torch_forms(torch)[2]                      # wsum
    F = torch.nn.functional

    def model(inp, W):
        h = inp["x"]
        for i in range(LAYERS):
            p = {k: W["layers.%d.%s" % (i, k)] for k in
                 ("w_red", "b_red", "w_plu", "b_plu", "w_gate", "b_gate",
                  "ln_g", "ln_b", "W1", "b1", "W2", "b2")}
            m = mix(h, p)
            n = F.layer_norm(m, (m.shape[-1],), p["ln_g"], p["ln_b"], 1e-5)
            h = n + F.gelu(n @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
        return h @ W["W_out"]
    return model


def se3_pose_attention_torch(torch):
    import lie_peers
    F = torch.nn.functional
    cf = torch.tensor(lie_peers.coef("SE3", 4), dtype=torch.float32)

    def model(inp, W):
        g, h = inp["pose"], inp["x"]
        L = h.shape[0]
        C = lie_peers.chunk_rows(L, 1 << 20)
        for i in range(2):
            p = lambda n: W["blocks.%d.%s" % (i, n)]
            v = F.layer_norm(h, (64,), p("ln1_g"), p("ln1_b"), 1e-5) @ p("Wv")
            a = lie_peers.torch_chunked(torch, "SE3", g, v.contiguous(), cf, C)
            h1 = h + a @ p("Wo")
            n = F.layer_norm(h1, (64,), p("ln2_g"), p("ln2_b"), 1e-5)
            h = h1 + F.gelu(n @ p("W1") + p("b1")) @ p("W2") + p("b2")
        return F.layer_norm(h, (64,), W["lnf_g"], W["lnf_b"], 1e-5)
    return model


# --- worker -------------------------------------------------------------------------

def measure(spec):
    import numpy as np
    data = np.load(spec["inputs"])
    inputs = {k[3:]: data[k] for k in data.files if k.startswith("in.")}
    params = {k[3:]: data[k] for k in data.files if k.startswith("pa.")}
    reps = dict(min_reps=spec["min_reps"], budget_s=spec["budget_s"],
                max_reps=spec["max_reps"])
    if spec["peer"] == "torsor":
        from torsor_ctypes import Runtime
        rt = Runtime(os.path.join(spec["build"], "lib", "libtorsor_runtime.so"))
        rt.set_threads(spec["threads"])
        mod = rt.load(spec["so"])
        for k, v in inputs.items():
            mod.bind_input(k, v)
        for k, v in params.items():
            mod.bind_param(k, v)
        fn = mod.run
        warmup = 1
        out = lambda: mod.output(spec["output"])
    else:
        import torch
        torch.set_num_threads(spec["threads"])
        model = {"grassmann_lm": grassmann_lm_torch,
                 "se3_pose_attention": se3_pose_attention_torch}[spec["model"]](torch)
        if spec["peer"] == "torch-compile":
            model = torch.compile(model, dynamic=False)
        ti = {k: torch.from_numpy(v) for k, v in inputs.items()}
        tp = {k: torch.from_numpy(v) for k, v in params.items()}
        result = {}

        bf16 = spec.get("compute") == "bf16"

        def fn():
            with torch.no_grad(), torch.autocast("cpu", torch.bfloat16,
                                                 enabled=bf16):
                result["y"] = model(ti, tp)
        warmup = 2 if spec["peer"] == "torch-compile" else 1
        out = lambda: result["y"].float().numpy()
    baseline = harness.rss_mb()
    t0 = time.perf_counter()
    times, warm, skipped = harness.time_calls(fn, warmup=warmup, **reps)
    warm_peak = harness.peak_mb() - baseline
    harness.reset_peak()
    if not skipped:
        times, _, skipped = harness.time_calls(fn, warmup=0, **reps)
    peak = harness.peak_mb() - baseline
    np.save(spec["out"], out())
    res = {"status": "skipped" if skipped else "ok", "reason": skipped,
           "warmup_s": [round(w, 3) for w in warm], "peak_mb": round(peak, 1),
           "warmup_peak_mb": round(warm_peak, 1),
           "total_s": round(time.perf_counter() - t0, 2)}
    res.update(harness.summarize(times))
    return res


# --- orchestrator -------------------------------------------------------------------

def make_data(np, manifest, model, L, rng):
    """Inputs and params (normal / sqrt(fan_in); LayerNorm gains around 1)."""
    params = {}
    for p in manifest["params"]:
        shape = p["shape"]
        name = p["name"].rsplit(".", 1)[-1]
        if model == "grassmann_lm" and name in ("w_red", "w_plu", "w_gate"):
            fan = shape[-1]
        else:
            fan = shape[-2] if len(shape) > 1 else 1
        scale = 1 / np.sqrt(fan) if len(shape) > 1 else 0.1
        params[p["name"]] = (rng.standard_normal(shape) * scale).astype(np.float32)
        if name.endswith("_g"):
            params[p["name"]] += 1
    if model == "grassmann_lm":
        inputs = {"x": rng.standard_normal((L, 256)).astype(np.float32)}
    else:
        import lie_peers
        g, x = lie_peers.random_inputs("SE3", L, 64, seed=1)
        inputs = {"pose": g.astype(np.float32), "x": x.astype(np.float32)}
    return inputs, params


def plot(rows, path, threads, compute):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = sorted({r["model"] for r in rows})
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4.2),
                             squeeze=False)
    for ax, model in zip(axes[0], models):
        for peer in PEERS:
            pts = [(r["L"], r["median_ms"], r.get("q1_ms"), r.get("q3_ms"))
                   for r in rows if r["model"] == model and r["peer"] == peer
                   and r.get("status") == "ok"]
            if not pts:
                continue
            pts.sort()
            xs = [p[0] for p in pts]
            ax.plot(xs, [p[1] for p in pts], marker="o", label=peer)
            ax.fill_between(xs, [p[2] for p in pts], [p[3] for p in pts], alpha=0.2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("L (tokens)")
        ax.set_ylabel("ms per forward (median, IQR band)")
        ax.set_title("%s, %s, %d threads" % (model, compute, threads))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=PEERS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--max-reps", type=int, default=30)
    ap.add_argument("--budget-s", type=float, default=2.0)
    ap.add_argument("--timeout-s", type=float, default=900)
    ap.add_argument("--allocator", default="glibc-tuned")
    ap.add_argument("--name", default="models")
    ap.add_argument("--compute", default="f32", choices=("f32", "bf16"))
    args = ap.parse_args()
    import numpy as np
    env = dict(harness.allocator_env(args.allocator))
    env.update(harness.thread_env(args.threads))
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    env["PYTHONPATH"] = HERE
    load_start = os.getloadavg()
    rows = []
    results = os.path.join(ROOT, "bench", "results")
    os.makedirs(results, exist_ok=True)
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="torsor-bench-") as tmp:
        for model in args.models:
            so = os.path.join(tmp, model + ".so")
            subprocess.run([os.path.join(args.build, "bin", "torsorc"),
                            os.path.join(ROOT, "examples", model + ".tsr"),
                            "-o", so, "-O2", "--compute=" + args.compute],
                           check=True)
            with open(os.path.join(tmp, model + ".json")) as f:
                manifest = json.load(f)
            output = manifest["outputs"][0]["name"]
            for L in args.sizes:
                rng = np.random.default_rng(L)
                inputs, params = make_data(np, manifest, model, L, rng)
                data = os.path.join(tmp, "%s-%d.npz" % (model, L))
                np.savez(data, **{"in." + k: v for k, v in inputs.items()},
                         **{"pa." + k: v for k, v in params.items()})
                outs = {}
                for peer in args.peers:
                    out = os.path.join(tmp, "%s-%d-%s.npy" % (model, L, peer))
                    spec = {"model": model, "L": L, "peer": peer, "so": so,
                            "build": args.build, "inputs": data, "out": out,
                            "output": output, "threads": args.threads,
                            "min_reps": args.min_reps, "max_reps": args.max_reps,
                            "budget_s": args.budget_s,
                            "compute": args.compute}
                    res = harness.run_worker([sys.executable, __file__], spec, env,
                                             args.timeout_s)
                    row = {"model": model, "L": L, "peer": peer}
                    row.update({k: v for k, v in res.items() if k != "log"})
                    if res.get("status") == "ok":
                        outs[peer] = np.load(out)
                    elif res.get("log"):
                        print(res["log"], file=sys.stderr)
                    rows.append(row)
                ref = outs.get("torsor")
                for row in rows:
                    if row["model"] == model and row["L"] == L and ref is not None \
                            and row["peer"] in outs:
                        row["max_abs_diff"] = float(np.max(np.abs(outs[row["peer"]] - ref)))
                        row["max_abs_out"] = float(np.max(np.abs(ref)))
                for row in rows[-len(args.peers):]:
                    print(json.dumps(row), flush=True)
    load_end = os.getloadavg()
    meta = {"command": " ".join(["python3", "bench/bench_models.py"] + sys.argv[1:]),
            "compute": args.compute,
            "torsor": rev, "threads": args.threads, "allocator": args.allocator,
            "load_start": load_start, "load_end": load_end,
            "machine": harness.machine_info(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    with open(os.path.join(results, args.name + ".json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    lines = ["Measured %s with `%s` on Torsor %s (%s threads, compute %s, load "
             "average %.1f at the start, %.1f at the end)." % (
                 meta["date"], meta["command"], rev, args.threads, args.compute,
                 load_start[0], load_end[0]), ""]
    header = ["model", "L", "Torsor", "torch eager", "torch.compile",
              "compile / Torsor", "eager / Torsor", "Torsor peak MB",
              "compile peak MB", "max |Δ| vs Torsor (max |y|)"]
    table = []
    for model in args.models:
        for L in args.sizes:
            pts = {r["peer"]: r for r in rows if r["model"] == model and r["L"] == L}

            def ms(p):
                r = pts.get(p)
                if not r or r.get("status") != "ok":
                    return "–" if not r else r.get("status", "–")
                return "%.1f ms (%.1f–%.1f)" % (r["median_ms"], r["q1_ms"], r["q3_ms"])

            def ratio(p):
                a, b = pts.get(p), pts.get("torsor")
                if not a or not b or a.get("status") != "ok" or b.get("status") != "ok":
                    return "–"
                return "%.2f×" % (a["median_ms"] / b["median_ms"])

            def peak(p):
                r = pts.get(p)
                return "%.0f" % r["peak_mb"] if r and r.get("status") == "ok" else "–"
            diffs = [r.get("max_abs_diff") for p, r in pts.items() if p != "torsor"
                     and r.get("max_abs_diff") is not None]
            scale = pts.get("torsor", {}).get("max_abs_out")
            table.append([model, L, ms("torsor"), ms("torch-eager"), ms("torch-compile"),
                          ratio("torch-compile"), ratio("torch-eager"), peak("torsor"),
                          peak("torch-compile"),
                          ("%.1e (%.1f)" % (max(diffs), scale)) if diffs else "–"])
    lines.append(harness.markdown_table(header, table))
    with open(os.path.join(results, args.name + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        plot(rows, os.path.join(results, args.name + ".png"), args.threads,
             args.compute)
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)


if __name__ == "__main__":
    if "--worker" in sys.argv:
        harness.worker_main(measure)
    else:
        main()
