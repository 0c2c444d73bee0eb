# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention -O2: causal tiles in zigzag order
# CHECK: all {{[0-9]+}} checks passed
"""The causal forward is unchanged by the order of its query tiles.

geo-tile-attention runs causal query tiles in the zigzag order 0, n−1, 1,
n−2, … so that the thread pool's contiguous chunks get equal work (a
causal tile's keys grow with its index). Each output row is still
computed by one task, over the same keys in the same order, so the
outputs must not depend on the thread count, including tile counts of
one, two and odd numbers of tiles (L = 1 … 130 with 4-row tiles) and the
1-row remainder tiles; and they must match the f64 -O0 oracle (f32: 1e-4,
the near-π bar, on every row; f64: 1e-12), so that a tile computed at
the wrong rows, or twice, or not at all, cannot pass.

SO3 and SE3 in f32 and SE3 in f64, every output of
Inputs/lie-attention/<group>.tsr (causal and not: the plain order is
checked alongside), batch 2, --threads 1, 2, 3, 4.
"""
import tempfile

import numpy as np

import attention_suite as S
from model_runner import CompiledModel
from torsor_testing import Report

report = Report("lie_attention -O2: causal tiles in zigzag order")
work = tempfile.TemporaryDirectory(prefix="torsor-attn-causal-order-")
LENGTHS = (1, 3, 4, 5, 8, 12, 17, 33, 64, 65, 130)
for name, dtype in (("SO3", "f32"), ("SE3", "f32"), ("SE3", "f64")):
    case = S.CASES[name]
    fused = CompiledModel(case.tsr, dtype, opt=2, workdir=work.name)
    oracle = CompiledModel(case.tsr, "f64", opt=0, workdir=work.name)
    rng = np.random.default_rng(23)
    for L in LENGTHS:
        inp = S.batch_inputs(case, rng, L)
        serial = fused.run(inp, {}, threads=1)
        diff = 0
        for threads in (2, 3, 4):
            out = fused.run(inp, {}, threads=threads)
            # run() returns float64 arrays (f32 outputs exactly widened).
            diff += sum(int(np.sum(out[k].view(np.uint64) != serial[k].view(np.uint64)))
                        for k in serial)
        report.check("%s %s L=%d: --threads 2, 3, 4 vs --threads 1, differing values (count)"
                     % (name, dtype, L), diff, 0)
        truth = oracle.run(fused.as_seen(inp), {})
        worst = 0.0
        for v, h in S.VARIANTS.items():
            worst = max(worst, float(np.max(S.slice_errors(serial[v], truth[v], h))))
        report.check("%s %s L=%d: --threads 1 vs the f64 -O0 oracle" % (name, dtype, L),
                     worst, S.TOL["f32_pi"] if dtype == "f32" else S.TOL["f64"])
report.finish()
