#!/usr/bin/env python3
"""The ring's overhead on one machine: torsor.distributed.RingLieAttention on
2 ranks × 1 thread against torsor.nn.LieAttention in 1 process × 2 threads
(issue #23, item 5).

Same total cores, same sequence: SE(3), dv = 64, 4 heads, f32, causal with
the zigzag layout (--layout contiguous for the other), L = 8192 and 16384.
Modes: forward (under torch.no_grad) and forward+backward (y·c summed,
backward). The ratio ring / single is the ring's overhead on this machine:
communication (gloo over loopback), the lse merge, the per-block kernel
calls and any imbalance between the ranks. Each (L, setup) runs in a fresh
process tree (bench/harness.py's protocol); the ring's time per call is the
slowest rank's (all ranks start each call after a barrier, and the call's
time is all-reduced with MAX). Before timing, the ring's rows are checked
against the single process's output (max relative difference reported).

    /work/bench-venv/bin/python bench/bench_ring.py                    # L = 8192, 16384
    /work/bench-venv/bin/python bench/bench_ring.py --sizes 256 --reps 3   # a smoke run
    /work/bench-venv/bin/python bench/bench_ring.py --readme       # and the bench/README.md table

Writes bench/results/ring.{json,md}. Needs a quiet machine with at least
2 cores; never part of make test. The goal (issue #23): forward+backward
ring / single ≤ 1.3 at L = 16384.
"""
import argparse
import datetime
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import harness  # noqa: E402

GROUP, HEADS, TAU = "SE3", 4, [0.5, 1.0, 2.0, 4.0]
LAM = [[1.0, 0.1], [1.0, 0.5], [1.0, 1.0], [0.5, 2.0]]


def inputs(L, dv, seed=0):
    """The same g [1, L, 4, 4], v [1, L, dv] and cotangent in every process."""
    import numpy as np
    import torch
    import torsor
    rng = np.random.default_rng(seed)
    g = torch.tensor(torsor.groups.random(GROUP, (1, L), seed=rng, dtype="f32"))
    v = torch.tensor(rng.standard_normal((1, L, dv)), dtype=torch.float32)
    c = torch.tensor(rng.standard_normal((1, L, dv)), dtype=torch.float32)
    return g, v, c


def _timed(fn, spec, sync=lambda t: t):
    """(forward times, forward+backward times) in s, each after warm-ups."""
    out = {}
    for mode in ("fwd", "fwd_bwd"):
        times = []
        for i in range(spec["warmup"] + spec["reps"]):
            t = sync(fn(mode))
            if i >= spec["warmup"]:
                times.append(t)
        out[mode] = times
    return out


def measure_single(spec):
    import torch
    import torsor
    import torsor.nn as tnn
    torch.set_num_threads(spec["threads"])
    torsor.set_num_threads(spec["threads"])
    g, v, c = inputs(spec["L"], spec["dv"])
    attn = tnn.LieAttention(GROUP, heads=HEADS, tau=TAU, lam=LAM, causal=spec["causal"])
    with torch.no_grad():
        y = attn(g, v)
    torch.save(y, spec["out"])

    def call(mode):
        t0 = time.perf_counter()
        if mode == "fwd":
            with torch.no_grad():
                attn(g, v)
        else:
            vv = v.clone().requires_grad_()
            gg = g.clone().requires_grad_()
            (attn(gg, vv) * c).sum().backward()
        return time.perf_counter() - t0
    times = _timed(call, spec)
    return {"status": "ok", **{m: harness.summarize(t) for m, t in times.items()}}


def _rank(rank, spec, folder):
    import torch
    import torch.distributed as dist
    import torsor
    import torsor.distributed as tdist
    os.sched_setaffinity(0, [sorted(os.sched_getaffinity(0))[rank % len(
        os.sched_getaffinity(0))]])
    torch.set_num_threads(1)
    torsor.set_num_threads(1)
    P = spec["ranks"]
    dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "rdv"),
                            rank=rank, world_size=P,
                            timeout=datetime.timedelta(seconds=spec["timeout"]))
    g, v, c = inputs(spec["L"], spec["dv"])
    lay = spec["layout"]
    g_r = tdist.shard(g, rank, P, lay, dim=-3)
    v_r = tdist.shard(v, rank, P, lay)
    c_r = tdist.shard(c, rank, P, lay)
    attn = tdist.RingLieAttention(GROUP, heads=HEADS, tau=TAU, lam=LAM, causal=spec["causal"],
                                  layout=lay)
    with torch.no_grad():
        y = attn(g_r, v_r)
    torch.save(y, os.path.join(folder, "y%d.pt" % rank))

    def call(mode):
        dist.barrier()
        t0 = time.perf_counter()
        if mode == "fwd":
            with torch.no_grad():
                attn(g_r, v_r)
        else:
            vv = v_r.clone().requires_grad_()
            gg = g_r.clone().requires_grad_()
            (attn(gg, vv) * c_r).sum().backward()
        return time.perf_counter() - t0

    def slowest(t):
        x = torch.tensor([t], dtype=torch.float64)
        dist.all_reduce(x, op=dist.ReduceOp.MAX)
        return float(x)
    times = _timed(call, spec, slowest)
    if rank == 0:
        with open(os.path.join(folder, "times.json"), "w") as f:
            json.dump(times, f)
    dist.destroy_process_group()


def measure_ring(spec):
    import torch
    import torch.multiprocessing as mp
    import torsor.distributed as tdist
    with tempfile.TemporaryDirectory(prefix="bench-ring-") as folder:
        mp.start_processes(_rank, args=(spec, folder), nprocs=spec["ranks"], join=True,
                           start_method="spawn")
        with open(os.path.join(folder, "times.json")) as f:
            times = json.load(f)
        P = spec["ranks"]
        y = tdist.unshard([torch.load(os.path.join(folder, "y%d.pt" % r)) for r in range(P)],
                          spec["layout"])
    ref = torch.load(spec["out"])
    err = float((y - ref).abs().max() / ref.abs().max())
    return {"status": "ok", "max_rel_diff": err,
            **{m: harness.summarize(t) for m, t in times.items()}}


def measure(spec):
    return measure_single(spec) if spec["setup"] == "single" else measure_ring(spec)


def _cell(stats):
    """"median (min–max)" of one setup's summary, or – when it has none."""
    if not stats:
        return "–"
    return "%s (%s–%s)" % (harness.fmt_ms(stats["median_ms"]), harness.fmt_ms(stats["min_ms"]),
                           harness.fmt_ms(stats["max_ms"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[8192, 16384])
    ap.add_argument("--dv", type=int, default=64)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--layout", choices=["zigzag", "contiguous"], default="zigzag")
    ap.add_argument("--no-causal", dest="causal", action="store_false")
    ap.add_argument("--reps", type=int, default=7, help="timed calls per mode (default 7)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per measurement")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--readme", action="store_true",
                    help="print the table for bench/README.md")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        harness.worker_main(measure)
        return 0
    env = dict(harness.GLIBC_TUNED, TORSOR_BUILD_DIR=os.path.abspath(args.build))
    rows, results = [], []
    with tempfile.TemporaryDirectory(prefix="bench-ring-ref-") as tmp:
        for L in args.sizes:
            ref = os.path.join(tmp, "y%d.pt" % L)
            base = dict(L=L, dv=args.dv, causal=args.causal, reps=args.reps,
                        warmup=args.warmup, out=ref, timeout=args.timeout)
            single = harness.run_worker(
                [sys.executable, __file__],
                dict(base, setup="single", threads=args.ranks),
                dict(env, **harness.thread_env(args.ranks)), args.timeout)
            ring = harness.run_worker(
                [sys.executable, __file__],
                dict(base, setup="ring", threads=args.ranks, ranks=args.ranks,
                     layout=args.layout),
                dict(env, **harness.thread_env(1)), args.timeout) if single.get(
                "status") == "ok" else {"status": "skipped", "reason": "single failed"}
            results.append({"L": L, "single": single, "ring": ring})
            why = (ring.get("reason") or single.get("reason") or "–").strip()
            why = why.splitlines()[-1][:100] if why else "–"
            for mode in ("fwd", "fwd_bwd"):
                s, r = single.get(mode, {}), ring.get(mode, {})
                ratio = (r["median_ms"] / s["median_ms"]) if s and r else None
                rows.append([L, mode.replace("_", "+"), _cell(s), _cell(r),
                             "%.2f×" % ratio if ratio else why,
                             "%.1e" % ring["max_rel_diff"] if "max_rel_diff" in ring else "–"])
    header = ["L", "mode", "1 process × %d threads, ms (min–max)" % args.ranks,
              "%d ranks × 1 thread, ms (min–max)" % args.ranks, "ring / single",
              "max rel diff"]
    table = harness.markdown_table(header, rows)
    print(table)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "ring.json"), "w") as f:
        json.dump({"machine": harness.machine_info(), "args": vars(args),
                   "results": results}, f, indent=1)
    with open(os.path.join(HERE, "results", "ring.md"), "w") as f:
        f.write("SE(3), dv = %d, %d heads, f32, %s, layout %s\n\n%s\n"
                % (args.dv, HEADS, "causal" if args.causal else "not causal", args.layout,
                   table))
    if args.readme:
        print("\n(paste into bench/README.md, section \"Ring attention\")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
