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
longer than one GPU block (BQ = 16) and one key tile (BK = 8).
"""
import subprocess

import numpy as np

from model_runner import tool
from torsor_testing import CompiledModule, Report, dps_function

GPU_OPTIONS = "cpu-emulation=1 threads=8 rows-per-thread=2 key-tile=8 score-chunk=4"
D, HEADS = 8, 2
GROUPS = {"so3": (3, 9, 9, 1), "se3": (4, 12, 12, 2)}  # n, features q, k, blocks
CASES = [(5, 7, 0, 0), (7, 5, 7, 0), (6, 9, 0, 4), (3, 4, 0, 10), (17, 9, 3, 12),
         (20, 19, 25, 0), (1, 1, 0, 0), (9, 33, 30, 2)]


def tt(shape, dt):
    if not shape:
        return "tensor<%s>" % dt
    return "tensor<%sx%s>" % ("x".join("?" if s is None else str(s) for s in shape), dt)


def module_text(name, nq, nk, blocks, dt):
    """fwd_{full,causal}: (q, kᵀ, v, qo, ko) → (out, lse)."""
    g = "#lie.group<%s>" % name
    tau = ", ".join("%.17e" % (0.7 + 0.6 * h) for h in range(HEADS))
    lam = ", ".join("%.17e" % (0.5 + 0.25 * i) for i in range(HEADS * blocks))
    Q, KT, V, O, S = [None, nq], [nk, None], [None, D], [None, D], [None, HEADS]
    text = []
    for causal in (False, True):
        attrs = "scores = #geo.scores<group = %s, heads = %d, tau = [%s], lambda = [%s]%s>" % (
            g, HEADS, tau, lam, ", causal" if causal else "")
        text.append(dps_function(
            "fwd_" + ("causal" if causal else "full"),
            [(Q, dt), (KT, dt), (V, dt), ([], "i64"), ([], "i64")],
            [(O, dt), (S, dt)], lambda a: (
                "  %%c0 = arith.constant 0 : index\n"
                "  %%n = tensor.dim %s, %%c0 : %s\n"
                "  %%e = tensor.empty(%%n) : %s\n"
                "  %%s = tensor.empty(%%n) : %s\n"
                "  %%qo64 = tensor.extract %s[] : tensor<i64>\n"
                "  %%ko64 = tensor.extract %s[] : tensor<i64>\n"
                "  %%qo = arith.index_cast %%qo64 : i64 to index\n"
                "  %%ko = arith.index_cast %%ko64 : i64 to index\n"
                "  %%r, %%l = geo.flash_lie_attention %s, %s, %s, %%qo key_offset %%ko, %%e lse %%s {%s} "
                ": (%s, %s, %s, index, index, %s, %s) -> (%s, %s)"
                % (a[0], tt(Q, dt), tt(O, dt), tt(S, dt), a[3], a[4], a[0], a[1], a[2], attrs,
                   tt(Q, dt), tt(KT, dt), tt(V, dt), tt(O, dt), tt(S, dt), tt(O, dt), tt(S, dt)),
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
    return np.array(out).reshape(L, n, n)


def main():
    rng = np.random.default_rng(23)
    report = Report("GPU attention kernel's cross form (emulated on the CPU) vs the CPU kernel's")
    tol = {"f64": 1e-12, "f32": 1e-5}
    for name, (n, nq, nk, blocks) in GROUPS.items():
        feats = features_module(name, n, nq, nk)
        for dt in ("f64", "f32"):
            text = module_text(name, nq, nk, blocks, dt)
            cpu, gpu = CompiledModule(text), gpu_emulated(text)
            np_dt = np.float64 if dt == "f64" else np.float32
            for causal in (False, True):
                fn = "fwd_" + ("causal" if causal else "full")
                for Lq, Lk, qo, ko in CASES:
                    gq, gk = poses(rng, n, Lq), poses(rng, n, Lk)
                    q, k = np.zeros((Lq, nq)), np.zeros((Lk, nk))
                    feats.call("qf", gq, q)
                    feats.call("kf", gk, k)
                    args = [np.ascontiguousarray(a.astype(np_dt))
                            for a in (q, k.T, rng.standard_normal((Lk, D)))]
                    args += [np.array(qo, dtype=np.int64), np.array(ko, dtype=np.int64)]
                    results = {}
                    for label, mod in (("cpu", cpu), ("gpu", gpu)):
                        out = np.full((Lq, D), np.nan, np_dt)
                        lse = np.full((Lq, HEADS), np.nan, np_dt)
                        mod.call(fn, *args, out, lse)
                        results[label] = (out, lse)
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
                                     float(np.max(diff, initial=0.0)) / scale, tol[dt])
                    if causal and qo + Lq <= ko:  # the whole block before the keys
                        report.check(case + " empty rows: out = 0",
                                     float(np.max(np.abs(results["gpu"][0]), initial=0.0)), 0)
    report.finish()


main()
