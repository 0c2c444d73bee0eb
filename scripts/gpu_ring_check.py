#!/usr/bin/env python3
"""torsor.distributed on CUDA tensors over NCCL (a step of gpu-check.sh).

Staged by scripts/gpu-check-prepare.sh as STAGE/ring_check.py, beside the
torsor package (STAGE/python/torsor) and the tests' reference block
kernels (STAGE/ring_reference.py, from test/Python). It runs
RingLieAttention on CUDA tensors in an NCCL process group:

  ws1  world size 1 over NCCL (always, on GPU 0): CUDA tensors through
       the whole module (metadata on the device, merge, gradients);
  ws2  2 processes: over NCCL, one GPU each, when the machine has 2 GPUs
       (the real NCCL ring: all_gather of the metadata, batch_isend_irecv
       of the blocks and their gradients); otherwise over gloo with both
       ranks' CUDA tensors on GPU 0 (NCCL needs one GPU per rank), which
       checks the ring's host-staged transfers of CUDA tensors.

The ranks' rows, the gradient of v and the tangent projection of g's
gradient are compared with the single-process result over the whole
sequence (the reference attention in float64 on the CPU). Two kernel
sources are checked:

  ref       the float64 reference block kernels (torch ops on the GPU);
            this checks NCCL's part: the metadata all_gather, the ring's
            batch_isend_irecv, the merge and the gradient return
  compiled  torsor.nn.lie_attention_block(_backward) on CUDA tensors: the
            nvptx block models (prebuilt, see below), run on the device;
            where they cannot be loaded here they are reported as
            skipped, with the reason

Prints one line per run,

    ring-check run: ws2 nccl (2 GPUs) compiled: ok 0.31×tol

and one last line (the one gpu-check.sh reads; errors in units of the
tolerance):

    ring-check: ok|MISMATCH|FAILED|SKIPPED ws1 <err> ws2 <err|-> (notes)

SKIPPED (exit 0) means there is no torch, no CUDA device or no NCCL here.
Tolerance: TOL for f32 cases (default 1e-5), 1e-12 for f64 cases.

usage: ring_check.py STAGE [TOL]
       ring_check.py --stage-models STAGE [GPU_ARCH]   (on the build machine)

The compiled runs load the nvptx (and cpu) models that --stage-models
prebuilt into STAGE/prebuilt (torsor.compiler.prebuild; the GPU machine
has no torsorc): $TORSOR_PREBUILT_DIR and $TORSOR_GPU_ARCH are set to
them. They add a GrassmannMix halo case (the halo's CUDA kernels) against
the single-process torsor.nn.GrassmannMix on the CPU. Last, on CUDA
(not in the gloo self-test), torsor.nn.LieAttention in one process on
CUDA tensors against CPU tensors (NN_CASE: forward and gradients).

TORSOR_RING_CHECK_BACKEND=gloo runs the same check on CPU tensors over
gloo (a self-test of this script on a machine without a GPU).
"""
import os
import sys
import tempfile


def _argv():
    """(STAGE, TOL) from the command line; anything else (an import by a
    test) gives the current folder and the default tolerance."""
    args = [a for a in sys.argv[1:] if a != "--stage-models"]
    stage = os.path.abspath(args[0]) if args and os.path.isdir(args[0]) else os.getcwd()
    try:
        tol = float(args[1]) if len(args) > 1 and sys.argv[1] != "--stage-models" else 1e-5
    except ValueError:
        tol = 1e-5
    return stage, tol


STAGE, TOL = _argv()
BACKEND = os.environ.get("TORSOR_RING_CHECK_BACKEND", "nccl")


def _setup_paths():
    """The staged package and ring_reference first (the stage's layout),
    else the checkout's; the staged runtime library."""
    here = os.path.dirname(os.path.abspath(__file__))
    for p in (os.path.join(STAGE, "python"), STAGE, os.path.join(here, "..", "python"),
              os.path.join(here, "..", "test", "Python")):
        if os.path.isdir(p):
            sys.path.insert(0, p)
    if os.path.exists(os.path.join(STAGE, "lib", "libtorsor_runtime.so")):
        os.environ.setdefault("TORSOR_RUNTIME_LIB",
                              os.path.join(STAGE, "lib", "libtorsor_runtime.so"))


if __name__ == "__main__":
    _setup_paths()


def random_elements(torch, rr, group, L, rng):
    """[1, L, n, n] elements exp(ω^) with moderate rotations (and unit
    translations for SE(3)), built in torch: torsor.groups needs torsorc,
    which the GPU machine does not have."""
    w = torch.tensor(rng.standard_normal((1, L, 3)) * 0.35)
    R = torch.linalg.matrix_exp(rr._hat(w))
    if group == "SO3":
        return R
    T = torch.eye(4, dtype=torch.float64).repeat(1, L, 1, 1)
    T[..., :3, :3] = R
    T[..., :3, 3] = torch.tensor(rng.standard_normal((1, L, 3)) * 0.8)
    return T


# The ring cases: (name, group, heads, tau, lam, causal, layout, dtype, L), D = 8.
RING_CASES = (
    ("se3_h4_causal_zigzag_f64", "SE3", 4, [0.5, 1.0, 2.0, 4.0], [1.0, 0.3], True,
     "zigzag", "f64", 37),
    ("so3_h1_f32", "SO3", 1, 0.8, 1.0, False, "contiguous", "f32", 29))
D = 8
# The halo case (compiled kernels only): (name, d, r, offsets, causal, layout, dtype, L).
GRASSMANN_CASES = (("grassmann_causal_zigzag_f64", 8, 4, [1, 2, 5], True, "zigzag", "f64", 23),)

# torsor.nn.LieAttention in one process, CUDA against CPU tensors (compiled
# kernels): (name, group, heads, tau, lam, causal, dtype, L).
NN_CASE = ("lie_attention_se3_h2_causal_f64", "SE3", 2, [0.7, 1.3], [1.0, 0.5], True, "f64",
           37)


def cases(torch, rr, grassmann=False):
    """(name, config, full inputs): f64 and f32, causal zigzag and not; with
    `grassmann`, the GrassmannMix halo case too (its params drawn here)."""
    import numpy as np
    dtypes = {"f32": torch.float32, "f64": torch.float64}
    out = []
    for name, group, heads, tau, lam, causal, layout, dt, L in RING_CASES:
        dtype = dtypes[dt]
        rng = np.random.default_rng(len(out))
        g = random_elements(torch, rr, group, L, rng).to(dtype)
        v = torch.tensor(rng.standard_normal((1, L, D))).to(dtype)
        cot = torch.tensor(rng.standard_normal((1, L, D))).to(dtype)
        out.append(dict(name=name, kind="ring", group=group, heads=heads, tau=tau, lam=lam,
                        causal=causal, layout=layout, sizes=None, g=g, v=v, cot=cot,
                        timeout=60))
    if grassmann:
        for name, d, r, offsets, causal, layout, dt, L in GRASSMANN_CASES:
            dtype = dtypes[dt]
            rng = np.random.default_rng(100 + len(out))
            c = r * (r - 1) // 2
            shapes = {"w_red": (r, d), "b_red": (r,), "w_plucker": (d, c),
                      "b_plucker": (d,), "w_gate": (d, 2 * d), "b_gate": (d,)}
            params = {k: torch.tensor(rng.standard_normal(s) * 0.5).to(dtype)
                      for k, s in shapes.items()}
            out.append(dict(name=name, kind="grassmann", d=d, r=r, offsets=offsets,
                            causal=causal, layout=layout, sizes=None, params=params,
                            h=torch.tensor(rng.standard_normal((1, L, d))).to(dtype),
                            cot=torch.tensor(rng.standard_normal((1, L, d))).to(dtype),
                            timeout=60))
    return out


def stage_models(stage, arch, verbose=True):
    """On the build machine (torsorc, torch, no GPU needed): prebuilds into
    STAGE/prebuilt every model the compiled runs load (torsor.compiler.
    prebuild, found there through $TORSOR_PREBUILT_DIR on the GPU machine,
    which has no torsorc): the nvptx block forward and backward of every
    ring case, masked and unmasked (the ring computes both); the nvptx and
    cpu GrassmannMix of the halo case (the cpu one is the single-process
    reference) and LieAttention of NN_CASE; the cpu basis models of the
    groups (the ambient gradient of g). Writes STAGE/prebuilt/gpu_arch;
    prints one line per model (verbose)."""
    import torsor.compiler as tc
    import torsor.groups as tg
    import torsor.nn as tnn
    folder = os.path.join(stage, "prebuilt")
    os.makedirs(folder, exist_ok=True)
    nvptx = dict(target="nvptx", flags=["--gpu-arch=" + arch])
    built = []
    for name, group, heads, tau, lam, causal, _, dt, _ in RING_CASES:
        for masked in sorted({causal, False}):
            spec = tnn._block_spec(group, heads, tau, lam, masked)
            for backward in (False, True):
                src = tnn._block_source(spec, D, backward)
                built.append((tc.prebuild(src, folder, dtype=dt, opt=tnn._OneOp.opt,
                                          **nvptx), name))
        n, k = tg.BUILTIN[group]
        built.append((tc.prebuild(tg._BASIS_SOURCE.format(decl="", G=group, k=k), folder,
                                  dtype="f64", opt=0, grad=True), group + " basis"))
    _, group, heads, tau, lam, causal, dt, _ = NN_CASE
    src = tnn.LieAttention(group, heads=heads, tau=tau, lam=lam, causal=causal).source(D)
    for target in (nvptx, {}):
        built.append((tc.prebuild(src, folder, dtype=dt, opt=tnn._OneOp.opt, grad=True,
                                  **target), NN_CASE[0]))
    for name, d, r, offsets, causal, _, dt, _ in GRASSMANN_CASES:
        src = tnn.GrassmannMix(d, r=r, offsets=offsets, causal=causal).source()
        for target in (nvptx, {}):
            built.append((tc.prebuild(src, folder, dtype=dt, opt=tnn._OneOp.opt, grad=True,
                                      **target), name))
    with open(os.path.join(folder, "gpu_arch"), "w") as f:
        f.write(arch + "\n")
    for so, what in built if verbose else ():
        print("ring-check stage: %s %s" % (what, os.path.basename(so)))
    return built


def single_process(torch, rr, c):
    """Attention over the whole sequence in one process: the reference
    block kernel with the queries' own keys, in float64 on the CPU."""
    g, v, cot = c["g"].double(), c["v"].double(), c["cot"].double()
    out, lse = rr.lie_attention_block(g, g, v, c["group"], c["heads"], c["tau"], c["lam"],
                                      c["causal"], 0, 0)
    dgq, dgk, dv = rr.lie_attention_block_backward(g, g, v, out, lse, cot, c["group"],
                                                   c["heads"], c["tau"], c["lam"],
                                                   c["causal"], 0, 0)
    return out, dgq + dgk, dv


def tangent(torch, torsor, group, g, G):
    # The hat basis of so(3) / se(3), without a compile (no torsorc here).
    n = 3 if group == "SO3" else 4
    basis = []
    for a in range(3):
        w = torch.zeros(3, dtype=torch.float64)
        w[a] = 1.0
        m = torch.zeros(n, n, dtype=torch.float64)
        m[:3, :3] = torch.tensor([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        basis.append(m)
    if group == "SE3":
        for a in range(3):
            m = torch.zeros(4, 4, dtype=torch.float64)
            m[a, 3] = 1.0
            basis.append(m)
    E = torch.stack(basis)
    return torch.einsum("...ij,...kij->...k", G.double(), g.double()[..., None, :, :] @ E)


def single_process_grassmann(torch, tnn, c):
    """torsor.nn.GrassmannMix over the whole sequence on CPU tensors (the
    cpu model): (y, dh, {param: gradient})."""
    mod = tnn.GrassmannMix(c["d"], r=c["r"], offsets=c["offsets"], causal=c["causal"],
                           dtype=c["h"].dtype)
    mod.load_state_dict(c["params"])
    h = c["h"].clone().requires_grad_()
    y = mod(h)
    (y * c["cot"]).sum().backward()
    return y.detach(), h.grad, {k: p.grad for k, p in mod.named_parameters()}


def check_nn(torch, torsor, rr, devices=("cpu", "cuda")):
    """torsor.nn.LieAttention (the self-attention module, through
    torsor.torch's custom op) on CUDA tensors, the nvptx model, against
    the same module on CPU tensors, the cpu model: rows, v's gradient and
    the tangent projection of g's gradient. Worst error in units of the
    tolerance (1e-12 in f64, TOL in f32)."""
    import numpy as np
    import torsor.nn as tnn
    _, group, heads, tau, lam, causal, dt, L = NN_CASE
    dtype = torch.float64 if dt == "f64" else torch.float32
    rng = np.random.default_rng(11)
    g = random_elements(torch, rr, group, L, rng).to(dtype)
    v = torch.tensor(rng.standard_normal((1, L, D))).to(dtype)
    cot = torch.tensor(rng.standard_normal((1, L, D))).to(dtype)
    res = []
    for device in devices:
        attn = tnn.LieAttention(group, heads=heads, tau=tau, lam=lam, causal=causal)
        gd = g.to(device).requires_grad_()
        vd = v.to(device).requires_grad_()
        y = attn(gd, vd)
        if y.device.type != device:
            raise AssertionError("LieAttention on %s tensors returned %s tensors"
                                 % (device, y.device))
        (y * cot.to(device)).sum().backward()
        res.append((y.detach().cpu(), gd.grad.cpu(), vd.grad.cpu()))
    tol = 1e-12 if dtype == torch.float64 else TOL
    (y0, dg0, dv0), (y1, dg1, dv1) = res
    worst = 0.0
    for got, want in ((y1, y0), (dv1, dv0), (tangent(torch, torsor, group, g, dg1),
                                             tangent(torch, torsor, group, g, dg0))):
        got, want = got.detach().double(), want.detach().double()
        e = float((got - want).abs().max() / want.abs().max())
        worst = max(worst, e / tol)
    return worst


def check(world, use_reference, torch, torsor, rr, tdist, backend):
    """Worst relative error over the cases, or an error string. The
    compiled runs add the GrassmannMix halo case."""
    import torsor.nn as tnn
    with tempfile.TemporaryDirectory(prefix="ring-check-") as folder:
        cs = cases(torch, rr, grassmann=not use_reference)
        res = rr.spawn(world, folder, cs, use_reference, deadline_s=240, backend=backend)
    worst = 0.0
    for c in cs:
        for r in range(world):
            st = res[r][c["name"]]
            if st[0] != "ok":
                return None, "%s rank %d: %s" % (c["name"], r, str(st[1:])[-300:])
        parts = [res[r][c["name"]][1] for r in range(world)]
        tol = 1e-12 if c.get("v", c.get("h")).dtype == torch.float64 else TOL
        if c["kind"] == "grassmann":
            y1, dh1, dp1 = single_process_grassmann(torch, tnn, c)
            pairs = [(tdist.unshard([p["y"] for p in parts], c["layout"]), y1),
                     (tdist.unshard([p["dh"] for p in parts], c["layout"]), dh1)]
            pairs += [(sum(p["d_" + k] for p in parts), dp1[k]) for k in dp1]
            for got, want in pairs:
                e = float((got.double() - want.double()).abs().max()
                          / want.double().abs().max())
                worst = max(worst, e / tol)
            continue
        y = tdist.unshard([p["y"] for p in parts], c["layout"])
        dv = tdist.unshard([p["dv"] for p in parts], c["layout"])
        dg = tdist.unshard([p["dg"] for p in parts], c["layout"], dim=-3)
        y1, dg1, dv1 = single_process(torch, rr, c)
        for got, want in ((y, y1), (dv, dv1), (tangent(torch, torsor, c["group"], c["g"], dg),
                                               tangent(torch, torsor, c["group"], c["g"], dg1))):
            e = float((got.double() - want).abs().max() / want.abs().max())
            worst = max(worst, e / tol)  # in units of the case's tolerance
    return worst, None


def use_stage_models():
    """Points torsor.compile at the stage's prebuilt models (inherited by the
    spawned ranks) and the GPU arch they were built for."""
    folder = os.path.join(STAGE, "prebuilt")
    if os.path.isdir(folder):
        os.environ["TORSOR_PREBUILT_DIR"] = folder
        arch = os.path.join(folder, "gpu_arch")
        if os.path.exists(arch):
            with open(arch) as f:
                os.environ.setdefault("TORSOR_GPU_ARCH", f.read().strip())


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--stage-models":
        try:
            import torch  # noqa: F401  (torsor.nn needs it)
        except ImportError as e:
            print("ring-check stage: SKIPPED (%s): the compiled runs will be skipped" % e)
            return 0
        stage_models(os.path.abspath(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3
                     else "sm_90")
        return 0
    use_stage_models()
    try:
        import torch
        import torch.distributed as dist
        import torsor
        import torsor.distributed as tdist
        import torsor.nn as tnn
        import ring_reference as rr
    except ImportError as e:
        print("ring-check: SKIPPED ws1 - ws2 - (%s)" % e)
        return 0
    if BACKEND == "gloo":
        gpus = 2  # the self-test: two CPU processes
    elif not torch.cuda.is_available():
        print("ring-check: SKIPPED ws1 - ws2 - (torch sees no CUDA device)")
        return 0
    elif not (dist.is_available() and dist.is_nccl_available()):
        print("ring-check: SKIPPED ws1 - ws2 - (this torch has no NCCL)")
        return 0
    else:
        gpus = torch.cuda.device_count()
    notes, errs, verdict = [], {}, "ok"
    kinds = [("ref", True)]
    have = hasattr(tnn, "lie_attention_block") and hasattr(tnn, "lie_attention_block_backward")
    if have:
        kinds.append(("compiled", False))
    else:
        notes.append("compiled: skipped (torsor.nn has no lie_attention_block)")
    # (world size, worker backend, what the run is), in order.
    if BACKEND == "gloo":
        runs = [(1, "gloo", "gloo (CPU self-test)"), (2, "gloo", "gloo (CPU self-test)")]
    elif gpus >= 2:
        runs = [(1, "nccl", "nccl"), (2, "nccl", "nccl (2 GPUs)")]
    else:
        runs = [(1, "nccl", "nccl"),
                (2, "gloo-cuda", "gloo on CUDA tensors (1 GPU; NCCL needs a GPU per rank)")]
    for world, backend, what in runs:
        for kind, use_ref in kinds:
            worst, err = check(world, use_ref, torch, torsor, rr, tdist, backend)
            if err is not None:
                # Only "nothing was staged" skips; any other failure of the
                # compiled kernels on CUDA tensors is a failure.
                if kind == "compiled" and "cannot find torsorc" in err:
                    notes.append("compiled ws%d: skipped (%s)" % (world, err[-160:]))
                    print("ring-check run: ws%d %s %s: skipped (%s)"
                          % (world, what, kind, err[-160:]), flush=True)
                    continue
                verdict = "FAILED"
                notes.append("%s ws%d %s: %s" % (kind, world, backend, err[-200:]))
                print("ring-check run: ws%d %s %s: FAILED %s" % (world, what, kind, err[-300:]),
                      flush=True)
                continue
            errs["ws%d" % world] = max(errs.get("ws%d" % world, 0.0), worst)
            notes.append("%s ws%d %s %.2g×tol" % (kind, world, backend, worst))
            print("ring-check run: ws%d %s %s: %s %.2g×tol"
                  % (world, what, kind, "ok" if worst <= 1.0 else "MISMATCH", worst),
                  flush=True)
            if worst > 1.0 and verdict == "ok":
                verdict = "MISMATCH"
    if BACKEND != "gloo":  # torsor.nn itself on CUDA tensors, one process
        try:
            worst = check_nn(torch, torsor, rr)
            notes.append("nn LieAttention cuda vs cpu %.2g×tol" % worst)
            print("ring-check run: nn LieAttention cuda vs cpu (one process): %s %.2g×tol"
                  % ("ok" if worst <= 1.0 else "MISMATCH", worst), flush=True)
            if worst > 1.0 and verdict == "ok":
                verdict = "MISMATCH"
        except Exception as e:
            if "cannot find torsorc" in str(e):  # nothing staged, as for the compiled runs
                notes.append("nn LieAttention cuda: skipped (%s)" % str(e)[-160:])
                print("ring-check run: nn LieAttention cuda vs cpu (one process): skipped (%s)"
                      % str(e)[-160:], flush=True)
            else:
                verdict = "FAILED"
                notes.append("nn LieAttention cuda: %s: %s"
                             % (type(e).__name__, str(e)[-200:]))
                print("ring-check run: nn LieAttention cuda vs cpu (one process): FAILED "
                      "%s: %s" % (type(e).__name__, str(e)[-300:]), flush=True)
    print("ring-check: %s ws1 %s ws2 %s (%s)" % (
        verdict, "%.2g" % errs["ws1"] if "ws1" in errs else "-",
        "%.2g" % errs["ws2"] if "ws2" in errs else "-", "; ".join(notes)))
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # one line for the table, the traceback above it
        import traceback
        traceback.print_exc()
        print("ring-check: FAILED ws1 - ws2 - (%s: %s)" % (type(e).__name__, str(e)[:200]))
        sys.exit(1)
