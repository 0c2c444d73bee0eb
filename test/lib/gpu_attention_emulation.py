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
"""
import os
import subprocess

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
