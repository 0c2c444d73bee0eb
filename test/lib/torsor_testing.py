"""Compile MLIR with torsorc into a shared library and call it from NumPy.

The numerics tests go through the project's own pipeline end to end:
torsorc lowers the module (convert-lie-to-arith, bufferization, LLVM) and
links a .so; this module passes NumPy arrays to its functions as MLIR memref
descriptors through the `_mlir_ciface_<name>` wrappers that
`llvm.emit_c_interface` generates.
"""
import ctypes
import os
import subprocess
import tempfile

import numpy as np

def cpu_flags():
    """The feature flags of this machine's CPU (/proc/cpuinfo's first
    "flags" line; empty where it cannot be read), for tests that pick the
    code paths they can run and skip the others with a reason."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def tool(name):
    """Path of a Torsor tool in $TORSOR_BIN (the build's bin/) or on PATH."""
    path = os.path.join(os.environ.get("TORSOR_BIN", ""), name)
    return path if os.path.exists(path) else name


def memref_descriptor(array):
    """A ctypes struct laid out as MLIR's StridedMemRefType for `array`."""
    rank = array.ndim
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
              ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank),
                   ("strides", ctypes.c_int64 * rank)]
    Desc = type("MemRef%dD" % rank, (ctypes.Structure,), {"_fields_": fields})
    desc = Desc()
    desc.allocated = desc.aligned = array.ctypes.data
    desc.offset = 0
    for i in range(rank):
        desc.sizes[i] = array.shape[i]
        desc.strides[i] = array.strides[i] // array.itemsize
    return desc


class CompiledModule:
    """A torsorc-compiled shared library whose functions take memrefs."""

    def __init__(self, mlir_text, extra_args=()):
        self._dir = tempfile.TemporaryDirectory(prefix="torsor-test-")
        src = os.path.join(self._dir.name, "module.mlir")
        so = os.path.join(self._dir.name, "module.so")
        with open(src, "w") as f:
            f.write(mlir_text)
        cmd = [tool("torsorc"), src, "-o", so, *extra_args]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError("torsorc failed:\n%s\n--- module ---\n%s" %
                               (result.stderr, mlir_text))
        self.lib = ctypes.CDLL(so)

    def call(self, name, *arrays):
        """Calls @name with every array passed as a memref (outputs too)."""
        for a in arrays:
            assert a.flags["C_CONTIGUOUS"], "arrays must be C-contiguous"
        descs = [memref_descriptor(a) for a in arrays]
        fn = getattr(self.lib, "_mlir_ciface_" + SYMBOL_PREFIX + name)
        fn.restype = None
        fn(*[ctypes.byref(d) for d in descs])


# Test functions get a prefix so that names like `log` or `exp` never collide
# with libm: LLVM treats a function named `exp` as the C library's and may
# delete calls to it.
SYMBOL_PREFIX = "torsor_test_"


def tensor_type(shape, dtype):
    dims = "x".join("?" if s is None else str(s) for s in shape)
    return "tensor<%sx%s>" % (dims, dtype) if dims else "tensor<%s>" % dtype


def memref_type(shape, dtype):
    return tensor_type(shape, dtype).replace("tensor<", "memref<")


def dps_function(name, inputs, outputs, body):
    """A destination-passing func: memref inputs and outputs, tensor body.

    `inputs`/`outputs` are (shape, dtype) pairs (None for a dynamic dim);
    `body(args)` gets the input tensor SSA names and returns (text, results)
    where results are the SSA names of the output tensors.
    """
    params, lines, names = [], [], []
    for i, (shape, dtype) in enumerate(inputs):
        params.append("%%in%d: %s" % (i, memref_type(shape, dtype)))
        lines.append("  %%t%d = bufferization.to_tensor %%in%d restrict : %s to %s"
                     % (i, i, memref_type(shape, dtype), tensor_type(shape, dtype)))
        names.append("%%t%d" % i)
    for i, (shape, dtype) in enumerate(outputs):
        params.append("%%out%d: %s" % (i, memref_type(shape, dtype)))
    text, results = body(names)
    lines.append(text)
    for i, ((shape, dtype), res) in enumerate(zip(outputs, results)):
        lines.append("  bufferization.materialize_in_destination %s in restrict "
                     "writable %%out%d : (%s, %s) -> ()"
                     % (res, i, tensor_type(shape, dtype), memref_type(shape, dtype)))
    return ("func.func @%s%s(%s) attributes {llvm.emit_c_interface} {\n%s\n"
            "  return\n}\n" % (SYMBOL_PREFIX, name, ", ".join(params),
                                 "\n".join(lines)))


class Report:
    """Collects named max-error checks; fails loudly at the end."""

    def __init__(self, title):
        self.title = title
        self.failures = []
        self.rows = []

    def check(self, what, error, tol):
        error = float(error)
        ok = error <= tol
        self.rows.append((what, error, tol, ok))
        if not ok:
            self.failures.append(what)

    def finish(self):
        print("== %s" % self.title)
        for what, error, tol, ok in self.rows:
            print("%-4s %-60s max err %.3e  (tol %.1e)" %
                  ("ok" if ok else "FAIL", what, error, tol))
        if self.failures:
            raise SystemExit("FAILED: " + ", ".join(self.failures))
        print("all %d checks passed" % len(self.rows))
