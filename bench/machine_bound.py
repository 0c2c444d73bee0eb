#!/usr/bin/env python3
"""This machine's bound for fused Lie attention: each pair's operations by
execution unit (FMA pipes, add pipes, divider) against their throughput.

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
3. The divider: ns per element (aggregate over the threads) of vdivps and
   vsqrtps over an L1-resident array; for reference also glibc libmvec's
   expf, atan2f, sinf and the kernels' polynomial exp and atan2 in C (the
   bound counts the kernels' forms by their operations instead).
4. For reference, f32 GEMM throughput (torch.mm 2048^3, or numpy).

Per pair, a fused flash-style kernel needs (lane-operations, by the
execution unit that runs them):
   fma : multiplies, FMAs, compares, selects, min/max, vector shifts (on
         Zen 4 the FP0/FP1 pipes; on Intel ports 0/5);
   add : adds, subtracts, integer adds, sign-bit logic (Zen 4: FP2/FP3, two
         more pipes; on Intel the same ports as the FMAs, so counted there);
   div, sqrt : the divider, which is not pipelined but runs beside the
         other pipes (microbench.c: one vdivps per 6 FMAs costs no FMA
         slots).
   group part (GROUPS below: the closed forms of the group models, with
         the kernels' own exp and atan2, KernelMath.cpp: exp 12 fma + 2
         add, atan2 20 fma + 9 add + 1 div)
   + per distinct score coefficient row (heads with equal -lambda/tau share
         one exp): blocks fma (the score), 1 max, the exp, 1 add (row sum)
   + dv fma (P.V over all heads).
   bound(L) = L^2 x max(fma / rate, add / rate, div x t_div + sqrt x t_sqrt)
with rate = the larger of measured and nominal FMA lane-ops per second and
t_div, t_sqrt = measured vdivps / vsqrtps ns per element. It assumes the
units overlap perfectly and the online softmax's per-tile rescaling is
free, so it is a lower bound for these formulas; a cheaper exp or atan2
polynomial would lower it.
Usage: python3 bench/machine_bound.py [--threads 2] [--L 4096] [--heads 4] [--dv 64]
"""
import argparse
import os
import sys
import time

EXP = {"fma": 12, "add": 2}
ATAN2 = {"fma": 20, "add": 9, "div": 1}
# The half-angle factor ((θ/2)/sin(θ/2))² of SE(2) and SE(3) (PairForms.cpp):
# r = √(cos² + sin²), one quotient for either side, the series below 0.1.
HALF_ANGLE = {"fma": 15, "add": 6, "div": 1, "sqrt": 1}


def _sum(*parts):
    out = {}
    for part in parts:
        for k, v in part.items():
            out[k] = out.get(k, 0) + v
    return out


# Lane-operations per pair of each group's closed form (the group models'
# buildPairBlockNorms), counted by unit as above.
GROUPS = {
    "SO2": {"cost": _sum({"fma": 4 + 1}, ATAN2), "blocks": 1,
            "what": "cos/sin of θ_ij: two 2-dots; atan2; θ²"},
    "SE2": {"cost": _sum({"fma": 4 + 2 + 2, "add": 2}, ATAN2, HALF_ANGLE), "blocks": 2,
            "what": "two 2-dots, ‖t_j − t_i‖², the half-angle factor"},
    "SO3": {"cost": _sum({"fma": 18 + 9 + 3 + 2 + 1, "sqrt": 1}, ATAN2), "blocks": 1,
            "what": "tr M and vee(M − Mᵀ): four 9-dots; θ = atan2(½‖a‖, (tr − 1)/2)"},
    "SE3": {"cost": _sum({"fma": 33 + 9 + 9 + 9 + 9 + 3, "add": 6, "div": 1, "sqrt": 1},
                         ATAN2, HALF_ANGLE), "blocks": 2,
            "what": "SO(3)'s angle, u = R_iᵀ(t_j − t_i), R_j u, ‖u‖², a·u, uᵀMu, "
                    "(n·u)² as one quotient, the half-angle factor"},
}


def distinct_coefficients(group, heads):
    """Score coefficient rows −λ/τ that differ among the bench's heads
    (bench/lie_peers.py): heads that agree share one exp."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import lie_peers
    return len({tuple(row) for row in lie_peers.coef(group, heads).tolist()})


def pair_cost(group, heads, dv, pv_fma_per_dv=1.0):
    """Lane-operations per pair by unit: the group part, the per-coefficient
    softmax part and P·V (pv_fma_per_dv = ½ for bf16 pairs)."""
    m = GROUPS[group]
    n = distinct_coefficients(group, heads)
    per_coef = _sum({"fma": m["blocks"] + 1, "add": 1}, EXP)
    cost = _sum(m["cost"], {k: n * v for k, v in per_coef.items()},
                {"fma": dv * pv_fma_per_dv})
    cost["coefficients"] = n
    return cost


def bound_ns(cost, rate, t_div, t_sqrt, separate_add=True):
    """ns per pair: the busiest unit. rate in lane-ops per s (aggregate),
    t_div and t_sqrt in ns per element (aggregate)."""
    fma = cost.get("fma", 0) + (0 if separate_add else cost.get("add", 0))
    parts = {"fma": fma / rate * 1e9,
             "add": cost.get("add", 0) / rate * 1e9 if separate_add else 0.0,
             "divider": cost.get("div", 0) * t_div + cost.get("sqrt", 0) * t_sqrt}
    return max(parts.values()), parts


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


def separate_add_pipes(info):
    """Whether adds run on pipes of their own (AMD Zen: FP2/FP3) rather
    than on the FMA ports (Intel)."""
    return info["vendor"] == "AuthenticAMD"


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
    fma_instr = max(mb["fma"], nominal)  # FMA lane-operations per second
    separate = separate_add_pipes(info)
    print("FMA rate of the bound: %.0f GFLOP/s (the larger of measured and nominal); adds: %s"
          % (2 * fma_instr / 1e9, "their own pipes at the same rate" if separate
             else "on the FMA ports (counted with them)"))
    L2 = float(a.L) ** 2
    print("\nbound at L = %d, H = %d, dv = %d (lane-operations per pair by unit; the busiest "
          "unit bounds):" % (a.L, a.heads, a.dv))
    print("%-5s %6s %5s %5s %4s %5s %10s %10s %10s %10s" % (
        "group", "coefs", "fma", "add", "div", "sqrt", "fma part", "add part", "divider",
        "bound"))
    per_pair = {}
    for g in GROUPS:
        cost = pair_cost(g, a.heads, a.dv)
        ns, parts = bound_ns(cost, fma_instr, mb["div"], mb["sqrtf"], separate)
        print("%-5s %6d %5d %5d %4d %5d %7.2f ms %7.2f ms %7.2f ms %7.2f ms" % (
            g, cost["coefficients"], cost["fma"], cost.get("add", 0), cost.get("div", 0),
            cost.get("sqrt", 0), L2 * parts["fma"] * 1e-6, L2 * parts["add"] * 1e-6,
            L2 * parts["divider"] * 1e-6, L2 * ns * 1e-6))
        per_pair[g] = ns
    # Plain attention at head width dv/H, for the SDPA comparison: QKᵀ (dv
    # FMAs over the heads), H maxima, exps and sums, P·V.
    sdpa = _sum({"fma": 2 * a.dv + a.heads}, {k: a.heads * v for k, v in EXP.items()},
                {"add": a.heads})
    ns, parts = bound_ns(sdpa, fma_instr, mb["div"], mb["sqrtf"], separate)
    print("%-5s %6d %5d %5d %4d %5d %7.2f ms %7.2f ms %7.2f ms %7.2f ms   (plain attention, "
          "d = %d per head)" % ("SDPA", a.heads, sdpa["fma"], sdpa["add"], 0, 0,
                                L2 * parts["fma"] * 1e-6, L2 * parts["add"] * 1e-6, 0.0,
                                L2 * ns * 1e-6, a.dv // a.heads))
    print("\ncoefs = distinct score coefficient rows among the heads (one exp each); "
          "group parts: %s." % "; ".join("%s: %s" % (g, m["what"]) for g, m in GROUPS.items()))
    print("Goal (issue #22): a fused kernel within 1.5x of `bound`.")
    if a.json:
        import json
        with open(a.json, "w") as f:
            json.dump({"ns_per_pair": per_pair, "fma_lane_ops_per_s": fma_instr,
                       "core": core, "vector_bits": bits,
                       "divider_ns": {"div": mb["div"], "sqrt": mb["sqrtf"]},
                       "separate_add_pipes": separate, "heads": a.heads, "dv": a.dv,
                       "threads": a.threads}, f, indent=1)


if __name__ == "__main__":
    main()
