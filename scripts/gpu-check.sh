#!/usr/bin/env bash
#===- gpu-check.sh - Check and time the staged models on a GPU machine ----===#
#
# Runs on the GPU machine (which has the NVIDIA driver, python3 with NumPy
# and PyTorch, and no LLVM/MLIR), from the folder scripts/gpu-check-prepare.sh
# staged on the build machine:
#   1. environment: the GPU (nvidia-smi), python3 + NumPy, torsor-run and
#      every model resolving their libraries;
#   2. every example's nvptx model with `torsor-run --device cuda` on the
#      staged inputs, compared with the CPU model's outputs computed at
#      staging: relative error ||gpu - cpu|| / ||cpu|| <= 1e-5 (f32), no
#      NaN, same shape; where a backward was staged (torsorc --grad), its
#      gradients for the staged cotangents against the CPU model's
#      (--grad-tol, default 1e-4);
#   3. timings: `torsor-run --time` of each passing model on the GPU and of
#      its CPU model on this machine's cores;
#   2b. when staged (torch_check.py, from scripts/gpu_torch_check.py):
#      torsor.torch's TorsorModule over the nvptx se3_pose_attention --grad
#      model on CUDA tensors against the CPU model on CPU tensors, forward
#      (--tol) and gradients of params, x and pose (--grad-tol), the CUDA
#      layer staying on the device both ways (torsorModuleRunBackwardDevice;
#      HOSTCOPY if it went through host memory), one row "torsor.torch cuda";
#   2c. when staged (ring_check.py, from scripts/gpu_ring_check.py):
#      torsor.distributed.RingLieAttention on CUDA tensors against the
#      single-process result, rows and gradients: world size 1 over NCCL,
#      then 2 processes: over NCCL with 2 GPUs (the real NCCL ring), else
#      over gloo with both ranks on GPU 0 (NCCL needs a GPU per rank), each
#      with the reference block kernels and with Torsor's compiled CUDA
#      kernels (the nvptx block forward/backward and GrassmannMix's halo
#      models that gpu-check-prepare.sh prebuilt into STAGE/prebuilt, loaded
#      by torsor.nn without torsorc); one line per run ("ring-check run:
#      ...") and one row "torsor.distributed nccl" (SKIPPED, not counted,
#      without torsor/CUDA/NCCL);
#   4. bench/gpu_attention.py (Lie attention against PyTorch SDPA and
#      FlexAttention), when it was staged, as `python3 gpu_attention.py
#      BENCH_ARGS` with TORSOR_RUN, TORSOR_RUNTIME_LIB and TORSOR_GPU_STAGE
#      set to the staged torsor-run, runtime library and stage folder.
# Every step has its own timeout so one hang cannot eat the lease. A table
# is printed last; logs and outputs go to $OUT when set (the device tool
# brings that folder back), else to STAGE/results.
#
# usage: gpu-check.sh [--stage DIR] [--dry-run] [--tol T] [--grad-tol T] [--time N]
#                     [--no-bench] [--bench-args "ARGS"] [--step-timeout S]
#   --dry-run        check the stage and print the plan; needs no GPU
#   --tol T          relative tolerance (default 1e-5)
#   --grad-tol T     relative tolerance of gradients (default 1e-4)
#   --time N         timed runs per model (default 20; 0 skips timing)
#   --no-bench       skip bench/gpu_attention.py
#   --bench-args A   arguments for bench/gpu_attention.py
#   --step-timeout S seconds per torsor-run (default 120; bench: 4x)
#
# Exit status: 0 when every example ran on the GPU and matched; 1 otherwise
# (for --dry-run: when the stage is incomplete).
#
#===----------------------------------------------------------------------===#
set -uo pipefail

STAGE=$(cd "$(dirname "$0")" && pwd)
[ -f "$STAGE/plan.json" ] || STAGE=$(cd "$(dirname "$0")/.." && pwd)/build/gpu-check
DRY=0 TOL=1e-5 GRAD_TOL=1e-4 TIMES=20 BENCH=1 BENCH_ARGS="" STEP=120
while [ $# -gt 0 ]; do
  case "$1" in
    --stage) STAGE=$2; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --tol) TOL=$2; shift 2 ;;
    --grad-tol) GRAD_TOL=$2; shift 2 ;;
    --time) TIMES=$2; shift 2 ;;
    --no-bench) BENCH=0; shift ;;
    --bench-args) BENCH_ARGS=$2; shift 2 ;;
    --step-timeout) STEP=$2; shift 2 ;;
    -h|--help) sed -n '3,53p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
if [ ! -f "$STAGE/plan.json" ]; then
  echo "gpu-check: no stage at '$STAGE' (no plan.json); run scripts/gpu-check-prepare.sh on the build machine first" >&2
  exit 1
fi
RESULTS=${OUT:-$STAGE/results}
mkdir -p "$RESULTS"

export STAGE DRY TOL GRAD_TOL TIMES BENCH BENCH_ARGS STEP RESULTS
exec python3 -u - "$@" <<'PYEOF'
"""The check itself (see the header of gpu-check.sh)."""
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

E = os.environ
STAGE, RESULTS = E["STAGE"], E["RESULTS"]
DRY, BENCH = E["DRY"] == "1", E["BENCH"] == "1"
TOL, TIMES, STEP = float(E["TOL"]), int(E["TIMES"]), int(E["STEP"])
GRAD_TOL = float(E["GRAD_TOL"])
RUN = os.path.join(STAGE, "bin", "torsor-run")
plan = json.load(open(os.path.join(STAGE, "plan.json")))
log = open(os.path.join(RESULTS, "gpu-check.log"), "w")
problems, rows = [], []


def say(*a):
    line = " ".join(str(x) for x in a)
    print(line)
    log.write(line + "\n")
    log.flush()


def sh(cmd, timeout):
    """Runs cmd; returns (rc, stdout, stderr, seconds); rc 124 on timeout."""
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = 124, "", "timed out after %d s" % timeout
    log.write("$ %s\n[rc %d]\n%s%s\n" % (" ".join(map(shlex.quote, cmd)), rc, out, err))
    return rc, out, err, time.time() - t0


def unresolved(path):
    """Libraries `ldd path` cannot find (empty when fine or ldd is absent)."""
    if not shutil.which("ldd"):
        return []
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    return [l.split()[0] for l in r.stdout.splitlines() if "not found" in l]


def model_args(ex, so, device):
    """torsor-run argv for one example."""
    cmd = [RUN, os.path.join(STAGE, so), "--device", device]
    for k, v in ex["inputs"].items():
        cmd += ["--input", "%s=%s" % (k, os.path.join(STAGE, v))]
    if ex.get("weights"):
        cmd += ["--weights", os.path.join(STAGE, ex["weights"])]
    return cmd


def grad_args(ex, g):
    """torsor-run argv for the backward of one example (torsorc --grad)."""
    cmd = model_args(ex, g["nvptx"], "cuda")
    for k, v in g["cotangents"].items():
        cmd += ["--cotangent", "%s=%s" % (k, os.path.join(STAGE, v))]
    return cmd


def compare(refs, got_paths, tol):
    """(verdict, worst relative error) of saved results against references."""
    worst = 0.0
    for k, ref_path in refs.items():
        ref = np.load(os.path.join(STAGE, ref_path)).astype(np.float64)
        got = np.load(got_paths[k]).astype(np.float64)
        if got.shape != ref.shape:
            return "SHAPE %s vs %s" % (got.shape, ref.shape), worst
        if not np.all(np.isfinite(got)) and np.all(np.isfinite(ref)):
            return "NaN/Inf", worst
        denom = np.linalg.norm(ref)
        e = np.linalg.norm(got - ref) / denom if denom > 0 else np.linalg.norm(got)
        worst = max(worst, float(e))
    return ("MISMATCH" if worst > tol else "ok"), worst


# --- 1. environment and stage ------------------------------------------------
say("== gpu-check: stage %s (gpu_arch %s, dims = %d)"
    % (STAGE, plan["gpu_arch"], plan["dim_size"]))
if shutil.which("nvidia-smi"):
    r = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version,memory.total",
                        "--format=csv,noheader"], capture_output=True, text=True)
    say("GPU:", (r.stdout.strip() or r.stderr.strip()))
else:
    # Not fatal: torsor-run says clearly when there is no driver or GPU.
    say("GPU: nvidia-smi not found" + (" (fine for a dry run)" if DRY else
                                      "; is this the GPU machine?"))
try:
    import numpy as np
    say("numpy", np.__version__)
except ImportError:
    np = None
    problems.append("python3 has no numpy (needed to compare outputs)")
if not os.access(RUN, os.X_OK):
    problems.append("missing %s" % RUN)
for lib in unresolved(RUN):
    problems.append("torsor-run cannot find %s" % lib)
for ex in plan["examples"]:
    files = [ex["cpu"]] + list(ex["inputs"].values()) + list(ex["outputs"].values())
    files += [ex["weights"]] if ex.get("weights") else []
    files += [ex["nvptx"], ex["nvptx"][:-3] + ".json"] if ex.get("nvptx") else []
    g = ex.get("grad")
    if g:
        files += list(g["cotangents"].values()) + list(g["gradients"].values())
        files += [g["nvptx"], g["nvptx"][:-3] + ".json"] if g.get("nvptx") else []
    for f in files:
        if not os.path.exists(os.path.join(STAGE, f)):
            problems.append("%s: missing %s" % (ex["name"], f))
    if ex.get("nvptx"):
        for lib in unresolved(os.path.join(STAGE, ex["nvptx"])):
            if not lib.startswith("libcuda"):
                problems.append("%s: nvptx model needs %s" % (ex["name"], lib))
bench = next((p for p in (os.path.join(STAGE, "bench", "gpu_attention.py"),
                          os.path.join(STAGE, "..", "..", "bench", "gpu_attention.py"))
              if os.path.exists(p)), None)

# The benchmark finds the staged tools through these variables; without
# --bench-args its table also goes to RESULTS/gpu_attention.json.
bench_env = dict(os.environ, TORSOR_RUN=RUN, TORSOR_GPU_STAGE=STAGE,
                 TORSOR_RUNTIME_LIB=os.path.join(STAGE, "lib", "libtorsor_runtime.so"))
bench_args = (shlex.split(E["BENCH_ARGS"])
              or ["--out", os.path.join(RESULTS, "gpu_attention.json")])

# --- the plan ------------------------------------------------------------------
n_gpu = sum(1 for ex in plan["examples"] if ex.get("nvptx"))
n_grad = sum(1 for ex in plan["examples"] if (ex.get("grad") or {}).get("nvptx"))
say("plan: %d examples, %d with an nvptx model; tolerance %g; %d timed runs each"
    % (len(plan["examples"]), n_gpu, TOL, TIMES))
for ex in plan["examples"]:
    if ex.get("nvptx"):
        say("  %-22s %s" % (ex["name"], " ".join(
            map(shlex.quote, model_args(ex, ex["nvptx"], "cuda")))
            .replace(STAGE + "/", "")))
    else:
        say("  %-22s NOT COMPILED for nvptx: %s" % (ex["name"], ex.get("nvptx_error", "?")))
    g = ex.get("grad")
    if g and g.get("nvptx"):
        say("  %-22s %s" % (ex["name"] + " grad", " ".join(
            map(shlex.quote, grad_args(ex, g))).replace(STAGE + "/", "")))
    elif g:
        say("  %-22s NOT COMPILED for nvptx --grad: %s"
            % (ex["name"] + " grad", g.get("nvptx_error", "?")))
TORCH_CHECK = os.path.join(STAGE, "torch_check.py")
if os.path.exists(TORCH_CHECK):
    say("  torsor.torch cuda: python3 torch_check.py STAGE %g %g" % (TOL, GRAD_TOL))
RING_CHECK = os.path.join(STAGE, "ring_check.py")
if os.path.exists(RING_CHECK):
    say("  torsor.distributed nccl: python3 ring_check.py STAGE %g" % TOL)
if BENCH:
    say("  bench: " + ("python3 %s %s" % (bench, " ".join(bench_args)) if bench
                       else "bench/gpu_attention.py not staged (skipped)"))
say("  worst case: %d s (each step's timeout)"
    % (n_gpu * STEP * (1 + (TIMES > 0) * 2) + n_grad * STEP
       + (4 * STEP if bench and BENCH else 0)
       + (4 * STEP if os.path.exists(RING_CHECK) else 0)))
if DRY:
    # The benchmark's own dry run: its models (target nvptx, the arch),
    # the staged runtime, and its score formulas where PyTorch is here.
    if BENCH and bench:
        r = subprocess.run(["python3", bench, "--dry-run", "--gpu-arch", plan["gpu_arch"]],
                           env=bench_env, capture_output=True, text=True, timeout=4 * STEP)
        for line in (r.stdout + r.stderr).splitlines():
            say("  bench dry run: " + line)
        if r.returncode != 0:
            problems.append("bench/gpu_attention.py --dry-run failed (rc %d)" % r.returncode)
    for p in problems:
        say("problem:", p)
    missing = len(plan["examples"]) - n_gpu
    if missing:
        say("dry run: %d example(s) have no nvptx model (see above)" % missing)
    say("dry run: %s" % ("stage complete" if not problems and not missing
                         else "stage INCOMPLETE"))
    sys.exit(0 if not problems and not missing else 1)
if problems:
    for p in problems:
        say("problem:", p)
    sys.exit(1)

# --- 2. correctness ----------------------------------------------------------------
ok_examples = []
for ex in plan["examples"]:
    name = ex["name"]
    if not ex.get("nvptx"):
        rows.append((name, "NOT COMPILED", "", "", ""))
        continue
    cmd = model_args(ex, ex["nvptx"], "cuda")
    outs = {k: os.path.join(RESULTS, "%s.gpu.%s.npy" % (name, k)) for k in ex["outputs"]}
    for k, v in outs.items():
        cmd += ["--output", "%s=%s" % (k, v)]
    rc, _, err, secs = sh(cmd, STEP)
    if rc != 0:
        last = err.strip().splitlines()[-1] if err.strip() else "rc %d" % rc
        last = last.replace("torsor-run: error: ", "").replace(STAGE + "/", "")
        rows.append((name, "RUN FAILED", "", "", last[:240]))
        continue
    verdict, worst = compare(ex["outputs"], outs, TOL)
    rows.append((name, verdict, "%.2e" % worst, "", ""))
    if verdict == "ok":
        ok_examples.append(ex)
    # The backward (torsorc --grad), where it was staged: the gradients of
    # the same inputs and weights for the staged cotangents, against the
    # CPU model's, within --grad-tol (longer f32 chains, other sum orders).
    g = ex.get("grad")
    if not g:
        continue
    if not g.get("nvptx"):
        rows.append((name + " grad", "NOT COMPILED", "", "", g.get("nvptx_error", "")[:240]))
        continue
    cmd = grad_args(ex, g)
    grads = {k: os.path.join(RESULTS, "%s.gpu.%s.npy" % (name, k)) for k in g["gradients"]}
    for k, v in grads.items():
        cmd += ["--gradient", "%s=%s" % (k, v)]
    rc, _, err, secs = sh(cmd, STEP)
    if rc != 0:
        last = err.strip().splitlines()[-1] if err.strip() else "rc %d" % rc
        last = last.replace("torsor-run: error: ", "").replace(STAGE + "/", "")
        rows.append((name + " grad", "RUN FAILED", "", "", last[:240]))
        continue
    verdict, worst = compare(g["gradients"], grads, GRAD_TOL)
    rows.append((name + " grad", verdict, "%.2e" % worst, "", ""))

# --- 2b. torsor.torch on CUDA tensors (when staged) ----------------------------------
if os.path.exists(TORCH_CHECK):
    rc, out, err, secs = sh(["python3", TORCH_CHECK, STAGE, str(TOL), str(GRAD_TOL)], 2 * STEP)
    last = next((l for l in reversed(out.splitlines()) if l.startswith("torch-check:")),
                "torch-check: FAILED fwd - bwd - (rc %d: %s)"
                % (rc, (err.strip().splitlines() or ["no output"])[-1][:200]))
    f = last.split()
    verdict = "ok" if f[1] == "ok" and rc == 0 else f[1]
    rows.append(("torsor.torch cuda", verdict, f[3] if len(f) > 3 else "",
                 "", " ".join(f[4:])[:240]))

# --- 2c. torsor.distributed over NCCL (when staged) -----------------------------------
if os.path.exists(RING_CHECK):
    rc, out, err, secs = sh(["python3", RING_CHECK, STAGE, str(TOL)], 4 * STEP)
    last = next((l for l in reversed(out.splitlines()) if l.startswith("ring-check:")),
                "ring-check: FAILED ws1 - ws2 - (rc %d: %s)"
                % (rc, (err.strip().splitlines() or ["no output"])[-1][:200]))
    for line in out.splitlines():
        if line.startswith("ring-check run:"):
            say("torsor.distributed: " + line[len("ring-check run:"):].strip())
    f = last.split()
    if f[1] == "SKIPPED":
        say("torsor.distributed nccl: skipped %s" % " ".join(f[6:]))
    else:
        verdict = "ok" if f[1] == "ok" and rc == 0 else f[1]
        rows.append(("torsor.distributed nccl", verdict, "ws1 %s ws2 %s" % (f[3], f[5]),
                     "", " ".join(f[6:])[:240]))

# --- 3. timings ----------------------------------------------------------------------
def median_ms(cmd):
    rc, out, err, _ = sh(cmd + ["--time", str(TIMES), "--no-check-groups"], STEP)
    for line in out.splitlines():
        if line.startswith("time: median"):
            return float(line.split()[2])
    return None


if TIMES > 0:
    for ex in ok_examples:
        g = median_ms(model_args(ex, ex["nvptx"], "cuda"))
        c = median_ms(model_args(ex, ex["cpu"], "cpu"))
        for i, r in enumerate(rows):
            if r[0] == ex["name"]:
                rows[i] = (r[0], r[1], r[2], "%s" % ("%.3f" % g if g else "?"),
                           "cpu %s ms" % ("%.3f" % c if c else "?"))

# --- 4. the attention benchmark -------------------------------------------------------
bench_rc = None
if BENCH and bench:
    say("== bench: python3 %s %s" % (bench, " ".join(bench_args)))
    t0 = time.time()
    try:
        r = subprocess.run(["python3", bench] + bench_args, env=bench_env,
                           capture_output=True, text=True, timeout=4 * STEP)
        bench_rc, text = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as t:
        bench_rc, text = 124, "bench timed out after %d s" % (4 * STEP)
    open(os.path.join(RESULTS, "gpu_attention.txt"), "w").write(text)
    say(text.rstrip())
    say("== bench: rc %d in %.0f s" % (bench_rc, time.time() - t0))

# --- summary (last, so it is in the tail of the output) --------------------------------
say("")
say("%-22s %-12s %-10s %-12s %s" % ("example", "gpu vs cpu", "rel err", "gpu ms", "note"))
for r in rows:
    say("%-22s %-12s %-10s %-12s %s" % r)
passed = sum(1 for r in rows if r[1] == "ok")
say("gpu-check: %d/%d examples match on the GPU (tol %g)%s"
    % (passed, len(rows), TOL, "" if bench_rc in (None, 0) else "; bench rc %d" % bench_rc))
sys.exit(0 if passed == len(rows) and bench_rc in (None, 0) else 1)
PYEOF
