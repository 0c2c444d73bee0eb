# Every core VJP rule against fourth-order central differences in f64 at
# random points: the dense built-ins (with the relational layers), the
# Grassmann layer with embedding and the losses, and the arith/math rules
# the group code uses (an MLIR model), each at -O0 and -O2. The error is
# |fd − g| relative to the gradient tensor's largest entry; the bound is
# 1e-7 (measured: about 1e-10 and below).
#
# RUN: env TORSOR_CACHE_DIR=%t.cache %python %s %S/Inputs | FileCheck %s
# CHECK-COUNT-7: ok {{.*}} max relative error
# CHECK: all gradients match
import os
import sys

import numpy as np

import gradcheck

inputs = sys.argv[1]
cases = [
    ("dense.tsr", {"L": 5}, {}),
    ("grassmann.tsr", {"L": 11}, {"tokens": 7, "targets": 7}),
    ("scalar-math.mlir", {"L": 9}, {}),
]
worst = 0.0
failed = False
for name, dims, ints in cases:
    for opt in (0, 2):
        model = gradcheck.compile_grad(os.path.join(inputs, name), opt=opt)
        report = gradcheck.check_gradients(model, dims, seed=1, samples=6, ints=ints)
        worst = max(worst, report.max_error)
        status = "ok" if report.max_error <= 1e-7 else "FAIL"
        failed |= status == "FAIL"
        print("%s %s -O%d: %d gradients, max relative error %.2e"
              % (status, name, opt, len(report.errors), report.max_error))
        if status == "FAIL":
            print(report)
# The grassmann model repeats token ids at small distances: identical
# Plücker partners (p = 0) must give finite gradients.
model = gradcheck.compile_grad(os.path.join(inputs, "grassmann.tsr"), opt=2)
rng = np.random.default_rng(0)
ins, params = gradcheck.random_arrays(model, {"L": 16}, rng, {"tokens": 2, "targets": 7})
ins["x"][:] = 0.0
model.set_params(params)
grads = model.backward(ins, {"loss": np.array(1.0), "m": np.array(0.0)})
finite = all(np.isfinite(g).all() for g in grads.values())
print("ok repeated tokens: finite gradients max relative error -" if finite
      else "FAIL repeated tokens: non-finite gradients")
failed |= not finite
print("all gradients match" if not failed else "some gradients do not match")
