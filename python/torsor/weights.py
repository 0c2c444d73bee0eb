"""weights.py - PyTorch state_dicts to Torsor params, and .safetensors files.

Torsor's dense layers are written `x @ W + b`, so a weight is [in, out].
PyTorch's nn.Linear stores `weight` as [out, in] and computes
`x @ weight.T + bias`. The mapping says which convention each tensor has,
explicitly, because a square weight looks the same either way and guessing
would silently transpose it:

    params = torsor.map_state_dict(torch_model.state_dict(), {
        "blocks.0.Wv":    torsor.linear("layers.0.attn.v_proj.weight"),  # [out,in] -> [in,out]
        "blocks.0.ln1_g": "layers.0.norm1.weight",                       # as is
        "blocks.0.ln1_b": "layers.0.norm1.bias",
    }, model=m)
    m.set_params(params)                     # or torsor.save_weights("w.safetensors", params)

Works on torch tensors and NumPy arrays alike (torch is never imported).
"""
import json
import struct

import numpy as np

from ._files import write_atomic
from .errors import InvalidArgumentError


class linear:
    """Marks a state_dict entry as an nn.Linear weight [out, in]; mapped to
    Torsor's `x @ W` layout [in, out] by transposing."""

    def __init__(self, key):
        self.key = key

    def __repr__(self):
        return "torsor.linear(%r)" % self.key


class as_is:
    """Marks a state_dict entry that is already in Torsor's layout (biases,
    norm gains, weights that the PyTorch model applies as `x @ W`). A plain
    string in the mapping means the same."""

    def __init__(self, key):
        self.key = key

    def __repr__(self):
        return "torsor.as_is(%r)" % self.key


def _shape_str(shape):
    return "[%s]" % ", ".join(str(d) for d in shape)


def map_state_dict(state_dict, mapping, model=None, strict=True):
    """{Torsor param name: float NumPy array} from a PyTorch state_dict.

    mapping  {Torsor param: "key" | torsor.as_is("key") | torsor.linear("key")
              | callable(state_dict) -> array}
    model    a torsor.Model: then every mapped shape is checked against the
             manifest (with a hint when only the transpose fits), and with
             `strict` every param of the model must be mapped.
    strict   also: every state_dict entry must be used (buffers such as
             BatchNorm's num_batches_tracked excepted if not floating).
    """
    from .model import _to_numpy
    out, used = {}, set()
    for name, spec in mapping.items():
        if callable(spec) and not isinstance(spec, (linear, as_is)):
            arr = _to_numpy(spec(state_dict))
        else:
            key = spec.key if isinstance(spec, (linear, as_is)) else spec
            if key not in state_dict:
                raise InvalidArgumentError(
                    "param '%s': state_dict has no entry '%s'" % (name, key))
            used.add(key)
            arr = _to_numpy(state_dict[key])
            if isinstance(spec, linear):
                if arr.ndim != 2:
                    raise InvalidArgumentError(
                        "param '%s': torsor.linear('%s') expects an nn.Linear "
                        "weight [out, in], got shape %s" % (name, key, _shape_str(arr.shape)))
                arr = arr.T
        out[name] = np.ascontiguousarray(arr)

    if model is not None:
        specs = {s.name: s for s in model.params}
        for name, arr in out.items():
            if name not in specs:
                raise InvalidArgumentError("unknown param '%s'; model params are: %s"
                                           % (name, ", ".join(specs)))
            want = specs[name].shape
            if tuple(arr.shape) != tuple(want):
                hint = ""
                if arr.ndim == 2 and tuple(arr.shape[::-1]) == tuple(want):
                    hint = ("; the transpose fits: if this is an nn.Linear weight "
                            "[out, in] use torsor.linear(...), if it is already "
                            "[in, out] for x @ W use the key as is")
                raise InvalidArgumentError("param '%s': expected shape %s, got %s%s"
                                           % (name, _shape_str(want),
                                              _shape_str(arr.shape), hint))
        if strict:
            missing = [n for n in specs if n not in out]
            if missing:
                raise InvalidArgumentError("mapping leaves params unset: %s"
                                           % ", ".join(missing))
    if strict:
        unused = [k for k in state_dict
                  if k not in used and np.issubdtype(_to_numpy(state_dict[k]).dtype,
                                                     np.floating)]
        if unused and all(not callable(s) or isinstance(s, (linear, as_is))
                          for s in mapping.values()):
            raise InvalidArgumentError("state_dict entries not mapped to any param: %s "
                                       "(pass strict=False to ignore them)"
                                       % ", ".join(unused))
    return out


_ST_DTYPES = {"float32": "F32", "float64": "F64", "int64": "I64"}


def save_weights(path, params, dtype=None, what="weights bundle"):
    """Writes {name: array} as a .safetensors bundle for Model.load_weights
    (or torsor-run --weights). `dtype` ("f32"/"f64") converts every float
    array; otherwise each keeps its own (float32, float64, int64).

    The file is complete or absent: it is written to a temporary beside the
    real target (symlinks resolved) and renamed over it, so a failure leaves
    the previous file as it was; a FIFO, device or other non-regular file
    at `path` is refused (docs/reliability.md). `what` names the file in
    messages."""
    from .model import _to_numpy
    header, chunks, offset = {}, [], 0
    for name in sorted(params):
        arr = _to_numpy(params[name], "'%s'" % name)
        if dtype is not None and np.issubdtype(arr.dtype, np.floating):
            arr = arr.astype({"f32": np.float32, "f64": np.float64}[dtype])
        arr = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False)
        if arr.dtype.name not in _ST_DTYPES:
            raise InvalidArgumentError("'%s': dtype %s cannot be saved; use float32, "
                                       "float64 or int64" % (name, arr.dtype.name))
        data = arr.tobytes()
        header[name] = {"dtype": _ST_DTYPES[arr.dtype.name], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)

    def write(f):
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)

    write_atomic(path, write, what)
