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
S = 4: one and several blocks, ragged last blocks and key tiles.
"""
import subprocess

import numpy as np

from model_runner import tool
from torsor_testing import CompiledModule, Report, dps_function

GPU_OPTIONS = "cpu-emulation=1 threads=8 rows-per-thread=2 key-tile=8 score-chunk=4"
D, HEADS = 8, 2
GROUPS = {"so3": (3, 9, 9, 1), "se3": (4, 12, 12, 2)}  # n, features q, k, blocks


def tt(shape, dt):
    return "tensor<%sx%s>" % ("x".join("?" if s is None else str(s) for s in shape), dt)


def module_text(name, nq, nk, blocks, dt):
    """fwd_{full,causal}: (q, kᵀ, v) → (out, lse); qf, kf: pair features."""
    g = "#lie.group<%s>" % name
    tau = ", ".join("%.17e" % (0.7 + 0.6 * h) for h in range(HEADS))
    lam = ", ".join("%.17e" % (0.5 + 0.25 * i) for i in range(HEADS * blocks))
    Q, KT, V, S = [None, nq], [nk, None], [None, D], [None, HEADS]
    text = []
    for causal in (False, True):
        attrs = "scores = #geo.scores<group = %s, heads = %d, tau = [%s], lambda = [%s]%s>" % (
            g, HEADS, tau, lam, ", causal" if causal else "")
        text.append(dps_function(
            "fwd_" + ("causal" if causal else "full"), [(Q, dt), (KT, dt), (V, dt)],
            [(V, dt), (S, dt)], lambda a: (
                "  %%c0 = arith.constant 0 : index\n"
                "  %%n = tensor.dim %s, %%c0 : %s\n"
                "  %%e = tensor.empty(%%n) : %s\n"
                "  %%s = tensor.empty(%%n) : %s\n"
                "  %%r, %%l = geo.flash_lie_attention %s, %s, %s, %%c0, %%e lse %%s {%s} "
                ": (%s, %s, %s, index, %s, %s) -> (%s, %s)"
                % (a[2], tt(V, dt), tt(V, dt), tt(S, dt), a[0], a[1], a[2], attrs,
                   tt(Q, dt), tt(KT, dt), tt(V, dt), tt(V, dt), tt(S, dt), tt(V, dt), tt(S, dt)),
                ["%r", "%l"])))
    return "\n".join(text)


def features_module(name, n, nq, nk):
    G, Q, K = [None, n, n], [None, nq], [None, nk]
    g = "#lie.group<%s>" % name
    return CompiledModule(
        dps_function("qf", [(G, "f64")], [(Q, "f64")], lambda a: (
            "  %%r = lie.pair_features %s {group = %s} : %s -> %s"
            % (a[0], g, tt(G, "f64"), tt(Q, "f64")), ["%r"]))
        + dps_function("kf", [(G, "f64")], [(K, "f64")], lambda a: (
            "  %%r = lie.pair_features %s {group = %s, key} : %s -> %s"
            % (a[0], g, tt(G, "f64"), tt(K, "f64")), ["%r"])))


def gpu_emulated(text):
    """The module with its attention mapped by the emulated GPU kernel."""
    opt = subprocess.run([tool("torsor-opt"), "-", "--geo-map-attention-to-gpu=" + GPU_OPTIONS],
                         input=text, capture_output=True, text=True)
    if opt.returncode != 0:
        raise RuntimeError("torsor-opt failed:\n" + opt.stderr)
    return CompiledModule(opt.stdout)


def poses(rng, n, L):
    out = []
    for _ in range(L):
        r, _ = np.linalg.qr(rng.standard_normal((3, 3)))
        r *= np.sign(np.linalg.det(r))
        g = np.eye(n)
        g[:3, :3] = r
        if n == 4:
            g[:3, 3] = rng.standard_normal(3)
        out.append(g)
    return np.array(out)


def main():
    rng = np.random.default_rng(5)
    report = Report("GPU attention kernel's log-sum-exp (emulated on the CPU) vs the CPU kernel's")
    tol = {"f64": 1e-12, "f32": 1e-5}
    for name, (n, nq, nk, blocks) in GROUPS.items():
        feats = features_module(name, n, nq, nk)
        for dt in ("f64", "f32"):
            text = module_text(name, nq, nk, blocks, dt)
            cpu, gpu = CompiledModule(text), gpu_emulated(text)
            np_dt = np.float64 if dt == "f64" else np.float32
            for causal in (False, True):
                fn = "fwd_" + ("causal" if causal else "full")
                for L in (1, 13, 17, 40):
                    g = poses(rng, n, L)
                    q, k = np.zeros((L, nq)), np.zeros((L, nk))
                    feats.call("qf", g, q)
                    feats.call("kf", g, k)
                    args = [np.ascontiguousarray(a.astype(np_dt))
                            for a in (q, k.T, rng.standard_normal((L, D)))]
                    results = {}
                    for label, mod in (("cpu", cpu), ("gpu", gpu)):
                        out = np.zeros((L, D), np_dt)
                        lse = np.full((L, HEADS), np.nan, np_dt)
                        mod.call(fn, *args, out, lse)
                        results[label] = (out, lse)
                    case = "%s %s %s L=%d" % (name, dt, fn[4:], L)
                    for i, what in enumerate(("out", "lse")):
                        ours, ref = results["gpu"][i], results["cpu"][i]
                        finite = np.all(np.isfinite(ours))
                        report.check(case + " " + what + " finite", int(not finite), 0)
                        scale = max(float(np.max(np.abs(ref))), 1.0)
                        report.check(case + " " + what + " (rel)",
                                     float(np.max(np.abs(ours.astype(np.float64) - ref))) / scale,
                                     tol[dt])
    report.finish()


main()
