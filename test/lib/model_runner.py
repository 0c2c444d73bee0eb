"""Compile a .tsr model with torsorc and run it with torsor-run from Python.

Used by the end-to-end model tests (test/Models/): everything goes through
the shipped tools and file formats (manifest JSON, .npy, .safetensors), the
way a user runs a model, not through the C interface.

    m = CompiledModel("examples/se2_planar.tsr", dtype="f32")
    rng = np.random.default_rng(0)
    inputs = m.random_inputs(rng, {"T": 16})
    params = m.random_params(rng)
    out = m.run(inputs, params)                  # {name: float64 array}
    seen = m.as_seen(inputs)                     # what the model saw, as f64

Arrays are passed in and handed back as float64; they are rounded to the
model's dtype on the way in, and `as_seen` gives exactly those rounded
values so a float64 reference computes on the model's actual inputs.

Group inputs are random elements exp(X) of the group, X a random algebra
element (scipy.linalg.expm), with the hat maps of docs/groups/ for the
built-ins and the generators of a declared group (parsed from the .tsr).
"""
import json
import os
import re
import struct
import subprocess
import tempfile

import numpy as np
import scipy.linalg

_NP_DTYPE = {"f32": np.float32, "f64": np.float64}


def tool(name):
    """Path of a Torsor tool in $TORSOR_BIN (the build's bin/) or on PATH."""
    path = os.path.join(os.environ.get("TORSOR_BIN", ""), name)
    return path if os.path.exists(path) else name


# --- random group elements --------------------------------------------------

def _skew3(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def _hat_builtin(group, v):
    """Algebra matrix of coordinates v (docs/groups/<group>.md)."""
    if group == "SO2":
        return np.array([[0, -v[0]], [v[0], 0]])
    if group == "SE2":
        return np.array([[0, -v[0], v[1]], [v[0], 0, v[2]], [0, 0, 0]])
    if group == "SO3":
        return _skew3(v)
    if group == "SE3":
        X = np.zeros((4, 4))
        X[:3, :3], X[:3, 3] = _skew3(v[:3]), v[3:6]
        return X
    if group == "Aff2":
        X = np.zeros((3, 3))
        X[:2, :2], X[:2, 2] = np.reshape(v[:4], (2, 2)), v[4:6]
        return X
    if group == "Sim3":
        X = np.zeros((4, 4))
        X[:3, :3] = _skew3(v[:3]) + v[6] * np.eye(3)
        X[:3, 3] = v[3:6]
        return X
    raise KeyError(group)


# Per-coordinate standard deviation of the random algebra element. Rotations
# stay moderate so that relative rotations g_i^-1 g_j are mostly away from the
# cut at pi (where log's coordinates, though not the norms, are ambiguous).
_ALGEBRA_SCALE = {
    "SO2": [1.0], "SE2": [0.7, 1.0, 1.0], "SO3": [0.5] * 3,
    "SE3": [0.5] * 3 + [1.0] * 3, "Aff2": [0.3] * 4 + [1.0] * 2,
    "Sim3": [0.5] * 3 + [1.0] * 3 + [0.3],
}


def parse_declared_groups(tsr_text):
    """{name: [generator n x n arrays]} of the `group` declarations."""
    groups = {}
    text = re.sub(r"//[^\n]*", "", tsr_text)
    for m in re.finditer(r"\bgroup\s+(\w+)\s*\{(.*?)\}", text, re.S):
        gens = []
        for g in re.finditer(r"generator\s+\w+\s*=\s*(\[.*?\]\s*\])\s*;", m.group(2), re.S):
            gens.append(np.array(json.loads(g.group(1)), dtype=np.float64))
        groups[m.group(1)] = gens
    return groups


def random_group_elements(rng, group, count, generators=None, scale=None):
    """`count` random elements exp(hat(v)) as float64 n x n matrices."""
    if generators is not None:
        k = len(generators)
        s = np.full(k, 0.7) if scale is None else np.asarray(scale)
        return np.stack([scipy.linalg.expm(np.tensordot(rng.standard_normal(k) * s,
                                                        generators, 1))
                         for _ in range(count)])
    s = np.asarray(_ALGEBRA_SCALE[group] if scale is None else scale)
    return np.stack([scipy.linalg.expm(_hat_builtin(group, rng.standard_normal(len(s)) * s))
                     for _ in range(count)])


# --- file formats -------------------------------------------------------------

def write_safetensors(path, tensors, dtype):
    """Writes {name: array} as one safetensors bundle in `dtype` (f32/f64)."""
    st_dtype = {"f32": "F32", "f64": "F64"}[dtype]
    header, chunks, offset = {}, [], 0
    for name, value in tensors.items():
        data = np.ascontiguousarray(value, dtype=_NP_DTYPE[dtype]).tobytes()
        header[name] = {"dtype": st_dtype, "shape": list(np.shape(value)),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)


# --- the compiled model ----------------------------------------------------------

class CompileError(RuntimeError):
    pass


class CompiledModel:
    """A .tsr compiled by torsorc (`dtype`, optional `-O<opt>`) plus its manifest."""

    def __init__(self, tsr, dtype="f32", opt=None, extra_args=(), workdir=None,
                 run_args=()):
        self.tsr = tsr
        self.run_args = list(run_args)  # extra torsor-run flags for run()
        self.dtype = dtype
        self.np_dtype = _NP_DTYPE[dtype]
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="torsor-model-")
            workdir = self._tmp.name
        os.makedirs(workdir, exist_ok=True)
        tag = "%s-O%s" % (dtype, "d" if opt is None else opt)
        self.dir = os.path.join(workdir, tag)
        os.makedirs(self.dir, exist_ok=True)
        self.so = os.path.join(self.dir, "model.so")
        cmd = [tool("torsorc"), tsr, "-o", self.so, "--dtype=" + dtype, *extra_args]
        if opt is not None:
            cmd.append("-O%d" % opt)
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise CompileError("%s failed (%d):\n%s" % (" ".join(cmd), res.returncode,
                                                       res.stderr))
        with open(os.path.splitext(self.so)[0] + ".json") as f:
            self.manifest = json.load(f)
        self.inputs = self.manifest["inputs"]
        self.params = self.manifest["params"]
        self.outputs = self.manifest["outputs"]
        with open(tsr) as f:
            self.declared_groups = parse_declared_groups(f.read())
        self._runs = 0

    # shapes
    def shape(self, entry, dims):
        return tuple(dims[s] if isinstance(s, str) else s for s in entry["shape"])

    def input(self, name):
        return next(e for e in self.inputs if e["name"] == name)

    def group_inputs(self):
        return [e for e in self.inputs if "group" in e]

    # random data
    def random_inputs(self, rng, dims):
        """Group inputs: random group elements; tensors: standard normal."""
        out = {}
        for e in self.inputs:
            shape = self.shape(e, dims)
            if "group" in e:
                lead = shape[:-2]
                count = int(np.prod(lead)) if lead else 1
                g = random_group_elements(rng, e["group"], count,
                                          self.declared_groups.get(e["group"]))
                out[e["name"]] = g.reshape(shape)
            else:
                out[e["name"]] = rng.standard_normal(shape)
        return out

    def random_params(self, rng, fan_in=None):
        """normal / sqrt(fan_in); fan_in(name, shape) defaults to shape[-2] for
        matrices (x @ W: W is [in, out]) and 1 for vectors."""
        out = {}
        for e in self.params:
            shape = self.shape(e, {})
            if fan_in is not None:
                n = fan_in(e["name"], shape)
            else:
                n = shape[-2] if len(shape) >= 2 else 1
            out[e["name"]] = rng.standard_normal(shape) / np.sqrt(n)
        return out

    def as_seen(self, arrays):
        """The arrays rounded to the model's dtype, back as float64."""
        return {k: np.asarray(v).astype(self.np_dtype).astype(np.float64)
                for k, v in arrays.items()}

    # running
    def run(self, inputs, params, threads=2, check=True):
        """Runs torsor-run; returns {output name: float64 array}."""
        self._runs += 1
        d = os.path.join(self.dir, "run%d" % self._runs)
        os.makedirs(d, exist_ok=True)
        cmd = [tool("torsor-run"), self.so, "--threads", str(threads)] + self.run_args
        for e in self.inputs:
            path = os.path.join(d, "in.%s.npy" % e["name"])
            # i64 inputs (token ids, offsets) keep their dtype; np.array,
            # unlike ascontiguousarray, keeps a rank-0 scalar rank 0.
            dt = np.int64 if e.get("dtype") == "i64" else self.np_dtype
            np.save(path, np.array(inputs[e["name"]], dtype=dt, order="C"))
            cmd += ["--input", "%s=%s" % (e["name"], path)]
        weights = os.path.join(d, "weights.safetensors")
        write_safetensors(weights, {e["name"]: params[e["name"]] for e in self.params},
                          self.dtype)
        cmd += ["--weights", weights]
        for e in self.outputs:
            cmd += ["--output", "%s=%s" % (e["name"], os.path.join(d, "out.%s.npy" % e["name"]))]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if check and res.returncode != 0:
            raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), res.returncode,
                                                       res.stderr))
        return {e["name"]: np.load(os.path.join(d, "out.%s.npy" % e["name"])).astype(np.float64)
                for e in self.outputs}


def left_multiply(g, h):
    """h · g_i for every element of a [..., n, n] array (float64)."""
    return np.einsum("ab,...bc->...ac", h, g)


def rel_err(got, want):
    """max |got - want| / max |want| (the tests' error measure)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return np.inf
    scale = max(float(np.max(np.abs(want))), 1e-300)
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    return err / scale if np.all(np.isfinite(got)) else np.inf


# --- the end-to-end suite every test/Models/ test runs ------------------------------

def example_suite(tsr, reference, dims, expect_invariant, tol, seed=0, fan_in=None,
                  title=None):
    """Compiles `tsr` (f32 default, f32 -O0, f64), runs it on seeded inputs and
    checks it against `reference(inputs, params)` (float64 NumPy).

    `expect_invariant`: {group input name: bool}, what the manifest must say.
    `tol`: {"f32", "f64", "inv_f32", "inv_f64", "O0"} relative tolerances
    (max |err| / max |reference|, per output). Prints one row per check and
    `all N checks passed` (torsor_testing.Report); exits non-zero otherwise.
    """
    import time
    from torsor_testing import Report

    report = Report(title or os.path.basename(tsr))
    t0 = time.time()
    work = tempfile.TemporaryDirectory(prefix="torsor-model-")
    m32 = CompiledModel(tsr, "f32", workdir=work.name)
    m32_o0 = CompiledModel(tsr, "f32", opt=0, workdir=work.name)
    m64 = CompiledModel(tsr, "f64", workdir=work.name)
    rng = np.random.default_rng(seed)
    # One float64 data set: the f64 model and the reference see it exactly
    # (group elements in the group to double precision; rounding them to f32
    # first would leave them ~1e-8 outside it, where a structured log and
    # logm legitimately differ), the f32 models see it rounded to f32, so
    # their error includes that input rounding.
    inputs = m64.random_inputs(rng, dims)
    params = m64.random_params(rng, fan_in)

    # manifest: output shapes and the left-invariance verdicts
    groups = {e["name"]: e for e in m32.group_inputs()}
    report.check("manifest: group inputs are %s" % sorted(expect_invariant),
                 0 if sorted(groups) == sorted(expect_invariant) else 1, 0)
    for name, want in sorted(expect_invariant.items()):
        got = groups.get(name, {}).get("left_invariant")
        report.check("manifest: %s left_invariant == %s (got %s)" % (name, want, got),
                     0 if got is want else 1, 0)

    out32 = m32.run(inputs, params)
    out64 = m64.run(inputs, params)
    out_o0 = m32_o0.run(inputs, params)
    t1 = time.time()
    ref = reference(inputs, params)
    t_ref = time.time() - t1
    for e in m32.outputs:
        name = e["name"]
        want = ref[name]
        report.check("%s: shape %s" % (name, list(out32[name].shape)),
                     0 if out32[name].shape == m32.shape(e, dims) == want.shape else 1, 0)
        report.check("%s: f32 vs float64 reference (max|ref| %.3g)"
                     % (name, np.max(np.abs(want))), rel_err(out32[name], want), tol["f32"])
        report.check("%s: f64 vs float64 reference" % name,
                     rel_err(out64[name], want), tol["f64"])
        report.check("%s: f32 -O0 vs f32 default" % name,
                     rel_err(out_o0[name], out32[name]), tol["O0"])

    # left invariance: move every pose of one input by the same random h
    for name, claimed in sorted(expect_invariant.items()):
        if not claimed:
            continue
        e = groups[name]
        h = random_group_elements(rng, e["group"], 1, m32.declared_groups.get(e["group"]))[0]
        moved = dict(inputs)
        moved[name] = left_multiply(inputs[name], h)
        mv32 = m32.run(moved, params)
        mv64 = m64.run(moved, params)
        for o in m32.outputs:
            report.check("%s: invariant under %s -> h.%s (f32)" % (o["name"], name, name),
                         rel_err(mv32[o["name"]], out32[o["name"]]), tol["inv_f32"])
            report.check("%s: invariant under %s -> h.%s (f64)" % (o["name"], name, name),
                         rel_err(mv64[o["name"]], out64[o["name"]]), tol["inv_f64"])
    print("reference %.1f s, whole test %.1f s" % (t_ref, time.time() - t0))
    report.finish()
