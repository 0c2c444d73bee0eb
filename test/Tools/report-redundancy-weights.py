# `torsorc --report=redundancy --weights`: numerical ranks of the actual
# G_QK^h, G_VO^h on weights built with known ranks, singular values against
# NumPy's SVD (an independent LAPACK reference), the numerical degrees of
# freedom, near-duplicate heads, the stated tolerance, and located errors
# for missing, mis-shaped and corrupt weights.
#
# Standard model d = 16, H = 4, d_h = 4, weights built so that
#   head 0: W_Q^0 has rank 2            -> rank G_QK^0 = 2
#   head 1: W_V^1 has rank 1            -> rank G_VO^1 = 1
#   head 2: W_K^2 = 0                   -> rank G_QK^2 = 0 (zero matrix)
#   head 3: a GL(4) move of head 1's (W_Q, W_K), scaled by 2.5
#                                       -> G_QK^3 = 2.5 G_QK^1, cosine 1
# in f64 and in f32 (whose rounding must not raise a rank: the default cut
# is max(m, n)·ε of the file's dtype). A relational model with a rank-3
# G_QK^0 checks the relational form.
#
# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from model_runner import tool, write_safetensors  # noqa: E402
from torsor_testing import Report  # noqa: E402

D, H, DH = 16, 4, 4
STANDARD = """model Std {
  dim L;
  dim D = 16;
  dim H = 4;
  input x: f32[L, D];
  param Wq: f32[D, D];
  param Wk: f32[D, D];
  param Wv: f32[D, D];
  param Wo: f32[D, D];
  let q = heads(x @ Wq, H);
  let k = heads(x @ Wk, H);
  let v = heads(x @ Wv, H);
  output y = merge_heads(softmax(q @ transpose(k) * 0.5) @ v) @ Wo;
}
"""
RELATIONAL = """model Rel {
  dim L;
  dim D = 16;
  dim H = 2;
  input x: f32[L, D];
  param g_qk: f32[H, D, D];
  param g_vo: f32[H, D, D];
  output y = relational_attention(x, g_qk = g_qk, g_vo = g_vo, heads = H);
}
"""


def torsorc(*args):
    return subprocess.run([tool("torsorc"), *args], capture_output=True, text=True)


def report_json(tsr, weights, *extra):
    res = torsorc(tsr, "--report-json", "--weights=" + weights, *extra)
    if res.returncode != 0:
        raise SystemExit(res.stderr)
    return json.loads(res.stdout)["models"][0]


def standard_weights(rng):
    w = {k: rng.standard_normal((D, D)) for k in ("Wq", "Wk", "Wv", "Wo")}
    s = lambda h: slice(h * DH, (h + 1) * DH)
    w["Wq"][:, s(0)] = rng.standard_normal((D, 2)) @ rng.standard_normal((2, DH))
    w["Wv"][:, s(1)] = rng.standard_normal((D, 1)) @ rng.standard_normal((1, DH))
    w["Wk"][:, s(2)] = 0.0
    a = np.eye(DH) + 0.4 * rng.standard_normal((DH, DH))
    w["Wq"][:, s(3)] = 2.5 * w["Wq"][:, s(1)] @ a
    w["Wk"][:, s(3)] = w["Wk"][:, s(1)] @ np.linalg.inv(a).T
    return w


def forms(w):
    s = lambda h: slice(h * DH, (h + 1) * DH)
    gqk = [w["Wq"][:, s(h)] @ w["Wk"][:, s(h)].T for h in range(H)]
    gvo = [w["Wv"][:, s(h)] @ w["Wo"][s(h), :] for h in range(H)]
    return gqk, gvo


def np_rank(g, rel):
    sv = np.linalg.svd(g, compute_uv=False)
    return 0 if sv[0] == 0 else int(np.sum(sv > rel * sv[0]))


def main():
    report = Report("redundancy report with weights")
    work = tempfile.TemporaryDirectory(prefix="torsor-redundancy-")
    std = os.path.join(work.name, "std.tsr")
    rel = os.path.join(work.name, "rel.tsr")
    open(std, "w").write(STANDARD)
    open(rel, "w").write(RELATIONAL)
    rng = np.random.default_rng(5)
    w = standard_weights(rng)
    want_qk, want_vo = [2, 4, 0, 4], [4, 1, 4, 4]

    for dtype, eps in (("f64", np.finfo(np.float64).eps),
                       ("f32", np.finfo(np.float32).eps)):
        path = os.path.join(work.name, "w-%s.safetensors" % dtype)
        write_safetensors(path, w, dtype)
        seen = {k: v.astype(np.float32 if dtype == "f32" else np.float64)
                .astype(np.float64) for k, v in w.items()}
        gqk, gvo = forms(seen)
        m = report_json(std, path)
        b = m["blocks"][0]["weights"]
        ranks_qk = [h["rank_qk"] for h in b["heads"]]
        ranks_vo = [h["rank_vo"] for h in b["heads"]]
        report.check("%s: ranks G_QK %s == %s" % (dtype, ranks_qk, want_qk),
                     0 if ranks_qk == want_qk else 1, 0)
        report.check("%s: ranks G_VO %s == %s" % (dtype, ranks_vo, want_vo),
                     0 if ranks_vo == want_vo else 1, 0)
        report.check("%s: stated tolerance names eps_%s and is 16 eps" % (dtype, dtype),
                     abs(b["relative_tolerance"] - 16 * eps) / (16 * eps)
                     + (0 if ("ε_" + dtype) in b["tolerance"] else 1), 1e-12)
        err = 0.0
        for h in range(H):
            for mine, g in ((b["heads"][h]["sigma_qk"], gqk[h]),
                            (b["heads"][h]["sigma_vo"], gvo[h])):
                ref = np.linalg.svd(g, compute_uv=False)
                scale = max(ref[0], 1e-300)
                err = max(err, float(np.max(np.abs(np.array(mine) - ref))) / scale)
        report.check("%s: singular values vs numpy.linalg.svd (/ sigma_max)" % dtype,
                     err, 1e-13)
        dof = sum(r * (2 * D - r) for r in ranks_qk + ranks_vo)
        report.check("%s: numerical dof = sum r(2d - r) = %d" % (dtype, dof),
                     abs(b["numerical_dof"] - dof), 0)
        dups = [d["heads"] for d in b["near_duplicates"]]
        report.check("%s: near-duplicate heads %s == [[1, 3]]" % (dtype, dups),
                     0 if dups == [[1, 3]] else 1, 0)
        report.check("%s: cos G_QK(1, 3) == 1" % dtype,
                     abs(b["near_duplicates"][0]["cos_qk"] - 1) if dups else 1, 1e-6)
        # The symbolic counts do not depend on the weights.
        report.check("%s: symbolic counts unchanged (stored 1024, dof 896)" % dtype,
                     abs(m["blocks"][0]["stored"] - 1024) + abs(m["blocks"][0]["dof"] - 896), 0)

    # A given --rank-tol is used as stated.
    path = os.path.join(work.name, "w-f64.safetensors")
    gqk, gvo = forms(w)
    m = report_json(std, path, "--rank-tol=0.3")
    got = [h["rank_qk"] for h in m["blocks"][0]["weights"]["heads"]]
    want = [np_rank(g, 0.3) for g in gqk]
    report.check("--rank-tol=0.3: ranks %s == NumPy %s" % (got, want),
                 0 if got == want else 1, 0)

    # Relational form: G_QK^0 of rank 3, G_VO^1 of rank 5, the rest full.
    g = {"g_qk": rng.standard_normal((2, D, D)), "g_vo": rng.standard_normal((2, D, D))}
    g["g_qk"][0] = rng.standard_normal((D, 3)) @ rng.standard_normal((3, D))
    g["g_vo"][1] = rng.standard_normal((D, 5)) @ rng.standard_normal((5, D))
    rpath = os.path.join(work.name, "rel.safetensors")
    write_safetensors(rpath, g, "f64")
    b = report_json(rel, rpath)["blocks"][0]
    ranks = [(h["rank_qk"], h["rank_vo"]) for h in b["weights"]["heads"]]
    report.check("relational: ranks %s == [(3, 16), (16, 5)]" % ranks,
                 0 if ranks == [(3, 16), (16, 5)] else 1, 0)
    report.check("relational: form and stored 2·H·d² = 1024",
                 0 if (b["form"], b["stored"], b["dof"]) == ("relational", 1024, 1024) else 1, 0)

    # Errors name the tensor and point at the param's declaration.
    bad = dict(w)
    bad["Wk"] = w["Wk"][:, :8]
    del bad["Wo"]
    cases = [
        ("mis-shaped", {k: v for k, v in bad.items() if k != "Wo"} | {"Wo": w["Wo"]},
         "std.tsr:7:9: error: tensor 'Wk' in '%s' has shape [16, 8], but param 'Wk' is [16, 16]"),
        ("missing", {k: v for k, v in w.items() if k != "Wo"},
         "std.tsr:9:9: error: weights file '%s' has no tensor 'Wo' for param 'Wo'"),
    ]
    # Non-finite weights (issue 24, item 4) are an error naming the tensor,
    # not "rank 0, σ = nan" counted in the totals; so are products that
    # overflow.
    nan_w = dict(w)
    nan_w["Wk"] = w["Wk"].copy()
    nan_w["Wk"][1, 3] = np.nan
    inf_w = dict(w)
    inf_w["Wv"] = w["Wv"].copy()
    inf_w["Wv"][0, 0] = -np.inf
    huge_w = dict(w)
    huge_w["Wq"] = w["Wq"] * 1e200
    huge_w["Wk"] = w["Wk"] * 1e200
    cases += [
        ("NaN", nan_w,
         "std.tsr:7:9: error: tensor 'Wk' in '%s' is NaN at element 19 (index [1, 3]); the redundancy report needs finite weights"),
        ("Inf", inf_w,
         "std.tsr:8:9: error: tensor 'Wv' in '%s' is -Inf at element 0 (index [0, 0])"),
        ("overflowing", huge_w,
         "error: the products of the weights in '%s' (G_QK) overflow to Inf"),
    ]
    for tag, tensors, message in cases:
        p = os.path.join(work.name, "%s.safetensors" % tag)
        write_safetensors(p, tensors, "f64")
        res = torsorc(std, "--report=redundancy", "--weights=" + p)
        report.check("%s weights: exit 1 and located error" % tag,
                     0 if res.returncode == 1 and (message % p) in res.stderr else 1, 0)
    corrupt = os.path.join(work.name, "corrupt.safetensors")
    open(corrupt, "wb").write(open(path, "rb").read()[:100])
    res = torsorc(std, "--report=redundancy", "--weights=" + corrupt)
    report.check("truncated weights: exit 1, error names the file",
                 0 if res.returncode == 1 and "std.tsr:1:7: error: %s: header length" % corrupt
                 in res.stderr else 1, 0)
    report.finish()


main()
