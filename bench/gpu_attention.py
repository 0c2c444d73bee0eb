#!/usr/bin/env python3
"""Lie attention on an NVIDIA GPU: Torsor's nvptx kernels against PyTorch
scaled_dot_product_attention (flash) and FlexAttention, on the same GPU.

The timing part of scripts/gpu-check.sh's attention benchmark. It runs on
the device machine (PyTorch, Triton and JAX; no LLVM): the models are
compiled here beforehand and carried as .so files, and run in-process
through the Torsor runtime's C API (libtorsor_runtime.so, through the
torsor package's ctypes binding: python/torsor beside bench/).

Problem: one layer, one head, tokens g [L, n, n] of SO(3) or SE(3), values
v [L, dv] (dv = 64), f32, not causal; L = 4096, 16384, 65536 by default.
Head parameters (τ, λ) are bench/lie_peers.py's first head, so the score is
    s_ij = −Σ_b λ_b ‖w_ij‖²_b / τ,   w_ij = log(g_i⁻¹g_j).

Rows of the table:
  torsor        the nvptx model (geo-map-attention-to-gpu kernel, plus the
                per-token pair features); device inputs bound with
                torsorModuleBindInputDevice and outputs left on the device
                (API 2), so one timed call is torsorModuleRun alone (which
                synchronizes its stream before it returns).
  sdpa-flash    F.scaled_dot_product_attention, flash backend, bf16 q/k/v
                [1, 1, L, dv]: plain attention at the same L and d (the
                issue's yardstick; not the same function).
  sdpa-f32      the same in f32 (memory-efficient backend): same precision
                as Torsor.
  flex          FlexAttention (torch.compile'd) in f32 with a score_mod that
                computes the very Lie score from per-token rotations and
                translations (pair_blocks below): the same function as Torsor,
                by PyTorch's generated Triton kernel.

Correctness before timing: at a small L every GPU implementation of the
Lie score (torsor, flex) is compared with the independent float64
reference (bench/lie_peers.reference_f64: SciPy logm per pair), and at
every timed L torsor against flex (both f32; norm-wise relative error).
Timing: warm-up, then CUDA-event (or synchronized) timings of `--repeats`
calls; the table gives the median, the spread (min–max) and the ratio of
SDPA's median to Torsor's (≥ 1: Torsor is faster). Inputs are random,
never zeros, and fresh per L.

    # here (LLVM, the nvptx target): compile the models into a folder
    python3 bench/gpu_attention.py --build-models bench/gpu-models
    # without a GPU: check everything else (models, runtime, formulas)
    python3 bench/gpu_attention.py --models bench/gpu-models --dry-run
    # on the device machine
    python3 bench/gpu_attention.py --models bench/gpu-models \\
        --runtime build/lib/libtorsor_runtime.so --out $OUT/gpu_attention.json

Exit status: 0 when every check passed (the timings are reported, never
judged), 1 when a check failed, 2 on a usage or setup error.
"""
import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import lie_peers  # noqa: E402

GROUPS = ("SO3", "SE3")
DV = 64
HEADS = 1
# f32 Torsor and flex against the float64 reference (issue #10's bar).
TOL_REF = 1e-5
# torsor against flex, both f32 with different evaluation orders: the sum
# of two such errors, with headroom for long sums at L = 65536.
TOL_PEER = 1e-4


def fail(msg, code=2):
    print("gpu_attention.py: error: %s" % msg, file=sys.stderr)
    sys.exit(code)


# --- the Lie score, per pair (FlexAttention's score_mod and the dry run) -----------

def pair_blocks(torch, group, Ri, ti, Rj, tj):
    """Block norms of w = log(g_i⁻¹g_j) from rotations R (lists of 9 entries,
    row-major) and translations t (3 entries) of tokens i and j; every entry
    a tensor, broadcast together. MATH.md §1's closed forms, as in
    lie_peers.torch_chunk_blocks: θ = atan2(½‖a‖, (tr M − 1)/2) with
    M = R_iᵀR_j, a = vee(M − Mᵀ); SE(3): u = R_iᵀ(t_j − t_i),
    ‖V⁻¹u‖² = (n·u)² + f(θ)(‖u‖² − (n·u)²), f = [(θ/2)/sin(θ/2)]²."""
    m = [[sum(Ri[3 * c + a] * Rj[3 * c + b] for c in range(3)) for b in range(3)]
         for a in range(3)]
    c = 0.5 * (m[0][0] + m[1][1] + m[2][2] - 1)
    a0, a1, a2 = m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1]
    aa = a0 * a0 + a1 * a1 + a2 * a2
    th = torch.atan2(0.5 * torch.sqrt(aa), c)
    if group == "SO3":
        return [th * th]
    d = [tj[k] - ti[k] for k in range(3)]
    u = [sum(Ri[3 * k + a] * d[k] for k in range(3)) for a in range(3)]
    uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2]
    au = a0 * u[0] + a1 * u[1] + a2 * u[2]
    uMu = sum(u[a] * (m[a][0] * u[0] + m[a][1] * u[1] + m[a][2] * u[2]) for a in range(3))
    nu2 = torch.where(c > 0, au * au / torch.clamp(aa, min=1e-30),
                      (uMu - c * uu) / torch.clamp(1 - c, min=1e-30))
    half = 0.5 * th
    small = torch.abs(half) < 1e-3
    safe = torch.where(small, torch.ones_like(half), half)
    r = safe / torch.sin(safe)
    f = torch.where(small, 1 + half * half / 3, r * r)
    return [th * th, nu2 + f * (uu - nu2)]


def score_coefficients(group):
    """c_b = −λ_b / τ of the benchmark's single head."""
    return [float(x) for x in lie_peers.coef(group, HEADS)[0]]


def lie_scores_dense(torch, group, g):
    """[L, L] scores by pair_blocks (small L only: the dry run's check)."""
    n = g.shape[-1]
    R = g[:, :3, :3].reshape(-1, 9)
    t = g[:, :3, n - 1] if group == "SE3" else torch.zeros_like(g[:, :3, 0])
    Ri = [R[:, None, k] for k in range(9)]
    Rj = [R[None, :, k] for k in range(9)]
    ti = [t[:, None, k] for k in range(3)]
    tj = [t[None, :, k] for k in range(3)]
    blocks = pair_blocks(torch, group, Ri, ti, Rj, tj)
    return sum(c * b for c, b in zip(score_coefficients(group), blocks))


def rel_err(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if got.shape != ref.shape or not np.all(np.isfinite(got)):
        return math.inf
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))


# --- Torsor through the runtime's C API (the torsor package's binding) ---------------

# The device functions this benchmark needs (runtime.h, API version 2).
API2 = ("torsorCudaAvailable", "torsorModuleDevice", "torsorModuleBindInputDevice",
        "torsorModuleSetHostOutputs", "torsorModuleGetOutputDevice")


def torsor_package(runtime):
    """The torsor package (python/ beside bench/, in a checkout and in the
    gpu-check stage alike), set to load the runtime library `runtime`: the
    project's one ctypes binding of the C API, used here as everywhere."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    os.environ["TORSOR_RUNTIME_LIB"] = os.path.abspath(runtime)
    try:
        import torsor
        from torsor import _capi, _device
    except ImportError as e:
        fail("cannot import the torsor package from %s: %s"
             % (os.path.join(ROOT, "python"), e))
    try:
        lib = _capi.lib()
    except (OSError, torsor.TorsorError) as e:
        fail("cannot load the Torsor runtime %s: %s" % (runtime, e))
    missing = [n for n in API2 if not hasattr(lib, n)]
    if missing:
        fail("the Torsor runtime %s lacks the device API (%s); rebuild it"
             % (runtime, ", ".join(missing)))
    return torsor, _capi, _device


def cuda_problem(runtime):
    """None when the runtime can use a GPU, else its message."""
    _, _capi, _device = torsor_package(runtime)
    try:
        _capi.check(_device.lib().torsorCudaAvailable())
    except Exception as e:  # a TorsorError subclass carrying the runtime's message
        return str(e)
    return None


class TorsorModel:
    """One loaded nvptx model (a torsor.Model) with device (torch) tensors
    bound once, so one timed call is torsorModuleRun alone."""

    def __init__(self, runtime, path):
        torsor, self.capi, self.dev = torsor_package(runtime)
        self.model = torsor.load(path)
        if not self.dev.is_cuda_model(self.model):
            fail("%s is not an nvptx model (compile it with --target=nvptx)" % path)
        self.lib = self.dev.lib()
        self.handle = self.model._handle
        self.keep = {}
        self.capi.check(self.lib.torsorModuleSetHostOutputs(self.handle, 0))

    def bind(self, name, tensor):
        """`tensor`: a contiguous CUDA torch tensor, borrowed until rebound."""
        dtype = {"torch.float32": "f32", "torch.float64": "f64"}[str(tensor.dtype)]
        keep = []
        self.dev._bind(self.lib, self.handle,
                       {name: (tensor.data_ptr(), tuple(tensor.shape), dtype)}, {}, keep)
        self.keep[name] = (tensor, keep)

    def run(self):
        self.capi.check(self.lib.torsorModuleRun(self.handle))

    def output(self, torch, name):
        """Output `name` of the last run as a CPU float64 tensor."""
        import torsor.torch as ttorch
        t = self.capi.Tensor()
        self.capi.check(self.lib.torsorModuleGetOutputDevice(
            self.handle, self.capi.encode(name), ctypes.byref(t)))
        ptr, shape, dtype = self.dev._describe(t)
        return ttorch._from_device(ptr, shape, dtype, torch.device("cuda")).double().cpu()

    def close(self):
        self.model.close()


# --- models ---------------------------------------------------------------------

def model_source(group):
    return lie_peers.tsr_model(group, HEADS, DV)


def build_models(folder, torsorc, arch):
    """Compiles the benchmark's models for the GPU (run where LLVM is)."""
    os.makedirs(folder, exist_ok=True)
    for group in GROUPS:
        src = os.path.join(folder, group.lower() + ".tsr")
        with open(src, "w") as f:
            f.write(model_source(group))
        so = os.path.join(folder, group.lower() + ".so")
        cmd = [torsorc, src, "-o", so, "--target=nvptx", "--gpu-arch=" + arch, "-O2"]
        print("+ " + " ".join(cmd), flush=True)
        if subprocess.run(cmd).returncode != 0:
            fail("building the %s model failed" % group)
    print("models in %s" % folder)


def check_manifest(folder, group, arch):
    """Problems with the carried model of `group` (a list of strings)."""
    so = os.path.join(folder, group.lower() + ".so")
    js = os.path.splitext(so)[0] + ".json"
    if not os.path.exists(so) or not os.path.exists(js):
        return ["%s or its manifest is missing (build with --build-models)" % so]
    with open(js) as f:
        m = json.load(f)
    problems = []
    if m.get("target") != "nvptx":
        problems.append("%s: target %r, want 'nvptx'" % (js, m.get("target")))
    if arch and m.get("gpu_arch") not in (None, arch):
        problems.append("%s: gpu_arch %r, want %r" % (js, m.get("gpu_arch"), arch))
    names = sorted(e["name"] for e in m.get("inputs", []))
    if names != ["g", "v"]:
        problems.append("%s: inputs %s, want ['g', 'v']" % (js, names))
    return problems


# --- peers ----------------------------------------------------------------------

def make_flex(torch, group, g32):
    """FlexAttention whose score_mod is the Lie score of tokens g32 [L, n, n]
    (f32, CUDA); q and k are unused by the score (zeros of width 16)."""
    from torch.nn.attention.flex_attention import flex_attention
    n = g32.shape[-1]
    R = g32[:, :3, :3].reshape(-1, 9).t().contiguous()        # [9, L]
    T = (g32[:, :3, n - 1].t().contiguous() if group == "SE3"
         else torch.zeros(3, g32.shape[0], device=g32.device))  # [3, L]
    coefs = score_coefficients(group)

    def score_mod(score, b, h, qi, kj):
        Ri = [R[k][qi] for k in range(9)]
        Rj = [R[k][kj] for k in range(9)]
        ti = [T[k][qi] for k in range(3)]
        tj = [T[k][kj] for k in range(3)]
        blocks = pair_blocks(torch, group, Ri, ti, Rj, tj)
        s = coefs[0] * blocks[0]
        for c, blk in zip(coefs[1:], blocks[1:]):
            s = s + c * blk
        return s

    compiled = torch.compile(flex_attention, dynamic=False)
    L = g32.shape[0]
    # q·k is computed and ignored: the narrowest width flex accepts keeps
    # that waste small (16; dv where a different q/k width is refused).
    widths = [16, DV]

    def run(v):
        while True:
            qk = torch.zeros(1, 1, L, widths[0], device=g32.device, dtype=torch.float32)
            try:
                return compiled(qk, qk, v.view(1, 1, L, -1), score_mod=score_mod,
                                scale=1.0)[0, 0]
            except Exception:
                if len(widths) == 1:
                    raise
                widths.pop(0)

    return run


def sdpa(torch, L, dtype, backend):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    gen = torch.Generator(device="cuda").manual_seed(L)
    q, k, v = (torch.randn(1, 1, L, DV, device="cuda", dtype=dtype, generator=gen)
               for _ in range(3))
    chosen = {"flash": SDPBackend.FLASH_ATTENTION,
              "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]

    def run():
        with sdpa_kernel([chosen]):
            return F.scaled_dot_product_attention(q, k, v)
    return run


def time_calls(torch, fn, warmup, repeats, synchronous=False):
    """Milliseconds per call, `repeats` of them, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        if synchronous:  # the call synchronizes its own stream
            t0 = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t0))
        else:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return times


def summary(times):
    if not times:
        return None
    return {"median_ms": float(np.median(times)), "min_ms": float(np.min(times)),
            "max_ms": float(np.max(times)), "n": len(times)}


# --- checks and timings ---------------------------------------------------------

class Checks:
    def __init__(self):
        self.failed = []

    def check(self, what, err, tol):
        ok = err <= tol
        print("%s %-62s err %.3e (tol %.0e)" % ("ok  " if ok else "FAIL", what, err, tol),
              flush=True)
        if not ok:
            self.failed.append(what)
        return ok


def dry_run(args, checks):
    """Everything that needs no GPU: models, runtime, the score formulas."""
    for group in GROUPS:
        for p in check_manifest(args.models, group, args.gpu_arch):
            print("FAIL " + p)
            checks.failed.append(p)
        if not check_manifest(args.models, group, args.gpu_arch):
            print("ok   %s model: %s.so, target nvptx" % (group, group.lower()))
    if os.path.exists(args.runtime):
        # torsor_package() stops with a message when the device API is missing.
        torsor_package(args.runtime)
        print("ok   runtime %s loads through the torsor package; device API: yes"
              % args.runtime)
        print("     CUDA here: %s" % (cuda_problem(args.runtime) or "available"))
    else:
        checks.failed.append("runtime missing")
        print("FAIL runtime %s not found (--runtime)" % args.runtime)
    try:
        import torch
    except ImportError:
        print("skip formulas: no PyTorch here")
        return
    # The flex score_mod's formula against the float64 reference, on the
    # CPU in float64: softmax(pair_blocks scores) @ v.
    for group in GROUPS:
        for near_pi in (False, True):
            g, v = lie_peers.random_inputs(group, 48, DV, seed=1, near_pi=near_pi)
            ref = lie_peers.reference_f64(group, g, v, HEADS)
            s = lie_scores_dense(torch, group, torch.from_numpy(g))
            out = torch.softmax(s, -1) @ torch.from_numpy(v)
            checks.check("%s pair_blocks (flex score_mod) vs float64 logm%s"
                         % (group, ", near π" if near_pi else ""),
                         rel_err(out.numpy(), ref), 1e-10)
    print("     (timings need a GPU: run without --dry-run on the device machine)")


def gpu_run(args, checks):
    import torch
    if not torch.cuda.is_available():
        fail("no CUDA device visible to PyTorch (use --dry-run without a GPU)")
    problem = cuda_problem(args.runtime)
    if problem:
        fail("the Torsor runtime cannot use the GPU: %s" % problem)
    props = torch.cuda.get_device_properties(0)
    print("device: %s, %d SMs; torch %s" % (props.name, props.multi_processor_count,
                                            torch.__version__), flush=True)
    results = {"device": props.name, "torch": torch.__version__, "rows": []}
    models = {}
    for group in GROUPS:
        problems = check_manifest(args.models, group, args.gpu_arch)
        if problems:
            fail("; ".join(problems))
        models[group] = TorsorModel(args.runtime,
                                    os.path.join(args.models, group.lower() + ".so"))
    label = "torsor"

    def torsor_call(group, g, v):
        m = models[group]
        m.bind("g", g)
        m.bind("v", v)
        # The inputs were written on PyTorch's stream, the model runs on its
        # own: finish the writes first.
        torch.cuda.synchronize()
        return m.run

    # Correctness against the float64 reference at a small L.
    for group in GROUPS:
        for near_pi in (False, True):
            g, v = lie_peers.random_inputs(group, args.check_length, DV, seed=2,
                                           near_pi=near_pi)
            ref = lie_peers.reference_f64(group, g, v, HEADS)
            g32 = torch.from_numpy(g).float().cuda().contiguous()
            v32 = torch.from_numpy(v).float().cuda().contiguous()
            run = torsor_call(group, g32, v32)
            run()
            tag = "%s L=%d%s" % (group, args.check_length, ", near π" if near_pi else "")
            checks.check("torsor vs float64 reference, " + tag,
                         rel_err(models[group].output(torch, "y").numpy(), ref), TOL_REF)
            flex = make_flex(torch, group, g32)
            checks.check("flex vs float64 reference, " + tag,
                         rel_err(flex(v32).double().cpu().numpy(), ref), TOL_REF)

    for L in args.lengths:
        sd = {"sdpa-flash": sdpa(torch, L, torch.bfloat16, "flash"),
              "sdpa-f32": sdpa(torch, L, torch.float32, "efficient")}
        base = {}
        for name, fn in sd.items():
            base[name] = summary(time_calls(torch, fn, args.warmup, args.repeats))
        for group in GROUPS:
            g, v = lie_peers.random_inputs(group, L, DV, seed=3)
            g32 = torch.from_numpy(g).float().cuda().contiguous()
            v32 = torch.from_numpy(v).float().cuda().contiguous()
            run = torsor_call(group, g32, v32)
            run()
            got = models[group].output(torch, "y")
            flex = make_flex(torch, group, g32)
            peer = flex(v32).double().cpu()
            checks.check("torsor vs flex, %s L=%d" % (group, L),
                         rel_err(got.numpy(), peer.numpy()), TOL_PEER)
            row = {"group": group, "L": L, "dv": DV,
                   label: summary(time_calls(torch, run, args.warmup, args.repeats,
                                             synchronous=True)),
                   "flex": summary(time_calls(torch, lambda: flex(v32), args.warmup,
                                              args.repeats))}
            row.update(base)
            results["rows"].append(row)
            print_row(row, label)
    print_table(results, label)
    for m in models.values():
        m.close()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
        print("wrote %s" % args.out)


def fmt(s):
    if not s:
        return "-"
    return "%.3f (%.3f-%.3f)" % (s["median_ms"], s["min_ms"], s["max_ms"])


def print_row(row, label):
    print("  %s L=%d: %s %s ms, flex %s ms, sdpa-flash %s ms" % (
        row["group"], row["L"], label, fmt(row[label]), fmt(row["flex"]),
        fmt(row["sdpa-flash"])), flush=True)


def print_table(results, label):
    print("\nLie attention, one head, dv = %d, f32 (SDPA flash in bf16); medians in ms "
          "(min-max); ratio = SDPA median / Torsor median (>= 1: Torsor faster)" % DV)
    head = ("group", "L", label, "flex", "sdpa-flash", "sdpa-f32", "flash/torsor",
            "sdpa-f32/torsor", "flex/torsor")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results["rows"]:
        t = r[label]["median_ms"]
        ratio = lambda k: "%.2f" % (r[k]["median_ms"] / t) if r.get(k) else "-"
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["group"], r["L"], fmt(r[label]), fmt(r["flex"]), fmt(r["sdpa-flash"]),
            fmt(r["sdpa-f32"]), ratio("sdpa-flash"), ratio("sdpa-f32"), ratio("flex")))
    print("Goals (issue #10): SO3 at L = 16384 flash/torsor >= 1; SE3 flash/torsor >= 0.5.")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=os.path.join(HERE, "gpu-models"),
                   help="folder with so3.so, se3.so and their manifests")
    # Staged by scripts/gpu-check-prepare.sh, gpu-check.sh names the staged
    # runtime in TORSOR_RUNTIME_LIB; in a checkout it is the build's.
    p.add_argument("--runtime", default=os.environ.get("TORSOR_RUNTIME_LIB") or
                   os.path.join(ROOT, "build", "lib", "libtorsor_runtime.so"))
    p.add_argument("--build-models", metavar="DIR",
                   help="compile the models into DIR (needs torsorc with --target=nvptx)")
    p.add_argument("--torsorc", default=os.path.join(ROOT, "build", "bin", "torsorc"))
    p.add_argument("--gpu-arch", default="sm_90")
    p.add_argument("--lengths", default="4096,16384,65536")
    p.add_argument("--check-length", type=int, default=256,
                   help="L of the float64 reference check (SciPy logm per pair)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--out", help="write the results as JSON")
    p.add_argument("--dry-run", action="store_true",
                   help="check models, runtime and formulas; no GPU needed")
    args = p.parse_args()
    try:
        args.lengths = [int(x) for x in args.lengths.split(",") if x]
    except ValueError:
        fail("--lengths wants integers separated by commas, got %r" % args.lengths)
    if args.build_models:
        build_models(args.build_models, args.torsorc, args.gpu_arch)
        return 0
    checks = Checks()
    if args.dry_run:
        dry_run(args, checks)
    else:
        gpu_run(args, checks)
    if checks.failed:
        print("FAILED: %d check(s): %s" % (len(checks.failed), "; ".join(checks.failed)))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
