# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention at the closed forms' case boundaries: SL2, Sim2
# CHECK: all {{[0-9]+}} checks passed
"""SL(2) and Sim(2) lie_attention where their closed forms switch cases.

Both declared groups run on a host's closed forms (GroupStructure.h): SL(2)
(H, E = 2·E₀₁, F: non-orthonormal) on GL⁺(2)'s log per pair, whose f =
atanh(√s/t)/√s switches between the elliptic (s < 0, atan2), series
(|s| < η t²) and hyperbolic (s > 0, log1p) forms at trace 2 and ends at
trace −2 (a half turn); Sim(2) on the sim2 pair form, whose |φ(w)|² switches
from its series to expm1(σ)/σ at |σ| = 0.1. In f32 the fused kernel
evaluates log, log1p, expm1 and atan2 with KernelMath's polynomials.

Token sets (L = 24, each mixed so that the relative elements g_i⁻¹g_j sit
on the boundary):
  SL2 near-identity: exp(ε v), ε = 1e-2 … 1e-6, v random in sl(2), with
      exact parabolic tokens [[1, a], [0, 1]] (trace exactly 2);
  SL2 near-half-turn: rotations by 0 and π − δ (trace → −2 from the
      elliptic side), δ ≥ 3e-3 in f32 (below, the f32 rounding of the
      entries, ~1e-7, can push the trace under −2, where no real log exists),
      δ ≥ 1e-6 in f64;
  SL2 hyperbolic: exp(v) near the diagonal subgroup, |v_H| up to 2
      (relative traces up to ~55);
  Sim2 scales: e^σ with σ = 0, ±0.0999, ±0.1001, ±0.999, ±1.001, ±3 times
      rotations by 0, 1e-4 and π − 1e-3, random translations.
Reference: out_i = Σ_j softmax_j(−‖log(g_i⁻¹g_j)‖²_λ/τ) x_j with the logs at
50 digits (mpmath, in closed form: SL(2) by the 2×2 log of the relative
element through t, det and f(s), Sim(2) by θ = arg z, σ = ln|z|,
ρ = t/φ(σ + iθ)), of the inputs as the model saw them (rounded to f32 for
the f32 models).
Errors per output row and head, ‖got − ref‖/‖ref‖, maximum over rows:
-O2 and -O0 against 50 digits 1e-12 in f64 and 1e-5 in f32 in every set
(measured: f64 ≤ 6.5e-15, at π − 1e-6 included; f32 -O2, with the
polynomial log, log1p, expm1 and atan2, ≤ 7.7e-7, f32 -O0 with libm
≤ 1.9e-6); f64 -O2 against -O0 1e-12; left-invariance y(h·g) = y(g) in
f64 1e-10 (measured 4.4e-12 next to a half turn).
"""
import os
import tempfile

import mpmath
import numpy as np
import scipy.linalg

from model_runner import CompiledModel
import declared_groups
from torsor_testing import Report

mpmath.mp.dps = 50

GROUPS = {
    "SL2": (declared_groups.SL2, [np.diag([1.0, -1.0]), np.array([[0, 2.0], [0, 0]]), np.array([[0, 0], [1.0, 0]])],
        [1, 2]),
    "Sim2": (declared_groups.SIM2, None, [2, 2]),
}
TAU = [1.0, 0.25]
LAM = [[1.0, 0.5], [0.25, 2.0]]
L, D = 24, 4


def model_text(name, decl):
    return decl + """
model M {
  dim L;
  dim D = %d;
  input g: %s[L];
  input x: f32[L, D];
  output y = lie_attention(g, x, heads = 2, tau = [%s], lambda = [%s]);
}
""" % (D, name, ", ".join(map(str, TAU)),
       ", ".join("[%s]" % ", ".join(map(str, r)) for r in LAM))


def rot2(th):
    c, s = np.cos(th), np.sin(th)
    return np.array([[c, -s], [s, c]])


def sl2_sets(rng, dtype):
    gens = GROUPS["SL2"][1]
    hat = lambda v: np.tensordot(v, gens, 1)
    sets = {}
    near = []
    for eps in (1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
        for _ in range(4):
            near.append(scipy.linalg.expm(hat(eps * rng.standard_normal(3))))
    for a in (0.0, 1e-3, -2e-5, 0.5):
        near.append(np.array([[1.0, a], [0.0, 1.0]]))
    sets["near-identity"] = (np.array(near), 1.0)
    deltas = (1e-2, 3e-3) if dtype == "f32" else (1e-2, 1e-4, 1e-6)
    turn = []
    for i in range(L):
        turn.append(rot2(0.0 if i % 2 else np.pi - deltas[(i // 2) % len(deltas)])
                    @ scipy.linalg.expm(hat(1e-9 * rng.standard_normal(3))))
    sets["near-half-turn"] = (np.array(turn), np.pi / min(deltas))
    # Near the diagonal subgroup, so that every relative element is
    # hyperbolic with a positive trace (a real log exists).
    hyp = [scipy.linalg.expm(hat([rng.uniform(-2, 2), 0.1 * rng.standard_normal(),
                                  0.1 * rng.standard_normal()]))
           for _ in range(L)]
    sets["hyperbolic"] = (np.array(hyp), 1.0)
    return sets


def sim2_sets(rng, dtype):
    sigmas = [0, 0.0999, -0.0999, 0.1001, -0.1001, 0.999, -0.999, 1.001, -1.001, 3, -3, 0.05]
    thetas = [0.0, 1e-4, np.pi - 1e-3]
    out = []
    for i in range(L):
        s, th = sigmas[i % len(sigmas)], thetas[(i // len(sigmas) + i) % len(thetas)]
        g = np.eye(3)
        g[:2, :2] = np.exp(s) * rot2(th)
        g[:2, 2] = rng.standard_normal(2)
        out.append(g)
    return {"scales": (np.array(out), 1.0)}


def moved(name, rng):
    """A random h for the invariance check."""
    if name == "SL2":
        return scipy.linalg.expm(np.tensordot(0.5 * rng.standard_normal(3),
                                              GROUPS["SL2"][1], 1))
    h = np.eye(3)
    h[:2, :2] = np.exp(0.3 * rng.standard_normal()) * rot2(rng.uniform(-3, 3))
    h[:2, 2] = rng.standard_normal(2)
    return h


def mp_log_sl2(M):
    """The principal log of a 2×2 M with a real one, at 50 digits, in closed
    form: log M = ½ ln δ·I + f·(M − tI), t = tr M/2, δ = det M, s = t² − δ,
    f = atan2(√−s, t)/√−s (s < 0), atanh(√s/t)/√s (s > 0), 1/t (s = 0).
    (mpmath.logm loses the branch next to −I: it returns the log of a
    rotation by −δ for a rotation by π − δ.) Then the dual coordinates
    of H, E = 2·E₀₁, F: (X₀₀, X₀₁/2, X₁₀)."""
    a, b, c, d = (mpmath.mpf(M[i, j]) for i, j in ((0, 0), (0, 1), (1, 0), (1, 1)))
    t = (a + d) / 2
    delta = a * d - b * c
    s = ((a - d) / 2) ** 2 + b * c
    if s < 0:
        r = mpmath.sqrt(-s)
        f = mpmath.atan2(r, t) / r
    elif s > 0:
        r = mpmath.sqrt(s)
        f = mpmath.atanh(r / t) / r
    else:
        f = 1 / t
    h = mpmath.log(delta) / 2
    X = [[h + f * (a - t), f * b], [f * c, h + f * (d - t)]]
    return np.array([float(X[0][0]), float(X[0][1] / 2), float(X[1][0])])


def mp_log_sim2(M):
    a, b = mpmath.mpf(M[0, 0]), mpmath.mpf(M[1, 0])
    z = mpmath.mpc(a, b)
    w = mpmath.log(z)
    phi = (mpmath.exp(w) - 1) / w if w != 0 else mpmath.mpf(1)
    rho = mpmath.mpc(M[0, 2], M[1, 2]) / phi
    return np.array([float(w.imag), float(w.real), float(rho.real), float(rho.imag)])


def reference(name, g, x):
    mp_log = mp_log_sl2 if name == "SL2" else mp_log_sim2
    blocks = GROUPS[name][2]
    blk = np.repeat(np.arange(len(blocks)), blocks)
    inv = np.linalg.inv(g)
    w = np.zeros((L, L, sum(blocks)))
    for i in range(L):
        for j in range(L):
            if i != j:
                rel = mpmath.matrix(inv[i].tolist()) * mpmath.matrix(g[j].tolist())
                relf = np.array([[rel[a, b] for b in range(rel.cols)] for a in range(rel.rows)],
                                dtype=object)
                w[i, j] = mp_log(relf)
    xh = x.reshape(L, 2, D // 2)
    out = np.zeros((L, 2, D // 2))
    for h in range(2):
        d2 = np.einsum("ijk,k->ij", w ** 2, np.asarray(LAM[h])[blk])
        s = -d2 / TAU[h]
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        out[:, h] = p @ xh[:, h]
    return out


def row_errors(got, ref):
    got = got.reshape(L, 2, D // 2)
    num = np.linalg.norm(got - ref, axis=-1)
    den = np.linalg.norm(ref, axis=-1)
    err = num / np.maximum(den, 1e-300)
    return float(np.max(np.where(np.isfinite(err), err, np.inf)))


def main():
    report = Report("lie_attention at the closed forms' case boundaries: SL2, Sim2")
    tmp = tempfile.TemporaryDirectory(prefix="torsor-sl2-sim2-")
    for name, (decl, _, _) in GROUPS.items():
        tsr = os.path.join(tmp.name, name + ".tsr")
        with open(tsr, "w") as f:
            f.write(model_text(name, decl))
        models = {(dt, o): CompiledModel(tsr, dtype=dt, opt=o,
                                         workdir=os.path.join(tmp.name, name))
                  for dt in ("f32", "f64") for o in (0, 2)}
        for dt in ("f64", "f32"):
            rng = np.random.default_rng(11)
            sets = (sl2_sets if name == "SL2" else sim2_sets)(rng, dt)
            for label, (g, kappa) in sets.items():
                x = rng.standard_normal((L, D))
                seen = models[(dt, 2)].as_seen({"g": g, "x": x})
                ref = reference(name, seen["g"], seen["x"])
                y2 = models[(dt, 2)].run({"g": g, "x": x}, {})["y"]
                y0 = models[(dt, 0)].run({"g": g, "x": x}, {})["y"]
                tol = 1e-12 if dt == "f64" else 1e-5
                report.check("%s %s %s: -O2 vs 50 digits" % (dt, name, label),
                             row_errors(y2, ref), tol)
                report.check("%s %s %s: -O0 vs 50 digits" % (dt, name, label),
                             row_errors(y0, ref), tol)
                if dt == "f64":
                    report.check("f64 %s %s: -O2 vs -O0" % (name, label),
                                 row_errors(y2, y0.reshape(L, 2, D // 2)), tol)
                    # Left-invariance: every g_i⁻¹g_j, so every output, is
                    # unchanged by g ↦ h·g.
                    h = moved(name, rng)
                    yh = models[(dt, 2)].run({"g": np.einsum("ab,lbc->lac", h, g),
                                              "x": x}, {})["y"]
                    report.check("f64 %s %s: left-invariance (h·g vs g)" % (name, label),
                                 row_errors(yh, y2.reshape(L, 2, D // 2)), 1e-10)
    report.finish()


if __name__ == "__main__":
    main()
