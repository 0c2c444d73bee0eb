# RUN: %python %s | FileCheck %s
# CHECK: == f32 dense: one fma per k, in order
# CHECK: all {{[0-9]+}} checks passed
"""The -O2 f32 matmul sums each output in the order of k, whatever the
tiling and packing (the right operand's column panels, packed once per load
by torsor_prepare; cache blocks of depth): bit for bit, on random data.

torsor-tile-dense's register tiles (8 rows x 32 columns with AVX-512, 4 x 8
on 128-bit CPUs) compute c = fma(a[i, k], b[k, j], c) for k = 0, 1, ...
starting from the accumulator's init (0 here); a ragged column tile of a
static N is a static, narrower tile of the same kernel, while the ragged
rows of the last task (L is dynamic) compute c = c + a·b with the product
rounded first.
Packing moves where B is read from, not what is added when, so both forms
must match their emulation here exactly (float64 products are exact for
f32 operands; the fused sum is rounded once from long double, which only
differs from a single rounding on ties of 2^-40 odds). K = 300 spans two
depth blocks (256 + 44). Shapes: L = 64 (whole tiles), 68 and 13 (ragged
rows), N = 64 and 72, 40 (ragged columns), `x @ W` and `x @ transpose(W)`.
"""
import os
import tempfile

import numpy as np

from model_runner import CompiledModel
from torsor_testing import Report

K = 300


def emulate(x, w, rows, cols):
    """x @ w as the kernel sums it: one fma per k in the first `rows` x
    `cols` block of outputs (the vector kernels), mul then add elsewhere."""
    L, N = x.shape[0], w.shape[1]
    fused = np.zeros((L, N), np.float32)
    plain = np.zeros((L, N), np.float32)
    for k in range(K):
        prod = np.multiply.outer(x[:, k].astype(np.float64),
                                 w[k].astype(np.float64))
        fused = (prod.astype(np.longdouble) + fused).astype(np.float32)
        plain = (prod.astype(np.float32) + plain).astype(np.float32)
    out = plain.copy()
    out[:rows, :cols] = fused[:rows, :cols]
    return out


def main():
    report = Report("f32 dense: one fma per k, in order")
    rng = np.random.default_rng(11)
    work = tempfile.TemporaryDirectory(prefix="torsor-order-")
    # The register tile's rows: 8 with AVX-512 (32 vector registers), 4
    # below it.
    avx512 = False
    try:
        with open("/proc/cpuinfo") as f:
            avx512 = "avx512f" in f.read()
    except OSError:
        pass
    mr = 8 if avx512 else 4
    for n in (64, 72, 40):
        for transposed in (False, True):
            w_decl = "W: f32[%d, %d]" % ((n, K) if transposed else (K, n))
            use = "transpose(W)" if transposed else "W"
            tsr = os.path.join(work.name, "mm_%d_%d.tsr" % (n, transposed))
            with open(tsr, "w") as f:
                f.write("model MM {\n  dim L;\n  input x: f32[L, %d];\n"
                        "  param %s;\n  output y = x @ %s;\n}\n"
                        % (K, w_decl, use))
            model = CompiledModel(tsr, "f32", workdir=os.path.join(
                work.name, "b_%d_%d" % (n, transposed)))
            for L in (64, 68, 13):
                x = rng.standard_normal((L, K)).astype(np.float32)
                w = rng.standard_normal((K, n)).astype(np.float32)
                param = np.ascontiguousarray(w.T) if transposed else w
                got = model.run({"x": x}, {"W": param})["y"]
                # Vector kernels: rows in whole tiles of each 32-row task,
                # every column (N is static).
                rows = (L // 32) * 32 + (L % 32) // mr * mr
                cols = n
                want = emulate(x, w, rows, cols)
                same = np.array_equal(np.asarray(got, np.float32).view(np.uint32),
                                      want.view(np.uint32))
                report.check("L=%d N=%d %s: bit-identical to fma order" % (
                    L, n, "x Wt" if transposed else "x W"), 0 if same else 1, 0)
    report.finish()


if __name__ == "__main__":
    main()
