"""torch.py - a compiled Torsor model inside PyTorch (forward only).

    import torsor.torch
    layer = torsor.torch.TorsorModule(torsor.compile("examples/se3_pose_attention.tsr"))
    layer.load_state_dict(torsor.map_state_dict(ref.state_dict(), mapping, layer.model))
    y = layer(pose=poses, x=feats)                   # CPU tensors in, tensors out
    y = torch.compile(net, fullgraph=True)(...)      # no graph break at the layer

Each model becomes one `torch.library` custom op, `torch.ops.torsor.<name>`,
with schema `(Tensor[] inputs, Tensor[] params) -> Tensor[]` in manifest
order, a fake (meta) kernel that derives output shapes from the manifest's
symbolic dims, so torch.compile / torch.export can trace through it, and
an autograd rule that refuses backward with a clear message until Torsor
has gradients. `TorsorModule` wraps the op as an nn.Module whose buffers
are the model's params, named exactly as in the manifest
("blocks.0.Wv"), so state_dict() / load_state_dict() speak Torsor's names.
Inputs and params are lent to the runtime without a copy; outputs are
fresh tensors.
"""
import itertools
import os
import re
import threading
from typing import List

import torch

from .compiler import compile as _compile
from .errors import TorsorError
from .model import Model

_TORCH_DTYPE = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64}
_counter = itertools.count()
_lock = threading.Lock()


def custom_op(model):
    """Registers `model` (a torsor.Model) as a torch.library custom op and
    returns it: op(inputs: list, params: list) -> list of outputs, each in
    manifest order. Every call binds all params, so the op owns `model`:
    do not also set params on it directly."""
    with _lock:
        name = "%s_%d" % (re.sub(r"\W", "_", model.name), next(_counter))
    qualname = "torsor::" + name
    in_specs, param_specs, out_specs = model.inputs, model.params, model.outputs

    @torch.library.custom_op(qualname, mutates_args=(), device_types="cpu")
    def op(inputs: List[torch.Tensor], params: List[torch.Tensor]) -> List[torch.Tensor]:
        if len(inputs) != len(in_specs) or len(params) != len(param_specs):
            raise TorsorError("%s: expected %d inputs and %d params, got %d and %d"
                              % (qualname, len(in_specs), len(param_specs),
                                 len(inputs), len(params)))
        out = model.run({s.name: t for s, t in zip(in_specs, inputs)},
                        borrowed_params={s.name: t for s, t in zip(param_specs, params)})
        return [out[s.name] for s in out_specs]

    @op.register_fake
    def _fake(inputs, params):
        dims = {}
        for spec, t in zip(list(in_specs) + list(param_specs), list(inputs) + list(params)):
            for sym, size in zip(spec.shape, t.shape):
                if isinstance(sym, str):
                    dims.setdefault(sym, size)
        return [torch.empty(s.concrete_shape(dims), dtype=_TORCH_DTYPE[s.dtype])
                for s in out_specs]

    def _setup(ctx, inputs, output):
        pass

    def _backward(ctx, grads):
        raise TorsorError("%s: Torsor models are forward-only for now (no gradients); "
                          "run them under torch.no_grad() or on detached tensors"
                          % qualname)

    op.register_autograd(_backward, setup_context=_setup)
    return op


class TorsorModule(torch.nn.Module):
    """A compiled Torsor model as an nn.Module (forward only).

    model  a torsor.Model, a compiled .so path, or a .tsr path / source text
           (compiled with torsor.compile and `compile_args`)
    params optional {Torsor param name: tensor or array} to load

    The model's params are buffers named as in the manifest, so
    `state_dict()` keys are Torsor's param names. forward(*inputs,
    **inputs) follows the manifest's input order and returns the output
    tensor, or {name: tensor} when the model has several outputs.
    """

    def __init__(self, model, params=None, **compile_args):
        super().__init__()
        if not isinstance(model, Model):
            path = os.fspath(model)
            model = (Model(path) if path.endswith(".so")
                     else _compile(path, **compile_args))
        # A private handle: the op binds this module's buffers on every call.
        self.model = Model(model.path)
        self._op = custom_op(self.model)
        self._param_paths = []
        for spec in self.model.params:
            holder, leaf = self._holder(spec.name)
            shape = spec.concrete_shape({})
            holder.register_buffer(leaf, torch.zeros(shape, dtype=_TORCH_DTYPE[spec.dtype]))
            self._param_paths.append(spec.name)
        if params is not None:
            self.load_torsor_params(params)

    def _holder(self, dotted):
        """(submodule, leaf name) for a dotted param name, creating empty
        submodules on the way: "blocks.0.Wv" -> (self.blocks.0, "Wv")."""
        parts = dotted.split(".")
        mod = self
        for p in parts[:-1]:
            sub = mod._modules.get(p)
            if sub is None:
                sub = torch.nn.Module()
                mod.add_module(p, sub)
            mod = sub
        return mod, parts[-1]

    def load_torsor_params(self, params):
        """Copies {Torsor param name: tensor or array} into the buffers
        (converted to the model's dtype; every param required)."""
        state = {k: torch.as_tensor(v) for k, v in params.items()}
        self.load_state_dict(state, strict=True)
        return self

    def forward(self, *args, **kwargs):
        specs = self.model.inputs
        if len(args) > len(specs):
            raise TypeError("%s takes %d inputs (%s), got %d positional arguments"
                            % (self.model.name, len(specs),
                               ", ".join(s.name for s in specs), len(args)))
        given = dict(zip((s.name for s in specs), args))
        for k, v in kwargs.items():
            if k in given:
                raise TypeError("input '%s' given both by position and by name" % k)
            given[k] = v
        unknown = [k for k in given if k not in {s.name for s in specs}]
        missing = [s.name for s in specs if s.name not in given]
        if unknown or missing:
            raise TypeError("%s: %s%s; model inputs are: %s" % (
                self.model.name,
                "unknown input(s) %s" % ", ".join(unknown) if unknown else "",
                ("; " if unknown and missing else "") +
                ("missing input(s) %s" % ", ".join(missing) if missing else ""),
                ", ".join(s.name for s in specs)))
        inputs = [given[s.name] for s in specs]
        params = [self.get_buffer(p) for p in self._param_paths]
        outs = self._op(inputs, params)
        if len(outs) == 1:
            return outs[0]
        return {s.name: o for s, o in zip(self.model.outputs, outs)}

    def extra_repr(self):
        return "%s (%s)" % (self.model.name, os.path.basename(self.model.path))
