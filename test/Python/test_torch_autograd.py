"""test_torch_autograd.py - training compiled models from PyTorch.

Gradients through torsor.torch.TorsorModule against plain-PyTorch twins
with identical weights (torch_twins.py): params, float inputs, and group
inputs through a torch parametrisation g = g0·exp(ω^) (which checks the
ambient gradient's tangent projection); every other example with float or
group inputs against central differences of its own forward; an Adam loop
that follows the twin's loss curve; opcheck, torch.compile(fullgraph=True)
and torch.export through forward and backward at two sequence lengths.

Skipped when PyTorch is not importable (make test never installs it); run
with `python3 test/Python/run_tests.py --build build --in-place` under an
interpreter that has torch.
"""
import os
import unittest
import warnings

import numpy as np

import common
from common import torsor

try:
    import torch
    import torsor.torch as ttorch
    import torch_twins
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SKIP_REASON = ("PyTorch is not installed in this environment (it is optional; "
               "make test never installs it)")

_modules = {}


def module(name, dtype="f64", opt=0):
    """A TorsorModule of examples/<name>.tsr (compiled with grad, cached)."""
    key = (name, dtype, opt)
    if key not in _modules:
        _modules[key] = ttorch.TorsorModule(common.example(name), dtype=dtype, opt=opt)
    return _modules[key]


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def heis_random(L, rng):
    """Random Heisenberg elements [[1, a, c], [0, 1, b], [0, 0, 1]]."""
    g = np.tile(np.eye(3), (L, 1, 1))
    g[:, 0, 1], g[:, 1, 2], g[:, 0, 2] = rng.standard_normal((3, L)) * 0.8
    return g


def twin_inputs(name, L, dtype, seed=0):
    rng = np.random.default_rng(seed)
    td = torch.float64 if dtype == "f64" else torch.float32
    if name == "se3_pose_attention":
        return {"pose": torch.tensor(torsor.groups.random("SE3", L, seed=rng, dtype="f64"),
                                     dtype=td),
                "x": torch.tensor(rng.standard_normal((L, 64)), dtype=td)}
    if name == "heisenberg":
        return {"g": torch.tensor(heis_random(L, rng), dtype=td),
                "x": torch.tensor(rng.standard_normal((L, 16)), dtype=td)}
    return {"x": torch.tensor(rng.standard_normal((L, 64)), dtype=td)}


def group_basis(layer, spec):
    """The basis E [k, n, n] of group input `spec` as a float64 tensor."""
    grads = layer.model.manifest["backward"]["gradients"]
    k = next(g["shape"][-1] for g in grads if g.get("of") == spec.name)
    return torch.tensor(torsor.groups.basis(spec.group, k, layer.group_source))


def perturb_groups(layer, inputs, omegas=None):
    """Replaces each group input g0 by g0·exp(ω^), ω leaves that require
    grad (zero unless given); returns (new inputs, {name: ω})."""
    out, new = dict(inputs), {}
    for s in layer.model.inputs:
        if not s.group:
            continue
        E = group_basis(layer, s).to(inputs[s.name].dtype)
        w = omegas[s.name] if omegas else torch.zeros(
            tuple(inputs[s.name].shape[:-2]) + (E.shape[0],), dtype=E.dtype,
            requires_grad=True)
        out[s.name] = inputs[s.name] @ torch.linalg.matrix_exp(
            torch.einsum("...k,kij->...ij", w.to(E.dtype), E))
        new[s.name] = w
    return out, new


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class GradientsAgainstTwins(unittest.TestCase):
    def check_twin(self, name, dtype, opt, tol, L=7):
        layer = module(name, dtype, opt)
        torch.manual_seed(1)
        layer.reset_parameters()
        base = twin_inputs(name, L, dtype)
        # The twin runs in float64 on the same (rounded) values.
        wts = {k: v.detach().double().clone().requires_grad_() for k, v in
               layer.state_dict().items()}
        results = []
        for side in ("torsor", "twin"):
            inp = {k: (v.double() if side == "twin" else v).clone() for k, v in base.items()}
            inp, omegas = perturb_groups(layer, inp)
            floats = {s.name: inp[s.name].requires_grad_() for s in layer.model.inputs
                      if not s.group}
            if side == "torsor":
                layer.zero_grad()
                out = layer(**inp)
                params = dict(layer.named_parameters())
            else:
                out = torch_twins.TWINS[name](inp, wts)["y"]
                params = wts
            cot = torch.sin(torch.arange(out.numel(), dtype=out.dtype)).reshape(out.shape)
            (out * cot).sum().backward()
            grads = {"out": out}
            grads.update({"param " + k: v.grad for k, v in params.items()})
            grads.update({"input " + k: v.grad for k, v in floats.items()})
            grads.update({"group input " + k: v.grad for k, v in omegas.items()})
            results.append(grads)
        for key, want in results[1].items():
            got = results[0][key]
            self.assertIsNotNone(got, key)
            self.assertLess(rel(got, want), tol, "%s %s %s" % (name, dtype, key))

    def test_pose_attention_f64(self):
        self.check_twin("se3_pose_attention", "f64", 0, 1e-10)

    def test_pose_attention_f32(self):
        self.check_twin("se3_pose_attention", "f32", 0, 1e-4)

    def test_heisenberg(self):
        self.check_twin("heisenberg", "f64", 0, 1e-10)
        self.check_twin("heisenberg", "f32", None, 1e-4)

    def test_standard_attention(self):
        self.check_twin("standard_attention", "f64", 0, 1e-10)

    def test_relational_block(self):
        self.check_twin("relational_block", "f64", 0, 1e-10)
        self.check_twin("relational_block", "f32", None, 1e-4)


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class GradientsAgainstDifferences(unittest.TestCase):
    """Every other example with float or group inputs: the directional
    derivative along a random direction of every float input, param and
    group input (as g·exp(εω^)) against central differences (f64)."""

    def test_examples(self):
        skip = set(torch_twins.TWINS) | {"grassmann_lm_train"}  # tokens only
        for path in common.EXAMPLES:
            name = os.path.splitext(os.path.basename(path))[0]
            if name in skip:
                continue
            with self.subTest(example=name):
                layer = module(name)
                rng = np.random.default_rng(5)
                # Random gains too (init_params' zero gains would put relu
                # at its kink, where differences see one side).
                layer.load_torsor_params(common.random_params(layer.model, rng))
                inp = {}
                for s in layer.model.inputs:
                    shape = s.concrete_shape({d: 6 for d in layer.model.dims})
                    if s.group in torsor.groups.BUILTIN:
                        inp[s.name] = torch.tensor(torsor.groups.random(
                            s.group, shape[:-2], seed=rng, dtype="f64"))
                    elif s.group:
                        E = group_basis(layer, s)
                        v = torch.tensor(rng.standard_normal(shape[:-2] + (E.shape[0],)))
                        inp[s.name] = torch.linalg.matrix_exp(
                            torch.einsum("...k,kij->...ij", 0.5 * v, E))
                    else:
                        inp[s.name] = torch.tensor(rng.standard_normal(shape))
                self.directional(layer, inp, rng)

    def directional(self, layer, inp, rng):
        pinp, omegas = perturb_groups(layer, inp)
        floats = {s.name: pinp[s.name].requires_grad_() for s in layer.model.inputs
                  if not s.group}
        outs = layer(**pinp)
        outs = outs if isinstance(outs, dict) else {"y": outs}
        cots = {k: torch.tensor(rng.standard_normal(tuple(o.shape))) for k, o in outs.items()}
        sum(((o * cots[k]).sum() for k, o in outs.items())).backward()
        leaves = list(floats.values()) + list(omegas.values()) + list(layer.parameters())
        dirs = [torch.tensor(rng.standard_normal(tuple(t.shape))) for t in leaves]
        analytic = sum(float((t.grad * d).sum()) for t, d in zip(leaves, dirs))

        def f(eps):
            with torch.no_grad():
                for t, d in zip(leaves, dirs):
                    t.add_(eps * d)
                q, _ = perturb_groups(layer, inp, omegas)
                for k in floats:
                    q[k] = floats[k]
                o = layer(**q)
                o = o if isinstance(o, dict) else {"y": o}
                val = sum(float((v * cots[k]).sum()) for k, v in o.items())
                for t, d in zip(leaves, dirs):
                    t.sub_(eps * d)
            return val
        h = 1e-4
        fd = (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)
        self.assertLess(abs(fd - analytic), 1e-6 * max(1.0, abs(fd)),
                        "%s: analytic %r, differences %r" % (layer.model.name, analytic, fd))


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class Autograd(unittest.TestCase):
    def test_parameters_and_names(self):
        layer = module("se3_pose_attention")
        names = [s.name for s in layer.model.params]
        self.assertEqual(sorted(n for n, _ in layer.named_parameters()), sorted(names))
        self.assertEqual(sorted(layer.state_dict()), sorted(names))
        self.assertTrue(all(p.requires_grad for p in layer.parameters()))

    def test_ambient_group_gradient(self):
        """⟨G, g·E_k⟩ = ξ_k for every built-in group."""
        rng = np.random.default_rng(0)
        for G, (n, k) in torsor.groups.BUILTIN.items():
            g = torch.tensor(torsor.groups.random(G, 5, seed=rng, dtype="f64"))
            xi = torch.tensor(rng.standard_normal((5, k)))
            amb = ttorch.ambient_group_gradient(G, g, xi)
            E = torch.tensor(torsor.groups.basis(G))
            proj = torch.einsum("lij,lkij->lk", amb, g[:, None] @ E[None])
            self.assertLess(rel(proj, xi), 1e-12, G)

    def test_integer_inputs_and_skipping(self):
        layer = module("grassmann_lm_train")
        rng = np.random.default_rng(1)
        tokens = torch.tensor(rng.integers(0, 96, 12))
        targets = torch.tensor(rng.integers(0, 96, 12))
        layer.zero_grad()
        loss = layer(tokens=tokens, targets=targets)
        loss.backward()
        want = layer.model.backward({"tokens": tokens, "targets": targets},
                                    {"loss": np.array(1.0)},
                                    borrowed_params={k: v.detach() for k, v in
                                                     layer.state_dict().items()})
        for name, p in layer.named_parameters():
            self.assertTrue(np.array_equal(p.grad.numpy(), want["grad." + name]), name)
        # Nothing requires grad: no graph, no backward.
        with torch.no_grad():
            self.assertFalse(layer(tokens=tokens, targets=targets).requires_grad)
        # A float tensor for integer ids is refused, never converted.
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            layer(tokens=tokens.double(), targets=targets)
        self.assertIn("input 'tokens': expected i64, got torch float64", str(cm.exception))

    def test_only_what_requires_grad(self):
        layer = module("heisenberg")
        inp = twin_inputs("heisenberg", 5, "f64")
        x = inp["x"].requires_grad_()
        for p in layer.parameters():
            p.requires_grad_(False)
            p.grad = None
        try:
            layer(g=inp["g"], x=x).sum().backward()
        finally:
            for p in layer.parameters():
                p.requires_grad_(True)
        self.assertIsNotNone(x.grad)
        self.assertTrue(all(p.grad is None for p in layer.parameters()))

    def test_model_call_warns_on_requires_grad(self):
        layer = module("heisenberg")
        inp = twin_inputs("heisenberg", 5, "f64")
        m = layer.model
        m.set_params({k: v.detach() for k, v in layer.state_dict().items()})
        with self.assertWarns(torsor.TorsorWarning) as cm:
            y = m(g=inp["g"], x=inp["x"].requires_grad_())
        self.assertIn("TorsorModule", str(cm.warning))
        self.assertFalse(y.requires_grad)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with torch.no_grad():
                m(g=inp["g"], x=inp["x"])

    def test_dtype_conversion(self):
        """f32 into an f64 layer converts exactly and silently, and the
        gradient comes back in f32; f64 into an f32 layer warns (it
        rounds), differentiably too."""
        layer = module("heisenberg")
        inp = twin_inputs("heisenberg", 5, "f64")
        x32 = inp["x"].float().requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("error", torsor.TorsorWarning)
            y = layer(g=inp["g"], x=x32)
        y.sum().backward()
        self.assertEqual(x32.grad.dtype, torch.float32)
        want = layer(g=inp["g"], x=x32.detach().double())
        self.assertTrue(torch.equal(y, want))
        layer32 = module("heisenberg", dtype="f32")
        x64 = inp["x"].clone().requires_grad_()
        with self.assertWarns(torsor.TorsorWarning) as cm:
            y = layer32(g=inp["g"].float(), x=x64)
        self.assertEqual(str(cm.warning), "input 'x': converting float64 to the model's "
                         "dtype f32 (rounded to nearest; a copy)")
        y.sum().backward()
        self.assertEqual(x64.grad.dtype, torch.float64)

    def test_devices_are_refused_clearly(self):
        layer = module("heisenberg")
        inp = twin_inputs("heisenberg", 4, "f64")
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            layer(g=inp["g"], x=inp["x"].to("meta"))
        self.assertIn("input 'x': tensor is on device 'meta', but model 'HeisenbergAttention' "
                      "is a CPU model and takes CPU tensors", str(cm.exception))
        gpu = os.path.join(common.BUILD, "lib", "torsor_fake_gpu_model.so")
        if os.path.exists(gpu) and os.path.exists(
                os.path.join(common.BUILD, "lib", "fakecuda", "libcuda.so.1")):
            old = os.environ.get("TORSOR_CUDA_DRIVER")
            os.environ["TORSOR_CUDA_DRIVER"] = os.path.join(common.BUILD, "lib", "fakecuda",
                                                            "libcuda.so.1")
            try:
                layer = ttorch.TorsorModule(gpu, params={"w": np.ones(8, np.float32)})
                with self.assertRaises(torsor.InvalidArgumentError) as cm:
                    layer(x=torch.ones(5, 8))
                self.assertEqual(str(cm.exception),
                                 "input 'x': tensor is on device 'cpu', but model 'FakeGpu' "
                                 "is an nvptx model and takes CUDA tensors (use .cuda(); "
                                 "move the module's params with module.cuda())")
                # The op has a CUDA kernel and no CPU one.
                has = torch._C._dispatch_has_kernel_for_dispatch_key
                self.assertTrue(has(layer._op._qualname, "CUDA"))
                self.assertFalse(has(layer._op._qualname, "CPU"))
                cpu = module("heisenberg")._op._qualname
                self.assertTrue(has(cpu, "CPU") and not has(cpu, "CUDA"))
            finally:
                if old is None:
                    os.environ.pop("TORSOR_CUDA_DRIVER")
                else:
                    os.environ["TORSOR_CUDA_DRIVER"] = old

    def test_double_backward_is_a_clear_error(self):
        """create_graph=True works for first derivatives; differentiating
        the gradient again raises a FailedPreconditionError that says
        what to do, not torch's 'no autograd formula'."""
        layer = module("standard_attention")
        x = twin_inputs("standard_attention", 5, "f64")["x"].requires_grad_()
        (g,) = torch.autograd.grad(layer(x=x).square().sum(), x, create_graph=True)
        (want,) = torch.autograd.grad(layer(x=x).square().sum(), x)
        self.assertTrue(torch.equal(g.detach(), want))
        with self.assertRaises(torsor.FailedPreconditionError) as cm:
            g.square().sum().backward()
        msg = str(cm.exception)
        self.assertIn("second derivatives are not supported through a Torsor layer", msg)
        self.assertIn("PyTorch twin of the layer", msg)
        self.assertIn(".detach() it", msg)

    def test_no_backward_entry_is_a_clear_error(self):
        m = torsor.compile(common.example("heisenberg"), dtype="f64", opt=0)
        layer = ttorch.TorsorModule(m)
        inp = twin_inputs("heisenberg", 4, "f64")
        with self.assertRaises(torsor.FailedPreconditionError) as cm:
            layer(**inp).sum().backward()
        self.assertIn("grad=True", str(cm.exception))


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class Training(unittest.TestCase):
    def test_adam_follows_the_twin(self):
        """torch layers around a Torsor layer, Adam, 15 steps: the loss
        curve matches the twin's (f64)."""
        layer = module("heisenberg")
        torch.manual_seed(3)
        layer.reset_parameters()
        init = {k: v.detach().clone() for k, v in layer.state_dict().items()}
        inp = twin_inputs("heisenberg", 9, "f64", seed=4)
        target = torch.randn(9, 1, dtype=torch.float64)

        def run(use_torsor):
            torch.manual_seed(5)
            pre = torch.nn.Linear(16, 16, dtype=torch.float64)
            head = torch.nn.Linear(16, 1, dtype=torch.float64)
            wv = {k: torch.nn.Parameter(v.clone()) for k, v in init.items()}
            if use_torsor:
                layer.load_torsor_params(init)
                geo = list(layer.parameters())
            else:
                geo = list(wv.values())
            opt = torch.optim.Adam(list(pre.parameters()) + list(head.parameters()) + geo,
                                   lr=1e-2)
            losses = []
            for _ in range(15):
                h = torch.tanh(pre(inp["x"]))
                y = (layer(g=inp["g"], x=h) if use_torsor else
                     torch_twins.heisenberg({"g": inp["g"], "x": h}, wv)["y"])
                loss = ((head(y) - target) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            return np.array(losses)
        a, b = run(True), run(False)
        self.assertLess(a[-1], 0.8 * a[0])
        self.assertLess(np.max(np.abs(a - b)) / np.max(np.abs(b)), 1e-9)


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class Tracing(unittest.TestCase):
    def setUp(self):
        self.layer = module("heisenberg")

    def sample(self, L):
        inp = twin_inputs("heisenberg", L, "f64", seed=L)
        return [inp["g"].requires_grad_(), inp["x"].requires_grad_()]

    def test_opcheck(self):
        params = [p for p in self.layer.parameters()]
        for L in (3, 8):
            torch.library.opcheck(self.layer._op, (self.sample(L), params))

    def eager_grads(self, fn, L):
        g, x = self.sample(L)
        self.layer.zero_grad()
        fn(g, x).backward()
        return [g.grad, x.grad, self.layer.get_parameter("Wv").grad.clone()]

    def test_compile_fullgraph_forward_and_backward(self):
        layer = self.layer

        def loss(g, x):
            return (layer(g=g, x=torch.tanh(x)) ** 2).sum()
        compiled = torch.compile(loss, fullgraph=True, backend="aot_eager", dynamic=True)
        for L in (5, 11):
            want = self.eager_grads(loss, L)
            got = self.eager_grads(compiled, L)
            for a, b in zip(got, want):
                self.assertLess(rel(a, b), 1e-13)

    def test_export_forward_and_backward(self):
        layer = self.layer

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.geo = layer

            def forward(self, g, x):
                return self.geo(g=g, x=torch.tanh(x))
        L = torch.export.Dim("L", min=2)
        g, x = self.sample(5)
        ep = torch.export.export(Net(), (g.detach(), x.detach()),
                                 dynamic_shapes=({0: L}, {0: L}))
        exported = ep.module()
        for n in (5, 11):
            g, x = self.sample(n)
            y = exported(g, x)
            self.assertTrue(torch.equal(y, layer(g=g, x=torch.tanh(x))))
            (y ** 2).sum().backward()
            g2, x2 = self.sample(n)
            (layer(g=g2, x=torch.tanh(x2)) ** 2).sum().backward()
            self.assertLess(rel(x.grad, x2.grad), 1e-13)
            self.assertLess(rel(g.grad, g2.grad), 1e-13)


if __name__ == "__main__":
    unittest.main()
