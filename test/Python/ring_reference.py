"""ring_reference.py - test helpers of torsor.distributed (needs torch).

1. A float64 PyTorch reference of the two block kernels torsor.distributed
   calls (torsor.nn.lie_attention_block and lie_attention_block_backward:
   Lie attention of queries g_q against keys g_k, v with the row
   log-sum-exp, causal by global offsets; the FlashAttention-2 style
   backward from the global out and lse), written from docs/math.md §1.
   Tests inject it (torsor.distributed._block_kernels_override) to check
   the ring's communication and merge apart from the compiled kernels.
2. The worker that test_distributed.py (and scripts/gpu_ring_check.py)
   spawn: it joins a process group through a file:// rendezvous, runs a
   list of cases on its shard and saves its rows and gradients (or the
   error each case raised) for the parent to compare.
"""
import datetime
import math
import os
import traceback

import torch


def _vee(A):
    return torch.stack([A[..., 2, 1], A[..., 0, 2], A[..., 1, 0]], -1)


def log_so3(R):
    """ω [..., 3] of the principal log of R [..., 3, 3] (θ away from 0, π)."""
    a = _vee(0.5 * (R - R.mT))
    s = a.norm(dim=-1)
    c = 0.5 * (R.diagonal(dim1=-2, dim2=-1).sum(-1) - 1)
    theta = torch.atan2(s, c)
    return (theta / s)[..., None] * a


def _hat(w):
    z = torch.zeros_like(w[..., 0])
    return torch.stack([torch.stack([z, -w[..., 2], w[..., 1]], -1),
                        torch.stack([w[..., 2], z, -w[..., 0]], -1),
                        torch.stack([-w[..., 1], w[..., 0], z], -1)], -2)


def log_se3(T):
    """(ω, ρ) [..., 6] of the principal log of T [..., 4, 4]."""
    w = log_so3(T[..., :3, :3])
    theta = w.norm(dim=-1)
    W = _hat(w)
    coef = (1 - theta * torch.sin(theta) / (2 * (1 - torch.cos(theta)))) / theta ** 2
    eye = torch.eye(3, dtype=T.dtype, device=T.device)
    Vinv = eye - 0.5 * W + coef[..., None, None] * (W @ W)
    return torch.cat([w, (Vinv @ T[..., :3, 3, None])[..., 0]], -1)


def _safe(n, dtype, device):
    """A fixed group element away from the identity (a rotation by 0.5 rad,
    and a translation for SE(3))."""
    R = torch.linalg.matrix_exp(_hat(torch.tensor([0.3, -0.2, 0.346], dtype=torch.float64)))
    if n == 3:
        return R.to(dtype=dtype, device=device)
    T = torch.eye(4, dtype=torch.float64)
    T[:3, :3], T[:3, 3] = R, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    return T.to(dtype=dtype, device=device)


_LOGS = {"SO3": (log_so3, [3]), "SE3": (log_se3, [3, 3])}


def _per_head(tau, lam, heads, blocks):
    tau = [float(t) for t in tau] if isinstance(tau, (list, tuple)) else [float(tau)] * heads
    if isinstance(lam, (list, tuple)):
        lam = ([list(map(float, row)) for row in lam] if isinstance(lam[0], (list, tuple))
               else [list(map(float, lam))] * heads)
    else:
        lam = [[float(lam)] * len(blocks)] * heads
    return tau, lam


def scores(g_q, g_k, group, heads, tau, lam, causal, q_offset, k_offset):
    """s [B, H, Lq, Lk] = −‖log(g_q,i⁻¹ g_k,j)‖²_λh / τ_h, −inf where the
    causal mask (k_offset + j ≤ q_offset + i) drops the key. A pair at
    the identity (a token against itself) gets log 0, computed on a
    constant element so that its gradient stays finite."""
    log, blocks = _LOGS[group]
    tau, lam = _per_head(tau, lam, heads, blocks)
    rel = torch.linalg.inv(g_q)[:, :, None] @ g_k[:, None, :]
    n = rel.shape[-1]
    eye = torch.eye(n, dtype=rel.dtype, device=rel.device)
    ident = (rel - eye).abs().amax((-2, -1)) < 1e-9
    safe = _safe(n, rel.dtype, rel.device)
    w = log(torch.where(ident[..., None, None], safe, rel))
    w = torch.where(ident[..., None], torch.zeros_like(w), w)
    out = []
    for h in range(heads):
        weights = torch.cat([torch.full((k,), lam[h][b], dtype=w.dtype, device=w.device)
                             for b, k in enumerate(blocks)])
        out.append(-(w ** 2 * weights).sum(-1) / tau[h])
    s = torch.stack(out, 1)
    if causal:
        Lq, Lk = g_q.shape[1], g_k.shape[1]
        qi = q_offset + torch.arange(Lq, device=s.device)[:, None]
        kj = k_offset + torch.arange(Lk, device=s.device)[None, :]
        s = s.masked_fill(kj > qi, -math.inf)
    return s


def _group_name(group):
    return group.strip()


def lie_attention_block(g_q, g_k, v, group, heads=1, tau=1.0, lam=1.0, causal=False,
                        q_offset=0, k_offset=0):
    """(out [B, Lq, D], lse [B, Lq, heads]) in v's dtype, computed in f64."""
    dt = v.dtype
    gq, gk, vv = g_q.double(), g_k.double(), v.double()
    B, Lk, D = vv.shape
    s = scores(gq, gk, _group_name(group), heads, tau, lam, causal, q_offset, k_offset)
    lse = torch.logsumexp(s, -1)  # [B, H, Lq]; −inf for a row with no key
    ref = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)
    p = torch.exp(s - ref[..., None])
    vh = vv.reshape(B, Lk, heads, D // heads).transpose(1, 2)
    out = (p @ vh).transpose(1, 2).reshape(B, -1, D)
    return out.to(dt), lse.transpose(1, 2).to(dt)


def lie_attention_block_backward(g_q, g_k, v, out, lse, dout, group, heads, tau, lam, causal,
                                 q_offset, k_offset):
    """(dg_q, dg_k, dv) of one block from the GLOBAL out and lse."""
    dt = v.dtype
    gq = g_q.double().detach().requires_grad_()
    gk = g_k.double().detach().requires_grad_()
    vv, o, l, do = v.double(), out.double(), lse.double(), dout.double()
    B, Lk, D = vv.shape
    Lq = gq.shape[1]
    dh = D // heads
    with torch.enable_grad():
        s = scores(gq, gk, _group_name(group), heads, tau, lam, causal, q_offset, k_offset)
        lh = l.transpose(1, 2)[..., None]  # [B, H, Lq, 1]
        p = torch.where(torch.isneginf(lh), torch.zeros_like(s), torch.exp(s.detach() - lh))
        vh = vv.reshape(B, Lk, heads, dh).transpose(1, 2)
        doh = do.reshape(B, Lq, heads, dh).transpose(1, 2)
        oh = o.reshape(B, Lq, heads, dh).transpose(1, 2)
        dv = (p.mT @ doh).transpose(1, 2).reshape(B, Lk, D)
        dp = doh @ vh.mT
        ds = p * (dp - (doh * oh).sum(-1, keepdim=True))
        ds = torch.where(torch.isneginf(s), torch.zeros_like(ds), ds)
        dgq, dgk = torch.autograd.grad(s, (gq, gk), ds, allow_unused=True)
    dgq = torch.zeros_like(gq) if dgq is None else dgq
    dgk = torch.zeros_like(gk) if dgk is None else dgk
    return dgq.to(dt), dgk.to(dt), dv.to(dt)


KERNELS = (lie_attention_block, lie_attention_block_backward)


# -- the worker -------------------------------------------------------------------------


def _run_case(case, rank, world):
    import torsor.distributed as tdist
    if case.get("stage_on_host"):
        # Every transfer through host buffers, as gloo needs for CUDA
        # tensors (torsor.distributed._Group.exchange), here on CPU tensors.
        saved = tdist._stages_on_host
        tdist._stages_on_host = lambda backend, device: True
        try:
            return _run_case(dict(case, stage_on_host=False), rank, world)
        finally:
            tdist._stages_on_host = saved
    c = dict(case)
    c.update(case.get("per_rank", {}).get(rank, {}))
    layout = c.get("layout", "contiguous")
    sizes = c.get("sizes")

    def cut(x, dim):
        if sizes is not None:
            start = sum(sizes[:rank])
            return x.narrow(dim, start, sizes[rank])
        return tdist.shard(x, rank, world, layout, dim=dim)
    timeout = c.get("timeout")
    if c["kind"] == "ring":
        mod = tdist.RingLieAttention(c["group"], heads=c["heads"], tau=c["tau"], lam=c["lam"],
                                     causal=c["causal"], layout=layout, timeout=timeout)
        g = cut(c["g"], -3).clone().requires_grad_()
        v = cut(c["v"], -2).clone().requires_grad_()
        if "g_dtype" in c:
            g = g.detach().to(c["g_dtype"]).requires_grad_()
        if "v_dtype" in c:
            v = v.detach().to(c["v_dtype"]).requires_grad_()
        y = mod(g, v)
        if c.get("skip_backward"):
            return {"y": y.detach()}
        (y * cut(c["cot"], -2)).sum().backward()
        return {"y": y.detach(), "dg": g.grad, "dv": v.grad}
    mod = tdist.GrassmannMix(c["d"], r=c["r"], offsets=c["offsets"], causal=c["causal"],
                             layout=layout, dtype=c["h"].dtype, timeout=timeout)
    mod.load_state_dict(c["params"])
    mod.to(c["h"].device)  # the params on the tokens' device (CUDA runs)
    h = cut(c["h"], -2).clone().requires_grad_()
    y = mod(h)
    (y * cut(c["cot"], -2)).sum().backward()
    out = {"y": y.detach(), "dh": h.grad}
    out.update({"d_" + k: p.grad.clone() for k, p in mod.named_parameters()})
    return out


def worker(rank, world, folder, use_reference, backend="gloo"):
    """One rank: runs folder/cases.pt and saves folder/rank<r>.pt with
    {case name: ("ok", results) | ("error", class name, message) |
    ("crash", traceback)}."""
    torch.set_num_threads(1)
    import torsor
    import torsor.distributed as tdist
    torsor.set_num_threads(1)
    if use_reference:
        tdist._block_kernels_override = KERNELS
    cases = torch.load(os.path.join(folder, "cases.pt"), weights_only=False)
    results = {}
    # Before the process group exists: a clear error, on every rank.
    try:
        tdist.RingLieAttention("SO3")(torch.eye(3)[None].repeat(2, 1, 1), torch.ones(2, 4))
        results["uninitialised"] = ("ok", None)
    except torsor.TorsorError as e:
        results["uninitialised"] = ("error", type(e).__name__, str(e))
    # backend: "gloo" (CPU tensors), "nccl" (CUDA tensors, one GPU per
    # rank) or "gloo-cuda" (CUDA tensors on GPU 0 for every rank over gloo:
    # the one-GPU machine's multi-process check, which NCCL cannot do).
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", rank)
    elif backend == "gloo-cuda":
        device = torch.device("cuda", 0)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    import torch.distributed as dist
    dist.init_process_group("gloo" if backend == "gloo-cuda" else backend,
                            init_method="file://" + os.path.join(folder, "rdv"),
                            rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        for case in cases:
            if rank in case.get("absent", ()):
                continue
            case = {k: (v.to(device) if torch.is_tensor(v) else v) for k, v in case.items()}
            try:
                out = _run_case(case, rank, world)
                results[case["name"]] = ("ok", {k: v.cpu() for k, v in out.items()})
            except torsor.TorsorError as e:
                results[case["name"]] = ("error", type(e).__name__, str(e))
            except Exception:
                results[case["name"]] = ("crash", traceback.format_exc())
    finally:
        torch.save(results, os.path.join(folder, "rank%d.pt" % rank))
        try:
            dist.destroy_process_group()
        except Exception:
            pass


def spawn(world, folder, cases, use_reference, deadline_s=120, backend="gloo"):
    """Runs the worker on `world` processes (torch.multiprocessing, spawn);
    returns [rank's results]. Raises AssertionError when a process hangs
    past deadline_s (it is killed) or dies."""
    import time
    import torch.multiprocessing as mp
    torch.save(cases, os.path.join(folder, "cases.pt"))
    ctx = mp.start_processes(worker, args=(world, folder, use_reference, backend),
                             nprocs=world, join=False, start_method="spawn")
    t0 = time.time()
    try:
        while not ctx.join(timeout=0.5):
            if time.time() - t0 > deadline_s:
                raise AssertionError("the %d ranks did not finish within %d s (a hang)"
                                     % (world, deadline_s))
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
    return [torch.load(os.path.join(folder, "rank%d.pt" % r), weights_only=False)
            for r in range(world)]
