# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention -O2: thread counts give bit-identical outputs
# CHECK: all {{[0-9]+}} checks passed
"""The -O2 (fused) lie_attention is bit-identical under --threads 1, 2, 3.

Guards the fused kernel's parallel tiles against races in per-task buffers
(shared scratch, running max/sum or accumulators written by two tasks) and
against results that depend on how the work is split: each output row must
be reduced by one task in a fixed order, whatever the thread count. Runs
with 2 and 3 threads are repeated, since a race need not show every time.

SE3 in f32 (closed forms) at B = 2, L = 257 and Sim2 in f64 (the declared
groups' generic per-pair path) at B = 1, L = 300, on the suites' inputs
(θ near 0 and π mixed in), every output of Inputs/lie-attention/<group>.tsr
(causal and not, 1-4 heads). The serial run is also compared with the f64
-O0 oracle (f32: 1e-4, the near-π bar, on every row; f64: 1e-12 × κ as in
attention_suite), so that identical garbage cannot pass.
"""
import tempfile

import numpy as np

import attention_suite as S
from model_runner import CompiledModel
from torsor_testing import Report

report = Report("lie_attention -O2: thread counts give bit-identical outputs")
work = tempfile.TemporaryDirectory(prefix="torsor-attn-threads-")
for name, dtype, batch, L in (("SE3", "f32", 2, 257), ("Sim2", "f64", 1, 300)):
    case = S.CASES[name]
    fused = CompiledModel(case.tsr, dtype, opt=2, workdir=work.name)
    oracle = CompiledModel(case.tsr, "f64", opt=0, workdir=work.name)
    case.generators = fused.declared_groups.get(name)
    rng = np.random.default_rng(11)
    inp = S.batch_inputs(case, rng, L)
    inp = {k: v[:batch] for k, v in inp.items()}
    serial = fused.run(inp, {}, threads=1)
    for threads in (2, 3, 2, 3):
        out = fused.run(inp, {}, threads=threads)
        diff = sum(int(np.sum(out[k].view(np.uint64) != serial[k].view(np.uint64))) for k in serial)
        report.check("%s %s L=%d: --threads %d vs --threads 1, differing values (count)"
                     % (name, dtype, L, threads), diff, 0)
    truth = oracle.run(fused.as_seen(inp), {})
    theta = S.relative_angles(inp["g"], case.affine)
    worst = 0.0
    for v, h in S.VARIANTS.items():
        kappa = S.conditioning(case, S.visible_max_angle(theta, S.CAUSAL[v]))[..., None]
        worst = max(worst, float(np.max(S.slice_errors(serial[v], truth[v], h) / kappa)))
    report.check("%s %s L=%d: --threads 1 vs the f64 -O0 oracle%s"
                 % (name, dtype, L, " (÷ κ)" if case.ill_near_pi else ""),
                 worst, S.TOL["f32_pi"] if dtype == "f32" else S.TOL["f64"])
report.finish()
