# RUN: %python %s | FileCheck %s
# CHECK: == dense products of depth 1 and width 1
# CHECK: all {{[0-9]+}} checks passed
"""Dense products whose depth or width is 1 (a grassmann_mix over one
feature: its reduction reads a [3, 1] weight) compile at -O2 and match the
-O0 oracle. A fuzzer found this model failing in LLVM translation: the
right operand's column panels left a 1-D strided vector transfer that
convert-vector-to-scf lowers to an scf.for, after the CPU pipeline had
already lowered scf to cf. Tolerance: 1e-5 relative to max |y| (f32; the
two lowerings sum in different orders)."""
import os
import tempfile

import numpy as np

from model_runner import CompiledModel
from torsor_testing import Report

MODEL = """model M {
  dim L;
  dim D = %d;
  dim G = %d;
  input x: f32[L, D];
  param wr: f32[3, D];
  param br: f32[3];
  param wp: f32[D, 3];
  param bp: f32[D];
  param wg: f32[D, G];
  param bg: f32[D];
  let h = grassmann_mix(x, w_red = wr, b_red = br, w_plucker = wp, b_plucker = bp,
                        w_gate = wg, b_gate = bg, offsets = [1, 2]);
  output y = tanh(h);
}
"""


def main():
    report = Report("dense products of depth 1 and width 1")
    rng = np.random.default_rng(5)
    work = tempfile.TemporaryDirectory(prefix="torsor-depth-one-")
    for d in (1, 2):
        tsr = os.path.join(work.name, "m%d.tsr" % d)
        with open(tsr, "w") as f:
            f.write(MODEL % (d, 2 * d))
        fast = CompiledModel(tsr, "f32", opt=2, workdir=os.path.join(work.name, "o2_%d" % d))
        oracle = CompiledModel(tsr, "f32", opt=0, workdir=os.path.join(work.name, "o0_%d" % d))
        params = {"wr": (3, d), "br": (3,), "wp": (d, 3), "bp": (d,), "wg": (d, 2 * d), "bg": (d,)}
        weights = {k: rng.standard_normal(s).astype(np.float32) for k, s in params.items()}
        for L in (1, 5, 40):
            x = rng.standard_normal((L, d)).astype(np.float32)
            got = np.asarray(fast.run({"x": x}, weights)["y"], np.float64)
            want = np.asarray(oracle.run({"x": x}, weights)["y"], np.float64)
            scale = max(float(np.max(np.abs(want))), 1e-30)
            report.check("D=%d L=%d: -O2 vs -O0 (rel)" % (d, L),
                         float(np.max(np.abs(got - want))) / scale, 1e-5)
    report.finish()


if __name__ == "__main__":
    main()
