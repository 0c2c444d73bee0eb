#!/usr/bin/env python3
"""torsor.torch on CUDA tensors, on the GPU machine (a step of gpu-check.sh).

Staged by scripts/gpu-check-prepare.sh as STAGE/torch_check.py next to a
copy of the torsor package (STAGE/python/torsor). For the staged --grad
models of se3_pose_attention (NAME.grad.cpu.so and NAME.grad.nvptx.so),
with the staged inputs and weights: TorsorModule over the nvptx model on
CUDA tensors against TorsorModule over the CPU model on CPU tensors.
Forward relative error ≤ TOL; gradients of every param, of the float
input and of the pose input (the ambient gradient of a group input)
≤ GRAD_TOL. The CUDA layer must stay on the device both ways: its forward
and backward go through torsor._device (torsorModuleRunBackwardDevice for
the backward), and the host-memory Model.run / Model.backward are never
called for it (counted; a host round trip is reported as HOSTCOPY).
Prints one last line:

    torch-check: ok|MISMATCH|HOSTCOPY|FAILED fwd <err> bwd <err> [note]

usage: torch_check.py STAGE [TOL] [GRAD_TOL]
"""
import json
import os
import struct
import sys

STAGE = os.path.abspath(sys.argv[1])
TOL = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-5
GRAD_TOL = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
sys.path.insert(0, os.path.join(STAGE, "python"))
os.environ.setdefault("TORSOR_RUNTIME_LIB", os.path.join(STAGE, "lib", "libtorsor_runtime.so"))


def read_safetensors(path):
    """{name: NumPy array} of an F32/F64 .safetensors file."""
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        dt = {"F32": np.float32, "F64": np.float64}[v["dtype"]]
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[a:b], dt).reshape(v["shape"]).copy()
    return out


def main():
    try:
        import numpy as np
        import torch
        import torsor.torch as ttorch
    except ImportError as e:
        print("torch-check: FAILED fwd - bwd - (%s)" % e)
        return 1
    if not torch.cuda.is_available():
        print("torch-check: FAILED fwd - bwd - (torch sees no CUDA device)")
        return 1
    plan = json.load(open(os.path.join(STAGE, "plan.json")))
    ex = next((e for e in plan["examples"] if e["name"] == "se3_pose_attention"), None)
    if ex is None or not (ex.get("grad") or {}).get("nvptx"):
        print("torch-check: FAILED fwd - bwd - (no staged se3_pose_attention --grad nvptx model)")
        return 1
    params = read_safetensors(os.path.join(STAGE, ex["weights"]))
    inputs = {k: torch.from_numpy(np.load(os.path.join(STAGE, v))) for k, v in ex["inputs"].items()}
    cpu = ttorch.TorsorModule(os.path.join(STAGE, ex["grad"]["nvptx"].replace(".nvptx.", ".cpu.")),
                              params=params)
    gpu = ttorch.TorsorModule(os.path.join(STAGE, ex["grad"]["nvptx"]), params=params).cuda()
    # Count the calls of each path: the CUDA layer must use torsor._device
    # (device memory) both ways and never the host-memory Model.run /
    # Model.backward, which the CPU layer uses.
    from torsor import _device
    from torsor.model import Model
    counts = {}

    def counted(owner, label, name):
        inner = getattr(owner, name)

        def wrapper(*a, **k):
            counts[label] = counts.get(label, 0) + 1
            return inner(*a, **k)
        setattr(owner, name, wrapper)
    for owner, label in ((_device, "_device"), (Model, "Model")):
        for name in ("run", "backward"):
            counted(owner, "%s.%s" % (label, name), name)
    results = []
    for layer, dev in ((cpu, "cpu"), (gpu, "cuda")):
        counts.clear()
        x = inputs["x"].to(dev).requires_grad_()
        pose = inputs["pose"].to(dev).requires_grad_()
        y = layer(pose=pose, x=x)
        cot = torch.sin(torch.arange(y.numel(), dtype=y.dtype, device=dev)).reshape(y.shape)
        (y * cot).sum().backward()
        grads = {"x": x.grad.cpu(), "pose": pose.grad.cpu()}
        grads.update({n: p.grad.cpu() for n, p in layer.named_parameters()})
        results.append((y.detach().cpu(), grads, dict(counts)))
    gpu_counts = results[1][2]
    on_device = (gpu_counts.get("_device.run", 0) >= 1
                 and gpu_counts.get("_device.backward", 0) >= 1
                 and not gpu_counts.get("Model.run") and not gpu_counts.get("Model.backward"))

    def rel(a, b):
        a, b = a.double(), b.double()
        return float((a - b).norm() / b.norm().clamp_min(1e-300))
    fwd = rel(results[1][0], results[0][0])
    errs = {k: rel(results[1][1][k], results[0][1][k]) for k in results[0][1]}
    worst = max(errs, key=errs.get)
    bwd = errs[worst]
    verdict = "ok" if fwd <= TOL and bwd <= GRAD_TOL else "MISMATCH"
    if verdict == "ok" and not on_device:
        verdict = "HOSTCOPY"
    print("torch-check: %s fwd %.2e bwd %.2e (worst gradient %s; cuda calls %s)"
          % (verdict, fwd, bwd, worst,
             ", ".join("%s %d" % kv for kv in sorted(gpu_counts.items()))))
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # one line for the table, the traceback above it
        import traceback
        traceback.print_exc()
        print("torch-check: FAILED fwd - bwd - (%s: %s)" % (type(e).__name__, str(e)[:200]))
        sys.exit(1)
