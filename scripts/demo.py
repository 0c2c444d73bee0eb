#!/usr/bin/env python3
"""`make demo`: show what Torsor can do today, honestly.

1. Compiles every built-in group's lie ops (log, exp, compose, dist2) for
   the CPU with torsorc (MLIR → LLVM → .so), runs them on seeded random
   group elements and prints round-trip and left-invariance errors against
   float64, and the time per element.
2. Compiles each example model under examples/ to a shared library, runs
   it with torsor-run on seeded random inputs, prints a summary, the time
   per forward pass, and for every input the manifest claims left-invariant,
   the change of the output when all poses are left-multiplied by one
   random group element.
3. Says what is not there yet.
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


def run_example(build, path, workdir, length=64):
    """Compiles one example, runs it on seeded inputs, checks invariance."""
    import json
    torsorc = os.path.join(build, "bin", "torsorc")
    run = os.path.join(build, "bin", "torsor-run")
    so = os.path.join(workdir, os.path.basename(path).replace(".tsr", ".so"))
    r = subprocess.run([torsorc, path, "-o", so], capture_output=True, text=True)
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
    args, groups = [], {}
    for t in manifest["inputs"]:
        shape = [dims.get(s, s) if isinstance(s, str) else s for s in t["shape"]]
        np_t = np.float64 if t["dtype"] == "f64" else np.float32
        if "group" in t:
            count = int(np.prod(shape[:-2]))
            value = sample_group(t["group"], rng, count).reshape(shape)
            groups[t["name"]] = t
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
    r = subprocess.run([run, so] + args + outs + ["--time", "20"], capture_output=True, text=True)
    if r.returncode != 0:
        return "runs with an error: " + (r.stderr.strip().splitlines() or ["?"])[0]
    timing = [l for l in r.stdout.splitlines() if "median" in l or "time" in l]
    first = np.load(os.path.join(workdir, "out_" + manifest["outputs"][0]["name"] + ".npy"))
    summary = "L=%d, out %s, |out| max %.3g" % (length, "x".join(map(str, first.shape)),
                                                float(np.max(np.abs(first))))
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
        summary += ", invariance error %.2e (%s)" % (
            float(np.max(np.abs(again.astype(np.float64) - first))), name)
    if timing:
        summary += ", " + timing[0].strip()
    return summary


def demo_examples(build):
    import tempfile
    examples = sorted(glob.glob(os.path.join(ROOT, "examples", "*.tsr")))
    print("\n== Example models: torsorc → .so → torsor-run (seeded inputs)")
    if not examples:
        print("no examples yet")
        return
    # The SE(3) pose-attention example first: it is the headline.
    examples.sort(key=lambda p: "se3" not in os.path.basename(p))
    for path in examples:
        with tempfile.TemporaryDirectory(prefix="torsor-demo-") as workdir:
            print("%-32s %s" % (os.path.relpath(path, ROOT), run_example(build, path, workdir)))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    demo_groups(build)
    demo_examples(build)
    print("\n== Not there yet")
    print("- fused (flash-style) attention and vectorized pairwise kernels")
    print("- the NVPTX/GPU path")


if __name__ == "__main__":
    main()
