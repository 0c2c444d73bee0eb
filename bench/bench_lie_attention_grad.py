#!/usr/bin/env python3
"""Backward vs forward of fused Lie attention (issue: backward ≤ 3× forward).

Compiles one MLIR module with torsorc (-O2, the project's CPU pipeline):
  fwd: pair features of the poses + geo.flash_lie_attention (the fused
       forward the compiler emits for geo.lie_attention);
  bwd: the same features + geo.flash_lie_attention_grad + the pullbacks of
       the features to the poses (lie.pullback): what the VJP rule of
       geo.lie_attention emits (compiler/Autodiff/LieGeoRules.cpp).
Both run through the runtime's thread pool (libtorsor_runtime.so,
torsorSetNumThreads) on the same inputs: SO(3) by default, f32, 4 heads,
dv = 64, 2 threads, L = 4096. Peak memory: VmHWM growth of this process
during one call, after a reset (the inputs and outputs are allocated
before the reset; O(L) extra memory shows up as a few MB, an L × L f32
buffer would be 64 MB).

    bench/bench_lie_attention_grad.py --build build --L 4096 --threads 2

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
    attrs = "group = %s, heads = %d : i64, tau = array<f64: %s>, lambda = array<f64: %s>" % (
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
    bwd = """
func.func @bench_bwd(%%gm: %s, %%vm: %s, %%om: %s, %%dom: %s, %%dgm: %s, %%dvm: %s) attributes {llvm.emit_c_interface} {
  %%g = bufferization.to_tensor %%gm restrict : %s to %s
  %%v = bufferization.to_tensor %%vm restrict : %s to %s
  %%o = bufferization.to_tensor %%om restrict : %s to %s
  %%do = bufferization.to_tensor %%dom restrict : %s to %s
%s
  %%dq, %%dkt, %%dv = geo.flash_lie_attention_grad %%q, %%kt, %%v, %%o, %%do {%s} : (%s, %s, %s, %s, %s) -> (%s, %s, %s)
  %%dke = tensor.empty(%%n) : %s
  %%dk = linalg.transpose ins(%%dkt : %s) outs(%%dke : %s) permutation = [1, 0]
  %%gq = lie.pullback "query_features"(%%g), %%dq {group = %s, wrt = 0 : i64} : (%s, %s) -> %s
  %%gk = lie.pullback "key_features"(%%g), %%dk {group = %s, wrt = 0 : i64} : (%s, %s) -> %s
  %%gs = arith.addf %%gq, %%gk : %s
  bufferization.materialize_in_destination %%gs in restrict writable %%dgm : (%s, %s) -> ()
  bufferization.materialize_in_destination %%dv in restrict writable %%dvm : (%s, %s) -> ()
  return
}
""" % (GM, VM, VM, VM, GM, VM, GM, G, VM, V, VM, V, VM, V, feats, attrs, Q, KT, V, V, V, Q, KT, V,
       Q, KT, Q, g, G, Q, G, g, G, Q, G, G, G, GM, V, VM)
    return fwd + bwd


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
    a = ap.parse_args()

    harness.pin_to_cpus(a.threads)
    rt = ctypes.CDLL(os.path.join(a.build, "lib", "libtorsor_runtime.so"), mode=ctypes.RTLD_GLOBAL)
    rt.torsorSetNumThreads.argtypes = [ctypes.c_int32]
    rt.torsorSetNumThreads.restype = ctypes.c_void_p
    rt.torsorSetNumThreads(a.threads)

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
    bwd = caller("bench_bwd", [g, v, o, do, dg, dv])
    fwd()
    base = harness.rss_mb()
    harness.reset_peak()
    fwd()
    fwd_peak = harness.peak_mb() - base
    bwd()
    base = harness.rss_mb()
    harness.reset_peak()
    bwd()
    bwd_peak = harness.peak_mb() - base
    ok = bool(np.all(np.isfinite(dg)) and np.all(np.isfinite(dv)))

    tf, _, _ = harness.time_calls(fwd, budget_s=a.budget)
    tb, _, _ = harness.time_calls(bwd, budget_s=a.budget)
    mf, mb = float(np.median(tf)), float(np.median(tb))
    print("group %s  L %d  heads %d  dv %d  %s  threads %d  (compile %.1f s)"
          % (a.group, a.L, a.heads, a.dv, a.dtype, a.threads, compile_s))
    print("forward  median %8.2f ms  (%d reps)  peak +%.1f MB" % (mf * 1e3, len(tf), fwd_peak))
    print("backward median %8.2f ms  (%d reps)  peak +%.1f MB  finite %s" % (mb * 1e3, len(tb), bwd_peak, ok))
    print("ratio backward/forward %.2f" % (mb / mf))


if __name__ == "__main__":
    main()
