# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""The one-pass flash backward against the two-pass one.

geo-decompose-attention-grad lowers geo.flash_lie_attention_grad on the CPU
to one pass over key blocks (dk, dv in a block's scratch, dq into per-chunk
partials summed at the end) and, with the strategy's `backward = two_pass`
(the GPU's), to pass A over query rows and pass B over keys. A strategy
stamped on the op selects the schedule, so one module holds both: the
two-pass kernel (lanes = 1, on the CPU here) is the reference, in f64.

Cases: SO(3) (one block) with 1 and 4 heads, SE(3) (two blocks) with 4,
SE(2) with 1; full
and causal; with the forward's lse and without it (the recomputed
statistics); L = 1, 13 (less than one key block), 64 and 600 (more key
blocks than the 8 chunks, not a multiple of the block: chunks take two or
three blocks, the last one partly empty); the cross form with offsets
(Lq != Lk, causal, queries after the keys' start, some rows seeing no
key). f64 within 1e-12 relative to the largest gradient entry; the f32
one-pass kernel within 5e-5 of the f64 reference (flash-attention-grad.py's
tolerance for f32 gradients), or within twice the f32 two-pass kernel's
error where that is larger (random SE(3) sets: ~1e-4 in both schedules).
"""
import numpy as np

from torsor_testing import CompiledModule, Report, dps_function

FEATURES = {"so3": (9, 9, 1), "se3": (12, 12, 2), "se2": (4, 4, 2)}
TWO_PASS = "torsor.strategy = #strategy.vector_attention<lanes = 1, query_rows = 1, key_tile = 1, backward = two_pass>"


def tt(shape, dt):
    return "tensor<%sx%s>" % ("x".join("?" if s is None else str(s) for s in shape), dt)


def build(name, heads, D):
    nq, nk, nb = FEATURES[name]
    g = "#lie.group<%s>" % name
    tau = ", ".join("%.17e" % (0.7 + 0.6 * h) for h in range(heads))
    lam = ", ".join("%.17e" % (0.5 + 0.25 * i) for i in range(heads * nb))
    text = []
    for dt in ("f64", "f32"):
        Q, KT, V, LSE = [None, nq], [nk, None], [None, D], [None, heads]
        for causal in (False, True):
            attrs = "scores = #geo.scores<group = %s, heads = %d, tau = [%s], lambda = [%s]%s>" % (
                g, heads, tau, lam, ", causal" if causal else "")
            for schedule, extra in (("one", ""), ("two", ", " + TWO_PASS)):
                for with_lse in (False, True):
                    fn = "bwd_%s_%s_%s_%s" % ("causal" if causal else "full", schedule,
                                              "lse" if with_lse else "stats", dt)

                    def body(a, attrs=attrs, extra=extra, with_lse=with_lse):
                        lse_use = " lse %lse" if with_lse else ""
                        lse_ty = ", " + tt(LSE, dt) if with_lse else ""
                        return (
                            "  %%c0 = arith.constant 0 : index\n"
                            "  %%n = tensor.dim %s, %%c0 : %s\n"
                            "  %%e = tensor.empty(%%n) : %s\n"
                            "  %%le = tensor.empty(%%n) : %s\n"
                            "  %%o, %%lse = geo.flash_lie_attention %s, %s, %s, %%c0, %%e lse %%le {%s}"
                            " : (%s, %s, %s, index, %s, %s) -> (%s, %s)\n"
                            "  %%r:3 = geo.flash_lie_attention_grad %s, %s, %s, %%o, %s%s {%s%s}"
                            " : (%s, %s, %s, %s, %s%s) -> (%s, %s, %s)"
                            % (a[2], tt(V, dt), tt(V, dt), tt(LSE, dt), a[0], a[1], a[2], attrs,
                               tt(Q, dt), tt(KT, dt), tt(V, dt), tt(V, dt), tt(LSE, dt), tt(V, dt),
                               tt(LSE, dt), a[0], a[1], a[2], a[3], lse_use, attrs, extra,
                               tt(Q, dt), tt(KT, dt), tt(V, dt), tt(V, dt), tt(V, dt), lse_ty,
                               tt(Q, dt), tt(KT, dt), tt(V, dt)), ["%r#0", "%r#1", "%r#2"])
                    text.append(dps_function(fn, [(Q, dt), (KT, dt), (V, dt), (V, dt)],
                                             [(Q, dt), (KT, dt), (V, dt)], body))
            # The cross form: queries at global positions 40 + i, keys at
            # 25 + j; the lse of the forward with the same offsets.
            for schedule, extra in (("one", ""), ("two", ", " + TWO_PASS)):
                fn = "cross_%s_%s_%s" % ("causal" if causal else "full", schedule, dt)

                def cbody(a, attrs=attrs, extra=extra):
                    return (
                        "  %%c0 = arith.constant 0 : index\n"
                        "  %%qo = arith.constant 40 : index\n"
                        "  %%ko = arith.constant 25 : index\n"
                        "  %%n = tensor.dim %s, %%c0 : %s\n"
                        "  %%e = tensor.empty(%%n) : %s\n"
                        "  %%le = tensor.empty(%%n) : %s\n"
                        "  %%o, %%lse = geo.flash_lie_attention %s, %s, %s, %%qo key_offset %%ko, %%e lse %%le {%s}"
                        " : (%s, %s, %s, index, index, %s, %s) -> (%s, %s)\n"
                        "  %%r:3 = geo.flash_lie_attention_grad %s, %s, %s, %%o, %s lse %%lse offsets(%%qo, %%ko) {%s%s}"
                        " : (%s, %s, %s, %s, %s, %s, index, index) -> (%s, %s, %s)"
                        % (a[0], tt(Q, dt), tt(V, dt), tt(LSE, dt), a[0], a[1], a[2], attrs,
                           tt(Q, dt), tt(KT, dt), tt(V, dt), tt(V, dt), tt(LSE, dt), tt(V, dt),
                           tt(LSE, dt), a[0], a[1], a[2], a[3], attrs, extra,
                           tt(Q, dt), tt(KT, dt), tt(V, dt), tt(V, dt), tt(V, dt), tt(LSE, dt),
                           tt(Q, dt), tt(KT, dt), tt(V, dt)), ["%r#0", "%r#1", "%r#2"])
                text.append(dps_function(fn, [(Q, dt), (KT, dt), (V, dt), (V, dt)],
                                         [(Q, dt), (KT, dt), (V, dt)], cbody))
    return CompiledModule("\n".join(text))


def features(rng, name, L):
    """Pair features of random group elements, by the group's formulas
    (the kernel only sees features: any consistent set will do)."""
    nq, nk, _ = FEATURES[name]
    if name == "se2":
        th = rng.uniform(-np.pi, np.pi, L)
        t = rng.standard_normal((L, 2))
        q = np.stack([np.cos(th), np.sin(th), t[:, 0], t[:, 1]], 1)
        return q, q.copy()
    A = rng.standard_normal((L, 3, 3))
    R = np.linalg.qr(A)[0]
    R *= np.sign(np.linalg.det(R))[:, None, None]
    q = R.reshape(L, 9)
    if name == "se3":
        q = np.concatenate([q, rng.standard_normal((L, 3))], 1)
    return q, q.copy()


def run(mod, fn, arrays, shapes, dt):
    outs = [np.zeros(s, dt) for s in shapes]
    mod.call(fn, *[np.ascontiguousarray(a.astype(dt)) for a in arrays], *outs)
    return outs


def error(a, b):
    scale = max(np.max(np.abs(b)) if b.size else 0.0, 1.0)
    return np.max(np.abs(a.astype(np.float64) - b)) / scale if b.size else 0.0


def compare(report, label, ours, ref, tol, baseline=None):
    """`ours` against `ref`, within `tol` or, given the two-pass kernel's
    f32 gradients `baseline`, within twice their error (random SE(3)
    sets have f32 errors of ~1e-4 in either schedule)."""
    for i, (which, a, b) in enumerate(zip(("dq", "dk", "dv"), ours, ref)):
        finite = bool(np.all(np.isfinite(a)))
        report.check("%s %s finite" % (label, which), int(not finite), 0)
        bound = tol if baseline is None else max(tol, 2 * error(baseline[i], b))
        report.check("%s %s (rel)" % (label, which), error(a, b), bound)


def check_f32(report, mod, label, one, two, arrays, shapes, ref):
    ours = run(mod, one, arrays, shapes, np.float32)
    theirs = run(mod, two, arrays, shapes, np.float32)
    compare(report, label + " f32", ours, ref, 5e-5, theirs)


def main():
    rng = np.random.default_rng(5)
    report = Report("one-pass flash backward vs two-pass")
    D = 16
    for name, heads in (("so3", 1), ("so3", 4), ("se3", 4), ("se2", 1)):
        mod = build(name, heads, D)
        for causal in ("full", "causal"):
            for L in (1, 13, 64, 600):
                q, k = features(rng, name, L)
                kT = np.ascontiguousarray(k.T)
                v = rng.standard_normal((L, D))
                do = rng.standard_normal((L, D))
                shapes = [q.shape, kT.shape, v.shape]
                for stats in ("lse", "stats"):
                    ref = run(mod, "bwd_%s_two_%s_f64" % (causal, stats), [q, kT, v, do], shapes,
                              np.float64)
                    label = "%s h%d %s L=%d %s" % (name, heads, causal, L, stats)
                    ours = run(mod, "bwd_%s_one_%s_f64" % (causal, stats), [q, kT, v, do], shapes,
                               np.float64)
                    compare(report, label + " f64", ours, ref, 1e-12)
                    check_f32(report, mod, label, "bwd_%s_one_%s_f32" % (causal, stats),
                              "bwd_%s_two_%s_f32" % (causal, stats), [q, kT, v, do], shapes, ref)
            # Cross form: 70 queries against 600 keys and 600 queries
            # against 37 keys.
            for Lq, Lk in ((70, 600), (600, 37)):
                q, _ = features(rng, name, Lq)
                _, k = features(rng, name, Lk)
                kT = np.ascontiguousarray(k.T)
                v = rng.standard_normal((Lk, D))
                do = rng.standard_normal((Lq, D))
                shapes = [q.shape, kT.shape, v.shape]
                ref = run(mod, "cross_%s_two_f64" % causal, [q, kT, v, do], shapes, np.float64)
                label = "%s h%d cross %s Lq=%d Lk=%d" % (name, heads, causal, Lq, Lk)
                ours = run(mod, "cross_%s_one_f64" % causal, [q, kT, v, do], shapes, np.float64)
                compare(report, label + " f64", ours, ref, 1e-12)
                check_f32(report, mod, label, "cross_%s_one_f32" % causal,
                          "cross_%s_two_f32" % causal, [q, kT, v, do], shapes, ref)
    report.finish()


main()
