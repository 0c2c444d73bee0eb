#!/usr/bin/env python3
"""Declared groups against the built-in of the same shape (lie_attention).

Each declared group below is written as a new user would write it (scaled,
sheared, permuted bases; subgroups of a built-in; groups no built-in
contains). For each, and for the closest built-in, this compiles

    model M { dim L; dim D = 64; input g: G[L]; input x: f32[L, D];
              output y = lie_attention(g, x, heads = 2) }

with `torsorc -O2` (f32), times the compile (and the compile with --grad),
and runs `torsor-run --time` at each L on elements exp(Σ v_a E_a) with
v ~ N(0, 0.5²) per coordinate (scipy's expm, in f64, then rounded to f32).
The ratio column is the declared group's time over its built-in's.

    bench/bench_declared_groups.py --L 1024 4096 --threads 2
    bench/bench_declared_groups.py --baseline-torsorc OLD/torsorc   # before
    bench/bench_declared_groups.py --L 1024 --backward   # and the backward

`--baseline-torsorc` also compiles every declared model with another
torsorc (e.g. one built from the commit before the recognition) and adds
its time and the speed-up. Run on a quiet machine (the load is printed).
Never part of make test.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.linalg import expm

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def hat3(axis, n=3):
    m = np.zeros((n, n))
    i, j = (axis + 1) % 3, (axis + 2) % 3
    m[j, i], m[i, j] = 1, -1
    return m


def unit(n, i, j, v=1.0):
    m = np.zeros((n, n))
    m[i, j] = v
    return m


R2 = hat3(2)
GROUPS = {
    # name: (generators, blocks [(name, count)], closest built-in)
    "CO3": ([hat3(0), hat3(1), hat3(2), np.eye(3)],
            [("rot", 3), ("scale", 1)], "SO3"),
    "Sim2": ([R2, np.diag([1.0, 1, 0]), unit(3, 0, 2), unit(3, 1, 2)],
             [("rotscale", 2), ("trans", 2)], "SE2"),
    "SL2": ([np.diag([1.0, -1]), unit(2, 0, 1), unit(2, 1, 0)],
            [("sl", 3)], "SE2"),
    "Gal2": ([hat3(2, 4), unit(4, 0, 2), unit(4, 1, 2), unit(4, 0, 3),
              unit(4, 1, 3), unit(4, 2, 3)],
             [("rot", 1), ("boost", 2), ("trans", 3)], "SE3"),
    "SE2s": ([2.5 * R2, unit(3, 0, 2), unit(3, 0, 2) + unit(3, 1, 2)],
             [("rot", 1), ("trans", 2)], "SE2"),
    "SE2p": ([unit(3, 0, 2), R2, unit(3, 1, 2)], [("all", 3)], "SE2"),
    "Heis3": ([unit(3, 0, 1), unit(3, 1, 2), unit(3, 0, 2)],
              [("plane", 2), ("center", 1)], "SE2"),
    # Direct sums of ideals (docs/groups/declared.md, "Direct sums").
    "SO3xSO2": ([hat3(1, 5), hat3(0, 5), hat3(2, 5),
                 2 * (unit(5, 4, 3) - unit(5, 3, 4))],
                [("rot", 3), ("spin", 1)], "SO3"),
    "SE2xR": ([unit(4, 2, 2, 0.5), unit(4, 0, 3), hat3(2, 4), unit(4, 1, 3)],
              [("scale", 1), ("pose", 3)], "SE2"),
    "SO2xR2": ([hat3(2, 5), unit(5, 2, 4, 2.0), unit(5, 2, 4) + unit(5, 3, 4)],
               [("rot", 1), ("trans", 2)], "SE2"),
    "Torus": ([hat3(2, 4) + unit(4, 3, 2) - unit(4, 2, 3), unit(4, 3, 2) - unit(4, 2, 3)],
              [("a", 1), ("b", 1)], "SO2"),
    "Dil3": ([hat3(2, 4), np.diag([1.0, 1, 0, 0]), unit(4, 0, 3), unit(4, 1, 3),
              unit(4, 2, 3)], [("rs", 2), ("trans", 3)], "SE3"),
}
DESCRIPTION = {
    "CO3": "rotations x isotropic scaling of R^3",
    "Sim2": "planar similarities Sim(2)",
    "SL2": "SL(2, R)",
    "Gal2": "2-D Galilean group (4x4)",
    "SE2s": "SE(2), scaled rotation, sheared translations",
    "SE2p": "SE(2), generators permuted (T, R, T)",
    "Heis3": "Heisenberg (nilpotent)",
    "SO3xSO2": "so(3) + so(2), block diagonal 5x5",
    "SE2xR": "se(2) + scaling of z (4x4)",
    "SO2xR2": "so(2) + R^2, sheared translations (5x5)",
    "Torus": "so(2) + so(2) in a mixed basis",
    "Dil3": "sim(2) + translation in t (4x4)",
}
BUILTIN_BASIS = {
    "SO2": ([hat3(2, 2)], 2),
    "SO3": ([hat3(0), hat3(1), hat3(2)], 3),
    "SE2": ([R2, unit(3, 0, 2), unit(3, 1, 2)], 3),
    "SE3": ([hat3(0, 4), hat3(1, 4), hat3(2, 4), unit(4, 0, 3), unit(4, 1, 3),
             unit(4, 2, 3)], 4),
}


def fmt_matrix(m):
    return "[" + ", ".join("[" + ", ".join(repr(float(x)) for x in row) + "]"
                           for row in m) + "]"


def source(group, D, heads):
    if group in GROUPS:
        gens, blocks, _ = GROUPS[group]
        n = gens[0].shape[0]
        lines = ["group %s {" % group, "  matrix %d;" % n]
        names = ["E%d" % a for a in range(len(gens))]
        for name, g in zip(names, gens):
            lines.append("  generator %s = %s;" % (name, fmt_matrix(g)))
        at = 0
        for bname, count in blocks:
            lines.append("  norm %s = %s;" % (bname, ", ".join(names[at:at + count])))
            at += count
        lines.append("}")
        decl = "\n".join(lines) + "\n"
    else:
        decl = ""
    return decl + ("model M {\n  dim L;\n  dim D = %d;\n  input g: %s[L];\n"
                   "  input x: f32[L, D];\n"
                   "  output y = lie_attention(g, x, heads = %d);\n}\n"
                   % (D, group, heads))


def elements(group, L, rng):
    gens = GROUPS[group][0] if group in GROUPS else BUILTIN_BASIS[group][0]
    out = []
    for _ in range(L):
        v = rng.standard_normal(len(gens)) * 0.5
        out.append(expm(sum(c * E for c, E in zip(v, gens))))
    return np.stack(out).astype(np.float32)


def compile_model(torsorc, src_path, out, extra=()):
    t = time.perf_counter()
    subprocess.run([torsorc, src_path, "-O2", "-o", out, *extra], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def run_time(torsor_run, so, g_path, x_path, threads, reps):
    out = subprocess.run(
        [torsor_run, so, "--input", "g=" + g_path, "--input", "x=" + x_path,
         "--threads", str(threads), "--time", str(reps)],
        check=True, capture_output=True, text=True).stdout
    m = re.search(r"median ([0-9.]+) ms", out)
    if not m:
        raise RuntimeError("unexpected torsor-run output: " + out)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--L", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--D", type=int, default=64)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline-torsorc", default=None)
    ap.add_argument("--groups", nargs="+", default=list(GROUPS))
    ap.add_argument("--backward", action="store_true",
                    help="also time the backward (torsor.Model.backward, "
                         "every gradient, min of --reps) at each L")
    args = ap.parse_args()
    torsorc = os.path.join(args.build, "bin", "torsorc")
    torsor_run = os.path.join(args.build, "bin", "torsor-run")
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp(prefix="torsor-bench-declared-")

    builtins = sorted({GROUPS[g][2] for g in args.groups})
    compiled = {}

    def build(group, torsorc_path, tag):
        src = os.path.join(tmp, "%s.tsr" % group)
        with open(src, "w") as f:
            f.write(source(group, args.D, args.heads))
        so = os.path.join(tmp, "%s_%s.so" % (group, tag))
        c = compile_model(torsorc_path, src, so)
        cg = compile_model(torsorc_path, src, so + ".grad.so", ["--grad"])
        return so, c, cg

    for b in builtins:
        compiled[(b, "new")] = build(b, torsorc, "new")
    for g in args.groups:
        compiled[(g, "new")] = build(g, torsorc, "new")
        if args.baseline_torsorc:
            compiled[(g, "old")] = build(g, args.baseline_torsorc, "old")

    print("lie_attention, D = %d, %d heads, f32, -O2, %d threads; "
          "load at start %.2f" % (args.D, args.heads, args.threads,
                                  os.getloadavg()[0]))
    for L in args.L:
        x = rng.standard_normal((L, args.D)).astype(np.float32)
        x_path = os.path.join(tmp, "x%d.npy" % L)
        np.save(x_path, x)
        times = {}
        for name in builtins + args.groups:
            g_path = os.path.join(tmp, "g_%s_%d.npy" % (name, L))
            np.save(g_path, elements(name, L, rng))
            # Each variant runs twice, in the order new, old, old, new, and
            # keeps its lower median: the first process after a switch of
            # library is measurably slower on this machine (up to 2x for a
            # model dominated by libm calls), which would favour whichever
            # variant runs second.
            tags = [t for t in ("new", "old") if (name, t) in compiled]
            for tag in tags + tags[::-1]:
                t = run_time(torsor_run, compiled[(name, tag)][0], g_path, x_path,
                             args.threads, args.reps)
                times[(name, tag)] = min(t, times.get((name, tag), t))
        print("\nL = %d (load %.2f)" % (L, os.getloadavg()[0]))
        head = "| declared group | before | now | speed-up | built-in | time | ratio now | compile -O2 / --grad (built-in) |"
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        for g in args.groups:
            b = GROUPS[g][2]
            now, base = times[(g, "new")], times[(b, "new")]
            old = times.get((g, "old"))
            _, c, cg = compiled[(g, "new")]
            _, bc, bcg = compiled[(b, "new")]
            print("| %s | %s | %.1f ms | %s | %s | %.1f ms | %.2fx | %.2f / %.2f s (%.2f / %.2f s) |" % (
                DESCRIPTION[g], "%.1f ms" % old if old else "-", now,
                "%.1fx" % (old / now) if old else "-", b, base, now / base,
                c, cg, bc, bcg))
        sys.stdout.flush()
        if args.backward:
            backward_table(args, L, builtins, rng)


def backward_table(args, L, builtins, rng):
    """Backward times (the flash backward, every gradient) through the
    torsor package: declared group against its built-in."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import torsor
    torsor.set_num_threads(args.threads)
    times = {}
    for name in builtins + args.groups:
        model = torsor.compile(source(name, args.D, args.heads), dtype="f32",
                               opt=2, grad=True)
        ins = {"g": elements(name, L, rng),
               "x": rng.standard_normal((L, args.D)).astype(np.float32)}
        cot = {"y": rng.standard_normal((L, args.D)).astype(np.float32)}
        model.backward(ins, cot)  # warm-up
        best = float("inf")
        for _ in range(args.reps):
            t = time.perf_counter()
            model.backward(ins, cot)
            best = min(best, time.perf_counter() - t)
        times[name] = 1e3 * best
    print("\nbackward, L = %d (min of %d; load %.2f)" % (L, args.reps, os.getloadavg()[0]))
    print("| declared group | backward | built-in | backward | ratio |")
    print("|---|---|---|---|---|")
    for g in args.groups:
        b = GROUPS[g][2]
        print("| %s | %.1f ms | %s | %.1f ms | %.2fx |"
              % (DESCRIPTION[g], times[g], b, times[b], times[g] / times[b]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
