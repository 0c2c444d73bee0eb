"""test_group_tolerance.py - the declared-group membership check's tolerance.

torsor-run's default check compares a declared group's membership residual
with max(tol, 8·n·ε·κ(g)), κ(g) = ‖g‖_F·‖(g + c·I)⁻¹‖_F, c = |det g|^(1/n)
(docs/groups/declared.md, "Membership check"); torsor.groups.check uses the
same rule. Checked here, in f32 and f64, on declared groups with a rotation:
- valid elements exp(X) (computed in float64, then rounded to the dtype)
  whose rotation angle is within 1e-7 to 1e-2 of π are all accepted, by the
  runtime and by torsor.groups.check;
- the same elements perturbed by 1e-2 (every entry, normal noise) are all
  rejected by torsor.groups.check, and a sample of them by the runtime;
- the runtime and torsor.groups.check agree element by element on a mix.
Groups: so(3) conjugated by diag(1, 2, 3) and SE(2) conjugated by a shear
of its last row (neither is recognised: they run on the generic model,
whose f32 log near π is the one the fixed 1e-4 rejected), plus so(3) in a
permuted, scaled basis and SE(2) with a sheared translation basis (both
recognised: the rule must not reject them either).
"""
import unittest

import numpy as np
import scipy.linalg

import common
from common import torsor


def unit(n, i, j, v=1.0):
    m = np.zeros((n, n))
    m[i, j] = v
    return m


SO3 = [unit(3, 2, 1) - unit(3, 1, 2), unit(3, 0, 2) - unit(3, 2, 0),
       unit(3, 1, 0) - unit(3, 0, 1)]
SE2 = [unit(3, 1, 0) - unit(3, 0, 1), unit(3, 0, 2), unit(3, 1, 2)]
D = np.diag([1.0, 2.0, 3.0])
SHEAR = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.3, -0.2, 1.0]])


def conj(p, gens):
    return [p @ g @ np.linalg.inv(p) for g in gens]


def source(name, gens, rot):
    """A declared group and a model that logs its input g [M]."""
    lines = ["group %s {" % name, "  matrix 3;"]
    for i, g in enumerate(gens):
        rows = ", ".join("[%s]" % ", ".join(repr(float(x)) for x in r) for r in g)
        lines.append("  generator G%d = [%s];" % (i, rows))
    lines.append("}")
    lines += ["model Log%s {" % name, "  dim M;", "  input g: %s[M];" % name,
              "  output w = log(g);", "}"]
    return "\n".join(lines) + "\n"


# name, generators, the generators of the rotation part (a rotation by θ
# is exp(θ Σ u_i R_i) for unit u), the translation generators.
GROUPS = [
    ("CSO3", conj(D, SO3), conj(D, SO3), []),
    ("CSE2", conj(SHEAR, SE2), conj(SHEAR, SE2[:1]), conj(SHEAR, SE2[1:])),
    ("PSO3", [SO3[2], 2.0 * SO3[0], SO3[1]], SO3, []),
    ("SSE2", [1.5 * SE2[0], SE2[1] + 0.5 * SE2[2], SE2[2]], SE2[:1], SE2[1:]),
]


def near_pi(rng, rot, trans, count):
    """Elements whose rotation angle is within 1e-7 to 1e-2 of π (f64)."""
    out = []
    for _ in range(count):
        theta = np.pi - 10.0 ** rng.uniform(-7, -2)
        u = rng.standard_normal(len(rot))
        u /= np.linalg.norm(u)
        X = theta * sum(a * r for a, r in zip(u, rot))
        for t in trans:
            X = X + rng.standard_normal() * t
        out.append(scipy.linalg.expm(X))
    return np.array(out)


class DeclaredTolerance(unittest.TestCase):
    def run_model(self, model, g):
        """True when the runtime's default group check accepts g."""
        try:
            model.run({"g": g})
            return True
        except torsor.TorsorError as e:
            self.assertIn("is not in", str(e))
            return False

    def test_near_pi(self):
        rng = np.random.default_rng(5)
        for name, gens, rot, trans in GROUPS:
            text = source(name, gens, rot)
            for dtype, np_t in (("f32", np.float32), ("f64", np.float64)):
                with self.subTest(group=name, dtype=dtype):
                    model = torsor.compile(text, dtype=dtype)
                    g = near_pi(rng, rot, trans, 2000).astype(np_t)
                    # Valid: all accepted, by Python and by the runtime.
                    self.assertTrue(torsor.groups.check(text, g, tol=1e-4))
                    self.assertTrue(self.run_model(model, g))
                    # Off the group by 1e-2: all rejected.
                    bad = (g + 1e-2 * rng.standard_normal(g.shape)).astype(np_t)
                    r = torsor.groups.residual(text, bad)
                    t = torsor.groups.residual_tolerance(text, bad, tol=1e-4)
                    accepted = np.isfinite(r) & (r <= t)
                    self.assertEqual(int(accepted.sum()), 0)
                    for i in range(10):
                        self.assertFalse(self.run_model(model, bad[i:i + 1]))
                    # Element by element, the runtime agrees with Python.
                    mix = np.concatenate([g[:10], bad[10:20]])
                    for i in range(len(mix)):
                        self.assertEqual(
                            self.run_model(model, mix[i:i + 1]),
                            torsor.groups.check(text, mix[i:i + 1], tol=1e-4))

    def test_reflection_rejected(self):
        # det ≤ 0 is never an exp: rejected whatever the tolerance.
        name, gens, rot, trans = GROUPS[0]
        text = source(name, gens, rot)
        g = np.diag([-1.0, 1.0, 1.0])[None].astype(np.float32)
        self.assertLess(torsor.groups.residual_tolerance(text, g)[0], 0)
        self.assertFalse(torsor.groups.check(text, g))
        model = torsor.compile(text, dtype="f32")
        with self.assertRaisesRegex(torsor.TorsorError, "det <= 0"):
            model.run({"g": g})


if __name__ == "__main__":
    unittest.main()
