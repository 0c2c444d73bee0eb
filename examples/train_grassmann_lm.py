#!/usr/bin/env python3
"""train_grassmann_lm.py - train the causal Grassmann LM on a public-domain text.

`make train-demo` runs this. It compiles examples/grassmann_lm_train.tsr
with its backward entry (torsor.compile(..., grad=True)), prints the
unigram entropy of the characters (nats per token: the loss of the best
model that ignores context), then trains with Adam on random windows of
examples/data/us-founding-documents.txt, printing `step N loss X`. A model
that uses context must end below the unigram entropy.

    python3 examples/train_grassmann_lm.py [--steps N] [--seq L] [--lr LR]
        [--checkpoint OUT.safetensors] [--log LOSS.csv]
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import torsor  # noqa: E402
from torsor.train import Adam, init_params, train  # noqa: E402


def encode(text):
    """Characters to ids: newline 0, printable ASCII 1..95, others space."""
    ids = np.frombuffer(text.encode("ascii", "replace"), np.uint8).astype(np.int64)
    ids = np.where(ids == 10, 31, ids)
    ids = np.where((ids < 31) | (ids > 126), 32, ids)
    return ids - 31


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--log", default=None, help="write step,loss CSV here")
    ap.add_argument("--corpus", default=os.path.join(HERE, "data",
                                                      "us-founding-documents.txt"))
    args = ap.parse_args()

    with open(args.corpus, encoding="utf-8") as f:
        ids = encode(f.read())
    counts = np.bincount(ids, minlength=96).astype(np.float64)
    p = counts[counts > 0] / counts.sum()
    print("unigram entropy %.4f" % float(-(p * np.log(p)).sum()), flush=True)

    torsor.set_num_threads(args.threads)
    t0 = time.perf_counter()
    model = torsor.compile(os.path.join(HERE, "grassmann_lm_train.tsr"), grad=True)
    print("compiled %s with its backward entry in %.1f s (%d params)"
          % (model.name, time.perf_counter() - t0,
             sum(int(np.prod(s.concrete_shape({}))) for s in model.params)),
          flush=True)
    params = init_params(model, seed=args.seed)
    rng = np.random.default_rng(args.seed)

    def batches():
        while True:
            i = int(rng.integers(0, len(ids) - args.seq - 1))
            yield {"tokens": ids[i:i + args.seq], "targets": ids[i + 1:i + args.seq + 1]}

    history = train(model, params, batches(), Adam(lr=args.lr), args.steps,
                    loss="loss", log_every=10, checkpoint=args.checkpoint, clip=1.0,
                    out=lambda s: print(s, flush=True))
    if args.log:
        os.makedirs(os.path.dirname(os.path.abspath(args.log)), exist_ok=True)
        with open(args.log, "w") as f:
            f.write("step,loss\n")
            for i, v in enumerate(history, 1):
                f.write("%d,%.6f\n" % (i, v))


if __name__ == "__main__":
    main()
