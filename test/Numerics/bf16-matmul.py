# RUN: %python %s | FileCheck %s
# CHECK: == bf16 matmul
# CHECK: all {{[0-9]+}} checks passed
"""`torsorc --compute=bf16` dense products against the float64 oracle.

Each path the strategy can pick is compiled by forcing it with --mcpu:
  fma         --mcpu=generic          operands rounded to bf16, f32 kernel
  avx512bf16  --mcpu=cooperlake       vdpbf16ps (runs where the CPU has it)
  amx         --mcpu=sapphirerapids   tdpbf16ps tiles (runs where it has AMX)
A path whose instructions this CPU lacks is skipped with the reason.

Bounds (docs/precision.md): operands rounded to bf16 (8-bit significand,
unit roundoff u = 2^-8) give products within 2u + u^2 of exact, and bf16
products are exact in f32, so
  |C - A·B| <= (2u + u^2 + K·2^-23) · (|A|·|B|)   elementwise     (hard)
and, on random data without cancellation,
  max|C - A·B| / max|A·B| <= 1e-2                                   (issue)
Shapes: K = 1, K not a multiple of the tile depth 32, N not a multiple of
the block, a transposed right operand (x @ transpose(W)), K = 300 (two
depth blocks of the AMX kernel's cache_depth 256, the last one short);
L = 0, 1, tile rows ± 1 (15-17, 31-33), 100 (tasks of 32 rows: fewer
than 256) and 300 (tasks of 128 rows, the last one short). Data: normal;
rows and columns scaled over 10^±3 (dynamic range); [u, u] @ [v; -v +
1e-3 r] (near-cancelling sums).

Contractions with a batch dim take the same paths, packed per batch
element: QKᵀ and P·V of 4 heads (depth 20 and S, columns S and 16: neither a
multiple of the tile) and `z @ W` with z [3, L, 20] (W shared by the batch),
for L = 0, 1, 17, 33, 260 (tasks of 128 rows per head, the last one
short) and S = 1, 17, 40, under the same bounds.
"""
import os
import tempfile

import numpy as np

from model_runner import CompiledModel
from torsor_testing import Report, cpu_flags

U = 2.0 ** -8
CPU_FLAGS = cpu_flags()

PATHS = [("fma", "generic", None),
         ("avx512bf16", "cooperlake", {"avx512f", "avx512_bf16"}),
         ("amx", "sapphirerapids", {"avx512f", "avx512_bf16", "amx_tile",
                                    "amx_bf16"})]
SHAPES = [(1, 16, False), (40, 48, False), (33, 17, True), (64, 64, False),
          (300, 40, False)]
LENGTHS = [0, 1, 15, 16, 17, 31, 32, 33, 100, 300]

MODEL = """model MM {{
  dim L;
  dim K = {k};
  dim N = {n};
  input x: f32[L, K];
  param W: f32[{w}];
  output y = x @ {expr};
}}
"""


def data(rng, kind, L, K, N):
    if kind == "normal":
        return rng.standard_normal((L, K)), rng.standard_normal((K, N))
    if kind == "range":
        x = rng.standard_normal((L, K)) * 10.0 ** rng.uniform(-3, 3, (L, 1))
        w = rng.standard_normal((K, N)) * 10.0 ** rng.uniform(-3, 3, (1, N))
        return x, w
    if K == 1:
        return rng.standard_normal((L, 1)), rng.standard_normal((1, N))
    h = K // 2
    u = rng.standard_normal((L, h))
    v = rng.standard_normal((h, N))
    x = np.concatenate([u, u, rng.standard_normal((L, K - 2 * h))], axis=1)
    w = np.concatenate([v, -v + 1e-3 * rng.standard_normal((h, N)),
                        rng.standard_normal((K - 2 * h, N))])
    return x, w


BATCHED = """model BMM {
  dim L;
  dim S;
  dim H = 4;
  dim E = 20;
  dim F = 16;
  input q: f32[H, L, E];
  input k: f32[H, S, E];
  input p: f32[H, L, S];
  input v: f32[H, S, F];
  input z: f32[3, L, E];
  param W: f32[E, 40];
  output s = q @ transpose(k);
  output o = p @ v;
  output y = z @ W;
}
"""


def batched(report, rng, work, path, cpu, runs):
    """The batched products of BATCHED on one path."""
    tsr = os.path.join(work, "bmm-%s.tsr" % path)
    with open(tsr, "w") as f:
        f.write(BATCHED)
    model = CompiledModel(tsr, "f32", workdir=os.path.join(work, "bmm-" + path),
                          extra_args=["--compute=bf16", "--mcpu=" + cpu])
    if not runs:
        return
    f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731
    for L in (0, 1, 17, 33, 260):
        for S in (1, 17, 40):
            q, k = f32(rng.standard_normal((4, L, 20))), f32(rng.standard_normal((4, S, 20)))
            p, v = f32(rng.random((4, L, S))), f32(rng.standard_normal((4, S, 16)))
            z, w = f32(rng.standard_normal((3, L, 20))), f32(rng.standard_normal((20, 40)))
            got = model.run({"q": q, "k": k, "p": p, "v": v, "z": z}, {"W": w})
            kt = np.swapaxes(k, -1, -2)
            for name, x, y, depth in (("s", q, kt, 20), ("o", p, v, S),
                                      ("y", z, w, 20)):
                want = x @ y
                bound = (2 * U + U * U + depth * 2.0 ** -23) * (np.abs(x) @ np.abs(y))
                ok = got[name].shape == want.shape
                excess = float(np.max(np.abs(got[name] - want) - bound)) \
                    if ok and want.size else -1.0
                report.check("%s batched %s L=%d S=%d: |err| <= bound"
                             % (path, name, L, S),
                             max(excess, 0.0) if ok else 1.0, 0.0)
                if ok and want.size:
                    err = float(np.max(np.abs(got[name] - want)) /
                                np.max(np.abs(want)))
                    report.check("%s batched %s L=%d S=%d: rel err %.2g"
                                 % (path, name, L, S, err), err, 1e-2)


def main():
    report = Report("bf16 matmul")
    rng = np.random.default_rng(26)
    work = tempfile.TemporaryDirectory(prefix="torsor-bf16-")
    for path, cpu, needs in PATHS:
        runs = needs is None or needs <= CPU_FLAGS
        batched(report, rng, work.name, path, cpu, runs)
        for K, N, transposed in SHAPES:
            text = MODEL.format(k=K, n=N, w="N, K" if transposed else "K, N",
                                expr="transpose(W)" if transposed else "W")
            tag = "%s-%d-%d-%d" % (path, K, N, transposed)
            tsr = os.path.join(work.name, tag + ".tsr")
            with open(tsr, "w") as f:
                f.write(text)
            model = CompiledModel(tsr, "f32", workdir=os.path.join(work.name, tag),
                                  extra_args=["--compute=bf16", "--mcpu=" + cpu])
            report.check("%s K=%d N=%d: manifest compute bf16, amx %s"
                         % (path, K, N, path == "amx"),
                         0 if model.manifest.get("compute") == "bf16" and
                         model.manifest.get("amx", False) == (path == "amx")
                         else 1, 0)
            if not runs:
                print("skip: %s path not run, this CPU lacks %s"
                      % (path, " ".join(sorted(needs - CPU_FLAGS))))
                continue
            for kind in ("normal", "range", "cancel"):
                for L in LENGTHS:
                    x, w = data(rng, kind, L, K, N)
                    x = x.astype(np.float32).astype(np.float64)
                    w = w.astype(np.float32).astype(np.float64)
                    got = model.run({"x": x}, {"W": w.T if transposed else w})["y"]
                    want = x @ w
                    scale = np.abs(x) @ np.abs(w)
                    bound = (2 * U + U * U + K * 2.0 ** -23) * scale
                    excess = (float(np.max(np.abs(got - want) - bound))
                              if L else -1.0)
                    report.check("%s K=%d N=%d%s %s L=%d: |err| <= bound"
                                 % (path, K, N, " (Wt)" if transposed else "",
                                    kind, L),
                                 max(excess, 0.0) if got.shape == want.shape
                                 else 1.0, 0.0)
                    if kind == "normal" and L:
                        err = float(np.max(np.abs(got - want)) /
                                    np.max(np.abs(want)))
                        report.check("%s K=%d N=%d %s L=%d: rel err %.2g"
                                     % (path, K, N, kind, L, err), err, 1e-2)
    report.finish()


main()
