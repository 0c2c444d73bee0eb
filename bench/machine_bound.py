#!/usr/bin/env python3
"""This machine's bound for fused Lie attention: FMA throughput plus the
transcendental cost per pair.

1. The CPU, from /proc/cpuinfo (vendor_id, cpu family, model, flags, cpu
   MHz), names its FMA pipes (CORES below; each an assumption, stated in the
   output; --fma-units overrides the count):
     AMD Zen 4 (family 0x19, models 0x10-0x1f, 0x60-0x7f, 0xa0-0xaf):
       2 FMA pipes of 256 bits; a 512-bit op issues as two 256-bit halves,
       so 16 f32 FMA lane-operations per cycle with AVX-512 or AVX2 alike;
     AMD Zen 3 (other family 0x19 models) and Zen 2 (family 0x17, model
       >= 0x30): 2 x 256 bits; Zen 1 (0x17, below 0x30): 2 x 128 bits;
     AMD Zen 5 (family 0x1a): 2 x 512 bits (the server and desktop parts);
     Intel with AVX-512: 2 x 512 bits (Xeon Gold/Platinum, Sapphire Rapids;
       some Silver/Bronze parts have one); Intel without it: 2 x 256 bits.
   The kernels' vector width is the CPU's: 512 bits with avx512f, else 256
   (what torsorc --target host selects). Nominal FMA peak = threads x clock
   ("cpu MHz": the TSC clock under KVM, not the boost clock) x pipes x
   min(pipe, vector bits) / 32 lanes x 2 flop.
2. Measured with --threads threads, one per core (microbench.c, compiled
   here at that vector width: cc -O3 -mavx512f -mavx512dq -mfma, or -mavx2
   -mfma; -lmvec -lpthread): the FMA rate of 12 independent FMA chains per
   thread (registers only). The bound takes the larger of measured and
   nominal (the faster is the tighter bound: a loaded machine measures
   low, a boost clock above the TSC clock measures high).
3. Transcendental cost: ns per element (aggregate over the threads) over an
   L1-resident array, one vector at a time, of glibc libmvec's expf,
   atan2f, sinf, of vsqrtps and vdivps, and of the fused kernels' own
   polynomial exp and atan2 (KernelMath.cpp, the same operations in C):
   the cheaper of libmvec and the kernels' form per function. Cheaper
   polynomials could beat both, so this part of the bound is an estimate,
   not a proof.
4. For reference, f32 GEMM throughput (torch.mm 2048^3, or numpy).

Per pair, a fused flash-style kernel needs (dv = value width, H = heads):
   ops (FMA slots) = group part + 3H (score, running max, sum) + dv (P.V)
   SO(3) group part: 36 FMA (tr M and vee(M - M^T): four 9-dot products)
                     + ~8 (|a|^2, (tr - 1)/2, theta^2); transcendentals
                     sqrt, atan2, and H x exp. Other groups: GROUPS below.
   bound(L) = L^2 x (ops / FMA lane-ops per s + sum of transcendental ns).
The same counts for L^2 pairs give the bound at any L (it is prop. to L^2).
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


def cpu_info(path="/proc/cpuinfo"):
    """The first CPU's vendor_id, cpu family, model, model name, cpu MHz and
    flags."""
    info = {"vendor": "?", "family": None, "model": None, "name": "?", "mhz": None,
            "flags": set()}
    with open(path) as f:
        for line in f:
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if not key and info["family"] is not None:
                break  # the end of the first CPU's block
            if key == "vendor_id":
                info["vendor"] = value
            elif key == "cpu family":
                info["family"] = int(value)
            elif key == "model":
                info["model"] = int(value)
            elif key == "model name":
                info["name"] = value
            elif key == "cpu MHz":
                info["mhz"] = float(value)
            elif key == "flags":
                info["flags"] = set(value.split())
    return info


def core_model(info):
    """(core, FMA pipes, bits per pipe, assumption) of `info`'s CPU: the
    table of the module docstring."""
    vendor, fam, mod = info["vendor"], info["family"] or 0, info["model"] or 0
    avx512 = "avx512f" in info["flags"]
    if vendor == "AuthenticAMD":
        if fam == 0x19:
            if 0x10 <= mod <= 0x1f or 0x60 <= mod <= 0x7f or 0xa0 <= mod <= 0xaf:
                return ("AMD Zen 4", 2, 256,
                        "2 FMA pipes of 256 bits (FP0, FP1; 2 more FADD pipes), 512-bit ops "
                        "as two 256-bit halves")
            return "AMD Zen 3", 2, 256, "2 FMA pipes of 256 bits"
        if fam == 0x1a:
            return ("AMD Zen 5", 2, 512,
                    "2 FMA pipes of 512 bits (server/desktop; mobile parts have 256)")
        if fam == 0x17:
            if mod >= 0x30:
                return "AMD Zen 2", 2, 256, "2 FMA pipes of 256 bits"
            return "AMD Zen 1", 2, 128, "2 FMA pipes of 128 bits (256-bit ops in halves)"
        return "AMD (unknown core)", 2, 256, "2 FMA pipes of 256 bits (guessed)"
    if vendor == "GenuineIntel":
        if avx512:
            return ("Intel with AVX-512", 2, 512,
                    "2 FMA ports of 512 bits (ports 0+1 fused and port 5; Xeon Gold/Platinum, "
                    "Sapphire Rapids; some Silver/Bronze have one: --fma-units 1)")
        return "Intel without AVX-512", 2, 256, "2 FMA ports of 256 bits (ports 0, 1)"
    return "unknown CPU", 2, 256, "2 FMA pipes of 256 bits (guessed)"


def vector_bits(info):
    """The vector width torsorc --target host gives the kernels."""
    flags = info["flags"]
    return 512 if "avx512f" in flags else 256 if "avx2" in flags else 128


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


def run_microbench(threads, info=None):
    """Compiles microbench.c at this CPU's vector width and runs it; returns
    {"lanes": f32 lanes, "fma": lane-ops/s, op: ns per element}."""
    import subprocess
    import tempfile
    info = info or cpu_info()
    bits = vector_bits(info)
    if bits == 512:
        isa = ["-mavx512f", "-mavx512dq", "-mfma"]
    elif bits == 256 and "fma" in info["flags"]:
        isa = ["-mavx2", "-mfma"]
    else:
        raise RuntimeError("microbench.c needs AVX2 and FMA or AVX-512 (this CPU: %s)"
                           % info["name"])
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(tempfile.mkdtemp(prefix="torsor-bound-"), "microbench")
    subprocess.run([os.environ.get("CC", "cc"), "-O3"] + isa +
                   [os.path.join(here, "microbench.c"), "-o", exe, "-lmvec", "-lpthread"],
                   check=True)
    out = subprocess.run([exe, str(threads)], check=True, capture_output=True,
                         text=True).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def transcendentals(mb):
    """ns per element of each transcendental: the cheaper of libmvec and
    the kernels' own polynomial form where the kernels have one."""
    return {"sqrt": mb["sqrtf"], "atan2": min(mb["atan2f"], mb.get("kernel_atan2", 1e9)),
            "sin": mb["sinf"], "exp": min(mb["expf"], mb.get("kernel_exp", 1e9)),
            "div": mb["div"]}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--L", type=int, default=4096)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dv", type=int, default=64)
    p.add_argument("--fma-units", type=int, default=0,
                   help="FMA pipes per core (default: from the CPU, see above)")
    p.add_argument("--cpuinfo", default="/proc/cpuinfo",
                   help="only describe the CPU of this cpuinfo file (its core, pipes and "
                        "nominal peak), measuring nothing")
    p.add_argument("--json", metavar="PATH", help="also write the bound per pair (ns) as JSON")
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cpus[:a.threads])

    info = cpu_info(a.cpuinfo)
    core, pipes, pipe_bits, assumption = core_model(info)
    if a.fma_units:
        pipes = a.fma_units
        assumption += "; --fma-units %d" % pipes
    bits = vector_bits(info)
    lanes_per_cycle = pipes * min(pipe_bits, bits) // 32
    mhz = info["mhz"] or 0
    nominal = a.threads * mhz * 1e6 * lanes_per_cycle  # FMA lane-ops per s
    print("machine: %s (%s, family 0x%x, model 0x%x), %d threads"
          % (info["name"], info["vendor"], info["family"] or 0, info["model"] or 0, a.threads))
    print("core: %s; assumed %s; kernels' vectors: %d bits (%d f32 lanes)"
          % (core, assumption, bits, bits // 32))
    print("nominal peak f32: %d threads x %.0f MHz x %d FMA lane-ops per cycle x 2 flop"
          " = %.0f GFLOP/s" % (a.threads, mhz, lanes_per_cycle, 2 * nominal / 1e9))
    if a.cpuinfo != "/proc/cpuinfo":
        return  # another machine's description: nothing here measures it
    mb = run_microbench(a.threads, info)
    gemm, gemm_what = measure_gemm(a.threads)
    tr = transcendentals(mb)
    print("measured FMA peak (microbench.c, %d-lane vectors, registers only): %.0f GFLOP/s "
          "(%.0f%% of nominal)" % (mb["lanes"], 2 * mb["fma"] / 1e9,
                                   100 * mb["fma"] / nominal if nominal else 0))
    print("measured f32 GEMM (%s 2048^3): %.0f GFLOP/s (for reference)"
          % (gemm_what, gemm / 1e9))
    print("transcendentals, %d threads, L1-resident (ns per element, aggregate throughput):"
          % a.threads)
    print("  libmvec / vsqrtps / vdivps: %s"
          % ", ".join("%s %.3f" % (k, mb[k]) for k in ("expf", "atan2f", "sinf", "sqrtf", "div")))
    if "kernel_exp" in mb:
        print("  the kernels' polynomial forms: exp %.3f, atan2 %.3f"
              % (mb["kernel_exp"], mb["kernel_atan2"]))
    print("  the bound takes: %s" % ", ".join("%s %.3f" % kv for kv in tr.items()))
    fma_instr = max(mb["fma"], nominal)  # FMA lane-operations per second
    print("FMA rate of the bound: %.0f GFLOP/s (the larger of measured and nominal)"
          % (2 * fma_instr / 1e9))
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
    print("Goal (issue #22): a fused kernel within 1.5x of `bound`.")
    if a.json:
        import json
        with open(a.json, "w") as f:
            json.dump({"ns_per_pair": per_pair, "fma_lane_ops_per_s": fma_instr,
                       "core": core, "vector_bits": bits,
                       "transcendental_ns": tr, "heads": a.heads, "dv": a.dv,
                       "threads": a.threads}, f, indent=1)


if __name__ == "__main__":
    main()
