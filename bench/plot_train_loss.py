#!/usr/bin/env python3
"""plot_train_loss.py - the loss curve of `make train-demo` as a PNG.

    /work/bench-venv/bin/python bench/plot_train_loss.py \
        [bench/results/train_grassmann_lm.csv] [--entropy X] [-o OUT.png]

Needs matplotlib (bench/setup-venv.sh); the training itself does not.
"""
import argparse
import csv

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="?", default="bench/results/train_grassmann_lm.csv")
    ap.add_argument("--entropy", type=float, default=None,
                    help="unigram entropy (nats/token) to draw as a line")
    ap.add_argument("-o", "--output", default="bench/results/train_grassmann_lm.png")
    args = ap.parse_args()
    with open(args.csv) as f:
        rows = [(int(r["step"]), float(r["loss"])) for r in csv.DictReader(f)]
    steps, loss = np.array(rows).T
    window = 20
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, loss, lw=0.6, alpha=0.4, label="loss per step (one 256-char window)")
    ax.plot(steps[window - 1:], smooth, lw=1.8, label="mean of %d steps" % window)
    if args.entropy is not None:
        ax.axhline(args.entropy, color="k", ls="--", lw=1,
                   label="unigram entropy %.3f" % args.entropy)
    ax.set_xlabel("Adam step")
    ax.set_ylabel("cross-entropy (nats / char)")
    ax.set_title("Causal Grassmann LM (2 layers, d = 64) on the US founding documents")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print("wrote", args.output)


if __name__ == "__main__":
    main()
