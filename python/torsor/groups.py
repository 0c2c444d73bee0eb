"""groups.py - random elements, exp, log and membership for Lie groups.

Everything here runs compiled Torsor code: one small model per (group,
dtype), compiled once by torsor.compile (and cached), whose outputs are the
language's own `exp(v, group = G)`, `log(g)` and `membership_residual(g)`.
So the helpers use exactly the charts, series branches and coordinate
conventions of the compiler (docs/groups/), not a NumPy re-derivation.

    g = torsor.groups.random("SE3", 128, seed=0)     # [128, 4, 4] float32
    v = torsor.groups.log("SE3", g)                  # [128, 6]
    g2 = torsor.groups.exp("SE3", v)                 # back to [128, 4, 4]
    torsor.groups.check("SE3", g)                    # True
    h = torsor.groups.random("SE3", 1)[0]
    moved = h @ g                                    # every pose moved by h

G is a built-in name ("SE3") or a declared group: the `.tsr` text that
declares it (`group Sim2 { matrix 3; generator ...; }`, alone or inside a
whole model source), whose coordinates are those of its generators:

    SIM2 = open("examples/sim2_similarity.tsr").read()
    g = torsor.groups.random(SIM2, 16)                 # [16, 3, 3]
    torsor.groups.log(SIM2, g)                         # [16, 4]

Group elements are homogeneous matrices [..., n, n]; algebra coordinates
[..., k] in the group's hat basis (basis(G); orthogonal, not normalised:
docs/math.md, docs/groups/<group>.md).
"""
import threading

import numpy as np

from .errors import InvalidArgumentError

#: Built-in groups: (matrix size n, algebra dimension k).
BUILTIN = {"SO2": (2, 1), "SE2": (3, 3), "SO3": (3, 3), "SE3": (4, 6),
           "Aff2": (3, 6), "Sim3": (4, 7)}

# Default standard deviation per algebra coordinate for random(): rotations
# stay moderate so relative rotations g_i^-1 g_j are mostly away from the
# cut at pi, where log's coordinates (not its norms) are ambiguous.
_DEFAULT_SCALE = {
    "SO2": [1.0], "SE2": [0.7, 1.0, 1.0], "SO3": [0.5] * 3,
    "SE3": [0.5] * 3 + [1.0] * 3, "Aff2": [0.3] * 4 + [1.0] * 2,
    "Sim3": [0.5] * 3 + [1.0] * 3 + [0.3],
}

_SOURCE = """// torsor.groups helper for {G}: exp, log and membership residual.
model GroupHelper{G} {{
  dim N;
  dim M;
  input v: f32[N, {k}];
  input g: {G}[M];
  output exp_v = exp(v, group = {G});
  output log_g = log(g);
  output residual = membership_residual(g);
}}
"""

_models = {}
_models_lock = threading.Lock()


def _group(G):
    """(n, k) of a built-in group name or a declared group's .tsr text; a
    clear error otherwise."""
    return _spec(G)[1:3]


def _spec(G):
    """(name, n, k, declaration text or "") of G (see the module docstring)."""
    import re
    if isinstance(G, str) and G in BUILTIN:
        return (G,) + BUILTIN[G] + ("",)
    if isinstance(G, str):
        m = re.search(r"\bgroup\s+(\w+)\s*\{", G)
        if m:
            decl = declaration(m.group(1), G)
            size = re.search(r"\bmatrix\s+(\d+)\s*;", decl or "")
            k = len(re.findall(r"\bgenerator\s+\w+\s*=", decl or ""))
            if decl is None or size is None or k == 0:
                raise InvalidArgumentError(
                    "group %r: the declaration needs `matrix N;` and at least one "
                    "`generator NAME = [[...]];` (docs/groups/declared.md)" % m.group(1))
            return m.group(1), int(size.group(1)), k, decl + "\n"
    raise InvalidArgumentError("unknown group %r; the helpers take the built-in "
                               "groups %s, or a declared group's .tsr text "
                               "(`group NAME { matrix N; generator ...; }`)"
                               % (G if not isinstance(G, str) or len(G) < 60
                                  else G[:57] + "...", ", ".join(BUILTIN)))


def _dtype_name(dtype):
    """"f32"/"f64" from a NumPy dtype or a manifest spelling."""
    if dtype in ("f32", "f64"):
        return dtype
    name = np.dtype(dtype).name
    if name == "float32":
        return "f32"
    if name == "float64":
        return "f64"
    raise InvalidArgumentError("group helpers take float32 or float64, got %s" % name)


def helper_model(G, dtype="f32"):
    """The compiled helper model of group G (compiled once per process and
    cached on disk by torsor.compile)."""
    from .compiler import compile as torsor_compile
    name, n, k, decl = _spec(G)
    dtype = _dtype_name(dtype)
    with _models_lock:
        m = _models.get((name, decl, dtype))
        if m is None:
            m = torsor_compile(decl + _SOURCE.format(G=name, k=k), dtype=dtype)
            # The helpers measure how far arbitrary matrices are from the
            # group (check, residual, log of near-group inputs): the
            # runtime's own group check, on by default, must not reject them.
            m.set_check_groups(False)
            _models[(name, decl, dtype)] = m
    return m


def _call(G, dtype, v=None, g=None):
    """Runs the helper on flattened coordinates v [N, k] and elements
    g [M, n, n] (either may be empty)."""
    n, k = _group(G)
    np_dtype = np.float32 if dtype == "f32" else np.float64
    if v is None:
        v = np.zeros((0, k), np_dtype)
    if g is None:
        g = np.zeros((0, n, n), np_dtype)
    return helper_model(G, dtype).run({"v": v, "g": g})


def _as_array(x, what):
    """x as a float32/float64 NumPy array (torch tensors included)."""
    from .model import _to_numpy
    arr = _to_numpy(x)
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    return arr


def exp(G, v):
    """Group elements exp(v) [..., n, n] of coordinates v [..., k]; computed
    in v's dtype (float32 or float64)."""
    n, k = _group(G)
    v = _as_array(v, "v")
    if v.ndim < 1 or v.shape[-1] != k:
        raise InvalidArgumentError("exp(%s): coordinates need a last dim of %d, "
                                   "got shape %s" % (_spec(G)[0], k, list(v.shape)))
    lead = v.shape[:-1]
    out = _call(G, _dtype_name(v.dtype), v=np.ascontiguousarray(v.reshape(-1, k)))
    return out["exp_v"].reshape(lead + (n, n))


def _elements(G, g, fn):
    """g as a contiguous [M, n, n] array plus its leading dims."""
    n, _ = _group(G)
    g = _as_array(g, "g")
    if g.ndim < 2 or g.shape[-2:] != (n, n):
        raise InvalidArgumentError("%s(%s): elements are %dx%d matrices, got shape %s"
                                   % (fn, _spec(G)[0], n, n, list(g.shape)))
    return np.ascontiguousarray(g.reshape(-1, n, n)), g.shape[:-2]


def log(G, g):
    """Coordinates log(g) [..., k] of elements g [..., n, n] (principal log)."""
    _, k = _group(G)
    flat, lead = _elements(G, g, "log")
    out = _call(G, _dtype_name(flat.dtype), g=flat)
    return out["log_g"].reshape(lead + (k,))


def residual(G, g):
    """How far each element is from the group [...]: 0 on it, > 0 off it
    (the language's membership_residual)."""
    flat, lead = _elements(G, g, "residual")
    out = _call(G, _dtype_name(flat.dtype), g=flat)
    return out["residual"].reshape(lead)


def residual_tolerance(G, g, tol=None):
    """The tolerance [...] each element's residual is compared with: `tol`
    (default 1e-4 for float32, 1e-10 for float64) for a built-in or a
    recognised declared group; for a declared group on the generic model,
    as the runtime's check (docs/groups/declared.md, "Membership check"):

        max(tol, 8·n·ε·κ(g)),  κ(g) = ‖g‖_F·‖(g + c·I)⁻¹‖_F,  c = |det g|^(1/n)

    with ε the dtype's machine epsilon: the residual of a valid element near
    a rotation by π is the log's rounding error, which grows with κ. +inf
    where κ ≥ 1/ε (at the log's branch cut within rounding: accepted, NaN
    residual included); -1 where det g ≤ 0 (never an element)."""
    flat, lead = _elements(G, g, "residual_tolerance")
    eps = float(np.finfo(flat.dtype).eps) if flat.dtype in (np.float32, np.float64) \
        else float(np.finfo(np.float64).eps)
    if tol is None:
        tol = 1e-4 if flat.dtype == np.float32 else 1e-10
    out = np.full(len(flat), float(tol))
    spec = [s for s in helper_model(G, _dtype_name(flat.dtype)).inputs if s.name == "g"]
    if not _spec(G)[3] or not spec[0].residual_conditioned:
        return out.reshape(lead)
    n = flat.shape[-1]
    g64 = flat.astype(np.float64)
    det = np.linalg.det(g64)
    good = det > 0
    c = np.where(good, np.abs(det), 1.0) ** (1.0 / n)
    a = g64 + c[:, None, None] * np.eye(n)
    kappa = np.full(len(flat), np.inf)
    with np.errstate(all="ignore"):
        for i in range(len(flat)):
            try:
                inv = np.linalg.inv(a[i])
            except np.linalg.LinAlgError:
                continue
            k = np.linalg.norm(g64[i]) * np.linalg.norm(inv)
            if np.isfinite(k):
                kappa[i] = k
    out = np.maximum(out, 8.0 * n * eps * kappa)
    out[~(kappa < 1.0 / eps)] = np.inf
    out[~good] = -1.0
    return out.reshape(lead)


def check(G, g, tol=None):
    """True when every element of g [..., n, n] is in G: its membership
    residual is finite and at most `tol` (default 1e-4 for float32, 1e-10
    for float64); for a declared group at most residual_tolerance(G, g,
    tol), which scales `tol` with the dtype and the log's conditioning at
    each element, as torsor-run's default group check does."""
    r = residual(G, g)
    t = residual_tolerance(G, g, tol)
    with np.errstate(invalid="ignore"):
        ok = (np.isfinite(r) & (r <= t)) | np.isposinf(t)
    return bool(np.all(ok & (t >= 0)))


def random(G, n, seed=None, scale=None, dtype="f32"):
    """`n` random elements of G (n an int or a shape): exp of coordinates
    drawn from a normal distribution with per-coordinate standard deviation
    `scale` (a number or k numbers; default moderate rotations, unit
    translations). `seed` is an int or a numpy Generator. Returns
    [*n, n, n] in `dtype` ("f32" or "f64"); computed in float64."""
    _, k = _group(G)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    shape = (n,) if np.isscalar(n) else tuple(n)
    # Declared groups: 0.5 per coordinate (their coordinates' scale is the
    # generators').
    default = _DEFAULT_SCALE.get(G, 0.5) if isinstance(G, str) and G in BUILTIN else 0.5
    s = np.broadcast_to(np.asarray(default if scale is None else scale,
                                   np.float64), (k,))
    v = rng.standard_normal(shape + (k,)) * s
    # exp in float64, then rounded: f32 elements are then as close to the
    # group as f32 allows.
    g = exp(G, v)
    return g.astype(np.float32) if _dtype_name(dtype) == "f32" else g


# -- the algebra basis E_k (what coordinates and gradients are relative to) ----

_BASIS_SOURCE = """// torsor.groups.basis helper: exp's derivative at 0 is the hat basis.
{decl}model GroupBasis {{
  dim N;
  input v: f64[N, {k}];
  output e = exp(v, group = {G});
}}
"""
_bases = {}


def declaration(G, source):
    """The text of `group G { ... }` in the .tsr `source` text, or None."""
    import re
    match = re.search(r"\bgroup\s+%s\s*\{[^{}]*\}" % re.escape(G), source or "")
    return match.group(0) if match else None


def basis(G, k=None, source=None):
    """The algebra basis E_1..E_k of group G as a float64 array [k, n, n]:
    E_a = hat(e_a), so that coordinates v mean Σ_a v_a E_a and a group
    input's compiled gradient ξ is ⟨gᵀḠ, E_a⟩ (docs/training.md).

    G is a built-in name ("SE3"), a declared group's .tsr text, or a
    declared group's name whose declaration (`group G {...}`) is found in
    `source` (.tsr text) and whose algebra dimension `k` must then be given. Computed by the compiler itself: the
    gradient of exp at v = 0 against each unit matrix cotangent, which is
    exact (exp's derivative at 0 is v ↦ hat(v)), so built-in and declared
    groups use the compiler's own hat map. Cached per process."""
    from .compiler import compile as torsor_compile
    decl = ""
    if isinstance(G, str) and G not in BUILTIN and "{" in G:
        # A declaration's text: its own name, k and source.
        G, _, k, source = _spec(G)
    if G in BUILTIN:
        n, k = BUILTIN[G]
    else:
        decl = declaration(G, source)
        if decl is None:
            raise InvalidArgumentError(
                "group %r is not built in and its declaration `group %s {...}` "
                "was not found in the given source; pass the .tsr text that "
                "declares it (source=...)" % (G, G))
        if k is None:
            raise InvalidArgumentError("basis(%r): a declared group needs its "
                                       "algebra dimension k" % G)
        decl += "\n"
    key = (G, decl, k)
    with _models_lock:
        E = _bases.get(key)
        if E is not None:
            return E.copy()
        m = torsor_compile(_BASIS_SOURCE.format(decl=decl, G=G, k=k), dtype="f64",
                           opt=0, grad=True)
        n = next(d for d in m.outputs[0].shape[::-1] if isinstance(d, int))
        cot = np.eye(n * n).reshape(n * n, n, n)
        grad = m.backward({"v": np.zeros((n * n, k))}, {"e": cot})["grad.v"]
        E = np.ascontiguousarray(grad.T.reshape(k, n, n))
        _bases[key] = E
    return E.copy()
