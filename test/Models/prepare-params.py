# RUN: %python %s %torsor_src %torsor_bin | FileCheck %s
# CHECK: == packed params (torsor_prepare)
# CHECK: all {{[0-9]+}} checks passed
"""Dense products pack their param operands once per load
(docs/precision.md, docs/runtime.md "Packed params").

A product by a param gets its packed copy from the model's `torsor_prepare`
entry, which the runtime runs at the first run and after params change:
VNNI pairs on a CPU with a bf16 unit under `--compute=bf16` (AMX:
--mcpu=sapphirerapids; AVX512-BF16 without AMX: --mcpu=cooperlake), and
the f32 kernel's column panels otherwise (the fma fallback of bf16,
--mcpu=generic, and `--compute=f32` on this CPU). Checked:
  - the manifest has "prepare" with a byte count for every unit (code
    generation only);
  - results are bit-identical to packing per call: the same model with its
    params passed as inputs (inputs are never prepared) gives the same bits;
  - params bound again after a run (set_params) and loaded from a
    .safetensors bundle (load_weights) are honoured: the next run equals a
    freshly loaded model's run with those params, and differs from the run
    before;
  - the example standard_attention (projections by params, heads' products
    by activations) matches the per-call packing too.
Runs need the unit's CPU features (/proc/cpuinfo); missing ones are skipped
with the reason.
"""
import json
import os
import sys
import tempfile

import numpy as np

SRC, BIN = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "python"))
os.environ["TORSOR_BUILD_DIR"] = os.path.dirname(os.path.abspath(BIN))
import torsor  # noqa: E402
from model_runner import write_safetensors  # noqa: E402
from torsor_testing import Report, cpu_flags  # noqa: E402

CPU_FLAGS = cpu_flags()

# (unit, --mcpu or None for this CPU, CPU flags a run needs, compute,
# least bytes packed: two bf16 copies padded to 64 x 96, or two f32 copies
# of 40 x 72).
UNITS = [("amx", "sapphirerapids", {"avx512f", "avx512_bf16", "amx_tile",
                                    "amx_bf16"}, "bf16", 2 * 64 * 96 * 2),
         ("avx512bf16", "cooperlake", {"avx512f", "avx512_bf16"}, "bf16",
          2 * 64 * 96 * 2),
         ("fma", "generic", set(), "bf16", 2 * 40 * 72 * 4),
         ("f32", None, set(), "f32", 2 * 40 * 72 * 4)]

# W1 and W2 as params, or (the per-call reference) as inputs.
MODEL = """model Dense {{
  dim L;
  dim D = 40;
  dim F = 72;
  input x: f32[L, D];
  {kind} W1: f32[D, F];
  {kind} W2: f32[D, F];
  output y = (x @ W1) @ transpose(W2);
  output z = x @ W1;
}}
"""


def main():
    report = Report("packed params (torsor_prepare)")
    work = tempfile.TemporaryDirectory(prefix="torsor-prepare-")
    rng = np.random.default_rng(8)
    paths = {}
    for kind in ("param", "input"):
        paths[kind] = os.path.join(work.name, kind + ".tsr")
        with open(paths[kind], "w") as f:
            f.write(MODEL.format(kind=kind))

    def build(kind, unit, cpu, compute, tag="", runs=True):
        out = os.path.join(work.name, "%s-%s%s" % (kind, unit, tag),
                           "model.so")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        flags = ["--mcpu=" + cpu] if cpu else []
        try:
            return torsor.compile(paths[kind], compute=compute, output=out,
                                  cache=False, flags=flags), out
        except torsor.errors.UnavailableError:
            # Compiled (the manifest is there), but its unit cannot run
            # here: the load refuses it, as it should.
            if runs:
                raise
            return None, out

    for unit, cpu, needs, compute, least in UNITS:
        model, so = build("param", unit, cpu, compute,
                          runs=not (needs - CPU_FLAGS))
        with open(so[:-3] + ".json") as f:
            prepare = json.load(f).get("prepare", {})
        # W1 (40 x 72; bf16 padded to 64 x 96) and W2ᵀ (72 x 40; bf16
        # padded to 96 x 64; x @ W1 is W1's copy again, or shares it).
        report.check("%s: manifest prepare %s" % (unit, prepare),
                     0 if prepare.get("entry") == "torsor_prepare" and
                     prepare.get("bytes", 0) >= least else 1, 0)
        missing = needs - CPU_FLAGS
        if missing:
            print("skip: %s runs not checked, this CPU lacks %s"
                  % (unit, " ".join(sorted(missing))))
            continue
        reference, _ = build("input", unit, cpu, compute)
        p1 = {"W1": rng.standard_normal((40, 72)),
              "W2": rng.standard_normal((40, 72))}
        p2 = {"W1": rng.standard_normal((40, 72)),
              "W2": rng.standard_normal((40, 72))}
        f32 = {k: np.asarray(v, np.float32) for k, v in p1.items()}
        for L in (0, 1, 17, 70):
            x = rng.standard_normal((L, 40)).astype(np.float32)
            model.set_params(p1)
            got = model.run({"x": x})
            want = reference.run(dict(x=x, **f32))
            for out in ("y", "z"):
                same = np.array_equal(got[out], want[out])
                report.check("%s L=%d %s: bit-identical to per-call packing"
                             % (unit, L, out), 0 if same else 1, 0)
        # Params changed after the first run: set_params, then load_weights.
        x = rng.standard_normal((33, 40)).astype(np.float32)
        model.set_params(p1)
        before = model.run({"x": x})["y"]
        model.set_params(p2)
        after = model.run({"x": x})["y"]
        fresh, _ = build("param", unit, cpu, compute, "-fresh")
        fresh.set_params(p2)
        want2 = fresh.run({"x": x})["y"]
        report.check("%s: set_params after a run is honoured" % unit,
                     0 if np.array_equal(after, want2) and
                     not np.array_equal(after, before) else 1, 0)
        bundle = os.path.join(work.name, "p1-%s.safetensors" % unit)
        write_safetensors(bundle, p1, "f32")
        model.load_weights(bundle)
        again = model.run({"x": x})["y"]
        report.check("%s: load_weights after a run is honoured" % unit,
                     0 if np.array_equal(again, before) else 1, 0)

    # A whole example: projections prepared, heads' products per call.
    tsr = os.path.join(SRC, "examples", "standard_attention.tsr")
    if UNITS[0][2] <= CPU_FLAGS or UNITS[1][2] <= CPU_FLAGS:
        out = os.path.join(work.name, "sa", "model.so")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        m = torsor.compile(tsr, compute="bf16", output=out, cache=False)
        with open(out[:-3] + ".json") as f:
            has = "prepare" in json.load(f)
        report.check("standard_attention: manifest has prepare", 0 if has else 1, 0)
        spec = {p.name: p for p in m.params} if hasattr(m, "params") else {}
        params = {name: rng.standard_normal(tuple(s.shape)) * 0.1
                  for name, s in spec.items()}
        x = rng.standard_normal((40, 64)).astype(np.float32)
        m.set_params(params)
        first = m.run({"x": x})["y"]
        second = m.run({"x": x})["y"]
        other = {k: v * 1.5 for k, v in params.items()}
        m.set_params(other)
        third = m.run({"x": x})["y"]
        out2 = os.path.join(work.name, "sa2", "model.so")
        os.makedirs(os.path.dirname(out2), exist_ok=True)
        m2 = torsor.compile(tsr, compute="bf16", output=out2, cache=False)
        m2.set_params(other)
        want3 = m2.run({"x": x})["y"]
        report.check("standard_attention: repeated run bit-identical",
                     0 if np.array_equal(first, second) else 1, 0)
        report.check("standard_attention: changed params honoured",
                     0 if np.array_equal(third, want3) and
                     not np.array_equal(third, first) else 1, 0)
    else:
        print("skip: standard_attention not run, this CPU has no bf16 unit")
    report.finish()


main()
