"""test_cross_attention_grad.py - torsorc --grad through lie_attention's
two-set form (issue #23, item 3).

A model whose output is lie_attention(gq, gk, v, causal, offsets) is
compiled with grad=True at -O2 and -O0; Model.backward's gradients of gq,
gk (left-trivialised) and v must equal lie_attention_grad of the same
block with its own out and lse (one block is the whole attention), and
-O0 must equal -O2 (f64, 1e-12). A model that also outputs the lse takes
a cotangent for it: its gradients match central finite differences of
<dout, y> + <dlse, lse>. No torch needed.
"""
import unittest

import numpy as np

import common
from common import torsor

HEAD = """model M {
  dim Lq;
  dim Lk;
  dim D = 8;
  dim H = 2;
  input gq: SE3<f64>[Lq];
  input gk: SE3<f64>[Lk];
  input v: f64[Lk, D];
  input qo: i64;
  input ko: i64;
"""
ATTRS = ("heads = 2, tau = [0.7, 1.3], lambda = [[1.0, 0.3], [0.5, 1.0]], causal = true, "
         "query_offset = qo, key_offset = ko")
FORWARD = HEAD + "  output y = lie_attention(gq, gk, v, %s);\n}\n" % ATTRS
STATS = HEAD + """  let o, l = lie_attention(gq, gk, v, %s);
  output y = o;
  output lse = l;
}
""" % ATTRS
BACKWARD = HEAD + """  input out: f64[Lq, D];
  input lse: f64[Lq, H];
  input dout: f64[Lq, D];
  let a, b, c = lie_attention_grad(gq, gk, v, out, lse, dout, %s);
  output dgq = a;
  output dgk = b;
  output dv = c;
}
""" % ATTRS


class CrossAttentionGrad(unittest.TestCase):
    def test_grad_matches_block_backward(self):
        rng = np.random.default_rng(3)
        Lq, Lk, qo, ko = 7, 9, 5, 2
        gq = np.asarray(torsor.groups.random("SE3", Lq, seed=1, dtype="f64"))
        gk = np.asarray(torsor.groups.random("SE3", Lk, seed=2, dtype="f64"))
        v = rng.standard_normal((Lk, 8))
        dout = rng.standard_normal((Lq, 8))
        ins = {"gq": gq, "gk": gk, "v": v, "qo": np.int64(qo), "ko": np.int64(ko)}
        stats = torsor.compile(STATS, dtype="f64").run(ins)
        block = torsor.compile(BACKWARD, dtype="f64").run(
            dict(ins, out=stats["y"], lse=stats["lse"], dout=dout))
        grads = {}
        for opt in (2, 0):
            model = torsor.compile(FORWARD, dtype="f64", opt=opt, grad=True)
            grads[opt] = model.backward(ins, {"y": dout})
            for name, want in (("gq", block["dgq"]), ("gk", block["dgk"]),
                               ("v", block["dv"])):
                got = grads[opt]["grad." + name]
                err = np.max(np.abs(got - want)) / max(1e-30, np.max(np.abs(want)))
                self.assertLess(err, 1e-12, (opt, name))

    def test_grad_through_lse_matches_finite_differences(self):
        # f = <dout, y> + <dlse, lse>: d lse_i / d s_ij = P_ij adds the
        # softmax to the scores' gradient. Central differences in f64 on v
        # and, along g·exp(eps E_a), on every algebra coordinate of gq and
        # gk; -O0 and -O2 alike. Row 0 has no live key (qo + 0 < ko), so
        # its lse is -inf and its cotangent must not leak into anything.
        rng = np.random.default_rng(5)
        Lq, Lk, qo, ko = 5, 6, 1, 2
        gq = np.asarray(torsor.groups.random("SE3", Lq, seed=4, dtype="f64"))
        gk = np.asarray(torsor.groups.random("SE3", Lk, seed=6, dtype="f64"))
        v = rng.standard_normal((Lk, 8))
        dout = rng.standard_normal((Lq, 8))
        dlse = rng.standard_normal((Lq, 2))
        ins = {"gq": gq, "gk": gk, "v": v, "qo": np.int64(qo), "ko": np.int64(ko)}
        fwd = torsor.compile(STATS, dtype="f64")

        def f(**change):
            res = fwd.run(dict(ins, **change))
            lse = np.where(np.isfinite(res["lse"]), res["lse"], 0.0)
            return np.sum(dout * res["y"]) + np.sum(dlse * lse)

        eps = 1e-6
        want = {"v": np.zeros_like(v), "gq": np.zeros((Lq, 6)), "gk": np.zeros((Lk, 6))}
        for idx in np.ndindex(*v.shape):
            e = np.zeros_like(v)
            e[idx] = eps
            want["v"][idx] = (f(v=v + e) - f(v=v - e)) / (2 * eps)
        for name, g in (("gq", gq), ("gk", gk)):
            for i in range(g.shape[0]):
                for a in range(6):
                    moved = []
                    for sign in (1, -1):
                        h = g.copy()
                        step = np.asarray(torsor.groups.exp("SE3", sign * eps * np.eye(6)[a]))
                        h[i] = g[i] @ step
                        moved.append(f(**{name: h}))
                    want[name][i, a] = (moved[0] - moved[1]) / (2 * eps)
        # The lse term must matter here (through the scores: lse does not
        # depend on v), or the test shows nothing.
        plain = torsor.compile(STATS, dtype="f64", grad=True).backward(ins, {"y": dout})
        self.assertGreater(np.max(np.abs(plain["grad.gq"] - want["gq"])), 1e-3)
        for opt in (2, 0):
            model = torsor.compile(STATS, dtype="f64", opt=opt, grad=True)
            grads = model.backward(ins, {"y": dout, "lse": dlse})
            for name in ("v", "gq", "gk"):
                got = grads["grad." + name]
                err = np.max(np.abs(got - want[name])) / np.max(np.abs(want[name]))
                self.assertLess(err, 1e-7, (opt, name, got, want[name]))


if __name__ == "__main__":
    unittest.main()
