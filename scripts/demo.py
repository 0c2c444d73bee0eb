#!/usr/bin/env python3
"""`make demo`: show what Torsor can do today, honestly.

1. Compiles every built-in group's lie ops (log, exp, compose, dist2) for
   the CPU with torsorc (MLIR → LLVM → .so), runs them on seeded random
   group elements and prints round-trip and left-invariance errors against
   float64, and the time per element.
2. Compiles each example model under examples/ to MLIR with the .tsr
   frontend, when the frontend is built.
3. Says what is not there yet.
"""
import argparse
import glob
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))


def random_elements(name, rng, m):
    """Seeded random elements of a built-in group, via scipy's expm."""
    from scipy.linalg import expm
    dims = {"so2": 2, "se2": 3, "so3": 3, "se3": 4, "aff2": 3, "sim3": 4}
    n = dims[name]
    out = []
    for _ in range(m):
        X = np.zeros((n, n))
        if name in ("so2", "so3"):
            A = rng.standard_normal((n, n))
            X = A - A.T
        elif name in ("se2", "se3", "sim3"):
            A = rng.standard_normal((n - 1, n - 1))
            X[:n - 1, :n - 1] = A - A.T
            X[:n - 1, n - 1] = rng.standard_normal(n - 1)
            if name == "sim3":
                X[:3, :3] += 0.3 * rng.standard_normal() * np.eye(3)
        elif name == "aff2":
            X[:2, :2] = 0.5 * rng.standard_normal((2, 2))
            X[:2, 2] = rng.standard_normal(2)
        out.append(expm(X))
    return np.array(out)


def demo_groups(build):
    from torsor_testing import CompiledModule, dps_function
    os.environ["TORSOR_BIN"] = os.path.join(build, "bin")
    groups = []
    probe = subprocess.run(
        [os.path.join(build, "bin", "torsor-opt"), "--allow-unregistered-dialect"],
        input='"test.g"() {g = #lie.group<bogus>} : () -> ()',
        capture_output=True, text=True, )
    for line in probe.stderr.splitlines():
        if "expected one of" in line:
            groups = [g.strip() for g in line.split("expected one of")[1].split(",")]
    print("== Built-in groups compiled for the CPU: %s" % ", ".join(groups))
    sizes = {"so2": (2, 1), "se2": (3, 3), "so3": (3, 3), "se3": (4, 6),
             "aff2": (3, 6), "sim3": (4, 7)}
    rng = np.random.default_rng(0)
    print("%-6s %-5s %14s %14s %14s" % ("group", "dtype", "|exp(log g)-g|",
                                        "invariance", "ns/log"))
    for name in groups:
        if name not in sizes:
            continue
        n, k = sizes[name]
        for dtype, np_t in (("f64", np.float64), ("f32", np.float32)):
            G, V, S = ([None, n, n], dtype), ([None, k], dtype), ([None], dtype)
            t = lambda s: "tensor<%s>" % "x".join(
                ["?" if d is None else str(d) for d in s[0]] + [dtype])
            grp = "#lie.group<%s>" % name
            mod = CompiledModule("\n".join([
                dps_function("log", [G], [V], lambda a: (
                    "  %%r = lie.log %s {group = %s} : %s -> %s" % (a[0], grp, t(G), t(V)), ["%r"])),
                dps_function("exp", [V], [G], lambda a: (
                    "  %%r = lie.exp %s {group = %s} : %s -> %s" % (a[0], grp, t(V), t(G)), ["%r"])),
                dps_function("dist2", [G, G], [S], lambda a: (
                    "  %%r = lie.dist2 %s, %s {group = %s} : %s -> %s" % (a[0], a[1], grp, t(G), t(S)), ["%r"])),
            ]))
            m = 20000
            g = np.ascontiguousarray(random_elements(name, rng, 256).astype(np_t))
            h = np.ascontiguousarray(g[rng.permutation(len(g))])
            w = np.zeros((len(g), k), np_t)
            mod.call("log", g, w)
            back = np.zeros_like(g)
            mod.call("exp", w, back)
            left = random_elements(name, rng, 1)[0]
            d0, d1 = np.zeros(len(g), np_t), np.zeros(len(g), np_t)
            mod.call("dist2", g, h, d0)
            lg = np.ascontiguousarray((left @ g.astype(np.float64)).astype(np_t))
            lh = np.ascontiguousarray((left @ h.astype(np.float64)).astype(np_t))
            mod.call("dist2", lg, lh, d1)
            big = np.ascontiguousarray(np.resize(g, (m, n, n)))
            wb = np.zeros((m, k), np_t)
            mod.call("log", big, wb)
            start = time.perf_counter()
            for _ in range(5):
                mod.call("log", big, wb)
            ns = (time.perf_counter() - start) / 5 / m * 1e9
            print("%-6s %-5s %14.2e %14.2e %14.1f" % (
                name, dtype, np.max(np.abs(back.astype(np.float64) - g)),
                np.max(np.abs(d1.astype(np.float64) - d0) / np.maximum(1, np.abs(d0))), ns))


def demo_examples(build):
    torsorc = os.path.join(build, "bin", "torsorc")
    examples = sorted(glob.glob(os.path.join(ROOT, "examples", "*.tsr")))
    print("\n== Example models (.tsr → MLIR)")
    if not examples:
        print("no examples yet")
        return
    for path in examples:
        r = subprocess.run([torsorc, path, "--emit=mlir"], capture_output=True, text=True)
        status = "ok (%d lines of MLIR)" % len(r.stdout.splitlines()) if r.returncode == 0 \
            else "not yet: " + (r.stderr.strip().splitlines() or ["?"])[0]
        print("%-40s %s" % (os.path.relpath(path, ROOT), status))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    demo_groups(build)
    demo_examples(build)
    print("\n== Not there yet")
    print("- .tsr models end to end to a .so run by torsor-run (CPU backend issue)")
    print("- fused attention, user-declared groups, the NVPTX/GPU path")


if __name__ == "__main__":
    main()
