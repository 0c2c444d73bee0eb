# RUN: %python %s | FileCheck %s
# CHECK: == --compute=f32 is bit-identical
# CHECK: all {{[0-9]+}} checks passed
"""`--compute=f32` (the default) is unchanged by the bf16 work (issue #26).

Inputs/compute-f32-dense.tsr compiled with and without --compute=f32 for the
portable --mcpu=x86-64-v2 (runs on every x86-64 CI machine) must give, bit
for bit, the outputs in Inputs/compute-f32-dense.golden.npy, which the
compiler of commit 21de6e8 (before --compute existed) produced on the same
exactly representable inputs (small rationals: no RNG, no libm).
"""
import os
import tempfile

import numpy as np

from model_runner import CompiledModel
from torsor_testing import Report

HERE = os.path.dirname(os.path.abspath(__file__))
TSR = os.path.join(HERE, "Inputs", "compute-f32-dense.tsr")
GOLDEN = os.path.join(HERE, "Inputs", "compute-f32-dense.golden.npy")
L, D, F = 37, 48, 80


def exact(shape, a, b, m):
    """((a·i + b·j) mod m - m/2) / m: exact in f32."""
    i, j = np.indices(shape if len(shape) == 2 else (1, shape[0]))
    v = (((a * i + b * j) % m) - m // 2) / float(m)
    return v.reshape(shape)


def data():
    inputs = {"x": exact((L, D), 7, 13, 17)}
    params = {"W1": exact((D, F), 5, 3, 23) / 4, "b1": exact((F,), 1, 11, 9),
              "W2": exact((D, F), 3, 7, 19) / 4, "g": 1 + exact((D,), 1, 5, 7),
              "b": exact((D,), 1, 3, 11)}
    return inputs, params


def main():
    report = Report("--compute=f32 is bit-identical")
    inputs, params = data()
    golden = np.load(GOLDEN)
    work = tempfile.TemporaryDirectory(prefix="torsor-f32-")
    for flags in ([], ["--compute=f32"]):
        tag = "default" if not flags else "compute-f32"
        model = CompiledModel(TSR, "f32", workdir=os.path.join(work.name, tag),
                              extra_args=["--mcpu=x86-64-v2", *flags])
        report.check("%s: manifest has no compute field" % tag,
                     0 if "compute" not in model.manifest else 1, 0)
        got = model.run(inputs, params)["y"].astype(np.float32)
        same = got.shape == golden.shape and np.array_equal(
            got.view(np.uint32), golden.view(np.uint32))
        report.check("%s: outputs bit-identical to the golden file" % tag,
                     0 if same else 1, 0)
    report.finish()


if __name__ == "__main__":
    main()
