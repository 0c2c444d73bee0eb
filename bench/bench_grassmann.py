#!/usr/bin/env python3
"""Grassmann mixing (geo.grassmann_mix, MATH.md §3): Torsor's fused
lowering (geo-fuse-grassmann) vs PyTorch, side by side in one run.

Paper settings: d = 256, r = 32, offsets {1, 2, 4, 8, 12, 16}, causal, f32.
- torsor:   a .tsr with one grassmann_mix, torsorc -O2 (host CPU),
            torsor-run --time (median of N runs after a warm-up).
- naive:    PyTorch eager, the formula as written: per offset the L × C(r,2)
            Plücker coordinates, their norm, W_plü, bias, then the mean.
- bilinear: PyTorch eager with the Lagrange norm and B(z_t) = Σ_a z_ta A_a
            built once per token (chunks of 1024 tokens) and applied to every
            offset's partner: the best form MATH.md §3 names.
- wsum:     PyTorch eager with Torsor's own algorithm (one W_plü (z_t ∧ w_t)
            per token, w_t the offsets' projected, normalised partners).
- compile:  torch.compile of `bilinear` and `wsum` (--compile; slow to build).
All runs use --threads threads. Every output is compared with Torsor's.

Not part of `make test`. Needs torch. Usage:
  python3 bench/bench_grassmann.py [--build build] [--sizes 4096 16384]
      [--threads 2] [--runs 3] [--compile]
Writes bench/results/grassmann.json and bench/results/grassmann.md.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from harness import median_time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
D, R, OFFSETS, EPS = 256, 32, (1, 2, 4, 8, 12, 16), 1e-6
P = R * (R - 1) // 2

MODEL = """model GM {
  dim L;
  dim D = %d;
  dim R = %d;
  dim P = %d;
  dim G = %d;
  input x: f32[L, D];
  param w_red: f32[R, D];
  param b_red: f32[R];
  param w_plu: f32[D, P];
  param b_plu: f32[D];
  param w_gate: f32[D, G];
  param b_gate: f32[D];
  output y = grassmann_mix(x, r = R, w_red = w_red, b_red = b_red,
                           w_plucker = w_plu, b_plucker = b_plu,
                           w_gate = w_gate, b_gate = b_gate,
                           offsets = [%s], causal = true);
}
""" % (D, R, P, 2 * D, ", ".join(map(str, OFFSETS)))


def torch_forms(torch):
    ia, ib = zip(*[(a, b) for a in range(R) for b in range(a + 1, R)])
    ia, ib = torch.tensor(ia), torch.tensor(ib)

    def gate(h, g, W):
        alpha = torch.sigmoid(torch.cat([h, g], -1) @ W["w_gate"].T + W["b_gate"])
        return alpha * h + (1 - alpha) * g

    def counts(L):
        t = torch.arange(L)
        return sum((t >= dl).float() for dl in OFFSETS)[:, None]

    def naive(h, W):
        L = h.shape[0]
        z = h @ W["w_red"].T + W["b_red"]
        acc = torch.zeros_like(h)
        for dl in OFFSETS:
            if dl >= L:
                continue
            u, v = z[dl:], z[:L - dl]
            p = u[:, ia] * v[:, ib] - u[:, ib] * v[:, ia]
            p = p / p.norm(dim=-1, keepdim=True).clamp_min(EPS)
            acc[dl:] += p @ W["w_plu"].T + W["b_plu"]
        return gate(h, acc / counts(L).clamp_min(1), W)

    def antisym(W):
        A = torch.zeros(D, R, R)
        A[:, ia, ib] = W["w_plu"]
        A[:, ib, ia] = -W["w_plu"]
        return A.permute(1, 0, 2).contiguous()       # [a, k, b]

    def bilinear(h, W, A, chunk=1024):
        L = h.shape[0]
        z = h @ W["w_red"].T + W["b_red"]
        n2 = (z * z).sum(-1)
        acc = torch.zeros_like(h)
        for s in range(0, L, chunk):
            e = min(s + chunk, L)
            B = (z[s:e] @ A.reshape(R, D * R)).reshape(e - s, D, R)  # B(z_t)
            t = torch.arange(s, e)
            for dl in OFFSETS:
                ok = t >= dl
                if not ok.any():
                    continue
                u, v = z[s:e][ok], z[t[ok] - dl]
                dot = (u * v).sum(-1)
                norm = (n2[s:e][ok] * n2[t[ok] - dl] - dot * dot).clamp_min(0).sqrt()
                gd = torch.bmm(B[ok], v[:, :, None])[:, :, 0]
                acc[s:e][ok] += gd / norm.clamp_min(EPS)[:, None] + W["b_plu"]
        return gate(h, acc / counts(L).clamp_min(1), W)

    def wsum(h, W):
        L = h.shape[0]
        z = h @ W["w_red"].T + W["b_red"]
        zd = z.double()
        n2 = (zd * zd).sum(-1)
        w = torch.zeros_like(zd)
        for dl in OFFSETS:
            if dl >= L:
                continue
            u, v = zd[dl:], zd[:L - dl]
            dot = (u * v).sum(-1)
            c = 1 / (n2[dl:] * n2[:L - dl] - dot * dot).clamp_min(0).sqrt().clamp_min(EPS)
            s = dot / torch.where(n2[dl:] > 0, n2[dl:], torch.ones_like(dot))
            w[dl:] += c[:, None] * (v - s[:, None] * u)
        wf = w.float()
        q = z[:, ia] * wf[:, ib] - z[:, ib] * wf[:, ia]
        cnt = counts(L)
        g = torch.where(cnt > 0, (q @ W["w_plu"].T) / cnt.clamp_min(1) + W["b_plu"],
                        torch.zeros(()))
        return gate(h, g, W)

    return naive, bilinear, wsum, antisym


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 16384])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--name", default="grassmann",
                    help="results file stem under bench/results/")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    # Timings on a loaded machine are noise: the report says how loaded.
    load_start = os.getloadavg()
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
    from model_runner import write_safetensors
    naive, bilinear, wsum, antisym = torch_forms(torch)
    rng = np.random.default_rng(0)
    shapes = {"w_red": (R, D), "b_red": (R,), "w_plu": (D, P), "b_plu": (D,),
              "w_gate": (D, 2 * D), "b_gate": (D,)}
    Wn = {k: (rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)
          for k, s in shapes.items()}
    W = {k: torch.from_numpy(v) for k, v in Wn.items()}
    A = antisym(W)
    rows = []
    with tempfile.TemporaryDirectory(prefix="torsor-bench-") as tmp:
        tsr, so = os.path.join(tmp, "gm.tsr"), os.path.join(tmp, "gm.so")
        with open(tsr, "w") as f:
            f.write(MODEL)
        subprocess.run([os.path.join(args.build, "bin", "torsorc"), tsr, "-o",
                        so, "-O2"], check=True)
        write_safetensors(os.path.join(tmp, "w.safetensors"), Wn, "f32")
        forms = {"naive": lambda h: naive(h, W),
                 "bilinear": lambda h: bilinear(h, W, A),
                 "wsum": lambda h: wsum(h, W)}
        if args.compile:
            cb, cw = torch.compile(bilinear), torch.compile(wsum)
            forms["compile(bilinear)"] = lambda h: cb(h, W, A)
            forms["compile(wsum)"] = lambda h: cw(h, W)
        for L in args.sizes:
            x = rng.standard_normal((L, D)).astype(np.float32)
            np.save(os.path.join(tmp, "x.npy"), x)
            out = os.path.join(tmp, "y.npy")
            run = subprocess.run(
                [os.path.join(args.build, "bin", "torsor-run"), so,
                 "--input", "x=" + os.path.join(tmp, "x.npy"),
                 "--weights", os.path.join(tmp, "w.safetensors"),
                 "--output", "y=" + out, "--threads", str(args.threads),
                 "--time", str(args.runs)],
                check=True, capture_output=True, text=True)
            line = [s for s in run.stdout.splitlines() if s.startswith("time:")][0]
            row = {"L": L, "torsor_ms": float(line.split("median")[1].split("ms")[0])}
            y = np.load(out)
            h = torch.from_numpy(x)
            with torch.no_grad():
                for name, fn in forms.items():
                    row[name + "_ms"] = median_time(lambda: fn(h), args.runs) * 1e3
                    row[name + "_max_abs_diff"] = float(
                        np.max(np.abs(fn(h).numpy() - y)))
            rows.append(row)
            print(json.dumps(row), flush=True)
    results = os.path.join(ROOT, "bench", "results")
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, args.name + ".json"), "w") as f:
        json.dump({"threads": args.threads, "runs": args.runs,
                   "load_start": load_start, "load_end": os.getloadavg(),
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "d": D, "r": R,
                   "offsets": OFFSETS, "rows": rows}, f, indent=1)
    names = list(forms)
    with open(os.path.join(results, args.name + ".md"), "w") as f:
        f.write("%s, %d threads, load average %.1f at the start, %.1f at "
                "the end.\n\n" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                   args.threads, load_start[0], os.getloadavg()[0]))
        f.write("| L | Torsor ms | " + " | ".join("%s ms" % n for n in names) +
                " | best PyTorch / Torsor | max abs diff (all forms) |\n")
        f.write("|---" * (len(names) + 4) + "|\n")
        for r in rows:
            best = min(r[n + "_ms"] for n in names)
            diff = max(r[n + "_max_abs_diff"] for n in names)
            f.write("| %d | %.1f | " % (r["L"], r["torsor_ms"]) +
                    " | ".join("%.1f" % r[n + "_ms"] for n in names) +
                    " | %.2f | %.1e |\n" % (best / r["torsor_ms"], diff))
    try:
        plot(rows, names, os.path.join(results, args.name + ".png"), args.threads)
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)


def plot(rows, names, path, threads):
    """Grouped bars: ms per call of Torsor and every PyTorch form, per L."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    forms = ["torsor"] + names
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    width = 0.8 / len(forms)
    for i, form in enumerate(forms):
        xs = [j + i * width for j in range(len(rows))]
        ax.bar(xs, [r[form + "_ms"] for r in rows], width, label=form)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))])
    ax.set_xticklabels(["L = %d" % r["L"] for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("ms per call (median)")
    ax.set_title("grassmann_mix d=256 r=32 6 offsets causal, f32, %d threads"
                 % threads)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
