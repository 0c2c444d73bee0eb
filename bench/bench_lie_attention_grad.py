#!/usr/bin/env python3
"""Backward vs forward of fused Lie attention (issue: backward ≤ 3× forward).

Compiles one MLIR module with torsorc (-O2, the project's CPU pipeline):
  fwd: pair features of the poses + geo.flash_lie_attention (the fused
       forward the compiler emits for geo.lie_attention);
  fwd+lse: the same forward also returning the per-row log-sum-exp (what
       the backward entry's recomputed forward runs: geo-fuse-attention
       asks for it when a gradient uses the attention);
  bwd: the same features + geo.flash_lie_attention_grad taking O and the
       lse + the pullbacks of the features to the poses (lie.pullback):
       what `torsorc --grad` emits after the forward
       (compiler/Autodiff/LieGeoRules.cpp, dialects/Geo/Transforms/);
  bwd-stats: the same backward without the lse, recomputing the softmax
       statistics (the -O0 backward, and any gradient op without one).
The ratio is bwd / fwd; "entry" is (fwd+lse + bwd) / fwd, the whole
backward entry point, which re-runs the forward (docs/training.md).
Both run through the runtime's thread pool (libtorsor_runtime.so,
torsorSetNumThreads) on the same inputs: SO(3) by default, f32, 4 heads,
dv = 64, 2 threads, L = 4096. Peak memory: VmHWM growth of this process
during the backward's first call (the inputs and outputs are allocated
before it; O(L) extra memory shows up as a few MB, an L × L f32 buffer at
L = 4096 would be 64 MB).

    bench/bench_lie_attention_grad.py --build build --L 4096 --threads 2
    bench/bench_lie_attention_grad.py --group se3 --L 65536 --memory-only

Never part of make test.
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "lib"))
import harness  # noqa: E402
from torsor_testing import memref_descriptor  # noqa: E402

GROUPS = {"so3": (3, 9, 3), "se3": (4, 12, 6), "se2": (3, 4, 3)}


def module(group, heads, dv, dt):
    n, nf, k = GROUPS[group]
    g = "#lie.group<%s>" % group
    blocks = {"so3": 1, "se3": 2, "se2": 2}[group]
    tau = ", ".join("1.0" for _ in range(heads))
    lam = ", ".join("%.3f" % (1.0 / (1 + i % blocks)) for i in range(heads * blocks))
    attrs = "scores = #geo.scores<group = %s, heads = %d, tau = [%s], lambda = [%s]>" % (
        g, heads, tau, lam)
    G = "tensor<?x%dx%dx%s>" % (n, n, dt)
    GM = G.replace("tensor", "memref")
    V = "tensor<?x%dx%s>" % (dv, dt)
    VM = V.replace("tensor", "memref")
    Q = "tensor<?x%dx%s>" % (nf, dt)
    KT = "tensor<%dx?x%s>" % (nf, dt)
    feats = """
  %%q = lie.pair_features %%g {group = %s} : %s -> %s
  %%k = lie.pair_features %%g {group = %s, key} : %s -> %s
  %%c0 = arith.constant 0 : index
  %%c1 = arith.constant 1 : index
  %%n = tensor.dim %%g, %%c0 : %s
  %%ke = tensor.empty(%%n) : %s
  %%kt = linalg.transpose ins(%%k : %s) outs(%%ke : %s) permutation = [1, 0]
""" % (g, G, Q, g, G, Q, G, KT, Q, KT)
    LSE = "tensor<?x%d x%s>".replace(" ", "") % (heads, dt)
    LM = LSE.replace("tensor", "memref")
    fwd = """
func.func @bench_fwd(%%gm: %s, %%vm: %s, %%om: %s) attributes {llvm.emit_c_interface} {
  %%g = bufferization.to_tensor %%gm restrict : %s to %s
  %%v = bufferization.to_tensor %%vm restrict : %s to %s
%s
  %%e = tensor.empty(%%n) : %s
  %%o = geo.flash_lie_attention %%q, %%kt, %%v, %%c0, %%e {%s} : (%s, %s, %s, index, %s) -> %s
  bufferization.materialize_in_destination %%o in restrict writable %%om : (%s, %s) -> ()
  return
}
""" % (GM, VM, VM, GM, G, VM, V, feats, V, attrs, Q, KT, V, V, V, V, VM)
    fwd_lse = """
func.func @bench_fwd_lse(%%gm: %s, %%vm: %s, %%om: %s, %%lm: %s) attributes {llvm.emit_c_interface} {
  %%g = bufferization.to_tensor %%gm restrict : %s to %s
  %%v = bufferization.to_tensor %%vm restrict : %s to %s
%s
  %%e = tensor.empty(%%n) : %s
  %%le = tensor.empty(%%n) : %s
  %%o, %%lse = geo.flash_lie_attention %%q, %%kt, %%v, %%c0, %%e lse %%le {%s} : (%s, %s, %s, index, %s, %s) -> (%s, %s)
  bufferization.materialize_in_destination %%o in restrict writable %%om : (%s, %s) -> ()
  bufferization.materialize_in_destination %%lse in restrict writable %%lm : (%s, %s) -> ()
  return
}
""" % (GM, VM, VM, LM, GM, G, VM, V, feats, V, LSE, attrs, Q, KT, V, V, LSE, V, LSE, V, VM, LSE, LM)

    def bwd(name, with_lse):
        lse_arg = ", %%lm: %s" % LM if with_lse else ""
        lse_in = ("  %%lse = bufferization.to_tensor %%lm restrict : %s to %s\n" % (LM, LSE)
                  if with_lse else "")
        lse_use = " lse %lse" if with_lse else ""
        lse_ty = ", " + LSE if with_lse else ""
        return """
func.func @%s(%%gm: %s, %%vm: %s, %%om: %s, %%dom: %s, %%dgm: %s, %%dvm: %s%s) attributes {llvm.emit_c_interface} {
  %%g = bufferization.to_tensor %%gm restrict : %s to %s
  %%v = bufferization.to_tensor %%vm restrict : %s to %s
  %%o = bufferization.to_tensor %%om restrict : %s to %s
  %%do = bufferization.to_tensor %%dom restrict : %s to %s
%s%s
  %%dq, %%dkt, %%dv = geo.flash_lie_attention_grad %%q, %%kt, %%v, %%o, %%do%s {%s} : (%s, %s, %s, %s, %s%s) -> (%s, %s, %s)
  %%dke = tensor.empty(%%n) : %s
  %%dk = linalg.transpose ins(%%dkt : %s) outs(%%dke : %s) permutation = [1, 0]
  %%gq = lie.pullback "query_features"(%%g), %%dq {group = %s, wrt = 0 : i64} : (%s, %s) -> %s
  %%gk = lie.pullback "key_features"(%%g), %%dk {group = %s, wrt = 0 : i64} : (%s, %s) -> %s
  %%ge = tensor.empty(%%n) : %s
  %%gs = linalg.add ins(%%gq, %%gk : %s, %s) outs(%%ge : %s) -> %s
  bufferization.materialize_in_destination %%gs in restrict writable %%dgm : (%s, %s) -> ()
  bufferization.materialize_in_destination %%dv in restrict writable %%dvm : (%s, %s) -> ()
  return
}
""" % (name, GM, VM, VM, VM, GM, VM, lse_arg, GM, G, VM, V, VM, V, VM, V, lse_in, feats, lse_use,
       attrs, Q, KT, V, V, V, lse_ty, Q, KT, V, Q, KT, Q, g, G, Q, G, g, G, Q, G, G, G, G, G, G, G,
       GM, V, VM)
    return fwd + fwd_lse + bwd("bench_bwd", True) + bwd("bench_bwd_stats", False)


def random_rotations(rng, m):
    q = rng.standard_normal((m, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def poses(rng, group, L):
    R = random_rotations(rng, L)
    if group == "so3":
        return R
    if group == "se3":
        g = np.zeros((L, 4, 4))
        g[:, :3, :3] = R
        g[:, :3, 3] = rng.standard_normal((L, 3))
        g[:, 3, 3] = 1
        return g
    th = rng.uniform(-np.pi, np.pi, L)
    g = np.zeros((L, 3, 3))
    g[:, 0, 0] = g[:, 1, 1] = np.cos(th)
    g[:, 1, 0] = np.sin(th)
    g[:, 0, 1] = -np.sin(th)
    g[:, :2, 2] = rng.standard_normal((L, 2))
    g[:, 2, 2] = 1
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--group", default="so3", choices=sorted(GROUPS))
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dv", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    ap.add_argument("--budget", type=float, default=3.0, help="seconds per timing")
    ap.add_argument("--memory-only", action="store_true",
                    help="one call of the backward (with the forward's lse) and its peak "
                    "extra memory, no timings (for long sequences, e.g. --L 65536)")
    a = ap.parse_args()

    harness.pin_to_cpus(a.threads)
    # The compiled module below resolves torsor_parallel_for from the
    # runtime, so the runtime is opened RTLD_GLOBAL first; its C API is
    # called through the torsor package's binding (the same library).
    runtime = os.path.abspath(os.path.join(a.build, "lib", "libtorsor_runtime.so"))
    ctypes.CDLL(runtime, mode=ctypes.RTLD_GLOBAL)
    os.environ["TORSOR_RUNTIME_LIB"] = runtime
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import torsor
    torsor.set_num_threads(a.threads)

    tmp = tempfile.TemporaryDirectory(prefix="torsor-bench-grad-")
    src, so = os.path.join(tmp.name, "m.mlir"), os.path.join(tmp.name, "m.so")
    with open(src, "w") as f:
        f.write(module(a.group, a.heads, a.dv, a.dtype))
    t0 = time.time()
    subprocess.run([os.path.join(a.build, "bin", "torsorc"), src, "-o", so, "-O2"], check=True)
    compile_s = time.time() - t0
    lib = ctypes.CDLL(so)

    np_t = np.float32 if a.dtype == "f32" else np.float64
    rng = np.random.default_rng(0)
    g = np.ascontiguousarray(poses(rng, a.group, a.L).astype(np_t))
    v = np.ascontiguousarray(rng.standard_normal((a.L, a.dv)).astype(np_t))
    o = np.zeros_like(v)
    lse = np.zeros((a.L, a.heads), np_t)
    do = np.ascontiguousarray(rng.standard_normal((a.L, a.dv)).astype(np_t))
    dg = np.zeros_like(g)
    dv = np.zeros_like(v)

    def caller(name, arrays):
        descs = [memref_descriptor(x) for x in arrays]
        fn = getattr(lib, "_mlir_ciface_" + name)
        fn.restype = None
        ptrs = [ctypes.byref(d) for d in descs]
        return lambda: fn(*ptrs)

    fwd = caller("bench_fwd", [g, v, o])
    fwd_lse = caller("bench_fwd_lse", [g, v, o, lse])
    bwd = caller("bench_bwd", [g, v, o, do, dg, dv, lse])
    bwd_stats = caller("bench_bwd_stats", [g, v, o, do, dg, dv])
    # The backward's first call, before anything else ran: the growth of
    # the high-water mark is its peak extra memory (inputs and outputs are
    # allocated already). Then the forward's, which only counts where it
    # exceeds the backward's (or where /proc/self/clear_refs can reset it).
    fwd_lse()
    base = harness.rss_mb()
    harness.reset_peak()  # the forward's transient peak is not the backward's
    bwd()
    bwd_peak = harness.peak_mb() - base
    if a.memory_only:
        ok = bool(np.all(np.isfinite(dg)) and np.all(np.isfinite(dv)))
        inputs = sum(x.nbytes for x in (g, v, o, lse, do, dg, dv)) / 2**20
        print("group %s  L %d  heads %d  dv %d  %s  threads %d  (compile %.1f s)"
              % (a.group, a.L, a.heads, a.dv, a.dtype, a.threads, compile_s))
        print("backward peak +%.1f MB above inputs and outputs (%.1f MB)  finite %s"
              % (bwd_peak, inputs, ok))
        return
    base = harness.rss_mb()
    reset = harness.reset_peak()
    fwd()
    fwd_peak = harness.peak_mb() - base
    ok = bool(np.all(np.isfinite(dg)) and np.all(np.isfinite(dv)))
    # The two backward variants agree (same math, statistics from the
    # forward or recomputed).
    dg1, dv1 = dg.copy(), dv.copy()
    bwd_stats()
    agree = max(float(np.max(np.abs(dg - dg1)) / max(np.max(np.abs(dg1)), 1e-30)),
                float(np.max(np.abs(dv - dv1)) / max(np.max(np.abs(dv1)), 1e-30)))

    tf, _, _ = harness.time_calls(fwd, budget_s=a.budget)
    tfl, _, _ = harness.time_calls(fwd_lse, budget_s=a.budget)
    tb, _, _ = harness.time_calls(bwd, budget_s=a.budget)
    ts, _, _ = harness.time_calls(bwd_stats, budget_s=a.budget)
    mf, mfl, mb, ms = (float(np.median(t)) for t in (tf, tfl, tb, ts))
    print("group %s  L %d  heads %d  dv %d  %s  threads %d  (compile %.1f s)"
          % (a.group, a.L, a.heads, a.dv, a.dtype, a.threads, compile_s))
    print("forward        median %8.2f ms  (%d reps)  peak +%.1f MB%s" % (
        mf * 1e3, len(tf), fwd_peak, "" if reset else " (high-water mark not resettable: a lower bound)"))
    print("forward+lse    median %8.2f ms  (%d reps)" % (mfl * 1e3, len(tfl)))
    print("backward       median %8.2f ms  (%d reps)  peak +%.1f MB  finite %s" % (
        mb * 1e3, len(tb), bwd_peak, ok))
    print("backward-stats median %8.2f ms  (%d reps)  (recomputes the statistics; "
          "max relative difference %.1e)" % (ms * 1e3, len(ts), agree))
    print("ratio backward/forward %.2f  (backward-stats %.2f; whole entry "
          "(forward+lse + backward)/forward %.2f)" % (mb / mf, ms / mf, (mfl + mb) / mf))


if __name__ == "__main__":
    main()
