# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""Matrix exp/log builders (MatrixFunctions.h) compiled and run, f64 and f32.

`torsor-opt --torsor-test-matrix-functions` expands `@torsor_expm` /
`@torsor_logm` calls into the builders, torsorc compiles the result, and
ctypes calls it on batches of n×n matrices, n = 2..5. References: mpmath
expm/logm at 40 digits on the exact (rounded) input, or the exact log when
the input was built as exp of a known generator.

Errors are relative Frobenius: ‖X − X_ref‖ / ‖X_ref‖. Tolerances:
  f64: exp 1e-13 (random ‖A‖₁ ≤ 10, nilpotent exact series), log 1e-13
       (random ‖log‖ ≤ 3, near identity ‖A − I‖ = 1e-8, unipotent series,
       both sides of the θ switch points); rotations up to π − 1e-3 use
       1e-13 · θ/sin θ, the conditioning of log there (eigenvalues e^{±iθ}
       make the divided difference θ/sin θ ≈ 3·10³).
  f32: 1e-5 throughout (rotations 1e-5 · θ/sin θ), on the f32-rounded
       input; the unipotent general path 1e-4 in f32 and 1e-12 in f64
       (square roots of a Jordan-like matrix lose a few digits).
Negative real eigenvalues (−1 and 2, −I, a Jordan block at −1, a 3×3 with
eigenvalue −2, −1e-3, or 0, singular matrices): every entry must be NaN.
The float64/float32 rounding of a rotation by π is just off the axis and
must give ±π·J (1e-6).
"""
import subprocess

import mpmath
import numpy as np

from torsor_testing import CompiledModule, Report, dps_function, tool

mpmath.mp.dps = 40
NS = (2, 3, 4, 5)
THETA_EXP = {"f64": 1.43, "f32": 1.46}
THETA_LOG = {"f64": 0.340, "f32": 0.380}


def compile_dtype(dtype):
    """One module per n (the magic callees have one type per module), with
    exp and log, general (`_0`) and exact-series (`_n`) variants."""
    mods = {}
    for n in NS:
        t = "tensor<?x%dx%dx%s>" % (n, n, dtype)
        text = ["func.func private @torsor_expm(%s) -> %s" % (t, t),
                "func.func private @torsor_logm(%s) -> %s" % (t, t)]
        for op in ("expm", "logm"):
            for index in (0, n):
                attr = " {index = %d : i64}" % index if index else ""

                def body(args, op=op, t=t, attr=attr):
                    return ("  %%r = call @torsor_%s(%s)%s : (%s) -> %s"
                            % (op, args[0], attr, t, t), ["%r"])
                shape = ((None, n, n), dtype)
                text.append(dps_function("%s_%d" % (op, index), [shape],
                                         [shape], body))
        src = "\n".join(text)
        opt = subprocess.run([tool("torsor-opt"), "--torsor-test-matrix-functions"],
                             input=src, capture_output=True, text=True)
        if opt.returncode:
            raise RuntimeError(opt.stderr + src)
        mods[n] = CompiledModule(opt.stdout)
    return mods


def run(mods, dtype, op, a, index=0):
    np_t = np.float64 if dtype == "f64" else np.float32
    a = np.ascontiguousarray(np.asarray(a, dtype=np_t))
    out = np.zeros_like(a)
    mods[a.shape[-1]].call("%s_%d" % (op, index), a, out)
    return out


def mp_ref(fn, a):
    """fn at 40 digits on each float64 matrix; logm answers in mpc, whose
    imaginary parts are zero for a real principal log."""
    def one(x):
        r = fn(mpmath.matrix(x.astype(np.float64).tolist()))
        return [[float(mpmath.re(r[i, j])) for j in range(r.cols)]
                for i in range(r.rows)]
    return np.array([one(x) for x in a])


def mp_logm_eig(m):
    """log by a 40-digit eigendecomposition. mpmath.logm is wrong near
    eigenvalues e^{±i(π − ε)} (relative error ~1 at ε = 1e-2), so rotations
    use this; their rounded matrices are diagonalizable and well separated
    but for repeated 1s, which the eigenvector basis handles."""
    e, v = mpmath.eig(m)
    return v * mpmath.diag([mpmath.log(x) for x in e]) * mpmath.inverse(v)


def rel(x, ref):
    num = np.linalg.norm((x.astype(np.float64) - ref).reshape(len(ref), -1), axis=1)
    den = np.linalg.norm(ref.reshape(len(ref), -1), axis=1)
    return np.max(num / den)


def rot_generator(angle):
    """The 2×2 generator of a rotation by `angle`."""
    return np.array([[0.0, -angle], [angle, 0.0]])


rng = np.random.default_rng(7)


def random_with_norm(n, norm, count):
    a = rng.standard_normal((count, n, n))
    return np.array([x * norm / np.linalg.norm(x, 1) for x in a])


def orthogonal(n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def exp_exact(gen):
    """float64 exp of generators, rounded once from 40 digits."""
    return mp_ref(mpmath.expm, gen)


report = Report("matrix exp/log builders (n = 2..5, f64 and f32)")
for dtype in ("f64", "f32"):
    mods = compile_dtype(dtype)
    np_t = np.float64 if dtype == "f64" else np.float32
    tol = 1e-13 if dtype == "f64" else 1e-5
    rnd = lambda x: np.asarray(x, dtype=np_t).astype(np.float64)
    for n in NS:
        # exp: random matrices of several norms, and both sides of the
        # scaling switch points ‖A‖₁ = θ·2^k.
        th = THETA_EXP[dtype]
        for norm in (1e-3, 0.5, 2.0, 10.0):
            a = rnd(random_with_norm(n, norm, 6))
            report.check("%s exp n=%d random |A|=%g" % (dtype, n, norm),
                         rel(run(mods, dtype, "expm", a), mp_ref(mpmath.expm, a)), tol)
        for k in (0, 2):
            base = random_with_norm(n, th * 2**k, 2)
            a = rnd(np.concatenate([base * (1 - 1e-6), base * (1 + 1e-6)]))
            report.check("%s exp n=%d switch |A|=theta*2^%d +-" % (dtype, n, k),
                         rel(run(mods, dtype, "expm", a), mp_ref(mpmath.expm, a)), tol)
        # exp of nilpotent (strictly upper triangular), exact series.
        nil = rnd(np.triu(rng.standard_normal((6, n, n)) * 2, 1))
        ref = mp_ref(mpmath.expm, nil)
        report.check("%s exp n=%d nilpotent series" % (dtype, n),
                     rel(run(mods, dtype, "expm", nil, index=n), ref), tol)
        report.check("%s exp n=%d nilpotent general path" % (dtype, n),
                     rel(run(mods, dtype, "expm", nil), ref), tol)

        # log: exp of random generators with ‖L‖₁ up to 3 (plus the θ
        # switch points of ‖A − I‖₁), against mpmath logm of the rounded A.
        for norm in (0.05, 0.5, 1.5, 3.0):
            a = rnd(exp_exact(random_with_norm(n, norm, 6)))
            report.check("%s log n=%d random |log|=%g" % (dtype, n, norm),
                         rel(run(mods, dtype, "logm", a), mp_ref(mpmath.logm, a)), tol)
        tl = THETA_LOG[dtype]
        for k in (0, 1):
            d = random_with_norm(n, 1.0, 2)
            # ‖A − I‖₁ = θ·(1 ± 1e-6) after k square roots: A = (I + D)^(2^k).
            base = [np.eye(n) + x * tl for x in d]
            a = []
            for b in base:
                for f in (1 - 1e-6, 1 + 1e-6):
                    m = mpmath.matrix((np.eye(n) + (b - np.eye(n)) * f).tolist())
                    a.append(np.array((m ** (2 ** k)).tolist(), dtype=np.float64))
            a = rnd(np.array(a))
            report.check("%s log n=%d switch |A-I|=theta, %d roots +-" % (dtype, n, k),
                         rel(run(mods, dtype, "logm", a), mp_ref(mpmath.logm, a)), tol)
        near = rnd(np.eye(n) + random_with_norm(n, 1e-8 if dtype == "f64" else 1e-3, 6))
        report.check("%s log n=%d near identity |A-I|=%s" % (dtype, n, "1e-8" if dtype == "f64" else "1e-3"),
                     rel(run(mods, dtype, "logm", near), mp_ref(mpmath.logm, near)), tol)
        uni = rnd(np.eye(n) + np.triu(rng.standard_normal((6, n, n)), 1))
        ref = mp_ref(mpmath.logm, uni)
        report.check("%s log n=%d unipotent series" % (dtype, n),
                     rel(run(mods, dtype, "logm", uni, index=n), ref), tol)
        report.check("%s log n=%d unipotent general path" % (dtype, n),
                     rel(run(mods, dtype, "logm", uni), ref), tol * 10)

        # Rotations by angles up to π − 1e-3 in a random plane: log against
        # the exact generator of the rounded rotation (mpmath logm).
        worst = 0.0
        for angle in (0.5, 2.0, 3.0, np.pi - 1e-2, np.pi - 1e-3):
            q = orthogonal(n)
            k = np.zeros((n, n))
            k[0, 1], k[1, 0] = -angle, angle
            r = rnd(exp_exact(np.array([q @ k @ q.T])))
            err = rel(run(mods, dtype, "logm", r), mp_ref(mp_logm_eig, r))
            worst = max(worst, err / (angle / np.sin(angle)))
        report.check("%s log n=%d rotations to pi-1e-3 (err / (theta/sin theta))"
                     % (dtype, n), worst, tol)

    # NaN policy: eigenvalues on the closed negative real axis.
    # −1 and 2; −I (rotation by exactly π); singular; a Jordan block at −1.
    bad2 = [np.diag([-1.0, 2.0]), -np.eye(2),
            np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[-1.0, 5.0], [0.0, -1.0]])]
    q = orthogonal(3) + 0.3 * rng.standard_normal((3, 3))
    bad3 = [q @ np.diag([-2.0, 1.0, 3.0]) @ np.linalg.inv(q), np.zeros((3, 3)),
            np.diag([1.0, 1.0, 0.0]), np.diag([-1e-3, 1.0, 1.0])]
    for name, bad in (("2x2", bad2), ("3x3", bad3)):
        out = run(mods, dtype, "logm", rnd(np.array(bad)))
        report.check("%s log %s negative/zero eigenvalue -> all NaN (non-NaN count)"
                     % (dtype, name), np.count_nonzero(~np.isnan(out)), 0)
    # Just off the axis: a 2×2 rotation by π − 1e-3 stays finite.
    ok = run(mods, dtype, "logm", rnd(exp_exact(np.array([rot_generator(np.pi - 1e-3)]))))
    report.check("%s log rotation pi-1e-3 is finite (NaN count)" % dtype,
                 np.count_nonzero(np.isnan(ok)), 0)

    # The float64 "rotation by π" has sin π = 1.2e-16 (f32: −8.7e-8), so its
    # eigenvalues are just off the axis and it has a real principal log,
    # ±π·J with the sign of the sine: Denman–Beavers converges (~60 steps of
    # the 64 allowed) and the answer must be that branch, not NaN.
    r = np.array([[np.cos(np.pi), -np.sin(np.pi)], [np.sin(np.pi), np.cos(np.pi)]])
    r = rnd(r[None])
    want = rot_generator(np.pi * np.sign(r[0, 1, 0]))[None]
    report.check("%s log float-rounded rotation by pi = +-pi J" % dtype,
                 rel(run(mods, dtype, "logm", r), want), 1e-6)

report.finish()
