#!/usr/bin/env python3
"""ring_attention.py - one sequence split over several processes: ring Lie
attention and Grassmann mixing with torsor.distributed (docs/distributed.md).

    torchrun --nproc-per-node 2 examples/ring_attention.py      # CPU, gloo
    torchrun --nproc-per-node 4 examples/ring_attention.py --length 1000 --contiguous

Every rank builds the same random SE(3) sequence (a seeded generator), keeps
its zigzag shard, and runs a small causal block on it: RingLieAttention
over the whole sequence, then GrassmannMix with its halo. Then it runs the
backward. Rank 0 gathers the rows and gradients and compares them with
single-process torsor.nn over the whole sequence. Run from the checkout
after `make build` (torsorc is found in build/), or with the torsor
package installed. CUDA tensors and NCCL work the same way: pass --cuda,
one GPU per rank.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ.setdefault("TORSOR_BUILD_DIR", os.path.join(HERE, "..", "build"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import torsor  # noqa: E402
import torsor.distributed as tdist  # noqa: E402
import torsor.nn as tnn  # noqa: E402

HEADS, TAU = 4, [0.5, 1.0, 2.0, 4.0]
LAM = [[1.0, 0.1], [1.0, 0.5], [1.0, 1.0], [0.5, 2.0]]
OFFSETS = [1, 2, 4, 8]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--length", type=int, default=301, help="sequence length L (any)")
    ap.add_argument("--dim", type=int, default=32, help="feature width D")
    ap.add_argument("--contiguous", action="store_true", help="contiguous shards, not zigzag")
    ap.add_argument("--cuda", action="store_true", help="CUDA tensors over NCCL")
    args = ap.parse_args()
    backend = "nccl" if args.cuda else "gloo"
    dist.init_process_group(backend)
    rank, P = dist.get_rank(), dist.get_world_size()
    device = torch.device("cpu")
    if args.cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
        device = torch.device("cuda", torch.cuda.current_device())
    torch.set_num_threads(1)
    torsor.set_num_threads(1)
    layout = "contiguous" if args.contiguous else "zigzag"

    # The same sequence on every rank; each keeps its shard.
    L, D = args.length, args.dim
    rng = np.random.default_rng(0)
    g = torch.tensor(torsor.groups.random("SE3", (1, L), seed=rng, dtype="f32"))
    v = torch.tensor(rng.standard_normal((1, L, D)), dtype=torch.float32)
    g_r = tdist.shard(g, rank, P, layout, dim=-3).to(device).requires_grad_()
    v_r = tdist.shard(v, rank, P, layout).to(device).requires_grad_()

    attn = tdist.RingLieAttention("SE3", heads=HEADS, tau=TAU, lam=LAM, causal=True,
                                  layout=layout)
    torch.manual_seed(0)  # equal GrassmannMix params on every rank
    mix = tdist.GrassmannMix(D, r=4, offsets=OFFSETS, causal=True, layout=layout).to(device)
    y_r = mix(attn(g_r, v_r) + v_r)
    loss = y_r.square().sum()
    loss.backward()
    # Param gradients are each rank's share; their sum is the full one.
    for p in mix.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
    total = loss.detach().clone()
    dist.all_reduce(total)
    mine = [y_r.detach().cpu(), g_r.grad.cpu(), v_r.grad.cpu()]
    gathered = [None] * P
    dist.all_gather_object(gathered, mine)
    if rank == 0:
        y, dg, dv = (tdist.unshard([s[i] for s in gathered], layout, dim=d)
                     for i, d in ((0, -2), (1, -3), (2, -2)))
        # The same block in one process, over the whole sequence.
        one_attn = tnn.LieAttention("SE3", heads=HEADS, tau=TAU, lam=LAM, causal=True)
        one_mix = tnn.GrassmannMix(D, r=4, offsets=OFFSETS, causal=True)
        one_mix.load_state_dict(mix.cpu().state_dict())
        g1, v1 = g.clone().requires_grad_(), v.clone().requires_grad_()
        y1 = one_mix(one_attn(g1, v1) + v1)
        y1.square().sum().backward()

        def rel(a, b):
            return float((a - b).abs().max() / b.abs().max())
        # g's gradient is compared on the tangent space (the model is
        # defined on the group): ξ_a = <G, g E_a>.
        E = torch.tensor(torsor.groups.basis("SE3"), dtype=torch.float32)
        xi = lambda G: torch.einsum("...ij,...kij->...k", G, g[..., None, :, :] @ E)  # noqa
        print("%d ranks, L = %d (%s shards %s), loss %.6g" % (
            P, L, layout, [s[0].shape[-2] for s in gathered], float(total)))
        errs = {"rows": rel(y, y1.detach()), "grad v": rel(dv, v1.grad),
                "grad g (tangent)": rel(xi(dg), xi(g1.grad))}
        errs.update({"grad " + n: rel(p.grad.cpu(), q.grad)
                     for (n, p), q in zip(mix.named_parameters(), one_mix.parameters())})
        for k, e in errs.items():
            print("  %-18s max rel diff vs one process: %.2e" % (k, e))
        ok = max(errs.values()) < 1e-4
        print("matches one process" if ok else "MISMATCH")
        dist.destroy_process_group()
        return 0 if ok else 1
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
