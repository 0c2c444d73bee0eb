"""Training over a compiled backward: optimizers, a loop, checkpoints.

    import torsor
    from torsor.train import Adam, train, init_params
    m = torsor.compile("lm.tsr", grad=True)
    params = init_params(m, seed=0)
    train(m, params, batches, Adam(lr=3e-3), steps=300, loss="loss",
          checkpoint="lm.safetensors")

The gradient comes from the model's compiled backward entry
(torsorc --grad, Model.backward); the optimizer is plain NumPy on the host.
Why on the host: an update is a few elementwise passes over the params,
negligible next to a forward and backward pass, and keeping it in Python
keeps the compiled ABI to two entry points and lets users swap optimizers
without recompiling. docs/training.md has the details.
"""
import time

import numpy as np

from ._files import check_destination
from .errors import InvalidArgumentError, TorsorError
from .weights import save_weights

__all__ = ["SGD", "Adam", "TrainingDivergedError", "init_params", "train"]


class TrainingDivergedError(TorsorError, FloatingPointError):
    """A training step produced a non-finite loss, gradient or param.

    `step` is the step (1-based); `checkpoint_step` the step of the last
    checkpoint written by this run (0 if none), which holds finite params:
    a non-finite checkpoint is never written."""

    def __init__(self, message, step=0, checkpoint_step=0):
        super().__init__(message)
        self.step = step
        self.checkpoint_step = checkpoint_step


def _first_non_finite(arrays):
    """(name, kind) of the first array of {name: array} holding a NaN
    ("NaN") or an infinity ("Inf"), or None when all are finite."""
    for name, a in arrays.items():
        a = np.asarray(a)
        if np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a)):
            return name, "NaN" if np.any(np.isnan(a)) else "Inf"
    return None


class SGD:
    """p ← p − lr·(g + weight_decay·p), with optional momentum μ:
    v ← μ·v + g; p ← p − lr·v."""

    def __init__(self, lr=1e-2, momentum=0.0, weight_decay=0.0):
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.velocity = {}

    def step(self, params, grads):
        for name, g in grads.items():
            p = params[name]
            if self.weight_decay:
                g = g + self.weight_decay * p
            if self.momentum:
                v = self.velocity.get(name)
                v = g if v is None else self.momentum * v + g
                self.velocity[name] = v
                g = v
            p -= (self.lr * g).astype(p.dtype)


class Adam:
    """Adam (Kingma & Ba 2015) with bias correction; `weight_decay` is
    decoupled (AdamW) when nonzero."""

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.m, self.v, self.t = {}, {}, 0

    def step(self, params, grads):
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for name, g in grads.items():
            p = params[name]
            m = self.m.get(name, 0.0) * b1 + (1 - b1) * g
            v = self.v.get(name, 0.0) * b2 + (1 - b2) * g * g
            self.m[name], self.v[name] = m, v
            update = self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)
            if self.weight_decay:
                update = update + self.lr * self.weight_decay * p
            p -= update.astype(p.dtype)


def init_params(model, seed=0):
    """Fresh params for `model`: matrices N(0, 1/fan_in) (the last dim is
    the output), 1-D params named like a gain (`*_g`, `gamma`) ones, other
    1-D params zeros."""
    rng = np.random.default_rng(seed)
    params = {}
    for spec in model.params:
        shape = spec.concrete_shape({})
        dtype = spec.numpy_dtype
        leaf = spec.name.rsplit(".", 1)[-1]
        if len(shape) >= 2:
            fan_in = int(np.prod(shape[:-1])) if leaf != "embed" else 1
            arr = rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))
        elif leaf.endswith("_g") or leaf in ("gamma", "g"):
            arr = np.ones(shape)
        else:
            arr = np.zeros(shape)
        params[spec.name] = np.ascontiguousarray(arr, dtype=dtype)
    return params


def _tokens(model, batch):
    """Tokens in one batch: the product of the symbolic dims (L, B, ...)
    of the first model input the batch binds, read from its shape; an
    input without symbolic dims counts as one. So an LM's `tokens: i64[L]`,
    a pose model's `pose: SE3[L]` (L·4·4 numbers) and `x: f32[L, D]` all
    count L."""
    for spec in model.inputs:
        if spec.name in batch:
            shape = np.shape(batch[spec.name])
            return int(np.prod([shape[i] for i, d in enumerate(spec.shape)
                                if isinstance(d, str) and i < len(shape)]))
    return 0


def train(model, params, batches, optimizer, steps, loss="loss", log_every=10,
          checkpoint=None, checkpoint_every=None, clip=None, out=print):
    """Runs `steps` optimizer steps and returns the list of losses.

    batches     an iterator of {input name: array}, one per step
    loss        the name of the model's scalar loss output; the backward
                pass seeds its cotangent with 1 (every other output 0)
    clip        if set, rescales the whole gradient to at most this norm
    Prints `step N loss X (T tokens/s)` every `log_every` steps (a token is
    one position of the symbolic dims, e.g. L), X the mean
    loss of the steps since the previous line (one batch's loss is noisy),
    and writes
    `checkpoint` (.safetensors) every `checkpoint_every` steps and at the
    end. Gradients of inputs are computed but not used.

    A checkpoint is written to a temporary beside it and renamed over it
    when complete, so the previous one survives a failure; a step whose
    loss, gradient or updated params are not finite stops the run with
    TrainingDivergedError before anything non-finite is written.
    `batches` running out before `steps` is an InvalidArgumentError."""
    outputs = [s.name for s in model.outputs]
    if loss not in outputs:
        raise InvalidArgumentError(
            "train: the model has no output '%s' (loss=); its outputs are: %s"
            % (loss, ", ".join(outputs)))
    try:
        batches = iter(batches)
    except TypeError:
        raise InvalidArgumentError(
            "train: batches must be an iterable of {input name: array} "
            "(one per step), got %s" % type(batches).__name__) from None
    if checkpoint:
        # A FIFO, a device or a missing folder is refused now, not after
        # the first `checkpoint_every` steps.
        check_destination(checkpoint, "checkpoint")
    grads_of = {"grad." + s.name: s.name for s in model.params}
    loss_dtype = next(s for s in model.outputs if s.name == loss).numpy_dtype
    seed = {loss: np.array(1.0, dtype=loss_dtype)}
    history = []
    start = time.perf_counter()
    tokens = 0
    saved = [0]  # the step of the last checkpoint written

    def diverged(step, what):
        where = ("'%s' keeps the params of step %d" % (checkpoint, saved[0])
                 if saved[0] else
                 "no checkpoint was written by this run" if checkpoint else
                 "no checkpoint was requested")
        raise TrainingDivergedError(
            "train: step %d: %s; stopped (%s, and a non-finite checkpoint is "
            "never written). Lower the learning rate, clip the gradient "
            "(clip=...) or check the batch" % (step, what, where),
            step=step, checkpoint_step=saved[0])

    def save(step):
        bad = _first_non_finite(params)
        if bad is not None:
            diverged(step, "param '%s' holds %s" % bad)
        save_weights(checkpoint, params, what="checkpoint")
        saved[0] = step

    for step in range(1, steps + 1):
        try:
            batch = next(batches)
        except StopIteration:
            raise InvalidArgumentError(
                "train: batches ran out after %d of steps=%d steps; pass an "
                "iterator that yields at least `steps` batches (for a fixed "
                "list, itertools.cycle(batches))" % (step - 1, steps)) from None
        model.set_params(params)
        value = float(model.run(batch)[loss])
        if not np.isfinite(value):
            diverged(step, "the loss '%s' is %s" % (loss, value))
        grads = model.backward(batch, seed)
        grads = {grads_of[k]: v for k, v in grads.items() if k in grads_of}
        bad = _first_non_finite(grads)
        if bad is not None:
            diverged(step, "the gradient of param '%s' holds %s" % bad)
        if clip is not None:
            norm = np.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
            if norm > clip:
                grads = {k: g * (clip / norm) for k, g in grads.items()}
        with np.errstate(over="ignore", invalid="ignore"):
            optimizer.step(params, grads)
        bad = _first_non_finite(params)
        if bad is not None:
            diverged(step, "the update made param '%s' %s (learning rate %r)"
                     % (bad[0], bad[1], getattr(optimizer, "lr", None)))
        history.append(value)
        tokens += _tokens(model, batch)
        if step % log_every == 0 or step == steps:
            rate = tokens / max(time.perf_counter() - start, 1e-9)
            recent = history[-(((step - 1) % log_every) + 1):]
            out("step %d loss %.4f (%.0f tokens/s)"
                % (step, float(np.mean(recent)), rate))
        if checkpoint and checkpoint_every and step % checkpoint_every == 0:
            save(step)
    if checkpoint and not (steps > 0 and saved[0] == steps):
        save(steps)
    return history
