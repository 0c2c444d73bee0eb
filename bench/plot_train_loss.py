#!/usr/bin/env python3
"""plot_train_loss.py - the loss curve of `make train-demo` as a PNG.

    /work/bench-venv/bin/python bench/plot_train_loss.py \
        [bench/results/train_grassmann_lm.csv] [--entropy X] [-o OUT.png]

The SE(3) pose example (`make train-pose-demo`) uses the same script with
its own labels and its constant-predictor baseline:

    /work/bench-venv/bin/python bench/plot_train_loss.py \
        bench/results/train_se3_pose.csv --baseline X --log-y \
        --title "..." --ylabel "..." --step-label "..." \
        -o bench/results/train_se3_pose.png

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
    ap.add_argument("--baseline", type=float, default=None,
                    help="the constant predictor's loss, drawn as a line")
    ap.add_argument("--title", default="Causal Grassmann LM (2 layers, d = 64) "
                    "on the US founding documents")
    ap.add_argument("--ylabel", default="cross-entropy (nats / char)")
    ap.add_argument("--step-label", default="one 256-char window",
                    help="what one step's loss is over (legend)")
    ap.add_argument("--log-y", action="store_true", help="logarithmic loss axis")
    ap.add_argument("--legend", default="best", help="legend location (matplotlib)")
    ap.add_argument("-o", "--output", default="bench/results/train_grassmann_lm.png")
    args = ap.parse_args()
    with open(args.csv) as f:
        rows = [(int(r["step"]), float(r["loss"])) for r in csv.DictReader(f)]
    steps, loss = np.array(rows).T
    window = 20
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, loss, lw=0.6, alpha=0.4, label="loss per step (%s)" % args.step_label)
    ax.plot(steps[window - 1:], smooth, lw=1.8, label="mean of %d steps" % window)
    if args.entropy is not None:
        ax.axhline(args.entropy, color="k", ls="--", lw=1,
                   label="unigram entropy %.3f" % args.entropy)
    if args.baseline is not None:
        ax.axhline(args.baseline, color="k", ls="--", lw=1,
                   label="constant predictor %.4f" % args.baseline)
    if args.log_y:
        ax.set_yscale("log")
    ax.set_xlabel("Adam step")
    ax.set_ylabel(args.ylabel)
    ax.set_title(args.title)
    ax.legend(loc=args.legend)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print("wrote", args.output)


if __name__ == "__main__":
    main()
