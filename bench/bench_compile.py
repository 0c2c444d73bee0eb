#!/usr/bin/env python3
"""Compile time of every example: `torsorc` on each `.tsr` of `examples/`,
at -O2 with and without --grad (docs/compiler.md, "Where compile time goes").

    python3 bench/bench_compile.py                       # build/bin/torsorc
    python3 bench/bench_compile.py --torsorc /work/w9-build/bin/torsorc \\
        --torsorc build/bin/torsorc --runs 5             # A/B, interleaved

Each compile is one fresh `torsorc MODEL.tsr -O2 [--grad] -o OUT.so`; its
CPU time is the user time of torsorc and of the linker it runs (the rusage
of the child, as `/usr/bin/time -f %U` reports), which a loaded machine
inflates far less than wall time. With several binaries the runs alternate
(A B A B ...) so that the load hits both alike. The table gives the median
user and wall seconds of the runs, the spread of user seconds (min-max),
and, with --ir-lines, the lines of optimized LLVM IR (`--emit=llvm`).
The load average is printed before and after: say it with the numbers.

Needs only Python and a built torsorc (no torch).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(torsorc, model, flags, out):
    """One compile; returns (user s, wall s). Raises on a failed compile."""
    start = time.perf_counter()
    proc = subprocess.Popen([torsorc, model, *flags, "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{torsorc} {model} {' '.join(flags)} failed "
                           f"({proc.returncode}):\n{err}")
    return usage.ru_utime, wall


def ir_lines(torsorc, model, flags, tmp):
    path = os.path.join(tmp, "model.ll")
    subprocess.run([torsorc, model, *flags, "--emit=llvm", "-o", path],
                   check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        return sum(1 for _ in f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torsorc", action="append",
                        help="a torsorc binary (repeat for an A/B "
                        "comparison; default build/bin/torsorc)")
    parser.add_argument("--runs", type=int, default=3,
                        help="compiles per example, mode and binary")
    parser.add_argument("--examples", default="",
                        help="comma-separated example names (default: all)")
    parser.add_argument("--modes", default="-O2,-O2 --grad",
                        help="comma-separated flag sets")
    parser.add_argument("--ir-lines", action="store_true",
                        help="also count the lines of optimized LLVM IR")
    args = parser.parse_args()
    binaries = args.torsorc or [os.path.join(ROOT, "build", "bin", "torsorc")]
    for b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"bench_compile: no torsorc at {b} (build it first)")
    examples_dir = os.path.join(ROOT, "examples")
    names = sorted(f[:-4] for f in os.listdir(examples_dir)
                   if f.endswith(".tsr"))
    if args.examples:
        wanted = args.examples.split(",")
        missing = [w for w in wanted if w not in names]
        if missing:
            sys.exit(f"bench_compile: no example {', '.join(missing)} "
                     f"(have {', '.join(names)})")
        names = wanted
    modes = [m.split() for m in args.modes.split(",")]

    print(f"load average before: {' '.join('%.2f' % x for x in os.getloadavg())}"
          f" ({os.cpu_count()} CPUs)")
    labels = ["A", "B", "C", "D", "E", "F"][:len(binaries)]
    for label, b in zip(labels, binaries):
        print(f"{label}: {b}")
    header = ["example", "mode"]
    for label in labels:
        header += [f"{label}: user s", f"{label}: spread", f"{label}: wall s"]
        if args.ir_lines:
            header.append(f"{label}: LLVM IR lines")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as tmp:
        for name in names:
            model = os.path.join(examples_dir, name + ".tsr")
            for flags in modes:
                samples = {label: [] for label in labels}
                for _ in range(args.runs):
                    for label, b in zip(labels, binaries):
                        out = os.path.join(tmp, f"{label}.so")
                        samples[label].append(run_once(b, model, flags, out))
                row = [name, " ".join(flags)]
                for label, b in zip(labels, binaries):
                    user = [u for u, _ in samples[label]]
                    wall = [w for _, w in samples[label]]
                    row += [f"{statistics.median(user):.2f}",
                            f"{min(user):.2f}-{max(user):.2f}",
                            f"{statistics.median(wall):.2f}"]
                    if args.ir_lines:
                        row.append(f"{ir_lines(b, model, flags, tmp):,}")
                print("| " + " | ".join(row) + " |", flush=True)
    print(f"load average after: {' '.join('%.2f' % x for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
