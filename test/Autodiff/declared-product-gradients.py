# lie_attention over declared groups that are direct sums of ideals
# (GroupStructure.h, "Direct sums"; Groups/Product.cpp), compiled with
# --grad in f64: so(3) ⊕ so(2) (factored pair forms side by side), se(2) ⊕ ℝ
# (se(2) next to a 1×1 block of scalings), the torus in a basis that mixes
# its factors (the factors' logs per pair), and so(2) ⊕ ℝ² with a sheared
# translation basis (nilpotent factors); and the Heisenberg group, whose
# pair form is the exact series of a⁻¹b − I on its non-zero entries. The
# flash backward differentiates these formulas formula by formula. Gradients against
# fourth-order central differences as in declared-attention-gradients.py
# (L = 1, 3, 4, 5, 9 on random poses, near the identity, and every other
# pose turned by π − 1e-2 in its first rotation factor); tolerance 1e-7
# relative to the gradient's largest entry; left-invariance to 1e-9. (The
# random poses keep every pair's relative angles away from π by more than
# the differences' steps: there dist2 has a kink.)
#
# RUN: env TORSOR_CACHE_DIR=%t.cache %python %s | FileCheck %s
# CHECK: ok SO3xSO2
# CHECK: ok SE2xR causal
# CHECK: ok Torus
# CHECK: ok SO2xR2 causal
# CHECK: ok Heis3
# CHECK: all declared-group attention gradients match
import re

import numpy as np
from scipy.linalg import expm

import gradcheck

NEAR_PI = np.pi - 1e-2
PI_COORDS = {
    "SO3xSO2": [0, 0, NEAR_PI, 0],
    "SE2xR": [0, 0, NEAR_PI, 0],
    "Torus": [NEAR_PI, -NEAR_PI],   # θ₁ = π − 1e-2, θ₂ = 0
    "SO2xR2": [NEAR_PI, 0, 0],
    "Heis3": [1.5, -1.0, 2.0],  # (no rotation: a large element instead)
}

GROUPS = {
    "SO3xSO2": ("""
group SO3xSO2 {
  matrix 5;
  generator Wy = [[0, 0, 1, 0, 0], [0, 0, 0, 0, 0], [-1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator Wx = [[0, 0, 0, 0, 0], [0, 0, -1, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator Wz = [[0, -1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator J = [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, -1.5], [0, 0, 0, 1.5, 0]];
  norm rot = Wy, Wx, Wz;
  norm spin = J;
}""", "[[1.0, 0.5], [0.25, 2.0]]", False),
    "SE2xR": ("""
group SE2xR {
  matrix 4;
  generator S = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0.5, 0], [0, 0, 0, 0]];
  generator Tx = [[0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  generator R = [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  generator Ty = [[0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]];
  norm scale = S;
  norm pose = Tx, R, Ty;
}""", "[1.0, 0.5]", True),
    "Torus": ("""
group Torus {
  matrix 4;
  generator A = [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 0, -1], [0, 0, 1, 0]];
  generator B = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, -1], [0, 0, 1, 0]];
  norm a = A;
  norm b = B;
}""", "[[1.0, 0.5], [0.25, 2.0]]", False),
    "SO2xR2": ("""
group SO2xR2 {
  matrix 5;
  generator J = [[0, -1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator P = [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 2], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
  generator Q = [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]];
  norm rot = J;
  norm trans = P, Q;
}""", "[1.0, 0.5]", True),
    "Heis3": ("""
group Heis3 {
  matrix 3;
  generator X = [[0, 1, 0], [0, 0, 0], [0, 0, 0]];
  generator Y = [[0, 0, 0], [0, 0, 1], [0, 0, 0]];
  generator Z = [[0, 0, 2], [0, 0, 0], [0, 0, 0]];
  norm plane = X, Y;
  norm center = Z;
}""", "[[1.0, 0.5], [0.25, 2.0]]", False),
}


def model_text(name, decl, lam, causal):
    return decl + """
model M {
  dim L;
  dim D = 4;
  input g: %s[L];
  input x: f32[L, D];
  output y = lie_attention(g, x, heads = 2, tau = [1.0, 0.5], lambda = %s%s);
}
""" % (name, lam, ", causal = true" if causal else "")


def generators(decl):
    return [np.array(eval(m.group(1)), dtype=float)
            for m in re.finditer(r"generator\s+\w+\s*=\s*(\[\[.*?\]\])\s*;", decl)]


def poses(rng, hat, k, L, kind, pi_coords=None):
    base = rng.standard_normal(k) * 0.4
    out = []
    for i in range(L):
        v = rng.standard_normal(k) * 0.5
        if kind == "near-identity":
            v = base + 1e-4 * rng.standard_normal(k)
        if kind == "near-pi":
            # Every other pose turned by π − 1e-2, all within 1e-4 of the
            # identity otherwise: pairs of opposite parity are next to a
            # half turn (and SL(2)'s stay in the image of exp).
            v = 1e-4 * rng.standard_normal(k)
            if i % 2:
                out.append(expm(hat(v)) @ expm(hat(np.asarray(pi_coords, float))))
                continue
        out.append(expm(hat(v)))
    return np.array(out)


def objective(model, ins, cots):
    out = model.run(ins)
    return sum(float(np.sum(np.asarray(out[o]) * c)) for o, c in cots.items())


def fd(f, h=1e-3):
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


def check(model, hat, k, L, kind, rng, pi_coords=None):
    """Worst relative error of the gradients of g and x. Next to a half
    turn the differences take steps of 3e-5: SL(2)'s log is conditioned
    like 1/(π − θ) = 100 there, and with 1e-3 steps the differences' own
    truncation (measured: 1e-2, 9e-5, 1e-6, 9e-9 at 1e-3, 3e-4, 1e-4, 3e-5)
    exceeds the bound."""
    h = 3e-5 if kind == "near-pi" else 1e-3
    g = poses(rng, hat, k, L, kind, pi_coords)
    x = rng.standard_normal((L, 4))
    ins = {"g": g, "x": x}
    cots = {o: rng.standard_normal(np.shape(v)) for o, v in model.run(ins).items()}
    grads = model.backward(ins, cots)
    if not all(np.isfinite(v).all() for v in grads.values()):
        return float("inf")
    fd_g = np.zeros((L, k))
    for i in range(L):
        for c in range(k):
            def f(eps):
                gi = g.copy()
                gi[i] = g[i] @ expm(hat(np.eye(k)[c] * eps))
                return objective(model, {"g": gi, "x": x}, cots)
            fd_g[i, c] = fd(f, h)
    fd_x = grads["grad.x"].copy()  # 6 entries checked
    for idx in list(np.ndindex(*x.shape))[::max(1, x.size // 6)]:
        def f(eps):
            xi = x.copy()
            xi[idx] += eps
            return objective(model, {"g": g, "x": xi}, cots)
        fd_x[idx] = fd(f)
    worst = 0.0
    for ref, ours in ((fd_g, grads["grad.g"]), (fd_x, grads["grad.x"])):
        scale = max(np.max(np.abs(ref)), np.max(np.abs(ours)), 1e-300)
        worst = max(worst, float(np.max(np.abs(ref - ours)) / scale))
    return worst


def invariance(model, hat, k, rng):
    L = 6
    g = poses(rng, hat, k, L, "random")
    ins = {"g": g, "x": rng.standard_normal((L, 4))}
    cots = {o: rng.standard_normal(np.shape(v)) for o, v in model.run(ins).items()}
    base = model.backward(ins, cots)
    hmat = expm(hat(rng.standard_normal(k) * 0.5))
    moved = model.backward({"g": np.einsum("ab,lbc->lac", hmat, g), "x": ins["x"]}, cots)
    return max(float(np.max(np.abs(moved[n] - v)) / max(np.max(np.abs(v)), 1e-300))
               for n, v in base.items())


failed = False
for name, (decl, lam, causal) in GROUPS.items():
    gens = generators(decl)
    k = len(gens)

    def hat(v, gens=gens):
        return sum(c * E for c, E in zip(v, gens))
    model = gradcheck.compile_grad(model_text(name, decl, lam, causal), opt=2)
    rng = np.random.default_rng(7)
    results = []
    for L, kind in ((1, "random"), (3, "random"), (4, "random"), (5, "random"),
                    (9, "random"), (5, "near-identity"), (5, "near-pi")):
        err = check(model, hat, k, L, kind, rng, PI_COORDS[name])
        results.append(err)
        if not err <= 1e-7:
            print("FAIL %s L=%d %s: max relative error %.2e" % (name, L, kind, err))
    inv = invariance(model, hat, k, rng)
    ok = max(results) <= 1e-7 and inv <= 1e-9
    failed |= not ok
    print("%s %s%s: %d cases, max relative error %.2e, invariance %.2e"
          % ("ok" if ok else "FAIL", name, " causal" if causal else "", len(results),
             max(results), inv))

print("all declared-group attention gradients match" if not failed
      else "some declared-group attention gradients do not match")
