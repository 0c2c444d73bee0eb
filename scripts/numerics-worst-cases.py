#!/usr/bin/env python3
#===- numerics-worst-cases.py - Worst measured errors per group ------------===#
#
# Runs the per-group numerics tests (test/Numerics/lie-<group>.py) against a
# build and prints, per group and dtype, the worst measured error of log and
# dist2 over every case (random and adversarial) next to the tolerance the
# test enforces: the table in docs/reliability.md.
#
#   scripts/numerics-worst-cases.py [--build build]
#
#===----------------------------------------------------------------------===#
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUPS = ["so2", "se2", "so3", "se3", "sim3", "aff2", "declared"]
ROW = re.compile(r"^ok\s+(f32|f64) (.*?) (log|dist2) \(rel\)\s+max err (\S+)\s+\(tol (\S+)\)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    env = dict(os.environ, TORSOR_BIN=os.path.join(args.build, "bin"),
               PYTHONPATH=os.path.join(ROOT, "test", "lib"))
    print("| group | f64 log | f64 dist2 | f32 log | f32 dist2 |")
    print("|---|---|---|---|---|")
    for g in GROUPS:
        out = subprocess.run([sys.executable, os.path.join(ROOT, "test", "Numerics", "lie-%s.py" % g)],
                             env=env, capture_output=True, text=True)
        worst = {}
        for line in out.stdout.splitlines():
            m = ROW.match(line)
            if not m:
                continue
            key = (m.group(1), m.group(3))
            err, tol = float(m.group(4)), float(m.group(5))
            if key not in worst or err > worst[key][0]:
                worst[key] = (err, tol)
        cells = []
        for key in [("f64", "log"), ("f64", "dist2"), ("f32", "log"), ("f32", "dist2")]:
            e = worst.get(key)
            cells.append("%.1e (tol %.0e)" % e if e else "–")
        status = "" if out.returncode == 0 else " (test FAILED)"
        print("| %s%s | %s |" % (g, status, " | ".join(cells)))


if __name__ == "__main__":
    main()
