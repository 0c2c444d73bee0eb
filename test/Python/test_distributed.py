"""test_distributed.py - torsor.distributed on 2, 3 and 4 gloo processes.

Every rank runs its shard (torch.multiprocessing, spawn, a file://
rendezvous in the test's own temporary folder); the parent joins the
shards and compares them with single-process torsor.nn over the whole
sequence: RingLieAttention's output rows, the gradient of v and the
tangent projection of g's gradient (⟨G, g·E_a⟩ for the algebra basis E_a)
against torsor.nn.LieAttention (f64 ≤ 1e-12 relative, f32 ≤ 1e-5), for
SO(3) and SE(3), heads 1 and 4, causal and not, zigzag and contiguous
layouts, uneven shards and a rank with no tokens; GrassmannMix's rows, h's
gradient and the ranks' summed param gradients against
torsor.nn.GrassmannMix. Bad input (ranks disagreeing on group, heads, tau,
dtype or shapes; a zigzag layout the shards do not follow; ranks calling
different ops; no process group) ends with a torsor error on every rank,
and a rank that never calls ends with an error on the others within the
timeout, never a hang.

The ring's block kernels are torsor.nn.lie_attention_block(_backward)
when the package has them; otherwise (and additionally, in
RingReferenceKernels) the float64 PyTorch reference of ring_reference.py is
injected, which checks the ring, the merge and the gradient transport on
their own. Skipped without torch or without torch.distributed's gloo.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import common
from common import torsor

try:
    import torch
    import torch.distributed as dist
    import torsor.nn as tnn
    import torsor.distributed as tdist
    import ring_reference
    HAVE_TORCH = dist.is_available() and dist.is_gloo_available()
    SKIP_REASON = ("torch.distributed with gloo is not available in this PyTorch build")
except ImportError:
    HAVE_TORCH = False
    SKIP_REASON = ("PyTorch is not installed in this environment (it is optional; "
                   "make test never installs it)")

HAVE_KERNELS = HAVE_TORCH and hasattr(tnn, "lie_attention_block") and hasattr(
    tnn, "lie_attention_block_backward")

# (group, heads, tau, lam, causal, dtype): between them every group, head
# count, mask and dtype; one compile each for the single-process reference.
CONFIGS = {
    "A": ("SO3", 4, [0.5, 1.0, 2.0, 4.0], 0.7, True, torch.float64 if HAVE_TORCH else None),
    "B": ("SE3", 1, 0.8, [1.0, 0.3], False, torch.float64 if HAVE_TORCH else None),
    "C": ("SE3", 4, [0.5, 1.0, 2.0, 4.0], [[1.0, 0.3], [0.5, 1.0], [1.0, 1.0], [2.0, 0.5]],
          True, torch.float32 if HAVE_TORCH else None),
}
D = 8
TOL = {"float64": 1e-12, "float32": 1e-5}


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def tangent(group, g, G):
    """ξ_a = ⟨G, g·E_a⟩ [..., k]: the tangent projection of an ambient
    gradient G of elements g (what the model is defined on)."""
    E = torch.tensor(torsor.groups.basis(group), dtype=torch.float64)
    return torch.einsum("...ij,...ij->...", G.double()[..., None, :, :],
                        (g.double()[..., None, :, :] @ E))


def ring_case(name, cfg, L, seed, layout="contiguous", sizes=None, batch=(1,)):
    group, heads, tau, lam, causal, dtype = CONFIGS[cfg]
    rng = np.random.default_rng(seed)
    # Moderate rotations: relative rotations stay well inside (0, π).
    scale = [0.35] * 3 + ([0.8] * 3 if group == "SE3" else [])
    g = torch.tensor(torsor.groups.random(group, batch + (L,), seed=rng, scale=scale,
                                          dtype="f64")).to(dtype)
    v = torch.tensor(rng.standard_normal(batch + (L, D))).to(dtype)
    cot = torch.tensor(rng.standard_normal(batch + (L, D))).to(dtype)
    return dict(name=name, kind="ring", cfg=cfg, group=group, heads=heads, tau=tau, lam=lam,
                causal=causal, layout=layout, sizes=sizes, g=g, v=v, cot=cot)


GCONFIGS = {"G1": ([1, 2, 5], True), "G2": ([1, 3], False)}


def grassmann_case(name, cfg, L, seed, layout="contiguous", sizes=None):
    offsets, causal = GCONFIGS[cfg]
    torch.manual_seed(seed)
    mod = tnn.GrassmannMix(D, r=4, offsets=offsets, causal=causal, dtype=torch.float64)
    with torch.no_grad():
        for p in mod.parameters():
            if p.dim() == 1:
                p.normal_()
    h = torch.randn(2, L, D, dtype=torch.float64)
    cot = torch.randn(2, L, D, dtype=torch.float64)
    return dict(name=name, kind="grassmann", cfg=cfg, d=D, r=4, offsets=offsets,
                causal=causal, layout=layout, sizes=sizes, h=h, cot=cot,
                params={k: p.detach().clone() for k, p in mod.state_dict().items()})


_refs = {}


def single_process(case):
    """torsor.nn over the whole sequence: {y, grads} (cached per case)."""
    if case["name"] in _refs:
        return _refs[case["name"]]
    if case["kind"] == "ring":
        mod = tnn.LieAttention(case["group"], heads=case["heads"], tau=case["tau"],
                               lam=case["lam"], causal=case["causal"])
        g = case["g"].clone().requires_grad_()
        v = case["v"].clone().requires_grad_()
        y = mod(g, v)
        (y * case["cot"]).sum().backward()
        out = {"y": y.detach(), "xi": tangent(case["group"], g.detach(), g.grad), "dv": v.grad}
    else:
        mod = tnn.GrassmannMix(case["d"], r=case["r"], offsets=case["offsets"],
                               causal=case["causal"], dtype=torch.float64)
        mod.load_state_dict(case["params"])
        h = case["h"].clone().requires_grad_()
        y = mod(h)
        (y * case["cot"]).sum().backward()
        out = {"y": y.detach(), "dh": h.grad}
        out.update({"d_" + k: p.grad.clone() for k, p in mod.named_parameters()})
    _refs[case["name"]] = out
    return out


_warm = set()


def warm_block_kernels(case):
    """Runs the compiled block kernels once per configuration (masked and
    not, forward and backward), so that the ranks find them compiled."""
    key = (case["cfg"], str(case["v"].dtype))
    if key in _warm:
        return
    _warm.add(key)
    g, v = case["g"][:1, :3], case["v"][:1, :3]
    args = (case["group"], case["heads"], case["tau"], case["lam"])
    for causal in (False, True):
        out, lse = tnn.lie_attention_block(g, g, v, *args, causal=causal)
        tnn.lie_attention_block_backward(g, g, v, out, lse, v, *args, causal, 0, 0)


def join(case, shards, key, dim):
    """The full sequence of one result from every rank's shard."""
    if case["sizes"] is not None:
        return torch.cat(shards, dim)
    return tdist.unshard(shards, case["layout"], dim=dim)


def ring_cases(world):
    return {
        2: lambda: [
            ring_case("so3_h4_causal_zigzag", "A", 12, 1, layout="zigzag"),
            ring_case("se3_h1_uneven", "B", 11, 2, sizes=[7, 4]),
            ring_case("se3_h4_causal_f32", "C", 10, 3, batch=(2,)),
            ring_case("se3_h4_causal_zigzag_uneven_f32", "C", 11, 4, layout="zigzag")],
        3: lambda: [
            ring_case("so3_h4_causal_empty_rank", "A", 11, 5, sizes=[5, 0, 6]),
            ring_case("se3_h1_zigzag_uneven", "B", 13, 6, layout="zigzag"),
            ring_case("se3_h4_causal_zigzag_f32", "C", 12, 7, layout="zigzag"),
            # The host-staged transfers gloo needs for CUDA tensors, forced
            # on CPU tensors (ring_reference._run_case's stage_on_host).
            dict(ring_case("so3_h4_causal_host_staged", "A", 10, 11, sizes=[4, 0, 6]),
                 stage_on_host=True)],
        4: lambda: [
            ring_case("so3_h4_causal_zigzag_uneven", "A", 15, 8, layout="zigzag"),
            ring_case("se3_h1_empty_rank", "B", 12, 9, sizes=[3, 5, 0, 4]),
            ring_case("se3_h4_causal_uneven_f32", "C", 15, 10, sizes=[2, 6, 3, 4],
                      batch=(2,))],
    }[world]()


def grassmann_cases(world):
    return {
        2: lambda: [
            grassmann_case("causal_uneven", "G1", 12, 1, sizes=[9, 3]),
            grassmann_case("noncausal_zigzag", "G2", 12, 2, layout="zigzag")],
        3: lambda: [
            grassmann_case("causal_zigzag", "G1", 14, 3, layout="zigzag"),
            grassmann_case("noncausal_empty_rank", "G2", 11, 4, sizes=[4, 0, 7]),
            dict(grassmann_case("causal_host_staged", "G1", 10, 8, sizes=[3, 2, 5]),
                 stage_on_host=True)],
        # Shards shorter than the halo: rank 3's halo comes from ranks 0
        # and 1 (past the empty rank 2).
        4: lambda: [
            grassmann_case("causal_tiny_shards", "G1", 12, 5, sizes=[2, 1, 0, 9]),
            grassmann_case("noncausal_tiny_shards", "G2", 9, 6, sizes=[5, 1, 1, 2]),
            grassmann_case("noncausal_zigzag4", "G2", 11, 7, layout="zigzag")],
    }[world]()


BAD_WORLD = 3
# What every rank's error must say, per bad case.
BAD_EXPECT = {"heads": "heads", "tau": "tau", "group": "group", "dtype": "dtype",
              "width": "may differ only in their token count",
              "leading": "may differ only in their token count",
              "zigzag_counts": "zigzag", "other_op": "making different calls",
              "causal_grassmann": "causal"}


def bad_cases():
    """Ranks disagreeing (rank-specific overrides), then a good call, then
    (last: it leaves the group's state behind) a rank that never calls."""
    base = ring_case("base", "B", 9, 20)
    so3 = ring_case("so3", "A", 9, 21)
    gm = grassmann_case("gm", "G1", 9, 22)
    cases = []

    def bad(name, per_rank, source=base, **kw):
        c = dict(source, name=name, per_rank=per_rank, timeout=30)
        c.update(kw)
        cases.append(c)
    bad("heads", {2: {"heads": 2, "tau": [0.8, 0.8]}})
    bad("tau", {1: {"tau": 0.5}})
    bad("group", {2: {k: so3[k] for k in ("group", "g", "lam", "heads", "tau")}})
    bad("dtype", {1: {"v_dtype": torch.float32, "g_dtype": torch.float32}})
    bad("width", {2: {"v": torch.zeros(1, 9, 4, dtype=torch.float64),
                      "cot": torch.zeros(1, 9, 4, dtype=torch.float64)}})
    bad("leading", {0: {"g": base["g"].repeat(2, 1, 1, 1),
                        "v": torch.zeros(2, 9, D, dtype=torch.float64),
                        "cot": torch.zeros(2, 9, D, dtype=torch.float64)}})
    bad("zigzag_counts", {}, layout="zigzag", sizes=[2, 3, 4])
    bad("other_op", {1: {k: v for k, v in gm.items() if k != "name"}})
    bad("causal_grassmann", {0: {"causal": False}}, source=gm)
    cases.append(dict(base, name="ok_after_errors"))
    # Rank 2 never calls; the others must give up within 3 s.
    cases.append(dict(base, name="absent", absent=(2,), timeout=3))
    return cases


# One spawn per (world size, kernels) serves every test of that world:
# starting the processes (importing torch) is most of a test's time.
_spawned = {}


def spawned(world, use_reference):
    key = (world, use_reference)
    if key not in _spawned:
        cases = ring_cases(world) + grassmann_cases(world)
        if use_reference and HAVE_KERNELS:  # the reference's own run: the ring only
            cases = ring_cases(world)
        for c in cases:
            single_process(c)  # compiles in the parent: the ranks hit the cache
            if c["kind"] == "ring" and not use_reference:
                warm_block_kernels(c)
        if world == BAD_WORLD and use_reference == (not HAVE_KERNELS):
            cases += bad_cases()
        folder = tempfile.mkdtemp(prefix="torsor-dist-")
        try:
            results = ring_reference.spawn(world, folder, cases, use_reference)
        except AssertionError as e:  # a hang or a dead process
            results = e
        finally:
            shutil.rmtree(folder, True)
        _spawned[key] = (cases, results)
    cases, results = _spawned[key]
    if isinstance(results, AssertionError):
        raise results
    return cases, results


class _Spawning(unittest.TestCase):
    use_reference = not HAVE_KERNELS
    kind = "ring"

    def check_world(self, world):
        cases, results = spawned(world, self.use_reference)
        checked = 0
        for case in cases:
            if case["kind"] != self.kind or "per_rank" in case or case["name"] in (
                    "ok_after_errors", "absent"):
                continue
            self.check_case(world, case, results)
            checked += 1
        self.assertGreater(checked, 0)

    def check_case(self, world, case, results):
        name = case["name"]
        for r in range(world):
            status = results[r][name]
            self.assertEqual(status[0], "ok", "%s rank %d: %s" % (name, r, status[1:]))
        want = single_process(case)
        res = [results[r][name][1] for r in range(world)]
        dtype = str(case["v" if case["kind"] == "ring" else "h"].dtype).split(".")[-1]
        tol = TOL[dtype]
        if case["kind"] == "ring":
            y = join(case, [x["y"] for x in res], "y", -2)
            dv = join(case, [x["dv"] for x in res], "dv", -2)
            dg = join(case, [x["dg"] for x in res], "dg", -3)
            got = {"y": y, "dv": dv, "xi": tangent(case["group"], case["g"], dg)}
        else:
            got = {"y": join(case, [x["y"] for x in res], "y", -2),
                   "dh": join(case, [x["dh"] for x in res], "dh", -2)}
            for k in want:
                if k.startswith("d_"):  # the ranks' shares sum to the gradient
                    got[k] = sum(x[k] for x in res)
        for k, w in want.items():
            self.assertEqual(tuple(got[k].shape), tuple(w.shape), "%s: %s" % (name, k))
            e = rel(got[k], w)
            self.assertLessEqual(e, tol, "%s (%d ranks): %s differs by %.3g relative"
                                 % (name, world, k, e))


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class RingLieAttention(_Spawning):
    """The ring with the kernels it ships with (the compiled block kernels
    when the package has them, else the reference): SO(3)/SE(3), heads
    1/4, causal or not, zigzag/contiguous, uneven and empty shards."""

    def test_two_ranks(self):
        self.check_world(2)

    def test_three_ranks(self):
        self.check_world(3)

    def test_four_ranks(self):
        self.check_world(4)


@unittest.skipUnless(HAVE_TORCH and HAVE_KERNELS, "torsor.nn has no lie_attention_block "
                     "in this build; the ring runs on the reference kernels above")
class RingReferenceKernels(_Spawning):
    """The ring, merge and gradient transport on the float64 reference
    kernels, apart from the compiled ones."""
    use_reference = True

    def test_three_ranks_reference(self):
        self.check_world(3)


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class GrassmannMixHalo(_Spawning):
    """Rows, h's gradient and the summed param gradients; halos across
    uneven, tiny and empty shards and zigzag runs."""
    kind = "grassmann"

    def test_two_ranks(self):
        self.check_world(2)

    def test_three_ranks(self):
        self.check_world(3)

    def test_four_ranks(self):
        self.check_world(4)


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class BadInput(unittest.TestCase):
    def test_errors_on_every_rank(self):
        _, results = spawned(BAD_WORLD, not HAVE_KERNELS)
        P = BAD_WORLD
        for name, needle in BAD_EXPECT.items():
            for r in range(P):
                status = results[r][name]
                self.assertEqual(status[0], "error", "%s rank %d: %s" % (name, r, status))
                self.assertEqual(status[1], "InvalidArgumentError", "%s rank %d" % (name, r))
                self.assertIn(needle, status[2], "%s rank %d" % (name, r))
            self.assertEqual(len({results[r][name][2] for r in range(P)}), 1,
                             "%s: every rank gives the same message" % name)
        for r in range(P):
            self.assertEqual(results[r]["ok_after_errors"][0], "ok",
                             "rank %d: %s" % (r, results[r]["ok_after_errors"]))

    def test_uninitialised(self):
        _, results = spawned(BAD_WORLD, not HAVE_KERNELS)
        for r in range(BAD_WORLD):
            status = results[r]["uninitialised"]
            self.assertEqual(status[:2], ("error", "FailedPreconditionError"))
            self.assertIn("init_process_group", status[2])

    def test_absent_rank_times_out(self):
        _, results = spawned(BAD_WORLD, not HAVE_KERNELS)
        for r in range(BAD_WORLD - 1):
            status = results[r]["absent"]
            self.assertEqual(status[:2], ("error", "FailedPreconditionError"),
                             "rank %d: %s" % (r, status))
        self.assertNotIn("absent", results[BAD_WORLD - 1])


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class Sharding(unittest.TestCase):
    def test_round_trip(self):
        for layout in tdist.LAYOUTS:
            for P in (1, 2, 3, 4):
                for L in (0, 1, 5, 8, 13):
                    x = torch.arange(2 * L).reshape(2, L, 1)
                    shards = [tdist.shard(x, r, P, layout) for r in range(P)]
                    self.assertEqual(sum(s.shape[1] for s in shards), L)
                    self.assertTrue(torch.equal(tdist.unshard(shards, layout), x))

    def test_zigzag_assignment(self):
        self.assertEqual(tdist.shard_ranges(16, 0, 4, "zigzag"), [(0, 2), (14, 16)])
        self.assertEqual(tdist.shard_ranges(16, 3, 4, "zigzag"), [(6, 8), (8, 10)])
        self.assertEqual(tdist.shard_ranges(10, 1, 3, "contiguous"), [(4, 7)])

    def test_bad_layout(self):
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "layout"):
            tdist.RingLieAttention("SO3", layout="striped")


@unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
class Devices(unittest.TestCase):
    """Which backend moves which tensors, where the metadata tensor lives
    (NCCL's collectives take CUDA tensors only) and when point-to-point
    transfers go through host memory: the CUDA/NCCL choices, on CPU."""

    def test_device_backend(self):
        for backend, cpu, cuda in (("gloo", "gloo", "gloo"), ("nccl", "", "nccl"),
                                   ("NCCL", "", "nccl"),
                                   ("cpu:gloo,cuda:nccl", "gloo", "nccl"),
                                   ("cuda:nccl", "", "nccl")):
            self.assertEqual(tdist._device_backend(backend, "cpu"), cpu, backend)
            self.assertEqual(tdist._device_backend(backend, "cuda"), cuda, backend)

    def test_meta_device(self):
        cuda1 = torch.device("cuda", 1)
        cpu = torch.device("cpu")
        never = lambda: self.fail("the current CUDA device is not needed here")  # noqa: E731
        # NCCL: the input's own CUDA device, else the current one.
        self.assertEqual(tdist._meta_device("nccl", cuda1, never), cuda1)
        self.assertEqual(tdist._meta_device("nccl", cpu, lambda: 3), torch.device("cuda", 3))
        self.assertEqual(tdist._meta_device("nccl", torch.device("cuda"), lambda: 2),
                         torch.device("cuda", 2))
        # A group with a CPU backend exchanges the metadata on the CPU.
        for backend in ("gloo", "cpu:gloo,cuda:nccl"):
            for dev in (cpu, cuda1):
                self.assertEqual(tdist._meta_device(backend, dev, never), cpu)

    def test_stages_on_host(self):
        cuda = torch.device("cuda", 0)
        self.assertTrue(tdist._stages_on_host("gloo", cuda))
        self.assertFalse(tdist._stages_on_host("nccl", cuda))
        self.assertFalse(tdist._stages_on_host("cpu:gloo,cuda:nccl", cuda))
        self.assertFalse(tdist._stages_on_host("gloo", torch.device("cpu")))

    def test_nccl_refuses_cpu_tensors(self):
        grp = tdist._Group.__new__(tdist._Group)
        grp.backend, grp.what = "nccl", "RingLieAttention"
        with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                    r"\(nccl\) moves CUDA tensors only.*gloo"):
            grp.check_device(torch.zeros(2))
        grp.backend = "gloo"
        grp.check_device(torch.zeros(2))


class LazyImport(unittest.TestCase):
    """`import torsor` leaves torsor.distributed (and torch) unimported;
    `torsor.distributed` imports it on first use, as torsor.nn does."""

    def run_python(self, code):
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(torsor.__file__)))
        env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=120)
        self.assertEqual(res.returncode, 0, res.stderr)
        return res.stdout.strip()

    def test_import_torsor_stays_light(self):
        out = self.run_python(
            "import sys, torsor\n"
            "print('torsor.distributed' in sys.modules, 'torch' in sys.modules)")
        self.assertEqual(out, "False False")

    @unittest.skipUnless(HAVE_TORCH, SKIP_REASON)
    def test_attribute_imports_the_module(self):
        out = self.run_python(
            "import sys, torsor\n"
            "m = torsor.distributed\n"
            "print(m is sys.modules['torsor.distributed'], m.RingLieAttention.__name__, "
            "m.GrassmannMix.__name__, callable(m.shard))")
        self.assertEqual(out, "True RingLieAttention GrassmannMix True")


if __name__ == "__main__":
    unittest.main()
