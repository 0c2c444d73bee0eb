# RUN: %python %s | FileCheck %s
# CHECK: == GPU attention kernel's log-sum-exp (emulated on the CPU) vs the CPU kernel's
# CHECK: all {{[0-9]+}} checks passed
"""The GPU attention kernel's lse result against the CPU kernel's.

A geo.flash_lie_attention with an lse result (what geo-fuse-attention
emits when a gradient of the same attention takes the forward's
statistics) is lowered twice: by the CPU pipeline (geo-tile-attention,
geo-decompose-attention) and by geo-map-attention-to-gpu with
cpu-emulation=1 (the GPU kernel's per-thread code, its blocks and threads
as host loops) followed by the CPU pipeline. Both must give the same
output and the same per-row, per-head log-sum-exp: f64 within 1e-12, f32
within 1e-5 relative (the kernels sum in different orders).

SO(3) (one block) and SE(3) (two blocks), 2 heads, causal and not, L in
1, 13, 17, 40 with T = 8 threads × R = 2 rows (BQ = 16) and BK = 8 keys,
S = 4: one and several blocks, ragged last blocks and key tiles. The
harness (modules, kernel shape, inputs) is test/lib/gpu_kernel_pair.py.
"""
import numpy as np

import gpu_kernel_pair as K


def suite(report, name, n, nq, nk, feats, dt, np_dt, modules):
    for causal in (False, True):
        fn = "fwd_" + ("causal" if causal else "full")
        for L in (1, 13, 17, 40):
            q, k = K.features(feats, K.poses(RNG, n, L), nq, nk)
            args = [np.ascontiguousarray(a.astype(np_dt))
                    for a in (q, k.T, RNG.standard_normal((L, K.D)))]
            results = K.run_both(modules, fn, args, np.zeros((L, K.D), np_dt),
                                 np.full((L, K.HEADS), np.nan, np_dt))
            case = "%s %s %s L=%d" % (name, dt, fn[4:], L)
            for i, what in enumerate(("out", "lse")):
                ours, ref = results["gpu"][i], results["cpu"][i]
                finite = np.all(np.isfinite(ours))
                report.check(case + " " + what + " finite", int(not finite), 0)
                scale = max(float(np.max(np.abs(ref))), 1.0)
                report.check(case + " " + what + " (rel)",
                             float(np.max(np.abs(ours.astype(np.float64) - ref))) / scale,
                             K.TOL[dt])


RNG = np.random.default_rng(5)
K.each_module("GPU attention kernel's log-sum-exp (emulated on the CPU) vs the CPU kernel's",
              False, suite)
