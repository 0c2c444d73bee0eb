#!/usr/bin/env python3
"""bf16 products (issue #26): Torsor `--compute=bf16` (AMX tiles where the
CPU has them, else AVX512-BF16, else bf16-rounded f32) and Torsor f32
against PyTorch in bfloat16 and float32, side by side in one run.

Sections (--sections, default all three):
- matmul:    y = x @ W, x [L, d], W [d, n] at the models' shapes (as
             bench/bench_dense.py). Torsor: a one-line .tsr compiled by
             torsorc -O2 for the host CPU, timed by torsor-run --time
             (median; the whole forward call: A packing and output
             allocation included, W packed once per load by torsor_prepare).
             torch: torch.mm on bfloat16 and float32 tensors.
- attention: Lie attention (SO(3), SE(3), SE(2), --groups; heads 1 and 4,
             --heads; dv = 64; L from --lengths, 1024-16384) compiled with
             --compute=bf16 (P·V on vdpbf16ps where the CPU has
             AVX512-BF16) and f32, against SDPA in bfloat16 (same L,
             heads, dv) and the chunked PyTorch closed form
             (bench/lie_peers.py) under torch.autocast("cpu",
             torch.bfloat16). The bound column is bench/machine_bound.py's
             per-pair cost with P·V at dv/2 FMA slots (vdpbf16ps: two
             products per lane), measured on this machine.
- models:    grassmann_lm and se3_pose_attention (examples/) with
             --compute=bf16 and f32, against PyTorch eager and
             torch.compile under bf16 autocast (the PyTorch models of
             bench/bench_models.py), L from --model-lengths.
Torsor runs in-process through the C API (bench/torsor_ctypes.py, the
forward call only). Every time is the median of harness.time_calls; the
error column is max|y - ref| / max|ref| (matmul: against float64 NumPy;
attention and models: against the f32 Torsor build, whose accuracy against
float64 the tests check).

Not part of `make test`; run it on a quiet machine (torch venv:
bench/setup-venv.sh). Usage:
  /work/bench-venv/bin/python bench/bench_bf16.py [--build build]
      [--threads 2] [--runs 10] [--sections matmul attention models]
      [--lengths 1024 4096 16384] [--groups SO3 SE3 SE2] [--heads 1 4]
      [--model-lengths 256 1024 4096] [--shapes LxDxN ...]
      [--tiny] [--results DIR]
Writes DIR/bf16.json, DIR/bf16.md and DIR/bf16.png (DIR: bench/results).
--tiny runs tiny sizes (a smoke check of the script, not a measurement).
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
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
SHAPES = [(64, 256, 256), (1024, 256, 1024), (1024, 1024, 1024),
          (4096, 256, 1024), (4096, 1024, 256), (2048, 2048, 2048),
          (16384, 256, 256)]
TINY = [(40, 64, 48)]
GROUPS = ("SO3", "SE3", "SE2")
HEADS = (1, 4)
DV = 64
MODELS = ("grassmann_lm", "se3_pose_attention")

from harness import matmul_tsr, median_time, torsor_run_time  # noqa: E402


def torsorc(args, tsr, so, compute):
    subprocess.run([os.path.join(args.build, "bin", "torsorc"), tsr, "-o", so,
                    "-O2", "--compute=" + compute], check=True)
    with open(so[:-3] + ".json") as f:
        manifest = json.load(f)
    unit = "amx" if manifest.get("amx") else (
        "bf16" if compute == "bf16" else "f32")
    return manifest, unit


def runtime(args):
    from torsor_ctypes import Runtime
    rt = Runtime(os.path.join(args.build, "lib", "libtorsor_runtime.so"))
    rt.set_threads(args.threads)
    return rt


def time_torsor(rt, so, inputs, params, output, runs):
    """(seconds, output): median forward call of the model at `so`."""
    m = rt.load(so)
    for k, v in inputs.items():
        m.bind_input(k, v)
    for k, v in params.items():
        m.bind_param(k, v)
    t = median_time(m.run, runs)
    return t, m.output(output)


def rel_err(y, ref):
    import numpy as np
    y = np.asarray(y, np.float64)
    return float(np.max(np.abs(y - ref)) / max(np.max(np.abs(ref)), 1e-300))


# --- matmul ------------------------------------------------------------------------

def torsor_matmul_time(args, tmp, d, n, compute, x, w):
    """(seconds, output, unit) of the Torsor build for `compute`, timed by
    torsor-run --time (load and W packing outside the timed calls)."""
    import numpy as np
    from model_runner import write_safetensors
    tsr = os.path.join(tmp, "mm.tsr")
    with open(tsr, "w") as f:
        f.write(matmul_tsr(d, n))
    so = os.path.join(tmp, "mm_%s_%d_%d.so" % (compute, d, n))
    _, unit = torsorc(args, tsr, so, compute)
    np.save(os.path.join(tmp, "x.npy"), x)
    write_safetensors(os.path.join(tmp, "w.safetensors"), {"W": w}, "f32")
    out = os.path.join(tmp, "y.npy")
    t = torsor_run_time(args.build, so, {"x": os.path.join(tmp, "x.npy")},
                        os.path.join(tmp, "w.safetensors"), {"y": out},
                        args.threads, args.runs)
    return t, np.load(out), unit


def shape(text):
    """An LxDxN matmul shape of --shapes."""
    try:
        L, d, n = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("expected LxDxN, got %r" % text)
    return L, d, n


def bench_matmul(args, torch, tmp, rng):
    import numpy as np
    rows = []
    for L, d, n in (TINY if args.tiny else args.shapes or SHAPES):
        x = rng.standard_normal((L, d)).astype(np.float32)
        w = (rng.standard_normal((d, n)) / np.sqrt(d)).astype(np.float32)
        ref = x.astype(np.float64) @ w.astype(np.float64)
        flop = 2.0 * L * d * n
        row = {"L": L, "d": d, "n": n}
        for compute in ("f32", "bf16"):
            t, y, unit = torsor_matmul_time(args, tmp, d, n, compute, x, w)
            row["torsor_%s_ms" % compute] = t * 1e3
            row["torsor_%s_gflops" % compute] = flop / t / 1e9
            row["torsor_%s_err" % compute] = rel_err(y, ref)
            row["torsor_%s_unit" % compute] = unit
        if torch is not None:
            for name, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
                tx, tw = torch.from_numpy(x).to(dt), torch.from_numpy(w).to(dt)
                t = median_time(lambda: torch.mm(tx, tw), args.runs)
                row["torch_%s_ms" % name] = t * 1e3
                row["torch_%s_gflops" % name] = flop / t / 1e9
        rows.append(row)
        print("matmul L=%5d d=%4d n=%4d  torsor f32 %7.1f  bf16(%s) %7.1f GFLOP/s "
              "(err %.1e)  torch f32 %s  bf16 %s" % (
                  L, d, n, row["torsor_f32_gflops"], row["torsor_bf16_unit"],
                  row["torsor_bf16_gflops"], row["torsor_bf16_err"],
                  "%7.1f" % row["torch_f32_gflops"] if torch else "-",
                  "%7.1f" % row["torch_bf16_gflops"] if torch else "-"),
              flush=True)
    return rows


# --- Lie attention -----------------------------------------------------------------

def attention_bound(args):
    """bound(group, heads, L) in ms: bench/machine_bound.py's per-pair cost
    with P·V at dv/2 FMA slots (bf16 pairs), or None where microbench.c
    cannot run."""
    import machine_bound as mbnd
    try:
        mb = mbnd.run_microbench(args.threads)
    except Exception as e:  # no cc, no libmvec, no AVX-512
        print("machine bound: not measured (%s)" % e)
        return None
    info = mbnd.cpu_info()
    rate = mb["fma"]
    separate = mbnd.separate_add_pipes(info)

    def bound(group, heads, L):
        cost = mbnd.pair_cost(group, heads, DV, pv_fma_per_dv=0.5)
        ns, _ = mbnd.bound_ns(cost, rate, mb["div"], mb["sqrtf"], separate)
        return float(L) ** 2 * ns * 1e-6
    return bound


def bench_attention(args, torch, tmp, rt):
    import numpy as np
    import lie_peers
    rows = []
    lengths = [64] if args.tiny else args.lengths
    bound = attention_bound(args)
    for group in args.groups:
        for heads in args.heads:
            sos = {}
            for compute in ("f32", "bf16"):
                tsr = os.path.join(tmp, "att_%s_%d.tsr" % (group, heads))
                with open(tsr, "w") as f:
                    f.write(lie_peers.tsr_model(group, heads, DV))
                so = os.path.join(tmp, "att_%s_%d_%s.so" % (group, heads, compute))
                sos[compute] = (so, torsorc(args, tsr, so, compute)[1])
            for L in lengths:
                g64, v64 = lie_peers.random_inputs(group, L, DV, seed=L)
                g, v = g64.astype(np.float32), v64.astype(np.float32)
                row = {"group": group, "heads": heads, "L": L}
                if bound is not None:
                    row["bound_bf16_ms"] = bound(group, heads, L)
                ys = {}
                for compute, (so, unit) in sos.items():
                    t, ys[compute] = time_torsor(rt, so, {"g": g, "v": v}, {}, "y",
                                                 args.runs)
                    row["torsor_%s_ms" % compute] = t * 1e3
                    row["torsor_%s_unit" % compute] = unit
                # Against Torsor f32 (the tests check it against float64).
                ref = np.asarray(ys["f32"], np.float64)
                row["torsor_bf16_err"] = rel_err(ys["bf16"], ref)
                if torch is not None:
                    cf = torch.from_numpy(lie_peers.coef(group, heads).astype(np.float32))
                    gt, vt = torch.from_numpy(g), torch.from_numpy(v)
                    C = lie_peers.chunk_rows(L, 1 << 20)
                    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):
                        fn = lambda: lie_peers.torch_chunked(  # noqa: E731
                            torch, group, gt, vt, cf, C)
                        row["torch_chunked_bf16_ms"] = median_time(fn, args.runs) * 1e3
                        row["torch_chunked_bf16_err"] = rel_err(
                            fn().float().numpy(), ref)
                    rng = np.random.default_rng(L)
                    q, k, vv = (torch.from_numpy(rng.standard_normal(
                        (1, heads, L, DV // heads)).astype(np.float32)).to(torch.bfloat16)
                        for _ in range(3))
                    with torch.no_grad():
                        row["sdpa_bf16_ms"] = median_time(
                            lambda: torch.nn.functional.scaled_dot_product_attention(
                                q, k, vv), args.runs) * 1e3
                rows.append(row)
                print("attention %s H=%d L=%6d  torsor f32 %8.2f ms  bf16(%s) %8.2f ms  "
                      "torch chunked bf16 %s  SDPA bf16 %s  bound %s  err %.1e" % (
                          group, heads, L, row["torsor_f32_ms"],
                          row["torsor_bf16_unit"], row["torsor_bf16_ms"],
                          "%8.2f" % row["torch_chunked_bf16_ms"] if torch else "-",
                          "%8.2f" % row["sdpa_bf16_ms"] if torch else "-",
                          "%.2f" % row["bound_bf16_ms"] if "bound_bf16_ms" in row else "-",
                          row["torsor_bf16_err"]),
                      flush=True)
    return rows


# --- whole models ------------------------------------------------------------------

def bench_models(args, torch, tmp, rt):
    import numpy as np
    import bench_models as bm
    rows = []
    lengths = [16] if args.tiny else args.model_lengths
    rng = np.random.default_rng(1)
    for model in MODELS:
        tsr = os.path.join(ROOT, "examples", model + ".tsr")
        sos = {}
        for compute in ("f32", "bf16"):
            so = os.path.join(tmp, "%s_%s.so" % (model, compute))
            manifest, unit = torsorc(args, tsr, so, compute)
            sos[compute] = (so, unit)
        output = manifest["outputs"][0]["name"]
        peers = {}
        if torch is not None:
            eager = {"grassmann_lm": bm.grassmann_lm_torch,
                     "se3_pose_attention": bm.se3_pose_attention_torch}[model](torch)
            peers = {"eager": eager,
                     "compile": torch.compile(eager, dynamic=False)}
        for L in lengths:
            inputs, params = bm.make_data(np, manifest, model, L, rng)
            row = {"model": model, "L": L}
            ys = {}
            for compute, (so, unit) in sos.items():
                t, ys[compute] = time_torsor(rt, so, inputs, params, output, args.runs)
                row["torsor_%s_ms" % compute] = t * 1e3
                row["torsor_%s_unit" % compute] = unit
            ref = np.asarray(ys["f32"], np.float64)
            row["torsor_bf16_err"] = rel_err(ys["bf16"], ref)
            if torch is not None:
                ti = {k: torch.from_numpy(v) for k, v in inputs.items()}
                tp = {k: torch.from_numpy(v) for k, v in params.items()}
                for name, fn in peers.items():
                    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):
                        call = lambda: fn(ti, tp)  # noqa: E731
                        call()  # compile / warm up outside the timing
                        row["torch_%s_bf16_ms" % name] = median_time(call, args.runs) * 1e3
                        row["torch_%s_bf16_err" % name] = rel_err(
                            call().float().numpy(), ref)
            rows.append(row)
            print("model %s L=%5d  torsor f32 %8.2f ms  bf16(%s) %8.2f ms (err %.1e)  "
                  "torch eager bf16 %s  compile bf16 %s" % (
                      model, L, row["torsor_f32_ms"], row["torsor_bf16_unit"],
                      row["torsor_bf16_ms"], row["torsor_bf16_err"],
                      "%8.2f" % row["torch_eager_bf16_ms"] if torch else "-",
                      "%8.2f" % row["torch_compile_bf16_ms"] if torch else "-"),
                  flush=True)
    return rows


# --- report ------------------------------------------------------------------------

def fmt(row, key, spec="%.2f"):
    return spec % row[key] if row.get(key) is not None else "-"


def ratio(row, a, b):
    return "%.2f" % (row[a] / row[b]) if row.get(a) and row.get(b) else "-"


def markdown(meta, sections):
    out = ["# bf16 products, %d threads (%s; load %.1f → %.1f)\n"
           % (meta["threads"], meta["date"], meta["load_start"][0],
              meta["load_end"][0])]
    if "matmul" in sections:
        out += ["## matmul (GFLOP/s)\n",
                "| L | d | n | Torsor f32 | Torsor bf16 (unit) | torch f32 | "
                "torch bf16 | Torsor bf16 / torch bf16 | Torsor bf16 / Torsor f32 "
                "| bf16 err |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in sections["matmul"]:
            out.append("| %d | %d | %d | %s | %s (%s) | %s | %s | %s | %s | %s |" % (
                r["L"], r["d"], r["n"], fmt(r, "torsor_f32_gflops", "%.1f"),
                fmt(r, "torsor_bf16_gflops", "%.1f"), r["torsor_bf16_unit"],
                fmt(r, "torch_f32_gflops", "%.1f"), fmt(r, "torch_bf16_gflops", "%.1f"),
                ratio(r, "torsor_bf16_gflops", "torch_bf16_gflops"),
                ratio(r, "torsor_bf16_gflops", "torsor_f32_gflops"),
                fmt(r, "torsor_bf16_err", "%.1e")))
        out.append("")
    if "attention" in sections:
        out += ["## Lie attention, dv = %d (ms)\n" % DV,
                "| group | heads | L | Torsor f32 | Torsor bf16 (unit) | "
                "torch chunked, bf16 autocast | SDPA bf16 | Torsor bf16 / SDPA bf16 "
                "| bound (bf16 P·V) | Torsor bf16 / bound | bf16 err vs f32 |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sections["attention"]:
            out.append("| %s | %d | %d | %s | %s (%s) | %s | %s | %s | %s | %s | %s |" % (
                r["group"], r["heads"], r["L"], fmt(r, "torsor_f32_ms"),
                fmt(r, "torsor_bf16_ms"), r["torsor_bf16_unit"],
                fmt(r, "torch_chunked_bf16_ms"), fmt(r, "sdpa_bf16_ms"),
                ratio(r, "torsor_bf16_ms", "sdpa_bf16_ms"),
                fmt(r, "bound_bf16_ms"), ratio(r, "torsor_bf16_ms", "bound_bf16_ms"),
                fmt(r, "torsor_bf16_err", "%.1e")))
        out.append("")
    if "models" in sections:
        out += ["## Whole models (ms)\n",
                "| model | L | Torsor f32 | Torsor bf16 (unit) | torch eager, bf16 "
                "autocast | torch.compile, bf16 autocast | torch.compile / Torsor "
                "bf16 | bf16 err vs f32 |", "|---|---|---|---|---|---|---|---|"]
        for r in sections["models"]:
            out.append("| %s | %d | %s | %s (%s) | %s | %s | %s | %s |" % (
                r["model"], r["L"], fmt(r, "torsor_f32_ms"), fmt(r, "torsor_bf16_ms"),
                r["torsor_bf16_unit"], fmt(r, "torch_eager_bf16_ms"),
                fmt(r, "torch_compile_bf16_ms"),
                ratio(r, "torch_compile_bf16_ms", "torsor_bf16_ms"),
                fmt(r, "torsor_bf16_err", "%.1e")))
        out.append("")
    return "\n".join(out) + "\n"


def plot(sections, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    panels = [k for k in ("matmul", "attention", "models") if sections.get(k)]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5),
                             squeeze=False)
    for ax, key in zip(axes[0], panels):
        rows = sections[key]
        if key == "matmul":
            labels = ["%d·%d·%d" % (r["L"], r["d"], r["n"]) for r in rows]
            series = [("Torsor f32", "torsor_f32_gflops"),
                      ("Torsor bf16", "torsor_bf16_gflops"),
                      ("torch f32", "torch_f32_gflops"),
                      ("torch bf16", "torch_bf16_gflops")]
            ax.set_ylabel("GFLOP/s")
        elif key == "attention":
            labels = ["%s H%d L%d" % (r["group"], r["heads"], r["L"]) for r in rows]
            series = [("Torsor f32", "torsor_f32_ms"), ("Torsor bf16", "torsor_bf16_ms"),
                      ("torch chunked bf16", "torch_chunked_bf16_ms"),
                      ("SDPA bf16", "sdpa_bf16_ms")]
            ax.set_ylabel("ms")
            ax.set_yscale("log")
        else:
            labels = ["%s L%d" % (r["model"][:9], r["L"]) for r in rows]
            series = [("Torsor f32", "torsor_f32_ms"), ("Torsor bf16", "torsor_bf16_ms"),
                      ("torch eager bf16", "torch_eager_bf16_ms"),
                      ("torch.compile bf16", "torch_compile_bf16_ms")]
            ax.set_ylabel("ms")
            ax.set_yscale("log")
        width = 0.8 / len(series)
        for i, (name, k) in enumerate(series):
            xs = [j + i * width for j, r in enumerate(rows) if r.get(k)]
            ys = [r[k] for r in rows if r.get(k)]
            if ys:
                ax.bar(xs, ys, width, label=name)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))])
        ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        ax.set_title(key)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--sections", nargs="+", default=["matmul", "attention", "models"],
                    choices=["matmul", "attention", "models"])
    ap.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096, 16384])
    ap.add_argument("--groups", nargs="+", default=list(GROUPS), choices=list(GROUPS))
    ap.add_argument("--heads", type=int, nargs="+", default=list(HEADS))
    ap.add_argument("--model-lengths", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--shapes", type=shape, nargs="+", default=None,
                    help="matmul shapes LxDxN (default: the models' shapes)")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    load_start = os.getloadavg()
    import numpy as np
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
        print("torch not found: Torsor only (bench/setup-venv.sh makes a venv)")
    rng = np.random.default_rng(0)
    sections = {}
    with tempfile.TemporaryDirectory(prefix="torsor-bench-bf16-") as tmp:
        rt = runtime(args)
        if "matmul" in args.sections:
            sections["matmul"] = bench_matmul(args, torch, tmp, rng)
        if "attention" in args.sections:
            sections["attention"] = bench_attention(args, torch, tmp, rt)
        if "models" in args.sections:
            sections["models"] = bench_models(args, torch, tmp, rt)
    os.makedirs(args.results, exist_ok=True)
    meta = {"threads": args.threads, "runs": args.runs, "load_start": load_start,
            "load_end": os.getloadavg(), "tiny": args.tiny,
            "torch": getattr(torch, "__version__", None),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    with open(os.path.join(args.results, "bf16.json"), "w") as f:
        json.dump(dict(meta, **sections), f, indent=1)
    with open(os.path.join(args.results, "bf16.md"), "w") as f:
        f.write(markdown(meta, sections))
    plot(sections, os.path.join(args.results, "bf16.png"))
    print("wrote", os.path.join(args.results, "bf16.{json,md,png}"))


if __name__ == "__main__":
    main()
