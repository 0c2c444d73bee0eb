#!/usr/bin/env python3
"""Stages the example models for scripts/gpu-check.sh (called by
scripts/gpu-check-prepare.sh, on the build machine, never on the GPU one).

For every example already compiled into STAGE/models/NAME.cpu.so (and,
where the compiler could, NAME.nvptx.so), draws seeded random inputs and
params from the CPU manifest (group inputs are random group elements,
as in test/Models), writes them as .npy / .safetensors under
STAGE/data/NAME/, runs the CPU model with torsor-run to get the reference
outputs the GPU outputs are compared with, and writes STAGE/plan.json:

    {"gpu_arch": "sm_90", "dim_size": 256, "examples": [
      {"name": ..., "cpu": "models/NAME.cpu.so", "nvptx": "models/NAME.nvptx.so"
       or null, "nvptx_error": "..." (when null), "inputs": {name: path},
       "weights": path, "outputs": {name: reference path}, "dims": {...},
       "grad": {"nvptx": ..., "cotangents": {output: path},
                "gradients": {grad.NAME: reference path}} (torsorc --grad
       models staged as NAME.grad.{cpu,nvptx}.so only)}]}

Paths in the plan are relative to STAGE, so the folder can be carried.

usage: gpu_check_stage.py STAGE TORSOR_RUN REPO DIM_SIZE GPU_ARCH
"""
import json
import os
import subprocess
import sys

import numpy as np

REPO = sys.argv[3]
sys.path.insert(0, os.path.join(REPO, "test", "lib"))
from model_runner import (parse_declared_groups, random_group_elements,  # noqa: E402
                          write_safetensors)

_NP = {"f32": np.float32, "f64": np.float64, "i64": np.int64}


def stage_example(stage, name, torsor_run, dim_size, seed):
    """Writes data/NAME/ and returns the example's plan entry."""
    with open(os.path.join(stage, "models", name + ".cpu.json")) as f:
        manifest = json.load(f)
    with open(os.path.join(REPO, "examples", name + ".tsr")) as f:
        declared = parse_declared_groups(f.read())
    dims = {d: dim_size for d in manifest["dims"]}
    rng = np.random.default_rng(seed)
    data = os.path.join("data", name)
    os.makedirs(os.path.join(stage, data), exist_ok=True)

    def shape(e):
        return tuple(dims[s] if isinstance(s, str) else s for s in e["shape"])

    inputs = {}
    for e in manifest["inputs"]:
        s = shape(e)
        if "group" in e:
            lead = s[:-2]
            count = int(np.prod(lead)) if lead else 1
            a = random_group_elements(rng, e["group"], count,
                                      declared.get(e["group"])).reshape(s)
        elif e["dtype"] == "i64":
            a = rng.integers(0, 4, size=s)
        else:
            a = rng.standard_normal(s)
        path = os.path.join(data, "in.%s.npy" % e["name"])
        np.save(os.path.join(stage, path), np.ascontiguousarray(a, dtype=_NP[e["dtype"]]))
        inputs[e["name"]] = path
    params = {}
    for e in manifest["params"]:
        s = shape(e)
        fan_in = s[-2] if len(s) >= 2 else 1
        params[e["name"]] = rng.standard_normal(s) / np.sqrt(fan_in)
    weights = None
    if params:
        weights = os.path.join(data, "weights.safetensors")
        write_safetensors(os.path.join(stage, weights), params,
                          manifest.get("dtype", "f32"))
    outputs = {e["name"]: os.path.join(data, "ref.%s.npy" % e["name"])
               for e in manifest["outputs"]}
    bind = []
    for k, v in inputs.items():
        bind += ["--input", "%s=%s" % (k, os.path.join(stage, v))]
    if weights:
        bind += ["--weights", os.path.join(stage, weights)]
    cmd = [torsor_run, os.path.join(stage, "models", name + ".cpu.so")] + bind
    for k, v in outputs.items():
        cmd += ["--output", "%s=%s" % (k, os.path.join(stage, v))]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit("gpu-check-prepare: the CPU model of %s failed:\n%s"
                         % (name, res.stderr))
    entry = {"name": name, "dims": dims, "inputs": inputs, "weights": weights,
             "outputs": outputs, "cpu": os.path.join("models", name + ".cpu.so")}
    if os.path.exists(os.path.join(stage, "models", name + ".grad.cpu.so")):
        entry["grad"] = stage_backward(stage, name, torsor_run, bind, manifest,
                                       shape, rng)
    return entry


def stage_backward(stage, name, torsor_run, bind_args, manifest, shape, rng):
    """The backward's plan entry: seeded cotangents (one per output) and the
    CPU grad model's gradients for them, on the example's inputs/weights."""
    data = os.path.join("data", name)
    cots = {}
    for e in manifest["outputs"]:
        path = os.path.join(data, "cot.%s.npy" % e["name"])
        np.save(os.path.join(stage, path),
                np.asarray(rng.standard_normal(shape(e)), dtype=_NP[e["dtype"]]))
        cots[e["name"]] = path
    with open(os.path.join(stage, "models", name + ".grad.cpu.json")) as f:
        grads = [g["name"] for g in json.load(f)["backward"]["gradients"]]
    refs = {g: os.path.join(data, "gref.%s.npy" % g) for g in grads}
    cmd = [torsor_run, os.path.join(stage, "models", name + ".grad.cpu.so")] + bind_args
    for k, v in cots.items():
        cmd += ["--cotangent", "%s=%s" % (k, os.path.join(stage, v))]
    for k, v in refs.items():
        cmd += ["--gradient", "%s=%s" % (k, os.path.join(stage, v))]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit("gpu-check-prepare: the CPU backward of %s failed:\n%s"
                         % (name, res.stderr))
    entry = {"cotangents": cots, "gradients": refs}
    nv = os.path.join("models", name + ".grad.nvptx.so")
    if os.path.exists(os.path.join(stage, nv)):
        entry["nvptx"] = nv
    else:
        entry["nvptx"] = None
        with open(os.path.join(stage, "models", name + ".grad.nvptx.err")) as f:
            lines = f.read().strip().splitlines()
            entry["nvptx_error"] = lines[-1] if lines else "torsorc failed"
    return entry


def main():
    stage, torsor_run, _, dim_size, arch = sys.argv[1:6]
    dim_size = int(dim_size)
    plan = {"gpu_arch": arch, "dim_size": dim_size, "examples": []}
    names = sorted(f[:-len(".cpu.so")] for f in os.listdir(os.path.join(stage, "models"))
                   if f.endswith(".cpu.so") and not f.endswith(".grad.cpu.so"))
    for i, name in enumerate(names):
        entry = stage_example(stage, name, torsor_run, dim_size, seed=i)
        nv = os.path.join("models", name + ".nvptx.so")
        err = os.path.join(stage, "models", name + ".nvptx.err")
        if os.path.exists(os.path.join(stage, nv)):
            entry["nvptx"] = nv
        else:
            entry["nvptx"] = None
            with open(err) as f:
                lines = f.read().strip().splitlines()
                entry["nvptx_error"] = lines[-1] if lines else "torsorc failed"
        plan["examples"].append(entry)
    with open(os.path.join(stage, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)
    missing = [e["name"] for e in plan["examples"] if not e["nvptx"]]
    print("staged %d examples (L = %d), %d with an nvptx model"
          % (len(names), dim_size, len(names) - len(missing)))


if __name__ == "__main__":
    main()
