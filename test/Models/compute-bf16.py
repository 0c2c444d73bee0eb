# RUN: %python %s %torsor_src %torsor_bin | FileCheck %s
# CHECK: == --compute=bf16 models
# CHECK: all {{[0-9]+}} checks passed
"""Whole example models and their gradients under `--compute=bf16`.

Each model is compiled in bf16 for this machine (AMX where it has it, else
AVX512-BF16, else the f32 fallback) and for --mcpu=generic (the fallback,
runs everywhere), and compared with the same model compiled in f64 (the
oracle, itself checked against NumPy references in the other model tests)
on one seeded data set: max |out - out64| / max |out64| <= 3e-2 per output
(docs/precision.md). With --grad, every gradient of the bf16 backward is
within 3e-2 of the f64 gradient (same measure). The tolerance is the
issue's; matmul rounding alone is <= 2^-7 relative per product, and the
norms and softmaxes between layers do not amplify it beyond a few times.
"""
import os
import sys
import tempfile

import numpy as np

SRC, BIN = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "python"))
os.environ["TORSOR_BUILD_DIR"] = os.path.dirname(os.path.abspath(BIN))
import torsor  # noqa: E402
from model_runner import CompiledModel, rel_err  # noqa: E402
from torsor_testing import Report  # noqa: E402

EXAMPLES = os.path.join(SRC, "examples")
# (example, dims, also check gradients)
MODELS = [("standard_attention", {"L": 40}, True),
          ("relational_block", {"L": 40}, True),
          ("se2_planar", {"T": 33}, True),
          ("grassmann_lm", {"L": 24}, False)]
TOL = 3e-2


def main():
    report = Report("--compute=bf16 models")
    work = tempfile.TemporaryDirectory(prefix="torsor-bf16-models-")
    rng = np.random.default_rng(2026)
    for name, dims, grad in MODELS:
        tsr = os.path.join(EXAMPLES, name + ".tsr")
        # Random data from the manifest (group inputs are group elements).
        spec = CompiledModel(tsr, "f64", workdir=os.path.join(work.name, name))
        inputs = spec.random_inputs(rng, dims)
        params = spec.random_params(rng)

        def build(tag, dtype, compute="f32", flags=()):
            out = os.path.join(work.name, name, tag, "model.so")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            m = torsor.compile(tsr, dtype=dtype, compute=compute, flags=list(flags),
                               output=out, cache=False, grad=grad)
            m.set_params(params)
            return m

        oracle = build("f64", "f64")
        want = oracle.run(inputs)
        cot = {k: rng.standard_normal(np.shape(v)) for k, v in want.items()}
        want_grad = oracle.backward(inputs, cot) if grad else {}
        for tag, flags in (("bf16 host", ()), ("bf16 generic", ("--mcpu=generic",))):
            m = build(tag.replace(" ", "-"), "f32", "bf16", flags)
            got = m.run({k: np.asarray(v, np.float32) for k, v in inputs.items()})
            for out, value in want.items():
                report.check("%s %s: %s vs f64" % (name, tag, out),
                             rel_err(np.asarray(got[out], np.float64), value), TOL)
            if not grad:
                continue
            grads = m.backward({k: np.asarray(v, np.float32) for k, v in inputs.items()},
                               {k: np.asarray(v, np.float32) for k, v in cot.items()})
            for g, value in want_grad.items():
                report.check("%s %s: %s vs f64" % (name, tag, g),
                             rel_err(np.asarray(grads[g], np.float64), value), TOL)
    report.finish()


main()
