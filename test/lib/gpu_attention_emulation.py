"""The GPU attention kernel (geo-map-attention-to-gpu) run on the CPU.

`geo-map-attention-to-gpu cpu-emulation=1` emits the kernel's per-thread
code with its blocks and threads as host loops (blocks in parallel, one
loop over the threads per phase between two barriers, the shared tile a
stack buffer). This module builds a model that way and hands it to
attention_suite.run_group in place of the -O1 models, so the kernel's math,
tiling and masks are compared with the -O0 oracle exactly as the CPU
kernels are. Model pipeline:

    torsorc M.tsr --emit=mlir --dtype=D
      | torsor-opt --canonicalize --cse --geo-fuse-attention --canonicalize
                   --cse --geo-map-attention-to-gpu="cpu-emulation=1 ..."
      | torsorc -O1 -o M.so        (the CPU pipeline; nothing left to fuse)

run_suite(group) is the whole of test/Numerics/gpu-attention-emulated-<group>.py:
see its docstring for the tile sizes and tolerances.
"""
import os
import subprocess

import attention_suite as A
from model_runner import CompileError, CompiledModel, tool

# The emulated models are built at this -O level; run_group labels them so.
LEVEL = 1


def pass_options(threads, rows, key_tile, chunk):
    return ("cpu-emulation=1 threads=%d rows-per-thread=%d key-tile=%d score-chunk=%d"
            % (threads, rows, key_tile, chunk))


def emulated_mlir(tsr, dtype, options, path):
    """Writes the emulated kernel's IR (tensors outside the kernel) to `path`."""
    mlir = subprocess.run([tool("torsorc"), tsr, "--emit=mlir", "--dtype=" + dtype],
                          capture_output=True, text=True)
    if mlir.returncode != 0:
        raise CompileError(mlir.stderr)
    opt = subprocess.run([tool("torsor-opt"), "-", "--canonicalize", "--cse",
                          "--geo-fuse-attention", "--canonicalize", "--cse",
                          "--geo-map-attention-to-gpu=%s" % options, "-o", path],
                         input=mlir.stdout, capture_output=True, text=True)
    if opt.returncode != 0:
        raise CompileError(opt.stderr)


def compiler(options, dtypes=("f32", "f64")):
    """A `compile` for attention_suite.run_group: the -O0 oracle from the
    .tsr as usual, the emulated GPU kernel as the -O1 model."""

    def compile_models(case, opts, workdir):
        assert tuple(opts) == (0, LEVEL), opts
        models = {}
        for dtype in ("f32", "f64"):
            models[dtype, 0] = CompiledModel(case.tsr, dtype, opt=0, workdir=workdir,
                                             run_args=["--no-check-groups"])
            if dtype not in dtypes:
                models[dtype, LEVEL] = models[dtype, 0]
                continue
            path = os.path.join(workdir, "gpu-emulated-%s.mlir" % dtype)
            emulated_mlir(case.tsr, dtype, options, path)
            models[dtype, LEVEL] = CompiledModel(path, dtype, opt=LEVEL, workdir=workdir,
                                                 run_args=["--no-check-groups"])
        case.generators = models["f64", 0].declared_groups.get(case.name)
        return models

    return compile_models


# The suites' kernel shape: T = 8 threads × R = 2 rows, BK = 8 keys per
# shared tile, S = 4 keys per softmax step (run_suite explains why).
SUITE_OPTIONS = pass_options(8, 2, 8, 4)


def run_suite(group):
    """The emulated GPU attention kernel of `group` against the -O0 oracle.

    Small tiles make the suite's lengths adversarial for the kernel:
    T = 8 threads × R = 2 rows (BQ = 16 query rows per block, so 15-17 and
    31-33 are BQ ± 1 and 2·BQ ± 1), BK = 8 keys per shared tile (several
    barrier rounds, masked tails at every L not a multiple of 8) and S = 4
    keys per softmax step; L = 12 is added to attention_suite's lengths.
    The inputs are those of test/Numerics/lie-attention-<group>.py (same
    seed and lengths, adversarial tokens near θ = 0 and θ = π),
    with the same tolerances: f64 1e-12 vs the f64 oracle; f32 1e-5 vs the
    f64 oracle on the f32-rounded inputs (1e-4 for rows that see a key
    within 0.05 of π). The 'f64/f32 -O1' rows of the report are the
    emulated GPU kernel. Prints the report, its title ending in `group`."""
    report, _, _ = A.run_group(
        group, opts=(LEVEL,), compile=compiler(SUITE_OPTIONS),
        lengths=sorted(set(A.LENGTHS) | {12}),
        title="GPU attention kernel (geo-map-attention-to-gpu, emulated on the CPU) "
              "vs -O0: " + group)
    report.finish()
