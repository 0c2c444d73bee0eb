"""test_groups.py - torsor.groups against SciPy, and left invariance.

The helpers run compiled Torsor code; here they are checked against an
independent float64 reference (scipy.linalg.expm of the hat matrices in
test/lib/model_runner.py, which follow docs/groups/), then used the way the
docs show: random poses, one random h, compare the outputs on g and h·g.
"""
import unittest

import numpy as np
import scipy.linalg

import common
from common import torsor

GROUPS = sorted(torsor.groups.BUILTIN)


def expm_reference(G, v):
    import model_runner
    return np.stack([scipy.linalg.expm(model_runner._hat_builtin(G, vi))
                     for vi in v.reshape(-1, v.shape[-1])]).reshape(v.shape[:-1] + 2 * (
                         torsor.groups.BUILTIN[G][0],))


class GroupHelpers(unittest.TestCase):
    def test_exp_matches_expm_and_log_inverts_it(self):
        rng = np.random.default_rng(11)
        for G in GROUPS:
            with self.subTest(group=G):
                n, k = torsor.groups.BUILTIN[G]
                v = rng.standard_normal((4, 5, k)) * 0.6
                g = torsor.groups.exp(G, v)
                self.assertEqual(g.shape, (4, 5, n, n))
                self.assertEqual(g.dtype, np.float64)
                self.assertLess(common.rel_err(g, expm_reference(G, v)), 1e-13)
                w = torsor.groups.log(G, g)
                self.assertEqual(w.shape, (4, 5, k))
                self.assertLess(np.max(np.abs(w - v)), 1e-12)
                # float32 in, float32 out (the f32 helper model).
                g32 = torsor.groups.exp(G, v.astype(np.float32))
                self.assertEqual(g32.dtype, np.float32)
                self.assertLess(common.rel_err(g32, g), 1e-5)

    def test_random_and_check(self):
        for G in GROUPS:
            with self.subTest(group=G):
                n, _ = torsor.groups.BUILTIN[G]
                g = torsor.groups.random(G, (3, 7), seed=2)
                self.assertEqual((g.shape, g.dtype), ((3, 7, n, n), np.float32))
                self.assertTrue(torsor.groups.check(G, g))
                g64 = torsor.groups.random(G, 7, seed=2, dtype="f64")
                self.assertTrue(torsor.groups.check(G, g64))
                # Same seed, same draws; another seed, other elements.
                self.assertTrue(common.same_bits(torsor.groups.random(G, (3, 7), seed=2), g))
                self.assertFalse(np.array_equal(torsor.groups.random(G, (3, 7), seed=3), g))
                # One element pushed off the group is caught: a bottom-row
                # entry breaks orthonormality (SO) or the affine row [0 .. 1].
                bad = g64.copy()
                bad[4, n - 1, 0] += 0.05
                self.assertFalse(torsor.groups.check(G, bad))
                self.assertEqual(int(np.argmax(torsor.groups.residual(G, bad))), 4)
                self.assertTrue(torsor.groups.check(G, bad, tol=1.0))

    def test_errors(self):
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            torsor.groups.random("SE4", 3)
        self.assertIn("unknown group 'SE4'", str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            torsor.groups.exp("SE3", np.zeros((2, 5)))
        self.assertIn("last dim of 6", str(cm.exception))
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            torsor.groups.log("SO3", np.zeros((2, 4, 4)))
        self.assertIn("3x3", str(cm.exception))


class LeftInvariance(unittest.TestCase):
    """What docs/tutorial.md shows, as a test."""

    def moved_output_change(self, m, name, G, seed):
        rng = np.random.default_rng(seed)
        m.set_params(common.random_params(m, rng))
        inputs = common.random_inputs(m, rng, size=12)
        h = torsor.groups.random(G, 1, seed=seed + 1, dtype="f64")[0]
        moved = dict(inputs)
        moved[name] = (h @ inputs[name].astype(np.float64)).astype(np.float32)
        self.assertTrue(torsor.groups.check(G, moved[name]))
        a, b = m.run(inputs), m.run(moved)
        return max(common.rel_err(b[o], a[o]) for o in a)

    def test_invariant_examples(self):
        for example, name, G in [("se3_pose_attention", "pose", "SE3"),
                                 ("se2_planar", "pose", "SE2")]:
            with self.subTest(example=example):
                m = torsor.compile(common.example(example))
                spec = next(s for s in m.inputs if s.name == name)
                self.assertTrue(spec.left_invariant)
                # f32: the poses are rounded after moving; 1e-4 relative
                # leaves room for that rounding through the log map.
                self.assertLess(self.moved_output_change(m, name, G, 5), 1e-4)

    def test_control_model_is_not_invariant(self):
        """The same check detects a model that uses absolute poses."""
        m = torsor.compile("""model Absolute {
          dim L;
          input pose: SE3[L];
          input x: f32[L, 6];
          output y = x + log(pose);
        }""")
        self.assertFalse(m.inputs[0].left_invariant)
        self.assertGreater(self.moved_output_change(m, "pose", "SE3", 5), 1e-2)


if __name__ == "__main__":
    unittest.main()


CO3 = """group CO3 {
  matrix 3;
  generator Wx = [[0, 0, 0], [0, 0, -1], [0, 1, 0]];
  generator Wy = [[0, 0, 1], [0, 0, 0], [-1, 0, 0]];
  generator Wz = [[0, -1, 0], [1, 0, 0], [0, 0, 0]];
  generator S = [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
  norm rot = Wx, Wy, Wz;
  norm scale = S;
}"""


class DeclaredGroupHelpers(unittest.TestCase):
    """torsor.groups on declared groups, given by their .tsr text: exp/log
    against SciPy's expm of the generators, near θ = π too (f32 on the
    built-in closed forms the group is recognised as), check and random."""

    def gens(self, text):
        import re
        return [np.array(eval(m.group(1)), float) for m in
                re.finditer(r"generator\s+\w+\s*=\s*(\[\[.*?\]\])\s*;", text)]

    def test_exp_log_check_random(self):
        sim2 = open(common.example("sim2_similarity")).read()
        rng = np.random.default_rng(5)
        for text in (CO3, sim2):
            E = self.gens(text)
            with self.subTest(group=text.split()[1]):
                v = rng.standard_normal((7, len(E))) * 0.6
                ref = np.stack([scipy.linalg.expm(np.tensordot(x, E, 1)) for x in v])
                g = torsor.groups.exp(text, v)
                self.assertLess(common.rel_err(g, ref), 1e-13)
                self.assertLess(np.max(np.abs(torsor.groups.log(text, ref) - v)), 1e-12)
                self.assertTrue(torsor.groups.check(text, ref))
                r = torsor.groups.random(text, (2, 3), seed=1, dtype="f32")
                self.assertEqual(r.shape, (2, 3) + E[0].shape)
                self.assertTrue(torsor.groups.check(text, r))
                self.assertFalse(torsor.groups.check(text, ref + 1e-2))

    def test_f32_near_pi(self):
        # CO3 runs on the co3 closed forms: a rotation 1e-6 from a half turn
        # logs in f32 to ~1e-6 of its angle (the generic log lost 1.5e-2).
        theta = np.pi - 1e-6
        v = np.array([[0.0, 0.0, theta, 0.3]])
        g = scipy.linalg.expm(np.tensordot(v[0], self.gens(CO3), 1))[None]
        w = torsor.groups.log(CO3, g.astype(np.float32))
        self.assertLess(abs(np.linalg.norm(w[0, :3]) - theta), 5e-6)
        self.assertTrue(torsor.groups.check(CO3, g.astype(np.float32)))

    def test_errors_name_the_group(self):
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "unknown group 'SE4'"):
            torsor.groups.log("SE4", np.eye(3)[None])
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "matrix N"):
            torsor.groups.log("group Bad { norm a = X; }", np.eye(3)[None])
        with self.assertRaisesRegex(torsor.InvalidArgumentError, r"log\(CO3\): elements are 3x3"):
            torsor.groups.log(CO3, np.eye(2)[None])
