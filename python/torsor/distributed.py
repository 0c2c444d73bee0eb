"""distributed.py - sequence-parallel Lie attention and Grassmann mixing on
torch.distributed (gloo for CPU tensors, NCCL for CUDA tensors).

    import torch.distributed as dist
    import torsor.distributed as tdist
    dist.init_process_group("gloo")               # torchrun sets rank/world size
    attn = tdist.RingLieAttention("SE3", heads=4, causal=True, layout="zigzag")
    g_r = tdist.shard(g, dist.get_rank(), dist.get_world_size(), layout="zigzag")
    v_r = tdist.shard(v, dist.get_rank(), dist.get_world_size(), layout="zigzag")
    y_r = attn(g_r, v_r)       # this rank's rows of attention over ALL ranks' tokens
    mix = tdist.GrassmannMix(64, offsets=[1, 2, 4, 8], causal=True, layout="zigzag")
    h_r = mix(h_r)             # this rank's rows of grassmann_mix over the whole sequence

Each rank holds a slice of one sequence (`shard` / `unshard` cut and join
it, in the contiguous or the zigzag (head-tail) layout; shards may be
uneven, and a rank may hold no tokens). `RingLieAttention` computes, for
this rank's tokens, attention over every rank's tokens: the key blocks
(g_j, v_j) travel around the ring of ranks and the block results are
merged through their row log-sum-exp; in the backward the blocks travel
again and their gradients (dg_k, dv) travel with them back to their owner
(ring-flash-attention's scheme). The next block's send and receive
(torch.distributed.batch_isend_irecv) run while the current block
computes. `GrassmannMix` gathers a halo of the max(offsets) tokens its rows
pair with from the neighbouring ranks and sends the halo's gradient back.

The block kernels are Torsor's compiled `torsor.nn.lie_attention_block` and
`lie_attention_block_backward` (attention between two token sets, with the
row lse; the backward takes the global lse and output). docs/distributed.md
has the API, the merge math, the gradients' conventions and the
performance model.

Every call first exchanges a small metadata tensor (all_gather) so that a
mismatch between ranks (group, heads, tau, lambda, dtype, shapes, layout,
whether gradients are needed) is the same clear error on every rank rather
than a hang; every wait has a timeout (`timeout=` seconds, else the process
group's own).
"""
import datetime
import zlib

import torch

from . import nn as _tnn
from .errors import FailedPreconditionError, InvalidArgumentError, UnavailableError

LAYOUTS = ("contiguous", "zigzag")
_MAGIC = 0x70C5
_META = 32  # int64 slots of the metadata tensor (the same for every op)
_OP_RING, _OP_GRASSMANN = 1, 2
_DTYPES = {torch.float32: 1, torch.float64: 2, torch.float16: 3, torch.bfloat16: 4}
_DTYPE_NAME = {1: "float32", 2: "float64", 3: "float16", 4: "bfloat16", 0: "not a float"}
_TAG_KV, _TAG_DKV, _TAG_HALO, _TAG_DHALO = 11, 12, 13, 14

# Tests inject reference block kernels here: (forward, backward) with the
# signatures of torsor.nn.lie_attention_block(_backward). None: the
# compiled ones.
_block_kernels_override = None


# -- sharding -------------------------------------------------------------------


def _split(length, parts):
    """Sizes of `parts` near-equal consecutive pieces of `length` (the
    first length % parts pieces one longer)."""
    base, rem = divmod(int(length), int(parts))
    return [base + (1 if i < rem else 0) for i in range(parts)]


def _check_layout(layout):
    if layout not in LAYOUTS:
        raise InvalidArgumentError("layout: expected one of %s, got %r"
                                   % (", ".join(repr(x) for x in LAYOUTS), layout))


def shard_ranges(length, rank, world_size, layout="contiguous"):
    """The global [start, stop) ranges of a sequence of `length` tokens that
    rank `rank` of `world_size` holds, in the order it holds them:
    contiguous: one near-equal range per rank, in rank order; zigzag: the
    sequence cut into 2·world_size near-equal chunks, rank r holding chunk
    r followed by chunk 2·world_size − 1 − r (so causal attention costs
    every rank the same)."""
    _check_layout(layout)
    if not 0 <= rank < world_size:
        raise InvalidArgumentError("rank %d is not in [0, %d)" % (rank, world_size))
    if layout == "contiguous":
        sizes = _split(length, world_size)
        start = sum(sizes[:rank])
        return [(start, start + sizes[rank])]
    sizes = _split(length, 2 * world_size)
    starts = [sum(sizes[:k]) for k in range(2 * world_size)]
    a, b = rank, 2 * world_size - 1 - rank
    return [(starts[a], starts[a] + sizes[a]), (starts[b], starts[b] + sizes[b])]


def shard(x, rank, world_size, layout="contiguous", dim=-2):
    """This rank's tokens of a full sequence x (tokens along `dim`; -2 suits
    v [..., L, D], use dim=-3 for group elements g [..., L, n, n])."""
    L = x.shape[dim]
    parts = [x.narrow(dim, a, b - a) for a, b in shard_ranges(L, rank, world_size, layout)]
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim)


def unshard(shards, layout="contiguous", dim=-2):
    """The full sequence from every rank's shard (a list in rank order, as
    `shard` cut them; torch.distributed.all_gather gives such a list)."""
    _check_layout(layout)
    P = len(shards)
    if layout == "contiguous":
        return torch.cat(list(shards), dim)
    L = sum(int(s.shape[dim]) for s in shards)
    sizes = _split(L, 2 * P)
    chunks = [None] * (2 * P)
    for r, s in enumerate(shards):
        a, b = r, 2 * P - 1 - r
        if s.shape[dim] != sizes[a] + sizes[b]:
            raise InvalidArgumentError(
                "unshard: rank %d's shard has %d tokens along dim %d, but the zigzag "
                "layout of %d tokens over %d ranks gives it %d; pass the shards as "
                "torsor.distributed.shard(..., layout='zigzag') cut them, in rank order"
                % (r, s.shape[dim], dim, L, P, sizes[a] + sizes[b]))
        chunks[a] = s.narrow(dim, 0, sizes[a])
        chunks[b] = s.narrow(dim, sizes[a], sizes[b])
    return torch.cat(chunks, dim)


def _segments(lengths, layout):
    """Per rank, the (local start, length, global offset) of each run of its
    tokens, from every rank's token count (contiguous: any counts, in rank
    order; zigzag: counts must be the ones `shard` gives)."""
    P = len(lengths)
    if layout == "contiguous":
        out, off = [], 0
        for n in lengths:
            out.append([(0, n, off)])
            off += n
        return out
    L = sum(lengths)
    out = []
    for r in range(P):
        (a0, a1), (b0, b1) = shard_ranges(L, r, P, "zigzag")
        out.append([(0, a1 - a0, a0), (a1 - a0, b1 - b0, b0)])
    return out


# -- the process group and the metadata exchange --------------------------------------


class _Group:
    """The process group a module runs on, its backend's device for
    collectives, and the wait timeout."""

    def __init__(self, process_group, timeout, what):
        import torch.distributed as dist
        if not dist.is_available():
            raise UnavailableError("%s: this PyTorch build has no torch.distributed" % what)
        if not dist.is_initialized():
            raise FailedPreconditionError(
                "%s: the default process group is not initialised; call "
                "torch.distributed.init_process_group('gloo' for CPU tensors, 'nccl' for "
                "CUDA tensors) on every rank first (torchrun sets the rank and world size)"
                % what)
        self.dist, self.pg, self.what = dist, process_group, what
        self.rank = dist.get_rank(process_group)
        self.size = dist.get_world_size(process_group)
        if self.rank < 0:
            raise InvalidArgumentError("%s: this process is not a member of the given "
                                       "process_group" % what)
        self.backend = str(dist.get_backend(process_group))
        self.nccl = _device_backend(self.backend, "cuda") == "nccl"
        self.timeout = (datetime.timedelta(seconds=float(timeout)) if timeout is not None
                        else datetime.timedelta(0))  # 0: the group's own timeout

    def meta_device(self, like):
        """Where the metadata tensor lives for this group and input `like`."""
        return _meta_device(self.backend, like.device)

    def check_device(self, like):
        """Raises when the group's backend cannot move `like`'s tensors
        (after the metadata exchange: every rank has the same device type,
        so every rank raises alike)."""
        if like.device.type == "cpu" and not _device_backend(self.backend, "cpu"):
            raise InvalidArgumentError(
                "%s: the process group's backend (%s) moves CUDA tensors only, but the "
                "tensors are on the CPU; move them to the GPU (.cuda()) or use a gloo "
                "group for CPU tensors" % (self.what, self.backend))

    def wait(self, works, doing):
        """Waits for every request, with the timeout; a timeout or a failed
        peer becomes a torsor error naming what was being done."""
        for w in works:
            try:
                w.wait(self.timeout)
            except Exception as e:  # RuntimeError / DistBackendError / timeouts
                limit = ("%g s" % self.timeout.total_seconds() if self.timeout.total_seconds()
                         else "the process group's timeout")
                raise FailedPreconditionError(
                    "%s: rank %d of %d: %s failed or timed out (after %s): %s. Every rank "
                    "must make the same calls in the same order (forward and backward); "
                    "a rank that stopped, raised or is much slower ends here. Raise "
                    "timeout= (seconds) if the ranks are only slow"
                    % (self.what, self.rank, self.size, doing, limit,
                       str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)
                ) from e

    def all_gather_meta(self, row, like):
        """Every rank's metadata row, [world size, _META] int64 on the CPU
        (`like`: an input, whose device decides where the row travels)."""
        t = torch.tensor(row + [0] * (_META - len(row)), dtype=torch.int64,
                         device=self.meta_device(like))
        if self.size == 1:
            return t.cpu()[None]
        outs = [torch.empty_like(t) for _ in range(self.size)]
        work = self.dist.all_gather(outs, t, group=self.pg, async_op=True)
        self.wait([work], "the metadata exchange (all_gather)")
        return torch.stack(outs).cpu()

    def exchange(self, sends, recvs, doing):
        """Starts point-to-point transfers: sends [(peer, tensor, tag)] and
        recvs [(peer, tensor, tag)] (peers are ranks of this group; empty
        tensors are skipped, as both sides know the sizes). Returns the
        requests, for wait(). CUDA tensors on a backend without device
        point-to-point (gloo) travel through host copies: the sends are
        copied out now, the receives land in host buffers that wait()
        copies to the device."""
        ops, staged = [], []
        for peer, t, tag in sends:
            if t.numel():
                if _stages_on_host(self.backend, t.device):
                    t = t.cpu()
                ops.append(self.dist.P2POp(self.dist.isend, t, group=self.pg,
                                           group_peer=peer, tag=tag))
        for peer, t, tag in recvs:
            if t.numel():
                if _stages_on_host(self.backend, t.device):
                    host = torch.empty(t.shape, dtype=t.dtype)
                    staged.append((host, t))
                    t = host
                ops.append(self.dist.P2POp(self.dist.irecv, t, group=self.pg,
                                           group_peer=peer, tag=tag))
        if not ops:
            return []
        try:
            works = self.dist.batch_isend_irecv(ops)
        except Exception as e:
            raise FailedPreconditionError("%s: rank %d: starting %s failed: %s"
                                          % (self.what, self.rank, doing, e)) from e
        return [_HostStaged(works, staged, ops)] if staged else works


class _HostStaged:
    """Requests whose receives landed in host buffers: wait() waits for all
    of them, then copies each buffer to its device tensor (once)."""

    def __init__(self, works, staged, ops):
        self.works, self.staged, self.ops = works, staged, ops  # ops keep the sends alive

    def wait(self, timeout):
        for w in self.works:
            w.wait(timeout)
        for host, device in self.staged:
            device.copy_(host)
        self.works, self.staged = [], []


def _device_backend(backend, device_type):
    """The backend a process group uses for tensors of `device_type`
    ("cpu" | "cuda"): "gloo", "nccl", ..., or "" for none. `backend` is
    torch.distributed.get_backend's string: one name for every device
    ("gloo": CPU and, for collectives, CUDA; "nccl": CUDA only), or a
    per-device list ("cpu:gloo,cuda:nccl")."""
    text = backend.lower().strip()
    if ":" in text:
        table = dict(part.strip().split(":", 1) for part in text.split(",") if ":" in part)
        return table.get(device_type, "")
    if text == "nccl":
        return "nccl" if device_type == "cuda" else ""
    return text


def _meta_device(backend, device, current_cuda=None):
    """The device of the metadata tensor for tensors on `device`: the CPU
    whenever the group has a CPU backend (gloo, mixed groups), else the
    CUDA device (NCCL's collectives take CUDA tensors only): the input's
    own, or the current one (current_cuda(), default
    torch.cuda.current_device) when the input is on the CPU (the device
    check then refuses it on every rank)."""
    if _device_backend(backend, "cpu"):
        return torch.device("cpu")
    if device.type == "cuda" and device.index is not None:
        return torch.device(device)
    index = (current_cuda or torch.cuda.current_device)()
    return torch.device("cuda", index)


def _stages_on_host(backend, device):
    """Whether a tensor on `device` must travel point-to-point through
    host memory on this backend: a CUDA tensor that NCCL does not carry
    (gloo's send and recv read host memory only)."""
    return device.type != "cpu" and _device_backend(backend, device.type) != "nccl"


def _crc(text):
    """A hash of text that is the same in every process (Python's hash()
    is salted per process)."""
    return zlib.crc32(text.encode("utf-8"))


def _shape_row(t, slots):
    """[ndim, *shape padded to slots] (ndim -1 when it has more dims)."""
    shape = list(t.shape)
    if len(shape) > slots:
        return [-1] + [0] * slots
    return [len(shape)] + shape + [0] * (slots - len(shape))


def _shape_of(row, at, slots):
    nd = int(row[at])
    return None if nd < 0 else [int(x) for x in row[at + 1:at + 1 + nd]]


_OP_NAMES = {_OP_RING: "RingLieAttention", _OP_GRASSMANN: "GrassmannMix"}


def _check_ops(rows):
    """Raises (the same on every rank) when the ranks are not all making
    the same torsor.distributed call."""
    ops = [int(r[1]) if int(r[0]) == _MAGIC else -1 for r in rows]
    if any(op != ops[0] for op in ops):
        raise InvalidArgumentError(
            "torsor.distributed: the ranks are making different calls: %s; every rank "
            "must make the same torsor.distributed calls in the same order" % ", ".join(
                "rank %d calls %s" % (i, _OP_NAMES.get(op, "something else"))
                for i, op in enumerate(ops)))


def _disagree(what, name, rows, col, fmt=str):
    """The error when ranks differ in column col of the metadata, else None."""
    vals = [int(r[col]) for r in rows]
    if all(v == vals[0] for v in vals):
        return None
    return InvalidArgumentError(
        "%s: the ranks disagree on %s: %s; every rank must build the module with the "
        "same arguments and call it with tensors of the same dtype" % (
            what, name, ", ".join("rank %d has %s" % (i, fmt(v)) for i, v in enumerate(vals))))


# -- RingLieAttention -------------------------------------------------------------------


def _block_kernels():
    """(forward, backward) block kernels: the compiled torsor.nn ones, or a
    test's injected pair."""
    if _block_kernels_override is not None:
        return _block_kernels_override
    fwd = getattr(_tnn, "lie_attention_block", None)
    bwd = getattr(_tnn, "lie_attention_block_backward", None)
    if fwd is None or bwd is None:
        raise UnavailableError(
            "RingLieAttention: this torsor.nn has no lie_attention_block / "
            "lie_attention_block_backward (attention between two token sets with the "
            "row lse); update the torsor package to one that has them")
    return fwd, bwd


def _merge(out_a, lse_a, out_b, lse_b, heads):
    """Merge of two partial attentions over disjoint key sets (docs/
    distributed.md, "The merge"): lse = log(e^lse_a + e^lse_b), out =
    e^(lse_a − lse)·out_a + e^(lse_b − lse)·out_b per head; rows with no
    key in either stay out 0, lse −inf."""
    lse = torch.logaddexp(lse_a, lse_b)
    ref = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)
    wa, wb = torch.exp(lse_a - ref), torch.exp(lse_b - ref)
    B, l, D = out_a.shape
    out = (out_a.reshape(B, l, heads, D // heads) * wa[..., None]
           + out_b.reshape(B, l, heads, D // heads) * wb[..., None])
    return out.reshape(B, l, D), lse


def _merge_into(out, lse, o, l, heads):
    """_merge of (out, lse) with a block's (o, l), in place: out and lse are
    views of the running result ([B, l, D] and [B, l, heads]); no full-size
    temporaries beyond the weights and one product."""
    new = torch.logaddexp(lse, l)
    ref = new.masked_fill(torch.isneginf(new), 0.0)
    wa = torch.exp(lse.sub_(ref))  # lse is overwritten below
    wb = torch.exp(l - ref)
    heads_view = out.unflatten(-1, (heads, -1))  # splitting the last dim is a view
    heads_view.mul_(wa[..., None]).add_(o.unflatten(-1, (heads, -1)) * wb[..., None])
    lse.copy_(new)


def _pairs(q_segs, k_segs, causal):
    """The (q segment, k segment, causal flag) block pairs to compute:
    under a causal mask a pair whose keys all come after its queries is
    skipped, and one whose keys all come at or before its first query is
    computed unmasked."""
    out = []
    for qs in q_segs:
        for ks in k_segs:
            if qs[1] == 0 or ks[1] == 0:
                continue
            if causal:
                if ks[2] > qs[2] + qs[1] - 1:
                    continue  # every key is in every query's future
                out.append((qs, ks, ks[2] + ks[1] - 1 > qs[2]))
            else:
                out.append((qs, ks, False))
    return out


class _Ring(torch.autograd.Function):
    """The ring forward and backward of RingLieAttention (g, v already in
    the compute dtype, [B, L_r, n, n] and [B, L_r, D])."""

    @staticmethod
    def forward(ctx, g, v, mod, grp, segs, lengths):
        out, lse = _ring_forward(mod, grp, segs, lengths, g, v)
        ctx.save_for_backward(g, v, out, lse)
        ctx.mod, ctx.grp, ctx.segs, ctx.lengths = mod, grp, segs, lengths
        return out

    @staticmethod
    def backward(ctx, dout):
        g, v, out, lse = ctx.saved_tensors
        dg, dv = _ring_backward(ctx.mod, ctx.grp, ctx.segs, ctx.lengths, g, v, out, lse,
                                dout.contiguous())
        return dg, dv, None, None, None, None


def _pack(g, v):
    """[B, L, n·n + D]: a block's g and v in one buffer (one message)."""
    B, L, n = v.shape[0], v.shape[1], g.shape[-1]
    return torch.cat([g.reshape(B, L, n * n), v], -1).contiguous()


def _unpack(buf, n):
    B, L = buf.shape[0], buf.shape[1]
    return buf[..., :n * n].reshape(B, L, n, n), buf[..., n * n:]


def _rows(t, start, count):
    """Rows [start, start + count) of t [B, L, ...] as a contiguous tensor
    (the kernels bind their inputs without a copy)."""
    return t[:, start:start + count].contiguous()


def _kernel_args(mod):
    return dict(heads=mod.heads, tau=mod.tau_arg, lam=mod.lam_arg)


def _block_tensors(cur, n):
    """A travelling block's g [B, l, n, n] and v [B, l, D], each contiguous
    (one copy per step; the kernels bind contiguous inputs without one)."""
    gk, vk = _unpack(cur, n)
    return gk.contiguous(), vk.contiguous()


def _ring_forward(mod, grp, segs, lengths, g, v):
    fwd, _ = _block_kernels()
    P, r = grp.size, grp.rank
    B, Lr, D = v.shape
    n = g.shape[-1]
    H = mod.heads
    out = torch.zeros(B, Lr, D, dtype=v.dtype, device=v.device)
    lse = torch.full((B, Lr, H), -float("inf"), dtype=v.dtype, device=v.device)
    filled = set()  # query segments that hold a block's result already
    cur = _pack(g, v)
    nxt, prv = (r + 1) % P, (r - 1) % P
    for s in range(P):
        src = (r - s) % P
        works, buf = [], None
        if s < P - 1:  # the next block travels while this one computes
            buf = torch.empty(B, lengths[(r - s - 1) % P], n * n + D, dtype=v.dtype,
                              device=v.device)
            works = grp.exchange([(nxt, cur, _TAG_KV)], [(prv, buf, _TAG_KV)],
                                 "the forward ring's block transfer")
        pairs = _pairs(segs[r], segs[src], mod.causal)
        gk, vk = _block_tensors(cur, n) if pairs else (None, None)
        for qs, ks, masked in pairs:
            q0, ql, qo = qs
            k0, kl, ko = ks
            o, l = fwd(_rows(g, q0, ql), _rows(gk, k0, kl), _rows(vk, k0, kl), mod.group,
                       causal=masked, q_offset=qo, k_offset=ko, **_kernel_args(mod))
            o, l = o.to(v.dtype), l.to(v.dtype)
            if qs in filled:
                _merge_into(out[:, q0:q0 + ql], lse[:, q0:q0 + ql], o, l, H)
            else:  # the first block of these rows: nothing to merge with
                out[:, q0:q0 + ql], lse[:, q0:q0 + ql] = o, l
                filled.add(qs)
        grp.wait(works, "the forward ring's block transfer (step %d of %d)" % (s + 1, P))
        if buf is not None:
            cur = buf
    return out, lse


def _ring_backward(mod, grp, segs, lengths, g, v, out, lse, dout):
    _, bwd = _block_kernels()
    P, r = grp.size, grp.rank
    B, Lr, D = v.shape
    n = g.shape[-1]
    W = n * n + D
    dq = torch.zeros_like(g)
    cur = _pack(g, v)
    nxt, prv = (r + 1) % P, (r - 1) % P
    dkv_works, dkv_in = [], None
    for s in range(P):
        src = (r - s) % P
        kv_works, buf = [], None
        if s < P - 1:
            buf = torch.empty(B, lengths[(r - s - 1) % P], W, dtype=v.dtype, device=v.device)
            kv_works = grp.exchange([(nxt, cur, _TAG_KV)], [(prv, buf, _TAG_KV)],
                                    "the backward ring's block transfer")
        pairs = _pairs(segs[r], segs[src], mod.causal)
        gk, vk = _block_tensors(cur, n) if pairs else (None, None)
        mine = torch.zeros(B, lengths[src], W, dtype=v.dtype, device=v.device)
        for qs, ks, masked in pairs:
            q0, ql, qo = qs
            k0, kl, ko = ks
            dgq, dgk, dvk = bwd(_rows(g, q0, ql), _rows(gk, k0, kl), _rows(vk, k0, kl),
                                _rows(out, q0, ql), _rows(lse, q0, ql), _rows(dout, q0, ql),
                                mod.group, mod.heads, mod.tau_arg, mod.lam_arg, masked, qo, ko)
            dq[:, q0:q0 + ql] += dgq.to(g.dtype)
            mine[:, k0:k0 + kl, :n * n] += dgk.to(v.dtype).reshape(B, kl, n * n)
            mine[:, k0:k0 + kl, n * n:] += dvk.to(v.dtype)
        # The block's gradient so far comes from the rank that held it last
        # step; add this rank's part and pass it on with the block.
        grp.wait(dkv_works, "the backward ring's gradient transfer (step %d of %d)" % (s, P))
        acc = mine if dkv_in is None else mine.add_(dkv_in)
        dkv_in = torch.empty(B, lengths[(r - s - 1) % P], W, dtype=v.dtype, device=v.device)
        if P > 1:
            dkv_works = grp.exchange([(nxt, acc, _TAG_DKV)], [(prv, dkv_in, _TAG_DKV)],
                                     "the backward ring's gradient transfer")
        else:
            dkv_in = acc
        grp.wait(kv_works, "the backward ring's block transfer (step %d of %d)" % (s + 1, P))
        if buf is not None:
            cur = buf
    # After P steps this rank's own block is back, with every rank's part.
    grp.wait(dkv_works, "the backward ring's last gradient transfer")
    dgk, dv = _unpack(dkv_in, n)
    return dq + dgk, dv.contiguous()


class RingLieAttention(torch.nn.Module):
    """Lie attention over a sequence sharded across the ranks of a process
    group: the same arguments as torsor.nn.LieAttention, plus

    process_group  the torch.distributed group (None: the default group)
    layout         "contiguous" (rank order) or "zigzag" (head-tail chunks,
                   balanced for causal attention); how the tokens were cut
                   (torsor.distributed.shard)
    timeout        seconds any wait may take before every rank raises
                   (None: the process group's timeout)

    forward(g, v): this rank's tokens g [..., L_r, n, n], v [..., L_r, D]
    (same leading dims on every rank; L_r may differ, and may be 0);
    returns [..., L_r, D], this rank's rows of attention over all ranks'
    tokens in layout order. Gradients of g and v are this rank's tokens'
    full gradients (the ring returns every other rank's part), in
    torsor.nn.LieAttention's ambient convention for g. Every rank must
    call forward, and backward, in the same order.
    """

    def __init__(self, group, heads=1, tau=1.0, lam=1.0, causal=False, process_group=None,
                 layout="contiguous", timeout=None):
        super().__init__()
        _check_layout(layout)
        # The local twin validates and normalises the arguments the same way.
        self._twin = _tnn.LieAttention(group, heads=heads, tau=tau, lam=lam, causal=causal)
        self.group = group.strip()
        self.heads, self.causal = self._twin.heads, self._twin.causal
        self.tau_arg, self.lam_arg = tau, lam
        self.process_group, self.layout, self.timeout = process_group, layout, timeout

    def _meta(self, g, v):
        dt = _DTYPES.get(v.dtype, 0)
        needs = int(torch.is_grad_enabled() and (g.requires_grad or v.requires_grad))
        return ([_MAGIC, _OP_RING, dt, _DTYPES.get(g.dtype, 0), 1 if v.is_cuda else 0,
                 _crc(self.group), self.heads, _crc(repr(self._twin.tau)),
                 _crc(self._twin._lam_text()), int(self.causal),
                 LAYOUTS.index(self.layout), needs]
                + _shape_row(g, 7) + _shape_row(v, 6))

    def _validate(self, rows, P):
        """The same checks on every rank, from every rank's metadata: the
        first problem found raises (identically everywhere)."""
        what = "RingLieAttention"
        _check_ops(rows)
        for name, col, fmt in (("the dtype of v", 2, lambda x: _DTYPE_NAME[x]),
                               ("the device type", 4, lambda x: "cuda" if x else "cpu"),
                               ("the group", 5, lambda x: "group hash %08x" % x),
                               ("heads", 6, str), ("tau", 7, lambda x: "tau hash %08x" % x),
                               ("lam", 8, lambda x: "lam hash %08x" % x),
                               ("causal", 9, lambda x: str(bool(x))),
                               ("layout", 10, lambda x: LAYOUTS[x]),
                               ("whether gradients are needed (g or v requires grad, "
                                "grad mode on)", 11, lambda x: str(bool(x)))):
            err = _disagree(what, name, rows, col, fmt)
            if err:
                raise err
        for i, row in enumerate(rows):
            if int(row[2]) == 0 or int(row[3]) == 0:
                raise InvalidArgumentError("%s: rank %d: g and v must be float tensors, got "
                                           "%s and %s" % (what, i, _DTYPE_NAME[int(row[3])],
                                                          _DTYPE_NAME[int(row[2])]))
        shapes = []
        for i, row in enumerate(rows):
            gs, vs = _shape_of(row, 12, 7), _shape_of(row, 20, 6)
            if (gs is None or vs is None or len(vs) < 2 or len(gs) != len(vs) + 1
                    or gs[:-2] != vs[:-1] or gs[-1] != gs[-2]):
                raise InvalidArgumentError(
                    "%s: rank %d: expected g [..., L, n, n] and v [..., L, D] with the same "
                    "leading dims, got g %s and v %s" % (what, i, gs, vs))
            shapes.append((gs, vs))
        ref_g, ref_v = shapes[0]
        for i, (gs, vs) in enumerate(shapes):
            if gs[:-3] != ref_g[:-3] or gs[-2:] != ref_g[-2:] or vs[-1] != ref_v[-1]:
                raise InvalidArgumentError(
                    "%s: rank %d has g %s and v %s but rank 0 has g %s and v %s; the ranks "
                    "may differ only in their token count L (dim -3 of g, -2 of v)"
                    % (what, i, gs, vs, ref_g, ref_v))
        if ref_v[-1] % self.heads:
            raise InvalidArgumentError("%s: the feature width D = %d is not divisible by "
                                       "heads = %d" % (what, ref_v[-1], self.heads))
        lengths = [vs[-2] for _, vs in shapes]
        if self.layout == "zigzag":
            want = [sum(b - a for a, b in shard_ranges(sum(lengths), i, P, "zigzag"))
                    for i in range(P)]
            if lengths != want:
                raise InvalidArgumentError(
                    "%s: layout='zigzag' over %d ranks gives %d tokens the counts %s, but "
                    "the ranks hold %s; cut the sequence with torsor.distributed.shard(..., "
                    "layout='zigzag') or use layout='contiguous'"
                    % (what, P, sum(lengths), want, lengths))
        return lengths

    def forward(self, g, v):
        grp = _Group(self.process_group, self.timeout, "RingLieAttention")
        rows = grp.all_gather_meta(self._meta(g, v), v).tolist()
        lengths = self._validate(rows, grp.size)
        grp.check_device(v)
        _block_kernels()  # a missing kernel fails on every rank alike, before any transfer
        lead, L, D, n = v.shape[:-2], v.shape[-2], v.shape[-1], g.shape[-1]
        name, dtype = _tnn._compute_dtype(v)
        B = int(torch.Size(lead).numel())
        gc = g.to(dtype).reshape(B, L, n, n).contiguous()
        vc = v.to(dtype).reshape(B, L, D).contiguous()
        segs = _segments(lengths, self.layout)
        out = _Ring.apply(gc, vc, self, grp, segs, lengths)
        return out.reshape(*lead, L, D).to(v.dtype)

    def extra_repr(self):
        return "%s, layout=%s" % (self._twin.extra_repr(), self.layout)


# -- GrassmannMix -------------------------------------------------------------------------


def _halo_plan(segs, total, reach, causal):
    """The halo each rank needs and who sends it.

    For every segment of every rank, the global range its rows pair with
    beyond it: [off − reach, off) when causal, [off + len, off + len +
    reach) otherwise, clipped to the sequence. Returns, per rank, (need,
    pieces): need[k] = (start, stop) of segment k's halo; pieces = [(src
    rank, src local start, length, segment k, position in its halo)],
    in a fixed order both sides compute alike."""
    owners = []  # (global start, length, rank, local start)
    for rank, ss in enumerate(segs):
        for local, length, off in ss:
            if length:
                owners.append((off, length, rank, local))
    owners.sort()
    plans = []
    for ss in segs:
        need, pieces = [], []
        for k, (local, length, off) in enumerate(ss):
            if causal:
                a, b = max(0, off - reach), off
            else:
                a, b = off + length, min(total, off + length + reach)
            if length == 0:
                a = b = off
            need.append((a, b))
            for o_off, o_len, o_rank, o_local in owners:
                lo, hi = max(a, o_off), min(b, o_off + o_len)
                if lo < hi:
                    pieces.append((o_rank, o_local + lo - o_off, hi - lo, k, lo - a))
        plans.append((need, pieces))
    return plans


class _Halo(torch.autograd.Function):
    """h_local [B, L_r, d] -> every segment's rows with its halo, packed
    along dim 1; backward sends the halo rows' gradients to their owners."""

    @staticmethod
    def forward(ctx, h, grp, segs, plans, causal):
        ctx.grp, ctx.plans, ctx.segs, ctx.causal, ctx.L = grp, plans, segs, causal, h.shape[1]
        r = grp.rank
        B, _, d = h.shape
        need, pieces = plans[r]
        halos = [torch.zeros(B, b - a, d, dtype=h.dtype, device=h.device) for a, b in need]
        sends, recvs, local = [], [], []
        for dst in range(grp.size):
            if dst == r:
                continue
            rows = [(s0, ln) for src, s0, ln, _, _ in plans[dst][1] if src == r]
            if rows:
                sends.append((dst, torch.cat([h[:, s0:s0 + ln] for s0, ln in rows], 1)
                              .contiguous(), _TAG_HALO))
        by_src = {}
        for src, s0, ln, k, at in pieces:
            if src == r:
                local.append((s0, ln, k, at))
            else:
                by_src.setdefault(src, []).append((ln, k, at))
        bufs = {src: torch.empty(B, sum(p[0] for p in ps), d, dtype=h.dtype, device=h.device)
                for src, ps in by_src.items()}
        works = grp.exchange(sends, [(src, buf, _TAG_HALO) for src, buf in bufs.items()],
                             "the halo exchange")
        for s0, ln, k, at in local:
            halos[k][:, at:at + ln] = h[:, s0:s0 + ln]
        grp.wait(works, "the halo exchange")
        for src, ps in by_src.items():
            pos = 0
            for ln, k, at in ps:
                halos[k][:, at:at + ln] = bufs[src][:, pos:pos + ln]
                pos += ln
        parts = []
        for k, (local0, length, _) in enumerate(segs[r]):
            own = h[:, local0:local0 + length]
            parts += [halos[k], own] if causal else [own, halos[k]]
        return torch.cat(parts, 1) if parts else h[:, :0]

    @staticmethod
    def backward(ctx, dext):
        grp, plans, segs, causal = ctx.grp, ctx.plans, ctx.segs, ctx.causal
        r = grp.rank
        B, _, d = dext.shape
        need, pieces = plans[r]
        dh = torch.zeros(B, ctx.L, d, dtype=dext.dtype, device=dext.device)
        dhalos, pos = [], 0
        for k, (local0, length, _) in enumerate(segs[r]):
            hl = need[k][1] - need[k][0]
            if causal:
                dhalos.append(dext[:, pos:pos + hl])
                dh[:, local0:local0 + length] += dext[:, pos + hl:pos + hl + length]
            else:
                dh[:, local0:local0 + length] += dext[:, pos:pos + length]
                dhalos.append(dext[:, pos + length:pos + length + hl])
            pos += hl + length
        # The reverse of the forward: each piece of a halo goes back to its owner.
        sends, by_src = [], {}
        for src, s0, ln, k, at in pieces:
            if src == r:
                dh[:, s0:s0 + ln] += dhalos[k][:, at:at + ln]
            else:
                by_src.setdefault(src, []).append((k, at, ln))
        for src, ps in by_src.items():
            sends.append((src, torch.cat([dhalos[k][:, at:at + ln] for k, at, ln in ps], 1)
                          .contiguous(), _TAG_DHALO))
        recvs = []
        for dst in range(grp.size):
            if dst == r:
                continue
            rows = [(s0, ln) for src, s0, ln, _, _ in plans[dst][1] if src == r]
            if rows:
                recvs.append((dst, rows, torch.empty(B, sum(ln for _, ln in rows), d,
                                                     dtype=dext.dtype, device=dext.device)))
        works = grp.exchange(sends, [(dst, buf, _TAG_DHALO) for dst, _, buf in recvs],
                             "the halo gradient exchange")
        grp.wait(works, "the halo gradient exchange")
        for _, rows, buf in recvs:
            pos = 0
            for s0, ln in rows:
                dh[:, s0:s0 + ln] += buf[:, pos:pos + ln]
                pos += ln
        return dh, None, None, None, None


class GrassmannMix(_tnn.GrassmannMix):
    """torsor.nn.GrassmannMix over a sequence sharded across the ranks of a
    process group: the same arguments and parameters (names, shapes, init),
    plus process_group, layout and timeout as RingLieAttention has.

    forward(h): this rank's tokens h [..., L_r, d] -> [..., L_r, d], its rows
    of grassmann_mix over the whole sequence. Each rank gathers the
    max(offsets) tokens before each of its runs of tokens (causal) or after
    it (not causal) from whichever ranks hold them, runs the local op on
    halo + own tokens, and keeps its own rows; the backward sends the halo
    rows' gradients back to their owners. h's gradient is this rank's
    tokens' full gradient. Param gradients are this rank's share: their
    SUM over the ranks is the full sequence's gradient (all_reduce with
    SUM; DistributedDataParallel averages, giving 1/world_size of it).
    Params must be equal on every rank (broadcast them once, as DDP does).
    """

    def __init__(self, d, r=8, offsets=(1, 2, 4, 8), causal=False, eps=1e-6, dtype=None,
                 process_group=None, layout="contiguous", timeout=None):
        super().__init__(d, r=r, offsets=offsets, causal=causal, eps=eps, dtype=dtype)
        _check_layout(layout)
        self.process_group, self.layout, self.timeout = process_group, layout, timeout

    def _meta(self, h):
        needs = int(torch.is_grad_enabled() and h.requires_grad)
        return ([_MAGIC, _OP_GRASSMANN, _DTYPES.get(h.dtype, 0), 1 if h.is_cuda else 0,
                 self.d, self.r, _crc(repr(self.offsets)), int(self.causal), _crc(repr(self.eps)),
                 LAYOUTS.index(self.layout), needs] + _shape_row(h, 7))

    def _validate(self, rows, P):
        what = "GrassmannMix"
        _check_ops(rows)
        for name, col, fmt in (("the dtype of h", 2, lambda x: _DTYPE_NAME[x]),
                               ("the device type", 3, lambda x: "cuda" if x else "cpu"),
                               ("d", 4, str), ("r", 5, str),
                               ("offsets", 6, lambda x: "offsets hash %08x" % x),
                               ("causal", 7, lambda x: str(bool(x))),
                               ("eps", 8, lambda x: "eps hash %08x" % x),
                               ("layout", 9, lambda x: LAYOUTS[x]),
                               ("whether gradients are needed (h requires grad, grad mode "
                                "on)", 10, lambda x: str(bool(x)))):
            err = _disagree(what, name, rows, col, fmt)
            if err:
                raise err
        shapes = []
        for i, row in enumerate(rows):
            hs = _shape_of(row, 11, 7)
            if int(row[2]) == 0:
                raise InvalidArgumentError("%s: rank %d: h must be a float tensor" % (what, i))
            if hs is None or len(hs) < 2 or hs[-1] != self.d:
                raise InvalidArgumentError("%s: rank %d: expected h [..., L, %d], got %s"
                                           % (what, i, self.d, hs))
            shapes.append(hs)
        for i, hs in enumerate(shapes):
            if hs[:-2] != shapes[0][:-2]:
                raise InvalidArgumentError(
                    "%s: rank %d has h %s but rank 0 has h %s; the ranks may differ only "
                    "in their token count L (dim -2)" % (what, i, hs, shapes[0]))
        lengths = [hs[-2] for hs in shapes]
        if self.layout == "zigzag":
            want = [sum(b - a for a, b in shard_ranges(sum(lengths), i, P, "zigzag"))
                    for i in range(P)]
            if lengths != want:
                raise InvalidArgumentError(
                    "%s: layout='zigzag' over %d ranks gives %d tokens the counts %s, but "
                    "the ranks hold %s; cut the sequence with torsor.distributed.shard(..., "
                    "layout='zigzag') or use layout='contiguous'"
                    % (what, P, sum(lengths), want, lengths))
        return lengths

    def forward(self, h):
        grp = _Group(self.process_group, self.timeout, "GrassmannMix")
        rows = grp.all_gather_meta(self._meta(h), h).tolist()
        lengths = self._validate(rows, grp.size)
        grp.check_device(h)
        lead, L = h.shape[:-2], h.shape[-2]
        segs = _segments(lengths, self.layout)
        reach = max(self.offsets) if self.offsets else 0
        plans = _halo_plan(segs, sum(lengths), reach, self.causal)
        hf = h.reshape(int(torch.Size(lead).numel()), L, self.d)
        ext = _Halo.apply(hf, grp, segs, plans, self.causal)
        need = plans[grp.rank][0]
        outs, pos = [], 0
        for k, (_, length, _) in enumerate(segs[grp.rank]):
            hl = need[k][1] - need[k][0]
            if length:
                y = super().forward(ext[:, pos:pos + hl + length])
                outs.append(y[:, hl:] if self.causal else y[:, :length])
            pos += hl + length
        if not outs:
            # No tokens here; keep the graph connected so that the halo's
            # backward (which other ranks wait for) runs on this rank too.
            # Params get zero gradients here, not None, so that an
            # all_reduce over the ranks' param gradients sees every param.
            zero = ext.sum() * 0 + sum(p.sum() * 0 for p in self.parameters())
            return (zero + hf[:, :0]).reshape(*lead, 0, self.d)
        y = outs[0] if len(outs) == 1 else torch.cat(outs, 1)
        return y.reshape(*lead, L, self.d)

    def extra_repr(self):
        return "%s, layout=%s" % (super().extra_repr(), self.layout)
