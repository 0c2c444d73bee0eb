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

from .weights import save_weights

__all__ = ["SGD", "Adam", "init_params", "train"]


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
    end. Gradients of inputs are computed but not used."""
    grads_of = {"grad." + s.name: s.name for s in model.params}
    loss_dtype = next(s for s in model.outputs if s.name == loss).numpy_dtype
    seed = {loss: np.array(1.0, dtype=loss_dtype)}
    history = []
    start = time.perf_counter()
    tokens = 0
    for step in range(1, steps + 1):
        batch = next(batches)
        model.set_params(params)
        value = float(model.run(batch)[loss])
        grads = model.backward(batch, seed)
        grads = {grads_of[k]: v for k, v in grads.items() if k in grads_of}
        if clip is not None:
            norm = np.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
            if norm > clip:
                grads = {k: g * (clip / norm) for k, g in grads.items()}
        optimizer.step(params, grads)
        history.append(value)
        tokens += _tokens(model, batch)
        if step % log_every == 0 or step == steps:
            rate = tokens / max(time.perf_counter() - start, 1e-9)
            recent = history[-(((step - 1) % log_every) + 1):]
            out("step %d loss %.4f (%.0f tokens/s)"
                % (step, float(np.mean(recent)), rate))
        if checkpoint and checkpoint_every and step % checkpoint_every == 0:
            save_weights(checkpoint, params)
    if checkpoint:
        save_weights(checkpoint, params)
    return history
