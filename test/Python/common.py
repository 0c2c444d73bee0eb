"""common.py - shared helpers of the Python package tests (test_*.py).

Paths come from run_tests.py: TORSOR_TEST_SOURCE (the checkout) and
TORSOR_TEST_BUILD (the build with bin/torsor-run). test/lib is put on
sys.path for model_runner's random elements of declared groups.
"""
import glob
import os
import subprocess
import sys

import numpy as np

SOURCE = os.environ.get("TORSOR_TEST_SOURCE",
                        os.path.dirname(os.path.dirname(os.path.dirname(
                            os.path.abspath(__file__)))))
BUILD = os.environ.get("TORSOR_TEST_BUILD", os.path.join(SOURCE, "build"))
sys.path.insert(0, os.path.join(SOURCE, "test", "lib"))

import torsor  # noqa: E402  (after the path set-up above)

EXAMPLES = sorted(glob.glob(os.path.join(SOURCE, "examples", "*.tsr")))


def example(name):
    """Path of examples/<name>.tsr."""
    return os.path.join(SOURCE, "examples", name + ".tsr")


def torsor_run(so, inputs, weights, outputs, workdir, threads=2):
    """Runs build/bin/torsor-run on .npy inputs and a weights bundle;
    returns {output name: array} exactly as written."""
    cmd = [os.path.join(BUILD, "bin", "torsor-run"), so, "--threads", str(threads),
           "--weights", weights]
    for name, arr in inputs.items():
        path = os.path.join(workdir, "in.%s.npy" % name)
        np.save(path, arr)
        cmd += ["--input", "%s=%s" % (name, path)]
    for name in outputs:
        cmd += ["--output", "%s=%s" % (name, os.path.join(workdir, "out.%s.npy" % name))]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise AssertionError("%s failed:\n%s" % (" ".join(cmd), res.stderr))
    return {n: np.load(os.path.join(workdir, "out.%s.npy" % n)) for n in outputs}


def random_inputs(model, rng, size=7, declared=None):
    """Seeded inputs for `model` (symbolic dims = `size`): group inputs of
    built-in groups from torsor.groups.random, of declared groups from
    model_runner (exp of generator combinations), tensors standard normal;
    all in the model's dtype."""
    import model_runner
    out = {}
    for s in model.inputs:
        shape = s.concrete_shape({d: size for d in model.dims})
        if s.group in torsor.groups.BUILTIN:
            g = torsor.groups.random(s.group, shape[:-2], seed=rng, dtype="f64")
            out[s.name] = g.astype(s.numpy_dtype)
        elif s.group:
            count = int(np.prod(shape[:-2]))
            g = model_runner.random_group_elements(rng, s.group, count, declared[s.group])
            out[s.name] = g.reshape(shape).astype(s.numpy_dtype)
        else:
            out[s.name] = rng.standard_normal(shape).astype(s.numpy_dtype)
    return out


def random_params(model, rng):
    """normal / sqrt(fan_in) params in the model's dtype."""
    out = {}
    for s in model.params:
        shape = s.concrete_shape({})
        fan_in = shape[-2] if len(shape) >= 2 else 1
        out[s.name] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(s.numpy_dtype)
    return out


def same_bits(a, b):
    """True when a and b have the same dtype, shape and bytes."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def rel_err(got, want):
    """max |got - want| / max |want|."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = max(float(np.max(np.abs(want))), 1e-300)
    return float(np.max(np.abs(got - want))) / scale
