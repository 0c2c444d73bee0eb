# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t | FileCheck %s
# CHECK: split into {{[2-9]}} parts
# CHECK: 1 thread and 2 threads: the same library
# CHECK: exported symbols: the same
# CHECK: forward: bit-identical
# CHECK: backward: bit-identical
# CHECK: ok
"""torsorc optimizes and compiles a large model's LLVM module in parts.

The parts are cut only where one function reaches another through a
pointer (the thread-pool tasks handed to the dispatcher), so LLVM sees
every call graph whole and the code is what one whole-module compile
makes. Checked on examples/se3_pose_attention.tsr --grad (about 30k LLVM
instructions):
  * the module is cut into at least 2 parts (--mlir-timing says how many);
  * the library does not depend on the number of threads (byte-identical
    with --compile-threads=1 and 2);
  * against the whole module compiled as one (--split-llvm-module=false),
    the library exports the same symbols, and its forward and backward
    give bit-identical results.
"""
import os
import re
import subprocess
import sys

import numpy as np

from model_runner import random_group_elements, tool

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import torsor  # noqa: E402

work = sys.argv[1]
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                       "se3_pose_attention.tsr")
FLAGS = ["-O2", "--grad"]


def torsorc(*args):
    res = subprocess.run([tool("torsorc"), EXAMPLE, *FLAGS, *args],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stderr


# Parts, and independence of the thread count.
os.makedirs(os.path.join(work, "t2"))
os.makedirs(os.path.join(work, "t1"))
timing = torsorc("-o", os.path.join(work, "t2", "m.so"), "--compile-threads=2",
                 "--mlir-timing")
found = re.search(r"LLVM optimize and code generation \((\d+) parts\)", timing)
assert found, timing
print("split into %s parts" % found.group(1))
torsorc("-o", os.path.join(work, "t1", "m.so"), "--compile-threads=1")
with open(os.path.join(work, "t1", "m.so"), "rb") as a, \
        open(os.path.join(work, "t2", "m.so"), "rb") as b:
    assert a.read() == b.read(), "the library depends on --compile-threads"
print("1 thread and 2 threads: the same library")

# The whole module optimized and compiled as one.
whole = os.path.join(work, "whole")
os.makedirs(whole)
torsorc("-o", os.path.join(whole, "m.so"), "--split-llvm-module=false")


def exported(path):
    out = subprocess.run([tool("llvm-nm"), "-D", "--defined-only", path],
                         capture_output=True, text=True, check=True).stdout
    return sorted(line.split()[-1] for line in out.splitlines() if line.strip())


parted_symbols = exported(os.path.join(work, "t2", "m.so"))
assert parted_symbols == exported(os.path.join(whole, "m.so")), parted_symbols
assert "torsor_backward" in parted_symbols
print("exported symbols: the same")

parted = torsor.load(os.path.join(work, "t2", "m.so"))
single = torsor.load(os.path.join(whole, "m.so"))
rng = np.random.default_rng(7)
L = 37
inputs = {}
for spec in parted.inputs:
    shape = spec.concrete_shape({"L": L})
    if spec.name == "pose":
        inputs["pose"] = random_group_elements(rng, "SE3", L).astype(np.float32)
    else:
        inputs[spec.name] = rng.standard_normal(shape).astype(np.float32)
params = {spec.name: (rng.standard_normal(spec.concrete_shape({})) / 4)
          .astype(np.float32) for spec in parted.params}
torsor.set_num_threads(2)
for model in (parted, single):
    model.set_params(params)
a, b = parted.run(inputs), single.run(inputs)
for name in a:
    assert np.array_equal(a[name], b[name]), name
    assert np.all(np.isfinite(a[name])) and np.max(np.abs(a[name])) > 0
print("forward: bit-identical")
cot = {name: rng.standard_normal(value.shape).astype(np.float32)
       for name, value in a.items()}
ga, gb = parted.backward(inputs, cot), single.backward(inputs, cot)
assert sorted(ga) == sorted(gb) and len(ga) > 0
for name in ga:
    assert np.array_equal(ga[name], gb[name]), name
print("backward: bit-identical")
print("ok")
