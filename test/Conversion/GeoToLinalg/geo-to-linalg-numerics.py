# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""convert-geo-to-linalg vs NumPy float64 references, f64 and f32.

Every geo op is lowered with `torsor-opt --convert-geo-to-linalg` alone and
the result compiled by torsorc (lie ops, bufferization, LLVM), so this checks
the -O0 oracle itself: the formulas of docs/math.md §1, §3, §4 written
independently here in NumPy (einsum, explicit loops over offsets, the
principal matrix log from SciPy for the pairwise algebra coordinates;
lie_attention runs in every built-in group).

Shapes exercise a batch dim, a dynamic sequence length, causal and
non-causal forms, several heads with different τ and λ, and Grassmann
offsets larger than the sequence (rows with no valid partner: g = 0).

Tolerances: f64 1e-12 absolute on O(1) outputs (lie_attention 1e-10: the
SciPy reference log is itself accurate to ~1e-13); f32 1e-5.
"""
import os
import subprocess

import numpy as np
import scipy.linalg

from torsor_testing import CompiledModule, Report, dps_function, tool

rng = np.random.default_rng(7)
report = Report("convert-geo-to-linalg numerics")


def compile_lowered(fn_text):
    """Runs convert-geo-to-linalg alone, then compiles with torsorc at -O0
    (the oracle level; it also keeps LLVM's share of the test time small)."""
    lowered = subprocess.run([tool("torsor-opt"), "--convert-geo-to-linalg"],
                             input=fn_text, capture_output=True, text=True)
    if lowered.returncode:
        raise RuntimeError("torsor-opt failed:\n" + lowered.stderr)
    return CompiledModule(lowered.stdout, extra_args=("-O0",))


def ttype(shape, dt):
    return "tensor<%s>" % "x".join(
        ["?" if s is None else str(s) for s in shape] + [dt])


class Case:
    """One op on concrete inputs: its function text and its reference."""

    def __init__(self, label, name, fn_text, inputs, out_shape, dt, ref, tol):
        self.label, self.name, self.fn_text = label, name, fn_text
        self.inputs, self.out_shape, self.dt = inputs, out_shape, dt
        self.ref, self.tol = ref, tol


CASES = []


def add_case(label, op_fmt, inputs, ref, dyn, dt, tol):
    """Queues `op_fmt` (with {0}, {1}, ... for the operands) on memrefs of
    the inputs' shapes (dims in `dyn` dynamic), to be compared with `ref`."""
    shapes = [[None if i in dyn else s for i, s in enumerate(a.shape)]
              for a in inputs]
    out_sym = [None if i in dyn else s for i, s in enumerate(ref.shape)]
    types = [ttype(s, dt) for s in shapes]
    name = "case%d" % len(CASES)
    fn = dps_function(
        name, [(s, dt) for s in shapes], [(out_sym, dt)],
        lambda a: ("  %r = " + op_fmt.format(*a, types=types,
                                             out=ttype(out_sym, dt)), ["%r"]))
    CASES.append(Case(label, name, fn, inputs, ref.shape, dt, ref, tol))


def run_cases():
    """Compiles every queued case in one module (one torsorc run) and
    checks each against its reference."""
    mod = compile_lowered("\n".join(c.fn_text for c in CASES))
    for c in CASES:
        np_dt = np.float64 if c.dt == "f64" else np.float32
        args = [np.ascontiguousarray(a, np_dt) for a in c.inputs]
        out = np.zeros(c.out_shape, np_dt)
        mod.call(c.name, *args, out)
        report.check(c.label, err(out.astype(np.float64), c.ref), c.tol)


def softmax(s, causal):
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def err(ours, ref):
    return np.max(np.abs(ours - ref))


def check_dtypes(name, op_fmt, inputs, ref_fn, tol64=1e-12, tol32=1e-5):
    """Queues the op in f64 and f32 against one float64 reference. The
    sequence dim (1) is dynamic."""
    ref = ref_fn(*inputs)
    for dt, tol in (("f64", tol64), ("f32", tol32)):
        # The f32 case reuses the float64 reference: rounding the inputs to
        # f32 moves the outputs by ~1e-7, far inside its tolerance.
        add_case("%s %s" % (name, dt), op_fmt, inputs, ref, (1,), dt, tol)


# --- geo.plucker --------------------------------------------------------------
def plucker_ref(u, v):
    pairs = [(a, b) for a in range(u.shape[-1]) for b in range(a + 1, u.shape[-1])]
    return np.stack([u[..., a] * v[..., b] - u[..., b] * v[..., a]
                     for a, b in pairs], -1)


check_dtypes("plucker r=5",
             "geo.plucker {0}, {1} : ({types[0]}, {types[1]}) -> {out}",
             list(rng.standard_normal((2, 2, 5, 5))), plucker_ref)

# --- geo.relational_norm ------------------------------------------------------
check_dtypes("relational_norm",
             "geo.relational_norm {0} {{eps = 1.0e-5 : f64}} : {out}",
             [3 * rng.standard_normal((2, 6, 8))],
             lambda x: x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5))


# --- geo.relational_attention -------------------------------------------------
def relational_ref(causal):
    def ref(x, gqk, gvo):
        s = 0.3 * np.einsum("bic,hce,bje->bhij", x, gqk, x)
        return np.einsum("bhij,bjc,hce->bie", softmax(s, causal), x, gvo)
    return ref


for causal in (False, True):
    attrs = "heads = 3 : i64, scale = 0.3 : f64" + (", causal" if causal else "")
    check_dtypes("relational_attention" + (" causal" if causal else ""),
                 "geo.relational_attention {0}, {1}, {2} {{%s}} : "
                 "({types[0]}, {types[1]}, {types[2]}) -> {out}" % attrs,
                 [rng.standard_normal((2, 7, 6)),
                  *(0.5 * rng.standard_normal((2, 3, 6, 6)))],
                 relational_ref(causal))


# --- geo.grassmann_mix --------------------------------------------------------
def grassmann_ref(offsets, causal, eps):
    def ref(h, wr, br, wp, bp, wg, bg):
        L = h.shape[-2]
        z = h @ wr.T + br
        acc = np.zeros_like(h)
        count = np.zeros(h.shape[:-1] + (1,))
        for delta in offsets:
            for t in range(L):
                s = t - delta if causal else t + delta
                if not 0 <= s < L:
                    continue
                p = plucker_ref(z[..., t, :], z[..., s, :])
                p = p / np.maximum(np.linalg.norm(p, axis=-1, keepdims=True), eps)
                acc[..., t, :] += p @ wp.T + bp
                count[..., t, :] += 1
        g = acc / np.maximum(count, 1)
        alpha = 1 / (1 + np.exp(-(np.concatenate([h, g], -1) @ wg.T + bg)))
        return alpha * h + (1 - alpha) * g
    return ref


for label, causal, length, offsets in (
        ("ahead L=9", False, 9, (1, 2, 4)), ("causal L=9", True, 9, (1, 2, 4)),
        ("causal L=3 (offset 4 never valid)", True, 3, (1, 4)),
        ("ahead L=1 (no valid partner)", False, 1, (1, 2))):
    d, r = 6, 4
    inputs = [rng.standard_normal(s) for s in
              ((2, length, d), (r, d), (r,), (d, 6), (d,), (d, 2 * d), (d,))]
    attrs = "offsets = array<i64: %s>, eps = 1.0e-6 : f64%s" % (
        ", ".join(map(str, offsets)), ", causal" if causal else "")
    check_dtypes("grassmann_mix " + label,
                 "geo.grassmann_mix {0}, {1}, {2}, {3}, {4}, {5}, {6} {{%s}} : "
                 "({types[0]}, {types[1]}, {types[2]}, {types[3]}, {types[4]}, "
                 "{types[5]}, {types[6]}) -> {out}" % attrs,
                 inputs, grassmann_ref(offsets, causal, 1e-6))


# --- geo.lie_attention --------------------------------------------------------
def so2(theta):
    c, s = np.cos(theta), np.sin(theta)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


def se2(theta, t):
    g = np.zeros(theta.shape + (3, 3))
    g[..., :2, :2] = so2(theta)
    g[..., :2, 2] = t
    g[..., 2, 2] = 1
    return g


def so3(omega):
    """Rotations exp(hat ω) by Rodrigues (float64)."""
    theta = np.linalg.norm(omega, axis=-1)[..., None, None]
    k = np.zeros(omega.shape[:-1] + (3, 3))
    k[..., 0, 1], k[..., 0, 2], k[..., 1, 2] = -omega[..., 2], omega[..., 1], -omega[..., 0]
    k = k - np.swapaxes(k, -1, -2)
    return (np.eye(3) + np.sin(theta) / theta * k
            + (1 - np.cos(theta)) / theta ** 2 * k @ k)


def se3(omega, t):
    g = np.zeros(omega.shape[:-1] + (4, 4))
    g[..., :3, :3] = so3(omega)
    g[..., :3, 3] = t
    g[..., 3, 3] = 1
    return g


def aff2(gen, t):
    """[[expm(gen), t], [0, 1]]: small generators keep every relative
    element g_i⁻¹g_j inside the principal-log chart."""
    g = np.zeros(gen.shape[:-2] + (3, 3))
    g[..., :2, :2] = np.vectorize(scipy.linalg.expm, signature="(n,n)->(n,n)")(gen)
    g[..., :2, 2] = t
    g[..., 2, 2] = 1
    return g


def sim3(omega, t, sigma):
    g = se3(omega, t)
    g[..., :3, :3] *= np.exp(sigma)[..., None, None]
    return g


# Each group: a sampler, its λ block sizes, and the algebra coordinates of a
# log matrix X in block order (only block norms matter, not the basis order).
GROUPS = {
    "so2": (lambda n: so2(rng.uniform(-3, 3, n)),
            [1], lambda X: np.array([X[1, 0]])),
    "so3": (lambda n: so3(rng.standard_normal(n + (3,))),
            [3], lambda X: np.array([X[2, 1], X[0, 2], X[1, 0]])),
    "se3": (lambda n: se3(rng.standard_normal(n + (3,)), rng.standard_normal(n + (3,))),
            [3, 3], lambda X: np.array([X[2, 1], X[0, 2], X[1, 0], *X[:3, 3]])),
    "aff2": (lambda n: aff2(0.2 * rng.standard_normal(n + (2, 2)), rng.standard_normal(n + (2,))),
             [4, 2], lambda X: np.array([*X[:2, :2].ravel(), *X[:2, 2]])),
    "sim3": (lambda n: sim3(rng.standard_normal(n + (3,)), rng.standard_normal(n + (3,)),
                            0.3 * rng.standard_normal(n)),
             [3, 3, 1], lambda X: np.array([X[2, 1], X[0, 2], X[1, 0], *X[:3, 3],
                                            np.trace(X[:3, :3]) / 3])),
    "se2": (lambda n: se2(rng.uniform(-3, 3, n), rng.standard_normal(n + (2,))),
            [1, 2], lambda X: np.array([X[1, 0], X[0, 2], X[1, 2]])),
}


def lie_attention_ref(blocks, vee, heads, tau, lam, causal):
    def ref(g, v):
        B, L, D = v.shape
        # Pairwise coordinates w[b, i, j] = log(g_i⁻¹ g_j), by SciPy, for
        # i < j; log(g_j⁻¹ g_i) = −log(g_i⁻¹ g_j) and w[b, i, i] = 0.
        w = np.zeros((B, L, L, sum(blocks)))
        for b in range(B):
            for i in range(L):
                for j in range(i + 1, L):
                    w[b, i, j] = vee(np.real(scipy.linalg.logm(
                        np.linalg.solve(g[b, i], g[b, j]))))
                    w[b, j, i] = -w[b, i, j]
        edges = np.cumsum([0] + blocks)
        out = np.zeros_like(v)
        dh = D // heads
        for h in range(heads):
            norm2 = sum(lam[h, k] * (w[..., edges[k]:edges[k + 1]] ** 2).sum(-1)
                        for k in range(len(blocks)))
            p = softmax(-norm2 / tau[h], causal)
            out[..., h * dh:(h + 1) * dh] = p @ v[..., h * dh:(h + 1) * dh]
        return out
    return ref


for group, heads, causal in (("so2", 1, False), ("so2", 2, True),
                             ("so3", 2, True), ("se2", 2, False),
                             ("se2", 3, True), ("se3", 2, True),
                             ("aff2", 2, False), ("sim3", 3, True)):
    sample, blocks, vee = GROUPS[group]
    tau = rng.uniform(0.5, 2.0, heads)
    lam = rng.uniform(0.1, 1.5, (heads, len(blocks)))
    attrs = ("scores = #geo.scores<group = #lie.group<%s>, heads = %d, "
             "tau = [%s], lambda = [%s]%s>") % (
        group, heads, ", ".join("%.17g" % x for x in tau),
        ", ".join("%.17g" % x for x in lam.ravel()), ", causal" if causal else "")
    check_dtypes("lie_attention %s %d heads%s" % (group, heads,
                                                  " causal" if causal else ""),
                 "geo.lie_attention {0}, {1} {{%s}} : "
                 "({types[0]}, {types[1]}) -> {out}" % attrs,
                 [sample((2, 6)), rng.standard_normal((2, 6, 4 * heads))],
                 lie_attention_ref(blocks, vee, heads, tau, lam, causal), 1e-10)

run_cases()
report.finish()
