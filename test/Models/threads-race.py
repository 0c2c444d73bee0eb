# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""Multithreaded runs are deterministic and keep left-invariance.

Regression test: the lie_attention query-row loop was once run on the
thread pool although bufferization had hoisted its per-row temporaries into
buffers shared by all rows; with 2 threads at L = 64 the output changed from
run to run (0.6 absolute). Compiled in f64, so any difference above 1e-10 is
a bug, not rounding.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from model_runner import parse_declared_groups, random_group_elements, tool, write_safetensors  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sim2_similarity.tsr")
decl = parse_declared_groups(open(EXAMPLE).read())
work = tempfile.mkdtemp(prefix="torsor-threads-")
so = os.path.join(work, "m.so")
subprocess.run([tool("torsorc"), EXAMPLE, "-o", so, "--dtype=f64"], check=True)
rng = np.random.default_rng(0)
L = 64
g = random_group_elements(rng, "Sim2", L, decl["Sim2"])
x = rng.standard_normal((L, 16))
h = random_group_elements(rng, "Sim2", 1, decl["Sim2"])[0]
write_safetensors(os.path.join(work, "w.safetensors"), {"Wv": rng.standard_normal((16, 16)) / 4}, "f64")
np.save(os.path.join(work, "x.npy"), x)


def run(poses, threads):
    np.save(os.path.join(work, "g.npy"), poses)
    subprocess.run([tool("torsor-run"), so, "--threads", str(threads),
                    "--input", "g=" + os.path.join(work, "g.npy"),
                    "--input", "x=" + os.path.join(work, "x.npy"),
                    "--weights", os.path.join(work, "w.safetensors"),
                    "--output", "y=" + os.path.join(work, "y.npy")], check=True)
    return np.load(os.path.join(work, "y.npy"))


serial = run(g, 1)
checks = 0
for attempt in range(3):
    parallel = run(g, 2)
    err = float(np.max(np.abs(parallel - serial)))
    print("2 threads vs 1, attempt %d: %.3e" % (attempt, err))
    assert err <= 1e-10, "threaded run differs from the serial one"
    checks += 1
moved = run(np.einsum("ij,ljk->lik", h, g), 2)
err = float(np.max(np.abs(moved - serial)))
print("left-invariance with 2 threads: %.3e" % err)
assert err <= 1e-10
checks += 1
print("all %d checks passed" % checks)
