"""Independent references and checks for the lie dialect's numerics.

References are computed in high precision (mpmath, 50 digits) from the exact
float64 (or float32) input matrices: `logm`/`expm` in multiprecision, then
coordinates through each group's `vee`. Nothing here shares code or formulas
with the compiler's group models (dialects/Lie/IR/Groups/): the groups are
described only by their hat/vee maps, which are definitions.

A group test file builds a GroupSpec, then calls `run_group_suite`, which
compiles every lie op for f32 and f64 with torsorc, runs them on random and
adversarial inputs, and checks:
  - log against the reference (relative error),
  - exp against the reference,
  - exp(log g) = g round trips,
  - compose / inverse / act against float64 matrix algebra,
  - dist2 against the reference and its left-invariance.
"""
import mpmath
import numpy as np

from torsor_testing import CompiledModule, Report, dps_function

mpmath.mp.dps = 50


class GroupSpec:
    """What a test knows about a group: sizes, blocks, hat/vee, samplers.

    hat(v) -> n×n algebra matrix, vee(X) -> coordinates (both float64/mpf
    friendly), random(rng, count) -> float64 elements, adversarial() ->
    list of (label, elements) or (label, elements, options).

    Options of an adversarial set: `at_cut`, a tuple of dtypes ("f64",
    "f32") for which the set lies on the branch cut of log to within that
    dtype's rounding, so that several logs are equally valid (e.g. ±πn for a
    rotation by π). There the log is checked by its backward error
    (‖expm(hat(w)) − g‖ against tol["roundtrip"]), by the block norms
    (which are continuous across the cut) against the reference, and by
    in_chart(w) — instead of coordinate by coordinate. `abs_scale`, a
    number: the size of the set's matrix entries (e.g. large translations);
    the absolute checks (exp, round trip, compose, inverse, act) are held
    to tol × abs_scale there, since a few ulps of an entry scale with it.

    project(M) -> M, optional: the nearest group element of an mpmath
    matrix. References are then computed from project(g): an f32-rounded
    element is not exactly in the group, and next to the branch cut the
    matrix log of such an element is ill-conditioned in the directions that
    leave the group (see test/Numerics/lie-so3.py).

    attr, optional: the `#lie.group<...>` text to compile with, for groups
    declared by their generators (test/Numerics/lie-declared.py); default
    `#lie.group<name>`.
    """

    def __init__(self, name, n, k, point_dim, blocks, hat, vee, random,
                 adversarial, in_chart=None, project=None, attr=None):
        self.name, self.n, self.k, self.point_dim = name, n, k, point_dim
        self.blocks = blocks  # list of block sizes, in order
        self.hat, self.vee = hat, vee
        self.random, self.adversarial = random, adversarial
        self.in_chart = in_chart
        self.project = project
        self.attr = attr or "#lie.group<%s>" % name


# The matrix functions below (called in 100 digits) run on lists of mpf rows: mpmath's
# matrix class spends most of its time in item access at these sizes.
def _rows(A):
    return [[A[i, j] for j in range(A.cols)] for i in range(A.rows)]


def _eye(n):
    return [[mpmath.mpf(int(i == j)) for j in range(n)] for i in range(n)]


def _mul(A, B):
    cols = list(zip(*B))
    return [[mpmath.fdot(zip(row, col)) for col in cols] for row in A]


def _lin(a, A, b, B):
    """a·A + b·B."""
    return [[a * x + b * y for x, y in zip(r, s)] for r, s in zip(A, B)]


def _norm1(A):
    return max(mpmath.fsum(abs(x) for x in col) for col in zip(*A))


def _inv(A):
    """Gauss–Jordan with partial pivoting. Raises ZeroDivisionError where a
    pivot is at most ‖A‖₁·eps, as mpmath's LU does ("numerically
    singular"): mp_logm_group falls back on that."""
    n = len(A)
    tol = _norm1(A) * mpmath.eps
    M = [list(r) + e for r, e in zip(A, _eye(n))]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c]))
        if abs(M[p][c]) <= tol:
            raise ZeroDivisionError("matrix is numerically singular")
        M[c], M[p] = M[p], M[c]
        pivot = 1 / M[c][c]
        M[c] = [x * pivot for x in M[c]]
        for r in range(n):
            if r != c and M[r][c]:
                f = M[r][c]
                M[r] = [x - f * y for x, y in zip(M[r], M[c])]
    return [r[n:] for r in M]


def _tol():
    """10^(−0.6·dps): 1e-60 at the 100 digits the logs work in."""
    return mpmath.mpf(10) ** (-int(0.6 * mpmath.mp.dps))


def _sqrtm(A):
    n = len(A)
    I = _eye(n)
    Y, M = A, A
    for _ in range(200):
        Minv = _inv(M)
        Y = _mul(Y, _lin(0.5, I, 0.5, Minv))
        M = _lin(0.5, I, 0.25, _lin(1, M, 1, Minv))
        if _norm1(_lin(1, M, -1, I)) < _tol():
            return Y
    raise ArithmeticError("Denman–Beavers did not converge")


def mp_sqrtm(A):
    """Principal square root by the product form of the Denman–Beavers
    iteration (Higham, Functions of Matrices, (6.17)): one inverse per
    step, M_k → I while Y_k → A^½, until ‖M_k − I‖₁ < 10^(−0.6·dps)."""
    return mpmath.matrix(_sqrtm(_rows(A)))


def mp_logm_matrix(A):
    """Principal log by inverse scaling and squaring, in the working precision.

    Square roots until ‖A − I‖₁ < 1/4, then log A = 2 atanh(Y) with
    Y = (A − I)(A + I)⁻¹ (‖Y‖₁ ≲ 1/7), whose odd series Σ Y^(2m+1)/(2m+1)
    runs until a term is below 10^(−0.6·dps)·(1 + ‖Y‖₁); times 2^k.
    (mpmath.logm itself picks the wrong branch for rotations by more than
    ~3 rad, so it is not used.)
    """
    A = _rows(A)
    I = _eye(len(A))
    k = 0
    while _norm1(_lin(1, A, -1, I)) > mpmath.mpf(1) / 4:
        A = _sqrtm(A)
        k += 1
        if k > 200:
            raise ArithmeticError("matrix has no principal log")
    Y = _mul(_lin(1, A, -1, I), _inv(_lin(1, A, 1, I)))
    Y2 = _mul(Y, Y)
    term, total, j = Y, Y, 1
    tol = _tol() * (1 + _norm1(Y))
    while _norm1(term) > tol:
        j += 2
        term = _mul(term, Y2)
        total = _lin(1, total, mpmath.mpf(1) / j, term)
    return mpmath.matrix(total) * 2 ** (k + 1)


def mp_logm(g):
    """Principal matrix log of a float array, to 50 digits.

    Works at 100 digits: a square root of a matrix with eigenvalues within
    1e-16 of −1 (a rotation by π in float64) cancels about 16 digits.
    """
    with mpmath.workdps(100):
        X = mp_logm_matrix(mpmath.matrix(g.astype(np.float64).tolist()))
    return X


def mp_polar(M):
    """Orthogonal polar factor M (MᵀM)^(-1/2): the nearest orthogonal matrix."""
    return M * mp_sqrtm(M.T * M) ** -1


def mp_logm_group(spec, A):
    """Principal log of the mpmath matrix A (call inside workdps(100)).

    Projects A onto the group first when the spec says how. If A sits
    exactly on the branch cut (e.g. a rotation by π: eigenvalue −1, no
    principal log), logs A·expm(hat(η)) for a fixed η of size 1e-40
    instead: one of the equally valid logs, to 1e-40. Every quantity the
    suite compares there (block norms, dist2) is continuous across the cut.
    """
    if spec.project is not None:
        A = spec.project(A)
    try:
        return mp_logm_matrix(A)
    except (ZeroDivisionError, ArithmeticError, TypeError):
        # (mpmath 1.3 LU raises TypeError on an exactly singular pivot.)
        eta = [mpmath.mpf(10) ** -40 * (j + 1) for j in range(spec.k)]
        return mp_logm_matrix(A * mpmath.expm(mpmath.matrix(spec.hat(eta))))


def ref_log(spec, g):
    with mpmath.workdps(100):
        X = mp_logm_group(spec, mpmath.matrix(g.astype(np.float64).tolist()))
    return np.array([float(mpmath.re(c)) for c in spec.vee(X)])


def block_norms(spec, w):
    """Euclidean norm of each λ block of the coordinate rows w."""
    w = np.asarray(w, np.float64)
    out, off = [], 0
    for size in spec.blocks:
        out.append(np.linalg.norm(w[:, off:off + size], axis=1))
        off += size
    return np.stack(out, axis=1)


def exp_residual(spec, w, g):
    """max |expm(hat(w)) − project(g)|, in 50 digits: log's backward error."""
    if not np.all(np.isfinite(w)):
        return float("inf")  # mpmath's expm would not terminate
    E = mpmath.expm(mpmath.matrix(spec.hat([mpmath.mpf(float(c)) for c in w])))
    with mpmath.workdps(100):
        G = mpmath.matrix(g.astype(np.float64).tolist())
        if spec.project is not None:
            G = spec.project(G)
    return max(abs(float(E[i, j] - G[i, j]))
               for i in range(spec.n) for j in range(spec.n))


def ref_exp(spec, v):
    X = mpmath.matrix(spec.hat([mpmath.mpf(float(c)) for c in v]))
    E = mpmath.expm(X)
    return np.array([[float(E[i, j]) for j in range(spec.n)]
                     for i in range(spec.n)])


def ref_dist2(spec, a, b, lam):
    with mpmath.workdps(100):
        A = mpmath.matrix(a.astype(np.float64).tolist())
        B = mpmath.matrix(b.astype(np.float64).tolist())
        if spec.project is not None:
            A, B = spec.project(A), spec.project(B)
        X = mp_logm_group(spec, A ** -1 * B)
    w = [mpmath.re(c) for c in spec.vee(X)]
    total, off = mpmath.mpf(0), 0
    for size, weight in zip(spec.blocks, lam):
        total += weight * sum(c * c for c in w[off:off + size])
        off += size
    return float(total)


def declared_attr(name, gens, blocks, generic=False):
    """The #lie.group text of a declared group: generators `gens` (n×n
    arrays) and blocks [(name, size)] in generator order; `generic` keeps
    the generic model (no built-in closed forms)."""
    n = len(gens[0])
    entries = ", ".join(repr(float(x)) for g in gens for x in np.ravel(g))
    out, nxt = [], 0
    for block, size in blocks:
        out.append("[%s]" % ", ".join(['"%s"' % block] + [str(nxt + i) for i in range(size)]))
        nxt += size
    return '#lie.group<"%s", n = %d, generators = array<f64: %s>, blocks = [%s]%s>' % (
        name, n, entries, ", ".join(out), ", generic" if generic else "")


def build_module(spec, dtype):
    """Every lie op of `spec`'s group as a destination-passing function.

    Functions are named lie_<op>: a function called `log` or `exp` would
    be a global symbol of the .so, and its call from the C wrapper
    `_mlir_ciface_log` (when not inlined) binds to libm's log, which the
    Python process loaded first, leaving the outputs unwritten.
    """
    n, k, p = spec.n, spec.k, spec.point_dim
    grp = spec.attr
    lam = ", ".join("%.17g" % (0.5 + i) for i in range(len(spec.blocks)))
    G = ([None, n, n], dtype)
    V = ([None, k], dtype)
    P = ([None, p], dtype)
    S = ([None], dtype)
    t = lambda shape: "tensor<%s>" % "x".join(
        ["?" if s is None else str(s) for s in shape] + [dtype])
    fns = [
        dps_function("lie_log", [G], [V], lambda a: (
            "  %%r = lie.log %s {group = %s} : %s -> %s" % (a[0], grp, t(G[0]), t(V[0])), ["%r"])),
        dps_function("lie_exp", [V], [G], lambda a: (
            "  %%r = lie.exp %s {group = %s} : %s -> %s" % (a[0], grp, t(V[0]), t(G[0])), ["%r"])),
        dps_function("lie_compose", [G, G], [G], lambda a: (
            "  %%r = lie.compose %s, %s {group = %s} : %s" % (a[0], a[1], grp, t(G[0])), ["%r"])),
        dps_function("lie_inverse", [G], [G], lambda a: (
            "  %%r = lie.inverse %s {group = %s} : %s" % (a[0], grp, t(G[0])), ["%r"])),
        dps_function("lie_act", [G, P], [P], lambda a: (
            "  %%r = lie.act %s, %s {group = %s} : %s, %s -> %s"
            % (a[0], a[1], grp, t(G[0]), t(P[0]), t(P[0])), ["%r"])),
        dps_function("lie_dist2", [G, G], [S], lambda a: (
            "  %%r = lie.dist2 %s, %s {group = %s, lambda = array<f64: %s>} : %s -> %s"
            % (a[0], a[1], grp, lam, t(G[0]), t(S[0])), ["%r"])),
    ]
    return CompiledModule("\n".join(fns)), [0.5 + i for i in range(len(spec.blocks))]


def rel_err(ours, ref):
    """Max over rows of ‖ours − ref‖ / ‖ref‖ (absolute where ref = 0)."""
    ours = np.asarray(ours, np.float64).reshape(len(ref), -1)
    ref = np.asarray(ref, np.float64).reshape(len(ref), -1)
    num = np.linalg.norm(ours - ref, axis=1)
    den = np.linalg.norm(ref, axis=1)
    return float(np.max(np.where(den > 0, num / np.where(den > 0, den, 1), num)))


def abs_err(ours, ref):
    return float(np.max(np.abs(np.asarray(ours, np.float64) - ref)))


def run_group_suite(spec, tol64, tol32, seed=0, count=64, skip=()):
    """Checks every op of `spec` in f64 and f32; exits non-zero on failure.

    tol64/tol32: dicts with keys log, exp, roundtrip, compose, inverse, act,
    dist2, invariance (relative or absolute as each check states).
    """
    rng = np.random.default_rng(seed)
    report = Report("lie numerics: %s" % spec.name)
    sets = [("random", spec.random(rng, count), {})] + [
        (entry[0], np.asarray(entry[1]), entry[2] if len(entry) > 2 else {})
        for entry in spec.adversarial()]
    for dtype, np_t, tol_dtype in (("f64", np.float64, tol64), ("f32", np.float32, tol32)):
        mod, lam = build_module(spec, dtype)
        for label, gs, options in sets:
            abs_scale = options.get("abs_scale", 1.0)
            tol = {key: value * (abs_scale if key in ("exp", "roundtrip", "compose",
                                                      "inverse", "act") else 1.0)
                   for key, value in tol_dtype.items()}
            g = np.ascontiguousarray(gs.astype(np_t))
            m = len(g)
            # log against the high-precision log of the same (rounded) input.
            w = np.zeros((m, spec.k), np_t)
            mod.call("lie_log", g, w)
            ref = np.array([ref_log(spec, x) for x in g])
            if "log" not in skip and dtype in options.get("at_cut", ()):
                # Several logs are valid here; see GroupSpec.
                report.check("%s %s log block norms (rel)" % (dtype, label),
                             rel_err(block_norms(spec, w), block_norms(spec, ref)), tol["log"])
                report.check("%s %s log backward |expm(w) - g| (abs)" % (dtype, label),
                             max(exp_residual(spec, x, y) for x, y in zip(w, g)), tol["roundtrip"])
                report.check("%s %s log in chart" % (dtype, label),
                             float(not all(spec.in_chart(x) for x in w)), 0)
            elif "log" not in skip:
                report.check("%s %s log (rel)" % (dtype, label), rel_err(w, ref), tol["log"])
            # exp of the reference coordinates, rounded to dtype.
            v = np.ascontiguousarray(ref.astype(np_t))
            e = np.zeros((m, spec.n, spec.n), np_t)
            mod.call("lie_exp", v, e)
            eref = np.array([ref_exp(spec, x) for x in v])
            report.check("%s %s exp (abs)" % (dtype, label), abs_err(e, eref), tol["exp"])
            # exp(log g) = g.
            e2 = np.zeros_like(g)
            mod.call("lie_exp", w, e2)
            report.check("%s %s exp(log g) = g (abs)" % (dtype, label),
                         abs_err(e2, g.astype(np.float64)), tol["roundtrip"])
            # compose / inverse / act against float64 matrix algebra.
            h = np.ascontiguousarray(g[rng.permutation(m)])
            c = np.zeros_like(g)
            mod.call("lie_compose", g, h, c)
            report.check("%s %s compose (abs)" % (dtype, label),
                         abs_err(c, g.astype(np.float64) @ h.astype(np.float64)), tol["compose"])
            inv = np.zeros_like(g)
            mod.call("lie_inverse", g, inv)
            report.check("%s %s inverse (abs)" % (dtype, label),
                         abs_err(inv, np.linalg.inv(g.astype(np.float64))), tol["inverse"])
            pts = np.ascontiguousarray(rng.standard_normal((m, spec.point_dim)).astype(np_t))
            q = np.zeros_like(pts)
            mod.call("lie_act", g, pts, q)
            g64 = g.astype(np.float64)
            if spec.point_dim == spec.n:
                qref = np.einsum("bij,bj->bi", g64, pts.astype(np.float64))
            else:
                d = spec.point_dim
                qref = np.einsum("bij,bj->bi", g64[:, :d, :d], pts.astype(np.float64)) + g64[:, :d, d]
            report.check("%s %s act (abs)" % (dtype, label), abs_err(q, qref), tol["act"])
            # dist2 against the reference, and left-invariance.
            d2 = np.zeros((m,), np_t)
            mod.call("lie_dist2", g, h, d2)
            dref = np.array([ref_dist2(spec, a, b, lam) for a, b in zip(g, h)])
            report.check("%s %s dist2 (rel)" % (dtype, label),
                         rel_err(d2[:, None], dref[:, None]), tol["dist2"])
            left = spec.random(rng, 1)[0]
            lg = np.ascontiguousarray((left @ g.astype(np.float64)).astype(np_t))
            lh = np.ascontiguousarray((left @ h.astype(np.float64)).astype(np_t))
            d3 = np.zeros((m,), np_t)
            mod.call("lie_dist2", lg, lh, d3)
            scale = np.maximum(np.abs(dref), 1.0)
            report.check("%s %s dist2 left-invariance (rel to max(d,1))" % (dtype, label),
                         float(np.max(np.abs(d3.astype(np.float64) - d2) / scale)), tol["invariance"])
    report.finish()
