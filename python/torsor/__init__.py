"""Torsor from Python: compile .tsr models and call them on NumPy arrays or
PyTorch tensors.

    import torsor
    m = torsor.compile("examples/se3_pose_attention.tsr", dtype="f32", opt=2)
    m.load_weights("w.safetensors")          # or m.set_params({name: array})
    y = m(pose=poses, x=feats)

torsor.compile(source, ...)   torsorc, cached by source hash -> Model
torsor.load("pose.so")        a compiled model (and its pose.json) -> Model
torsor.groups                 random/exp/log/check for the built-in groups
torsor.map_state_dict         PyTorch state_dict -> Torsor params (nn.Linear aware)
torsor.save_weights           {name: array} -> .safetensors
torsor.set_num_threads(n)     the runtime's thread pool
torsor.torch                  trainable nn.Module and differentiable torch.library op
                              over any compiled model (needs torch)
torsor.nn                     LieAttention, GrassmannMix, RelationalAttention modules
                              compiled on first use (needs torch)
torsor.quotient               training standard attention on the quotient (needs torch)
torsor.distributed            RingLieAttention, GrassmannMix and shard/unshard over
                              torch.distributed (gloo, NCCL; needs torch)

docs/python.md is the reference, docs/tutorial.md a walk-through.
"""
from . import groups
from .compiler import cache_dir, compile
from .errors import (AbiError, CompileError, DeviceError, FailedPreconditionError,
                     InvalidArgumentError, OutOfMemoryError, TorsorError,
                     TorsorIOError, TorsorWarning, UnavailableError)
from .model import Model, TensorSpec, get_num_threads, load, set_num_threads
from .weights import as_is, linear, map_state_dict, save_weights

from ._version import __version__

__all__ = [
    "AbiError", "CompileError", "DeviceError", "FailedPreconditionError", "InvalidArgumentError",
    "Model", "OutOfMemoryError", "TensorSpec", "TorsorError", "TorsorIOError", "TorsorWarning",
    "UnavailableError",
    "as_is", "cache_dir", "compile", "get_num_threads", "groups", "linear", "load",
    "map_state_dict", "save_weights", "set_num_threads",
]


_LAZY = ("torch", "nn", "quotient", "distributed")


def __getattr__(name):
    # These import torch, which is optional and slow to import: load them
    # on first use only (`import torsor` stays light and torch-free).
    if name in _LAZY:
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'torsor' has no attribute %r" % name)
