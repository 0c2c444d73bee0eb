#!/usr/bin/env python3
"""`make demo`: show what Torsor can do today, honestly.

1. Groups: compiles every built-in group's lie ops (log, exp, dist2) for
   the CPU with torsorc (MLIR → LLVM → .so), runs them on seeded random
   group elements and prints round-trip and left-invariance errors against
   float64, and the time per element.
2. Fused against unfused: one SE(3) lie_attention compiled at -O0 (the
   unfused oracle, L×L scores in memory) and at the default -O (the fused
   flash-style kernel), timed through the Python package.
3. Every example model under examples/: torsorc → .so → torsor-run on
   seeded inputs (token ids as i64), a summary, the time per forward pass,
   and for every input the manifest claims left-invariant, the change of
   the output when all poses are left-multiplied by one group element.
4. Training: a few seconds of Adam on a small SE(3) attention model through
   its compiled backward (torsor.train; and through PyTorch's autograd with
   torsor.torch when torch is installed): the loss goes down.
5. The redundancy report of the relational example pair
   (torsorc --report=redundancy).
6. The Python call.
7. What is not there yet.

--quick (the test's mode, test/Tools/demo.test) compiles the examples at
-O0 with shorter sequences and fewer steps. Every line that reports a
failure contains "error:", "does not compile" or "runs with an error";
the test checks that none does.
"""
import argparse
import glob
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
sys.path.insert(0, os.path.join(ROOT, "python"))

from model_runner import parse_declared_groups, random_group_elements  # noqa: E402


# Display names of the built-in group keywords (as manifests spell them).
DISPLAY = {"so2": "SO2", "se2": "SE2", "so3": "SO3", "se3": "SE3",
           "aff2": "Aff2", "sim3": "Sim3"}

def demo_groups(build):
    from torsor_testing import CompiledModule, dps_function
    os.environ["TORSOR_BIN"] = os.path.join(build, "bin")
    groups = []
    probe = subprocess.run(
        [os.path.join(build, "bin", "torsor-opt"), "--allow-unregistered-dialect"],
        input='"test.g"() {g = #lie.group<bogus>} : () -> ()',
        capture_output=True, text=True, )
    for line in probe.stderr.splitlines():
        if "expected one of" in line:
            groups = [g.strip() for g in line.split("expected one of")[1].split(",")]
    print("== Built-in groups compiled for the CPU: %s" % ", ".join(groups))
    sizes = {"so2": (2, 1), "se2": (3, 3), "so3": (3, 3), "se3": (4, 6),
             "aff2": (3, 6), "sim3": (4, 7)}
    rng = np.random.default_rng(0)
    print("%-6s %-5s %14s %14s %14s" % ("group", "dtype", "|exp(log g)-g|",
                                        "invariance", "ns/log"))
    for name in groups:
        if name not in sizes:
            continue
        n, k = sizes[name]
        for dtype, np_t in (("f64", np.float64), ("f32", np.float32)):
            G, V, S = ([None, n, n], dtype), ([None, k], dtype), ([None], dtype)
            t = lambda s: "tensor<%s>" % "x".join(
                ["?" if d is None else str(d) for d in s[0]] + [dtype])
            grp = "#lie.group<%s>" % name
            mod = CompiledModule("\n".join([
                dps_function("log", [G], [V], lambda a: (
                    "  %%r = lie.log %s {group = %s} : %s -> %s" % (a[0], grp, t(G), t(V)), ["%r"])),
                dps_function("exp", [V], [G], lambda a: (
                    "  %%r = lie.exp %s {group = %s} : %s -> %s" % (a[0], grp, t(V), t(G)), ["%r"])),
                dps_function("dist2", [G, G], [S], lambda a: (
                    "  %%r = lie.dist2 %s, %s {group = %s} : %s -> %s" % (a[0], a[1], grp, t(G), t(S)), ["%r"])),
            ]))
            m = 20000
            g = np.ascontiguousarray(random_group_elements(rng, DISPLAY[name], 256).astype(np_t))
            h = np.ascontiguousarray(g[rng.permutation(len(g))])
            w = np.zeros((len(g), k), np_t)
            mod.call("log", g, w)
            back = np.zeros_like(g)
            mod.call("exp", w, back)
            left = random_group_elements(rng, DISPLAY[name], 1)[0]
            d0, d1 = np.zeros(len(g), np_t), np.zeros(len(g), np_t)
            mod.call("dist2", g, h, d0)
            lg = np.ascontiguousarray((left @ g.astype(np.float64)).astype(np_t))
            lh = np.ascontiguousarray((left @ h.astype(np.float64)).astype(np_t))
            mod.call("dist2", lg, lh, d1)
            big = np.ascontiguousarray(np.resize(g, (m, n, n)))
            wb = np.zeros((m, k), np_t)
            mod.call("log", big, wb)
            start = time.perf_counter()
            for _ in range(5):
                mod.call("log", big, wb)
            ns = (time.perf_counter() - start) / 5 / m * 1e9
            print("%-6s %-5s %14.2e %14.2e %14.1f" % (
                name, dtype, np.max(np.abs(back.astype(np.float64) - g)),
                np.max(np.abs(d1.astype(np.float64) - d0) / np.maximum(1, np.abs(d0))), ns))


def write_safetensors(path, tensors):
    """A minimal .safetensors writer (F32/F64) for the demo's weights."""
    import json
    import struct
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": {"float32": "F32", "float64": "F64"}[str(array.dtype)],
                        "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def run_example(build, path, workdir, length=64, opt=None, runs=20):
    """Compiles one example, runs it on seeded inputs, checks invariance."""
    import json
    torsorc = os.path.join(build, "bin", "torsorc")
    run = os.path.join(build, "bin", "torsor-run")
    so = os.path.join(workdir, os.path.basename(path).replace(".tsr", ".so"))
    flags = [] if opt is None else ["-O%d" % opt]
    r = subprocess.run([torsorc, path, "-o", so] + flags, capture_output=True, text=True)
    if r.returncode != 0:
        return "does not compile yet: " + (r.stderr.strip().splitlines() or ["?"])[0]
    manifest = json.load(open(so.replace(".so", ".json")))
    declared = parse_declared_groups(open(path).read())

    def sample_group(name, rng, count):
        """Built-in groups by keyword; declared ones from their generators."""
        if name in declared:
            return random_group_elements(rng, name, count, declared[name])
        return random_group_elements(rng, name, count)

    rng = np.random.default_rng(0)
    dims = {d: length for d in manifest["dims"]}
    # Token ids index the embedding table: [0, rows of the first 2-D param).
    vocab = next((t["shape"][0] for t in manifest["params"]
                  if len(t["shape"]) == 2 and isinstance(t["shape"][0], int)), 2)
    args, groups = [], {}
    for t in manifest["inputs"]:
        shape = [dims.get(s, s) if isinstance(s, str) else s for s in t["shape"]]
        np_t = {"f64": np.float64, "i64": np.int64}.get(t["dtype"], np.float32)
        if "group" in t:
            count = int(np.prod(shape[:-2]))
            value = sample_group(t["group"], rng, count).reshape(shape)
            groups[t["name"]] = t
        elif t["dtype"] == "i64":
            value = rng.integers(0, vocab, shape)
        else:
            value = rng.standard_normal(shape)
        value = value.astype(np_t)
        np.save(os.path.join(workdir, t["name"] + ".npy"), value)
        args += ["--input", "%s=%s" % (t["name"], os.path.join(workdir, t["name"] + ".npy"))]
    weights = {}
    for t in manifest["params"]:
        shape = [dims.get(s, s) if isinstance(s, str) else s for s in t["shape"]]
        np_t = np.float64 if t["dtype"] == "f64" else np.float32
        fan_in = shape[-1] if shape else 1
        weights[t["name"]] = (rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))).astype(np_t)
    if weights:
        write_safetensors(os.path.join(workdir, "w.safetensors"), weights)
        args += ["--weights", os.path.join(workdir, "w.safetensors")]
    outs = []
    for t in manifest["outputs"]:
        outs += ["--output", "%s=%s" % (t["name"], os.path.join(workdir, "out_" + t["name"] + ".npy"))]
    r = subprocess.run([run, so] + args + outs + ["--time", str(runs)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return "runs with an error: " + (r.stderr.strip().splitlines() or ["?"])[0]
    timing = [l for l in r.stdout.splitlines() if "median" in l or "time" in l]
    first = np.load(os.path.join(workdir, "out_" + manifest["outputs"][0]["name"] + ".npy"))
    summary = "L=%d, out %s, |out| max %.3g" % (length, "x".join(map(str, first.shape)) or
                                                "scalar", float(np.max(np.abs(first))))
    # Left-multiply every pose by one random element: outputs must not move.
    for name, t in groups.items():
        if not t.get("left_invariant"):
            continue
        poses = np.load(os.path.join(workdir, name + ".npy"))
        h = sample_group(t["group"], rng, 1)[0]
        moved = np.einsum("ij,...jk->...ik", h, poses.astype(np.float64)).astype(poses.dtype)
        np.save(os.path.join(workdir, name + ".npy"), moved)
        r = subprocess.run([run, so] + args + outs, capture_output=True, text=True)
        again = np.load(os.path.join(workdir, "out_" + manifest["outputs"][0]["name"] + ".npy"))
        summary += ", change under h·%s %.2e" % (name, 
            float(np.max(np.abs(again.astype(np.float64) - first))))
    if timing:
        summary += ", " + timing[0].strip()
    return summary


def demo_examples(build, quick):
    import tempfile
    examples = sorted(glob.glob(os.path.join(ROOT, "examples", "*.tsr")))
    print("\n== Example models: torsorc%s → .so → torsor-run (seeded inputs)"
          % (" -O0" if quick else ""))
    if not examples:
        print("no examples yet")
        return
    # The SE(3) pose-attention example first: it is the headline.
    examples.sort(key=lambda p: "se3" not in os.path.basename(p))
    for path in examples:
        with tempfile.TemporaryDirectory(prefix="torsor-demo-") as workdir:
            print("%-32s %s" % (os.path.relpath(path, ROOT), run_example(
                build, path, workdir, length=16 if quick else 64, opt=0 if quick else None,
                runs=3 if quick else 20)))


ATTENTION = """model DemoAttention {
  dim L;
  dim D = 64;
  input pose: SE3[L];
  input v: f32[L, D];
  output y = lie_attention(pose, v, heads = 4, tau = [0.5, 1.0, 2.0, 4.0],
                           lambda = [1.0, 0.5]);
}
"""


def median_ms(fn, n):
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * sorted(times)[len(times) // 2]


def demo_fused(quick):
    import torsor
    L = 512 if quick else 2048
    print("\n== Fused against unfused: one SE(3) lie_attention (4 heads, D = 64, f32), "
          "L = %d" % L)
    pose = torsor.groups.random("SE3", L, seed=0)
    v = np.random.default_rng(1).standard_normal((L, 64)).astype(np.float32)
    unfused = torsor.compile(ATTENTION, opt=0)
    fused = torsor.compile(ATTENTION)
    a, b = unfused(pose=pose, v=v), fused(pose=pose, v=v)
    t0 = median_ms(lambda: unfused(pose=pose, v=v), 3)
    t1 = median_ms(lambda: fused(pose=pose, v=v), 3 if quick else 10)
    print("-O0 (unfused: L×L scores in memory)  %9.2f ms" % t0)
    print("-O2 (fused flash-style kernel)        %9.2f ms   %.1fx faster, max |Δ| %.1e"
          % (t1, t0 / t1, float(np.max(np.abs(a - b)))))


TRAIN = """model DemoTrain {
  dim L;
  dim D = 16;
  input pose: SE3[L];
  input x: f32[L, D];
  input target: f32[L, D];
  param Wv: f32[D, D];
  param Wo: f32[D, D];
  let y = x + lie_attention(pose, x @ Wv, heads = 2, tau = [1.0, 4.0],
                            lambda = [1.0, 0.5]) @ Wo;
  output loss = mse(y, target);
}
"""


def demo_training(quick):
    import torsor
    from torsor.train import Adam, init_params, train
    print("\n== Training through the compiled backward (torsorc --grad): a student "
          "SE(3) attention layer learns a teacher's outputs")
    model = torsor.compile(TRAIN, opt=0, grad=True)
    # The teacher: the same layer without the loss, with other weights.
    teacher = torsor.compile(TRAIN.replace("output loss = mse(y, target);", "output out = y;")
                             .replace("  input target: f32[L, D];\n", ""), opt=0)
    teacher.set_params({k: 2.0 * v for k, v in init_params(model, seed=1).items()})
    rng = np.random.default_rng(0)
    data = []
    for _ in range(16):
        pose = torsor.groups.random("SE3", 32, seed=rng)
        x = rng.standard_normal((32, 16)).astype(np.float32)
        data.append({"pose": pose, "x": x, "target": teacher(pose=pose, x=x)})
    student = init_params(model, seed=2)
    steps = 40 if quick else 1000

    def batches():
        i = 0
        while True:
            yield data[i % len(data)]
            i += 1
    start = time.perf_counter()
    losses = train(model, student, batches(), Adam(lr=1e-2), steps=steps,
                   log_every=steps // 4)
    print("torsor.train (NumPy Adam): loss %.4f -> %.4f in %.1f s%s" % (
        losses[0], losses[-1], time.perf_counter() - start,
        "" if losses[-1] < losses[0] else "  error: the loss did not go down"))
    try:
        import torch
        import torsor.torch
    except ImportError:
        print("(PyTorch is not installed: skipping the same loop through torch.autograd)")
        return
    layer = torsor.torch.TorsorModule(model, params=init_params(model, seed=2))
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    first = last = None
    start = time.perf_counter()
    for step in range(steps):
        b = {k: torch.from_numpy(v) for k, v in data[step % len(data)].items()}
        loss = layer(**b)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
    print("torsor.torch (torch.optim.Adam, loss.backward()): loss %.4f -> %.4f in %.1f s%s"
          % (first, last, time.perf_counter() - start,
             "" if last < first else "  error: the loss did not go down"))


def demo_redundancy(build):
    print("\n== Redundancy: torsorc examples/standard_attention.tsr --report=redundancy")
    torsorc = os.path.join(build, "bin", "torsorc")
    for name, keep in (("standard_attention.tsr", lambda l: not l.startswith("block 2")),
                       ("relational_attention.tsr", lambda l: l.startswith("totals"))):
        r = subprocess.run([torsorc, os.path.join("examples", name), "--report=redundancy"],
                           capture_output=True, text=True, cwd=ROOT)
        if r.returncode != 0:
            print("%s: error: %s" % (name, r.stderr.strip()))
            continue
        lines = r.stdout.splitlines()
        if name == "standard_attention.tsr":
            cut = next((i for i, l in enumerate(lines) if l.startswith("block 2")), len(lines))
            tail = [l for l in lines[cut:] if not l.startswith(" ") and not l.startswith("block")]
            lines = lines[:cut] + ["(block 2 is the same)"] + tail
        else:
            print("\nafter torsorc --relationalize (examples/relational_attention.tsr):")
            lines = [l for l in lines if keep(l)] or lines[-1:]
        for l in lines:
            print("  " + l)


def demo_python():
    import torsor
    print("\n== The Python call")
    print('''  import torsor
  m = torsor.compile("examples/se2_planar.tsr")           # torsorc, cached by source hash
  m.set_params({p.name: ... for p in m.params})
  out = m(pose=torsor.groups.random("SE2", 10), obs=obs)  # NumPy or torch CPU tensors''')
    m = torsor.compile(os.path.join(ROOT, "examples", "se2_planar.tsr"))
    rng = np.random.default_rng(0)
    m.set_params({p.name: rng.standard_normal(p.concrete_shape({})).astype(np.float32) * 0.2
                  for p in m.params})
    out = m(pose=torsor.groups.random("SE2", 10, seed=1),
            obs=rng.standard_normal((10, 32)).astype(np.float32))
    print("  -> %s" % ", ".join("%s %s" % (k, "x".join(map(str, v.shape)))
                                for k, v in out.items()))
    print("  %r" % m)


NOT_YET = [
    "no compiled model has run on a real GPU in this project's CI: the NVPTX path "
    "(--target=nvptx, fused kernels, backward) is tested against a stand-in driver "
    "(scripts/gpu-check.sh runs the real check on a GPU machine)",
    "torsor.torch on CUDA tensors (nvptx models; device memory bound without copies, "
    "forward and backward) is tested against the stand-in driver only",
    "second derivatives (double backward, gradient penalties) through a Torsor layer: "
    "refused with a clear error",
    "optimisation on the quotient is a torch optimizer wrapper (torsor.quotient), "
    "not an option of torsor.train's NumPy optimizers",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--quick", action="store_true",
                        help="-O0 examples, short sequences, few steps (the test's mode)")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    os.environ.setdefault("TORSOR_BUILD_DIR", build)
    demo_groups(build)
    demo_fused(args.quick)
    demo_examples(build, args.quick)
    demo_training(args.quick)
    demo_redundancy(build)
    demo_python()
    print("\n== Not there yet")
    for line in NOT_YET:
        print("- " + line)


if __name__ == "__main__":
    main()
