# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention two token sets: SO3
# CHECK: == lie_attention two token sets: SE3
# CHECK: all {{[0-9]+}} checks passed
"""lie_attention's two-set form (out, lse) and lie_attention_grad (issue #23).

Models over g_q [Lq] against g_k, v [Lk] with runtime i64 query/key
offsets, compiled at -O2 (fused, tiled, vector kernels) and -O0 (the
unfused oracle), f32 and f64, SO(3) and SE(3), 1 and 4 heads, causal and
not. Checked against an independent float64 NumPy reference (the closed-form
SO(3)/SE(3) log, itself checked against SciPy's logm):

  forward    out and lse for Lq != Lk, L = 0 and 1, lengths around the
             query tile and vector width (7, 8, 9, 17), q blocks before,
             after and overlapping the k block; a row that sees no key
             has out = 0 and lse = -inf (no NaN). f64 fused and -O0:
             1e-12; f32: 2e-5 (relative to the largest |out|).
  merge      attention over the whole sequence, computed as key blocks
             merged through their lse (what a ring does), equals the
             self-attention model lie_attention(g, v): 1e-12 (f64).
  backward   lie_attention_grad with the global out and lse, summed over
             the key blocks, equals central finite differences of the
             reference's <dO, out> in g (left-trivialised: g exp(eps E_a)):
             1e-7 relative, and its exact derivative in v (out is linear
             in v): 1e-12 (f64).
"""
import os
import sys
import tempfile

import numpy as np
import scipy.linalg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from model_reference import BUILTIN, log_coords  # noqa: E402
from model_runner import CompiledModel, _hat_builtin, random_group_elements  # noqa: E402
from torsor_testing import Report  # noqa: E402

D = 8
TAU = {1: [0.8], 4: [0.5, 1.0, 1.5, 2.0]}


def lam_of(group, heads):
    nb = len(BUILTIN[group].blocks)
    return [[0.5 + 0.25 * ((h + b) % 3) for b in range(nb)] for h in range(heads)]


def fmt(rows):
    return "[%s]" % ", ".join("[%s]" % ", ".join(repr(float(x)) for x in r) for r in rows)


def attrs(group, heads, causal):
    return "heads = %d, tau = [%s], lambda = %s, causal = %s" % (
        heads, ", ".join(repr(t) for t in TAU[heads]), fmt(lam_of(group, heads)),
        "true" if causal else "false")


def sources(group, heads, causal):
    a = attrs(group, heads, causal)
    head = """model M {
  dim Lq;
  dim Lk;
  dim D = %d;
  dim H = %d;
  input gq: %s<f64>[Lq];
  input gk: %s<f64>[Lk];
  input v: f64[Lk, D];
  input qo: i64;
  input ko: i64;
""" % (D, heads, group, group)
    fwd = head + """  let o, l = lie_attention(gq, gk, v, %s, query_offset = qo, key_offset = ko);
  output out = o;
  output lse = l;
}
""" % a
    bwd = head + """  input out: f64[Lq, D];
  input lse: f64[Lq, H];
  input dout: f64[Lq, D];
  let a, b, c = lie_attention_grad(gq, gk, v, out, lse, dout, %s,
                                   query_offset = qo, key_offset = ko);
  output dgq = a;
  output dgk = b;
  output dv = c;
}
""" % a
    self_ = """model S {
  dim L;
  dim D = %d;
  input g: %s<f64>[L];
  input v: f64[L, D];
  output out = lie_attention(g, v, %s);
}
""" % (D, group, a)
    return fwd, bwd, self_


# --- the float64 reference -----------------------------------------------------

def _log_so3(R):
    """Closed-form principal log of rotations R [..., 3, 3] -> ω [..., 3]
    (θ away from π; series near 0)."""
    c = np.clip((np.trace(R, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)
    theta = np.arccos(c)
    vee = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0],
                    R[..., 1, 0] - R[..., 0, 1]], axis=-1)
    small = theta < 1e-4
    k = np.where(small, 0.5 + theta ** 2 / 12.0,
                 theta / (2.0 * np.sin(np.where(small, 1.0, theta))))
    return k[..., None] * vee, theta


def _skew(w):
    z = np.zeros(w.shape[:-1])
    return np.stack([np.stack([z, -w[..., 2], w[..., 1]], -1),
                     np.stack([w[..., 2], z, -w[..., 0]], -1),
                     np.stack([-w[..., 1], w[..., 0], z], -1)], -2)


def log_coords_all(group, M):
    """Coordinates of log M for M [..., n, n] in closed form (docs/groups/):
    SO(3) ω; SE(3) (ω, V(ω)⁻¹ t)."""
    if group == "SO3":
        return _log_so3(M)[0]
    w, theta = _log_so3(M[..., :3, :3])
    W = _skew(w)
    small = theta < 1e-4
    th = np.where(small, 1.0, theta)
    b = np.where(small, 1.0 / 12.0,
                 (1.0 - th * np.sin(th) / (2.0 * (1.0 - np.cos(th)))) / th ** 2)
    Vinv = np.eye(3) - 0.5 * W + b[..., None, None] * (W @ W)
    u = (Vinv @ M[..., :3, 3:4])[..., 0]
    return np.concatenate([w, u], axis=-1)


def scores(group, heads, gq, gk):
    """s [heads, Lq, Lk] = −Σ_b λ_hb ‖w_b‖² / τ_h, w = log(g_q,i⁻¹ g_k,j)."""
    G = BUILTIN[group]
    blk = G.block_of_coord()
    lam = np.asarray(lam_of(group, heads))
    if len(gq) == 0 or len(gk) == 0:
        return np.zeros((heads, len(gq), len(gk)))
    rel = np.linalg.inv(gq)[:, None] @ gk[None, :]
    w2 = log_coords_all(group, rel) ** 2                         # [Lq, Lk, k]
    weights = lam[:, blk] / np.asarray(TAU[heads])[:, None]      # [heads, k]
    return -np.einsum("ijk,hk->hij", w2, weights)


def check_log_reference(report, rng):
    """The closed-form log against SciPy's logm on random relative poses."""
    for group in ("SO3", "SE3"):
        g = random_group_elements(rng, group, 6)
        rel = np.linalg.inv(g[:3])[:, None] @ g[None, 3:]
        got = log_coords_all(group, rel).reshape(-1, BUILTIN[group].k)
        want = np.array([log_coords(BUILTIN[group], m) for m in rel.reshape(-1, *g.shape[1:])])
        report.check("closed-form %s log vs scipy logm" % group,
                     float(np.max(np.abs(got - want))), 1e-10)


def reference(group, heads, causal, gq, gk, v, qo, ko, s=None):
    """(out [Lq, D], lse [Lq, heads]) of one block (`s`: its scores, when
    already known)."""
    Lq, Lk = len(gq), len(gk)
    if s is None:
        s = scores(group, heads, gq, gk)
    live = np.ones((Lq, Lk), dtype=bool)
    if causal:
        live = (ko + np.arange(Lk))[None, :] <= (qo + np.arange(Lq))[:, None]
    dh = D // heads
    out = np.zeros((Lq, D))
    lse = np.full((Lq, heads), -np.inf)
    for h in range(heads):
        for i in range(Lq):
            if not live[i].any():
                continue
            x = s[h, i][live[i]]
            m = x.max()
            e = np.exp(x - m)
            lse[i, h] = m + np.log(e.sum())
            out[i, h * dh:(h + 1) * dh] = (e / e.sum()) @ v[live[i], h * dh:(h + 1) * dh]
    return out, lse


def rescored(group, heads, g, s, t):
    """The self-attention scores `s` of `g` with token t's row and column
    recomputed (after a change of g_t)."""
    s = s.copy()
    s[:, t:t + 1, :] = scores(group, heads, g[t:t + 1], g)
    s[:, :, t:t + 1] = scores(group, heads, g, g[t:t + 1])
    return s


def merge(parts):
    """Merges (out, lse) of key blocks: lse = log Σ e^lse_b, out = Σ e^(lse_b − lse) out_b."""
    heads = parts[0][1].shape[1]
    dh = D // heads
    lse = np.logaddexp.reduce(np.stack([p[1] for p in parts]), axis=0)
    out = np.zeros_like(parts[0][0])
    for o, l in parts:
        w = np.where(np.isfinite(l), np.exp(l - np.where(np.isfinite(lse), lse, 0)), 0.0)
        out += np.repeat(w, dh, axis=1) * o
    return out, lse


# --- the compiled models -------------------------------------------------------

class Models:
    def __init__(self, group, heads, causal, workdir):
        fwd, bwd, self_ = sources(group, heads, causal)
        tag = "%s-h%d-%s" % (group, heads, "causal" if causal else "full")
        d = os.path.join(workdir, tag)
        os.makedirs(d, exist_ok=True)
        paths = {}
        for name, text in (("fwd", fwd), ("bwd", bwd), ("self", self_)):
            paths[name] = os.path.join(d, name + ".tsr")
            with open(paths[name], "w") as f:
                f.write(text)
        self.fwd = {(dt, opt): CompiledModel(paths["fwd"], dtype=dt, opt=opt,
                                             workdir=os.path.join(d, "fwd"))
                    for dt in ("f64", "f32") for opt in (0, 2)}
        self.bwd = CompiledModel(paths["bwd"], dtype="f64", opt=2,
                                 workdir=os.path.join(d, "bwd"))
        self.self_ = CompiledModel(paths["self"], dtype="f64", opt=2,
                                   workdir=os.path.join(d, "self"))

    def forward(self, key, gq, gk, v, qo, ko):
        out = self.fwd[key].run({"gq": gq, "gk": gk, "v": v, "qo": np.int64(qo),
                                 "ko": np.int64(ko)}, {})
        return out["out"], out["lse"]

    def backward(self, gq, gk, v, out, lse, dout, qo, ko):
        r = self.bwd.run({"gq": gq, "gk": gk, "v": v, "out": out, "lse": lse, "dout": dout,
                          "qo": np.int64(qo), "ko": np.int64(ko)}, {})
        return r["dgq"], r["dgk"], r["dv"]


def same_lse(got, want):
    """lse entries agree: both −∞, or finite and close."""
    both_inf = np.isneginf(got) & np.isneginf(want)
    return np.all(both_inf | (np.isfinite(got) & np.isfinite(want))), \
        float(np.max(np.abs(np.where(both_inf, 0.0, got - want)), initial=0.0))


def check_forward(report, models, group, heads, causal, rng):
    # (Lq, Lk, qo, ko): q before, after and overlapping the k block, empty
    # blocks, one token, lengths around tiles and vector widths.
    cases = [(5, 7, 0, 0), (7, 5, 7, 0), (6, 9, 0, 4), (3, 4, 0, 10), (8, 8, 3, 3),
             (9, 17, 20, 5), (17, 7, 2, 9), (1, 1, 0, 0), (1, 3, 5, 0), (0, 5, 0, 0),
             (4, 0, 0, 0), (0, 0, 0, 0), (16, 9, 8, 12)]
    for Lq, Lk, qo, ko in cases:
        gq, gk = elements(rng, group, Lq), elements(rng, group, Lk)
        v = rng.standard_normal((Lk, D))
        ref_out, ref_lse = reference(group, heads, causal, gq, gk, v, qo, ko)
        scale = max(1.0, float(np.max(np.abs(ref_out), initial=0.0)))
        for (dt, opt) in ((("f64", 2)), ("f64", 0), ("f32", 2), ("f32", 0)):
            seen = [np.asarray(x).astype(np.float32).astype(np.float64) if dt == "f32" else x
                    for x in (gq, gk, v)]
            want_out, want_lse = (ref_out, ref_lse) if dt == "f64" else reference(
                group, heads, causal, *seen, qo, ko)
            out, lse = models.forward((dt, opt), *seen, qo, ko)
            tol = 1e-12 if dt == "f64" else 2e-5
            what = "%s h%d %s Lq=%d Lk=%d qo=%d ko=%d %s -O%d" % (
                group, heads, "causal" if causal else "full", Lq, Lk, qo, ko, dt, opt)
            err = float(np.max(np.abs(out - want_out), initial=0.0)) / scale
            report.check("out " + what, err if np.all(np.isfinite(out)) else np.inf, tol)
            ok, lerr = same_lse(lse, want_lse)
            report.check("lse " + what, lerr if ok else np.inf, 10 * tol)


def check_far_keys(report, models, group, heads, causal, rng):
    """Keys far from every query: every score is below exp's underflow
    (−1000 in f64, −200 in f32), so a softmax without the running max
    would divide 0 by 0. The self pair bounds the row max only when queries
    and keys are one token set; this form must keep the running max.
    Scores of size S carry an absolute rounding of about S·ε, hence the
    looser tolerances (1e-9 in f64, 1e-4 in f32)."""
    if group != "SE3":
        return  # SO(3)'s ‖log‖² ≤ π²: no underflow at these τ
    Lq, Lk, qo, ko = 9, 13, 20, 3
    gq, gk0 = elements(rng, group, Lq), elements(rng, group, Lk)
    v = rng.standard_normal((Lk, D))
    for dt, target, tol in (("f64", -1000.0, 1e-9), ("f32", -200.0, 1e-4)):
        c = 1.0
        while True:
            gk = gk0.copy()
            gk[:, :3, 3] += c
            if dt == "f32":
                gk = gk.astype(np.float32).astype(np.float64)
            s = scores(group, heads, gq, gk)
            if s.max() <= target:
                break
            c *= 1.5
        seen_q = gq.astype(np.float32).astype(np.float64) if dt == "f32" else gq
        seen_v = v.astype(np.float32).astype(np.float64) if dt == "f32" else v
        want_out, want_lse = reference(group, heads, causal, seen_q, gk, seen_v, qo, ko)
        scale = max(1.0, float(np.max(np.abs(want_out), initial=0.0)))
        for opt in (2, 0):
            out, lse = models.forward((dt, opt), seen_q, gk, seen_v, qo, ko)
            what = "far keys (max score %.0f) %s h%d %s %s -O%d" % (
                s.max(), group, heads, "causal" if causal else "full", dt, opt)
            err = float(np.max(np.abs(out - want_out), initial=0.0)) / scale
            report.check("out " + what, err if np.all(np.isfinite(out)) else np.inf, tol)
            ok, lerr = same_lse(lse, want_lse)
            lscale = max(1.0, float(np.max(np.abs(np.where(np.isfinite(want_lse),
                                                            want_lse, 0.0)))))
            report.check("lse " + what, lerr / lscale if ok else np.inf, tol)


def split(L, parts):
    """Cut points of [0, L) into `parts` uneven blocks."""
    cuts = sorted(set([0, L] + [int(L * (p + 0.37) / parts) for p in range(1, parts)]))
    return list(zip(cuts[:-1], cuts[1:]))


def check_merge_and_backward(report, models, group, heads, causal, rng):
    for L, parts in ((11, 3), (6, 2)):
        g = elements(rng, group, L)
        v = rng.standard_normal((L, D))
        blocks = split(L, parts)
        # Forward of the whole as merged key blocks, per query block.
        full = models.self_.run({"g": g, "v": v}, {})["out"]
        merged_out, merged_lse = np.zeros((L, D)), np.zeros((L, heads))
        for q0, q1 in blocks:
            pieces = [models.forward(("f64", 2), g[q0:q1], g[k0:k1], v[k0:k1], q0, k0)
                      for k0, k1 in blocks]
            o, l = merge(pieces)
            merged_out[q0:q1], merged_lse[q0:q1] = o, l
        err = float(np.max(np.abs(merged_out - full)))
        report.check("%s h%d %s L=%d: %d key blocks merged by lse vs self-attention"
                     % (group, heads, "causal" if causal else "full", L, len(blocks)),
                     err, 1e-12)
        # Backward: block gradients with the global out and lse, summed.
        dout = rng.standard_normal((L, D))
        dg, dv = np.zeros((L, BUILTIN[group].k)), np.zeros((L, D))
        for q0, q1 in blocks:
            for k0, k1 in blocks:
                a, b, c = models.backward(g[q0:q1], g[k0:k1], v[k0:k1], merged_out[q0:q1],
                                          merged_lse[q0:q1], dout[q0:q1], q0, k0)
                dg[q0:q1] += a
                dg[k0:k1] += b
                dv[k0:k1] += c
        # Central differences of f = <dO, out> of the reference in g (only
        # token t's row and column of the scores change with g_t); dv from
        # the reference's probabilities (f is linear in v: dv = Pᵀ dO).
        s0 = scores(group, heads, g, g)
        f = lambda gg, ss: float(np.sum(dout * reference(group, heads, causal, gg, gg, v,
                                                          0, 0, ss)[0]))
        eps = 1e-5
        k = BUILTIN[group].k
        fd_g = np.zeros_like(dg)
        for t in range(L):
            for a in range(k):
                e = np.zeros(k)
                e[a] = eps
                gp, gm = g.copy(), g.copy()
                gp[t] = g[t] @ scipy.linalg.expm(_hat_builtin(group, e))
                gm[t] = g[t] @ scipy.linalg.expm(_hat_builtin(group, -e))
                fd_g[t, a] = (f(gp, rescored(group, heads, gp, s0, t))
                              - f(gm, rescored(group, heads, gm, s0, t))) / (2 * eps)
        fd_v = np.zeros_like(dv)
        for c in range(D):
            # dv[t, c] = <dO, out for the values e_(t,c)> (out is linear in v).
            for t in range(L):
                unit = np.zeros((L, D))
                unit[t, c] = 1.0
                fd_v[t, c] = float(np.sum(dout * reference(group, heads, causal, g, g, unit,
                                                           0, 0, s0)[0]))
        for name, got, want in (("dg", dg, fd_g), ("dv", dv, fd_v)):
            rel = float(np.max(np.abs(got - want)) / max(1e-30, np.max(np.abs(want))))
            report.check("%s h%d %s L=%d: summed block %s vs finite differences"
                         % (group, heads, "causal" if causal else "full", L, name),
                         rel if np.all(np.isfinite(got)) else np.inf,
                         1e-7 if name == "dg" else 1e-12)


def elements(rng, group, L):
    """L random elements [L, n, n] (none for L = 0)."""
    n = BUILTIN[group].n
    return random_group_elements(rng, group, L) if L else np.zeros((0, n, n))


def main():
    report = Report("lie_attention two token sets")
    rng = np.random.default_rng(23)
    check_log_reference(report, rng)
    with tempfile.TemporaryDirectory(prefix="torsor-cross-") as workdir:
        for group in ("SO3", "SE3"):
            print("== lie_attention two token sets: %s" % group)
            for heads in (1, 4):
                for causal in (False, True):
                    models = Models(group, heads, causal, workdir)
                    check_forward(report, models, group, heads, causal, rng)
                    check_far_keys(report, models, group, heads, causal, rng)
                    check_merge_and_backward(report, models, group, heads, causal, rng)
    report.finish()


if __name__ == "__main__":
    main()
