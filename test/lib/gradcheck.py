"""gradcheck.py - compiled gradients against finite differences (and torch).

The reusable harness of the autodiff tests: compile a model with
`torsorc --grad --dtype=f64`, draw random inputs, params and output
cotangents, and compare every gradient the backward entry returns with a
fourth-order central difference of f(θ) = Σ_k <cotangent_k, output_k(θ)>.

    from gradcheck import compile_grad, check_gradients
    m = compile_grad("model.tsr")               # or .tsr source text
    report = check_gradients(m, dims={"L": 5}, seed=0)
    assert report.max_error <= 1e-7, report

The error of one entry is |fd − g| / max(‖g‖_∞, ‖fd‖_∞, tiny) over its
tensor: relative to the gradient's scale, so entries that are exactly zero
(masked, unused) are held to the same absolute standard as the rest.
Group inputs are skipped here (their gradients are left-trivialised; the
Lie tests perturb by g·exp(εξ) themselves) — pass `perturb` to add one.
"""
import os
import sys

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(_ROOT, "python") not in sys.path:
    sys.path.insert(0, os.path.join(_ROOT, "python"))

import torsor  # noqa: E402


def compile_grad(source, opt=None, flags=()):
    """Compiles `source` (.tsr path or text) in f64 with the backward entry."""
    return torsor.compile(source, dtype="f64", opt=opt, grad=True, flags=flags)


class Report:
    """Per-gradient worst errors of one check."""

    def __init__(self):
        self.errors = {}

    @property
    def max_error(self):
        return max(self.errors.values(), default=0.0)

    def __repr__(self):
        return "\n".join("%-24s %.3e" % kv for kv in sorted(self.errors.items()))


def random_arrays(model, dims, rng, ints=None, scale=1.0):
    """Random inputs and params for `model` (normal floats; integer inputs
    uniform in [0, ints[name]) — default 2)."""
    ints = ints or {}
    inputs, params = {}, {}
    for spec in model.inputs + model.params:
        shape = spec.concrete_shape(dims)
        if spec.dtype == "i64":
            arr = rng.integers(0, ints.get(spec.name, 2), size=shape).astype(np.int64)
        else:
            arr = rng.standard_normal(shape) * scale
        (inputs if spec.kind == "input" else params)[spec.name] = arr
    return inputs, params


def _objective(model, inputs, params, cots):
    """f = Σ_k <cot_k, out_k> at the given inputs and params."""
    model.set_params(params)
    out = model.run(inputs)
    return sum(float(np.sum(np.asarray(out[k]) * c)) for k, c in cots.items())


def check_gradients(model, dims, seed=0, samples=6, h=1e-3, inputs=None,
                    params=None, ints=None, scale=1.0):
    """Backward against finite differences at a random point; returns a
    Report with the worst relative error per gradient."""
    rng = np.random.default_rng(seed)
    rand_in, rand_par = random_arrays(model, dims, rng, ints, scale)
    inputs = {**rand_in, **(inputs or {})}
    params = {**rand_par, **(params or {})}
    model.set_params(params)
    outs = model.run(inputs)
    cots = {k: rng.standard_normal(np.shape(v)) for k, v in outs.items()}
    grads = model.backward(inputs, cots)
    report = Report()
    by_name = {s.name: s for s in model.inputs + model.params}
    for gname, g in grads.items():
        name = gname[len("grad."):]
        spec = by_name[name]
        if spec.group:
            continue
        where = inputs if spec.kind == "input" else params
        base = where[name]
        flat = base.reshape(-1)
        picks = (range(flat.size) if flat.size <= samples
                 else rng.choice(flat.size, size=samples, replace=False))
        fds, gs = [], []
        for idx in picks:
            def f(delta):
                x = flat.copy()
                x[idx] += delta
                trial = dict(where)
                trial[name] = x.reshape(base.shape)
                if spec.kind == "input":
                    return _objective(model, trial, params, cots)
                return _objective(model, inputs, trial, cots)
            # Fourth-order central difference (truncation O(h⁴)).
            fd = (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)
            fds.append(fd)
            gs.append(g.reshape(-1)[idx])
        fds, gs = np.array(fds), np.array(gs)
        scale_ = max(np.max(np.abs(g)), np.max(np.abs(fds)), 1e-300)
        report.errors[gname] = float(np.max(np.abs(fds - gs)) / scale_)
    model.set_params(params)
    return report
