"""Gradient checks of lie_attention over declared groups (shared fixtures).

test/Autodiff/declared-attention-gradients.py (single hosts) and
declared-product-gradients.py (direct sums, Heisenberg) run the same
checks on their own groups: `run(GROUPS, PI_COORDS)` compiles each
declaration's one-layer model with --grad (f64, -O2) and compares its
gradients with fourth-order central differences, the group input along
g_i ↦ g_i·exp(ε·hat(e_k)) (left-trivialised) and 6 entries of the values
input, at L = 1, 3, 4, 5, 9 on random poses, at L = 5 near the identity and
with every other pose turned by π − 1e-2 (PI_COORDS: that rotation's
coordinates in the group's basis); tolerance 1e-7 relative to the
gradient's largest entry, and left-invariance of every gradient to 1e-9.
GROUPS maps a name to (declaration, lambda, causal).
"""
import re

import numpy as np
from scipy.linalg import expm

import gradcheck


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


def run(groups, pi_coords):
    """Checks every group; prints one ok/FAIL line per group and a summary."""
    failed = False
    for name, (decl, lam, causal) in groups.items():
        gens = generators(decl)
        k = len(gens)

        def hat(v, gens=gens):
            return sum(c * E for c, E in zip(v, gens))
        model = gradcheck.compile_grad(model_text(name, decl, lam, causal), opt=2)
        rng = np.random.default_rng(7)
        results = []
        for L, kind in ((1, "random"), (3, "random"), (4, "random"), (5, "random"),
                        (9, "random"), (5, "near-identity"), (5, "near-pi")):
            err = check(model, hat, k, L, kind, rng, pi_coords[name])
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
