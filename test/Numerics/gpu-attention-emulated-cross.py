# RUN: %python %s | FileCheck %s
# CHECK: == GPU attention kernel's cross form (emulated on the CPU) vs the CPU kernel's
# CHECK: all {{[0-9]+}} checks passed
"""The GPU attention kernel on two token sets against the CPU kernel.

geo.flash_lie_attention's cross form (`key_offset`, with lse: what
geo-fuse-attention makes of geo.lie_cross_attention) over Lq query rows
against Lk keys at runtime offsets is lowered by the CPU pipeline and by
geo-map-attention-to-gpu with cpu-emulation=1 (the GPU kernel's
per-thread code, blocks and threads as host loops). Both must agree: f64
within 1e-12, f32 within 1e-5 relative; a row that sees no key has out = 0
and lse = −∞ in both (no NaN).

SO(3) and SE(3), 2 heads, causal and not; (Lq, Lk, qo, ko) with the query
block before, after and overlapping the key block, one token, and blocks
longer than one GPU block (BQ = 16) and one key tile (BK = 8). The
harness (modules, kernel shape, inputs) is test/lib/gpu_kernel_pair.py.
"""
import numpy as np

import gpu_kernel_pair as K

CASES = [(5, 7, 0, 0), (7, 5, 7, 0), (6, 9, 0, 4), (3, 4, 0, 10), (17, 9, 3, 12),
         (20, 19, 25, 0), (1, 1, 0, 0), (9, 33, 30, 2)]


def suite(report, name, n, nq, nk, feats, dt, np_dt, modules):
    for causal in (False, True):
        fn = "fwd_" + ("causal" if causal else "full")
        for Lq, Lk, qo, ko in CASES:
            gq, gk = K.poses(RNG, n, Lq), K.poses(RNG, n, Lk)
            q, _ = K.features(feats, gq, nq, nk)
            _, k = K.features(feats, gk, nq, nk)
            args = [np.ascontiguousarray(a.astype(np_dt))
                    for a in (q, k.T, RNG.standard_normal((Lk, K.D)))]
            args += [np.array(qo, dtype=np.int64), np.array(ko, dtype=np.int64)]
            results = K.run_both(modules, fn, args, np.full((Lq, K.D), np.nan, np_dt),
                                 np.full((Lq, K.HEADS), np.nan, np_dt))
            case = "%s %s %s Lq=%d Lk=%d qo=%d ko=%d" % (name, dt, fn[4:], Lq, Lk, qo, ko)
            for i, what in enumerate(("out", "lse")):
                ours, ref = results["gpu"][i].astype(np.float64), results["cpu"][i]
                # −∞ exactly where no key is live (lse), nowhere else.
                neg = np.isneginf(ours) & np.isneginf(ref)
                bad = np.isnan(ours) | np.isnan(ref) | (np.isinf(ours) != np.isinf(ref))
                report.check(case + " " + what + " finite or -inf alike", int(bad.sum()), 0)
                diff = np.where(neg | bad, 0.0, np.abs(ours - ref))
                scale = max(float(np.max(np.where(neg | bad, 0.0, np.abs(ref)),
                                         initial=0.0)), 1.0)
                report.check(case + " " + what + " (rel)",
                             float(np.max(diff, initial=0.0)) / scale, K.TOL[dt])
            if causal and qo + Lq <= ko:  # the whole block before the keys
                report.check(case + " empty rows: out = 0",
                             float(np.max(np.abs(results["gpu"][0]), initial=0.0)), 0)


RNG = np.random.default_rng(23)
K.each_module("GPU attention kernel's cross form (emulated on the CPU) vs the CPU kernel's",
              True, suite)
