#!/usr/bin/env python3
"""This machine's bound for fused Lie attention: FMA throughput plus the
transcendental cost per pair.

Measured with --threads threads, one per core (microbench.c, compiled here
with the system C compiler: cc -O3 -mavx512f -mfma ... -lmvec -lpthread):
1. FMA peak: f32 FMA lane-operations per second from 12 independent zmm
   FMA chains per thread (registers only). Compared with the nominal peak =
   threads × clock × FMA units × lanes (clock: /proc/cpuinfo "cpu MHz", the
   nominal TSC clock under KVM; 2 FMA units per AVX-512 server core, an
   assumption: --fma-units; 16 f32 lanes with AVX-512).
2. Transcendental cost: ns per element (aggregate over the threads) of glibc
   libmvec's AVX-512 expf, atan2f, sinf and of vsqrtps and vdivps over an
   L1-resident array, 16 lanes at a time: what vectorized code calling
   libmvec pays. A kernel with cheaper polynomials can beat it, so this
   part of the bound is an estimate, not a proof.
3. For reference, f32 GEMM throughput (torch.mm 2048³, or numpy).

Per pair, a fused flash-style kernel needs (dv = value width, H = heads):
   ops (FMA slots) = group part + 3H (score, running max, sum) + dv (P·V)
   SO(3) group part: 36 FMA (tr M and vee(M − Mᵀ): four 9-dot products)
                     + ~8 (‖a‖², (tr − 1)/2, θ²); transcendentals sqrt,
                     atan2, and H × exp. Other groups: GROUPS below.
   bound(L) = L² × (ops / FMA lane-ops per s + Σ transcendental ns).
The same counts for L² pairs give the bound at any L (it is ∝ L²).
Usage: python3 bench/machine_bound.py [--threads 2] [--L 4096] [--heads 4] [--dv 64]
"""
import argparse
import os
import time

# ops: vector arithmetic per pair besides the per-head/P·V parts (FMA slots);
# trans: transcendental (or divide) calls per pair besides the H exps.
GROUPS = {
    "SO2": {"ops": 4 + 3, "trans": ["atan2"],
            "what": "cos/sin of θ_ij: two 2-dots; θ²"},
    "SE2": {"ops": 4 + 3 + 4 + 3, "trans": ["atan2", "sin", "div"],
            "what": "two 2-dots, ‖t_j − t_i‖² in the tile, [(θ/2)/sin(θ/2)]²"},
    "SO3": {"ops": 36 + 8, "trans": ["sqrt", "atan2"],
            "what": "tr M and vee(M − Mᵀ): four 9-dots; θ = atan2(½‖a‖, (tr − 1)/2)"},
    "SE3": {"ops": 27 + 12 + 30, "trans": ["sqrt", "atan2", "sin", "div", "div"],
            "what": "M (9 3-dots), u (3 3-dots + 3), a, ‖u‖², a·u, uᵀMu, (n·u)², ρ²"},
}


def cpu_info():
    mhz, flags, model = None, set(), "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz") and mhz is None:
                mhz = float(line.split(":")[1])
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":")[1].split())
            elif line.startswith("model name"):
                model = line.split(":")[1].strip()
    return model, mhz, flags


def measure_gemm(threads, n=2048):
    try:
        import torch
        torch.set_num_threads(threads)
        a, b = torch.randn(n, n), torch.randn(n, n)
        c = torch.empty(n, n)
        mm, what = (lambda: torch.mm(a, b, out=c)), "torch.mm"
    except ImportError:
        import numpy as np
        a = np.random.standard_normal((n, n)).astype(np.float32)
        b = a.copy()
        mm, what = (lambda: a @ b), "numpy matmul"
    mm()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        mm()
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best, what


def run_microbench(threads):
    """Compiles and runs microbench.c; returns {"fma": lane-ops/s, op: ns}."""
    import subprocess
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(tempfile.mkdtemp(prefix="torsor-bound-"), "microbench")
    subprocess.run([os.environ.get("CC", "cc"), "-O3", "-mavx512f", "-mfma",
                    os.path.join(here, "microbench.c"), "-o", exe, "-lmvec", "-lpthread"],
                   check=True)
    out = subprocess.run([exe, str(threads)], check=True, capture_output=True,
                         text=True).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--L", type=int, default=4096)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dv", type=int, default=64)
    p.add_argument("--fma-units", type=int, default=2)
    p.add_argument("--json", metavar="PATH", help="also write the bound per pair (ns) as JSON")
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cpus[:a.threads])

    model, mhz, flags = cpu_info()
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    nominal = a.threads * (mhz or 0) * 1e6 * a.fma_units * lanes * 2
    if "avx512f" not in flags:
        raise SystemExit("microbench.c needs AVX-512 (this CPU: %s)" % model)
    mb = run_microbench(a.threads)
    gemm, gemm_what = measure_gemm(a.threads)
    tr = {"sqrt": mb["sqrtf"], "atan2": mb["atan2f"], "sin": mb["sinf"], "exp": mb["expf"],
          "div": mb["div"]}
    print("machine: %s, %d threads" % (model, a.threads))
    print("nominal peak f32: %d threads x %.0f MHz x %d FMA units x %d lanes x 2 flop"
          " = %.0f GFLOP/s" % (a.threads, mhz or 0, a.fma_units, lanes, nominal / 1e9))
    print("measured FMA peak (microbench.c, registers only): %.0f GFLOP/s (%.0f%% of nominal)"
          % (2 * mb["fma"] / 1e9, 100 * 2 * mb["fma"] / nominal if nominal else 0))
    print("measured f32 GEMM (%s 2048^3): %.0f GFLOP/s (for reference)"
          % (gemm_what, gemm / 1e9))
    print("transcendentals, libmvec AVX-512 / vsqrtps / vdivps, %d threads, L1-resident "
          "(ns per element, aggregate throughput): %s"
          % (a.threads, ", ".join("%s %.3f" % kv for kv in tr.items())))
    fma_instr = mb["fma"]  # FMA lane-operations per second
    L2 = float(a.L) ** 2
    print("\nbound at L = %d, H = %d, dv = %d (per pair: ops in FMA slots + transcendentals):"
          % (a.L, a.heads, a.dv))
    print("%-5s %6s %-36s %10s %10s %10s" % ("group", "ops", "transcendentals", "FMA part",
                                             "trans part", "bound"))
    per_pair = {}
    for g, m in GROUPS.items():
        ops = m["ops"] + 3 * a.heads + a.dv
        trans = m["trans"] + ["exp"] * a.heads
        t_ops = L2 * ops / fma_instr
        t_tr = L2 * sum(tr[t] for t in trans) * 1e-9
        names = ", ".join(sorted({"%s%s" % ("%dx" % trans.count(t) if trans.count(t) > 1
                                            else "", t) for t in trans}))
        print("%-5s %6d %-36s %8.2f ms %8.2f ms %8.2f ms" % (g, ops, names, t_ops * 1e3,
                                                            t_tr * 1e3, (t_ops + t_tr) * 1e3))
        per_pair[g] = (t_ops + t_tr) / L2 * 1e9
    print("\nops = group part (%s) + 3H (score, max, sum) + dv (P·V FMAs)."
          % "; ".join("%s: %s" % (g, m["what"]) for g, m in GROUPS.items() if g == "SO3"))
    print("A fused kernel within 2x of `bound` meets the issue's SO(3) goal.")
    if a.json:
        import json
        with open(a.json, "w") as f:
            json.dump({"ns_per_pair": per_pair, "fma_lane_ops_per_s": fma_instr,
                       "transcendental_ns": tr, "heads": a.heads, "dv": a.dv,
                       "threads": a.threads}, f, indent=1)


if __name__ == "__main__":
    main()
