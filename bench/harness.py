"""Shared benchmark harness: tuned environment, one fresh subprocess per
measurement, adaptive repetitions, robust statistics, peak RSS and tables.

A benchmark script is both the orchestrator and the worker:

    orchestrator:  res = run_worker([sys.executable, __file__], spec, env, timeout)
    worker:        if "--worker" in argv: worker_main(measure_fn)

Each measurement runs in its own process so that its peak RSS is not
polluted by an earlier one (or by another framework), and a crash, a
timeout or the OOM killer takes out only that measurement, which is then
recorded as skipped with the reason.

Memory: `baseline` is VmRSS after imports, framework initialisation and the
inputs exist, before the first call. After the warm-up calls the kernel's
peak counter (VmHWM) is reset (/proc/self/clear_refs, "5"), so the reported
`peak_mb` = VmHWM over the timed calls − baseline: the memory the method
holds while it runs, above its inputs (its output included). Memory a JIT
(torch.compile, jax.jit) keeps after compiling is resident, so it counts
too; `warmup_peak_mb` is the peak of the warm-up calls (compilation
included) for reference.
"""
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time

# --- environment ----------------------------------------------------------------

# Freed memory stays in the process and is reused instead of being mmap'ed
# and unmapped on every large allocation (glibc otherwise returns every block
# over 128 KiB-32 MiB to the kernel and faults it in again, page by page).
GLIBC_TUNED = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"}

_PRELOADS = {
    "jemalloc": ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"],
    "tcmalloc": ["/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
                 "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"],
}


def allocator_env(name):
    """Environment for allocator `name`: glibc-tuned (default), glibc (as
    shipped), jemalloc or tcmalloc (LD_PRELOAD, if the library exists)."""
    if name == "glibc":
        return {}
    if name == "glibc-tuned":
        return dict(GLIBC_TUNED)
    for path in _PRELOADS.get(name, []):
        if os.path.exists(path):
            return {"LD_PRELOAD": path}
    raise SystemExit("allocator %s: none of %s exists (apt-get install %s)"
                     % (name, _PRELOADS.get(name), {"jemalloc": "libjemalloc2",
                                                     "tcmalloc": "libtcmalloc-minimal4"}
                        .get(name, "?")))


def thread_env(threads):
    """Every thread pool a peer may use, sized to `threads` (the Torsor
    runtime reads no variable: its worker calls torsorSetNumThreads)."""
    n = str(threads)
    return {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n,
            # XLA:CPU has no thread-count flag (the often-quoted
            # "intra_op_parallelism_threads=N" in XLA_FLAGS is silently ignored);
            # it sizes its pool from the CPUs it may run on, and the worker
            # pins itself to `threads` CPUs (pin_to_cpus).
            "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=true"}


def pin_to_cpus(threads):
    """Restricts this process to its first `threads` allowed CPUs, so every
    framework sees the same 2 (or N) cores whatever the machine."""
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cpus[:threads])
    return cpus[:threads]


# --- memory -----------------------------------------------------------------------

def _status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def rss_mb():
    return _status_kb("VmRSS") / 1024.0


def peak_mb():
    return _status_kb("VmHWM") / 1024.0


def reset_peak():
    """Resets VmHWM to the current RSS; False where the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# --- timing -----------------------------------------------------------------------

def time_calls(fn, warmup=1, min_reps=3, max_reps=20, budget_s=2.0, cap_s=None):
    """Calls fn() `warmup` times, then times calls until at least `min_reps`
    ran and `budget_s` seconds passed, or `max_reps` ran. fn must block until
    its result exists. Returns (times in s, warm-up times, skipped reason)."""
    warm = []
    for _ in range(warmup):
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
    if cap_s is not None and warm and warm[-1] > cap_s:
        return [], warm, "one call took %.1f s > cap %.0f s" % (warm[-1], cap_s)
    times, start = [], time.perf_counter()
    while len(times) < max_reps:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= min_reps and time.perf_counter() - start >= budget_s:
            break
    return times, warm, None


def median_time(fn, runs):
    """Median wall time (s) of `runs` calls of fn() after one warm-up call
    (the dense, Grassmann and bf16 tables' per-call timing)."""
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


# --- Torsor models run by torsor-run ---------------------------------------------

def matmul_tsr(d, n):
    """The one-line model y = x @ W (x [L, d] an input, W [d, n] a param)
    the dense and bf16 matmul tables compile."""
    return ("model MM {\n  dim L;\n  dim D = %d;\n  dim N = %d;\n"
            "  input x: f32[L, D];\n  param W: f32[D, N];\n"
            "  output y = x @ W;\n}\n" % (d, n))


def torsor_run_time(build, so, inputs, weights, outputs, threads, runs):
    """Median seconds of `runs` forward calls of the model at `so`, timed by
    `torsor-run --time` (after its warm-up run; loading and the params'
    packing are outside the timed calls). `inputs` and `outputs` map names
    to .npy paths; `weights` is a .safetensors path or None."""
    cmd = [os.path.join(build, "bin", "torsor-run"), so]
    for name, path in inputs.items():
        cmd += ["--input", "%s=%s" % (name, path)]
    if weights:
        cmd += ["--weights", weights]
    for name, path in outputs.items():
        cmd += ["--output", "%s=%s" % (name, path)]
    cmd += ["--threads", str(threads), "--time", str(runs)]
    run = subprocess.run(cmd, check=True, capture_output=True, text=True)
    line = [s for s in run.stdout.splitlines() if s.startswith("time:")][0]
    return float(line.split("median")[1].split("ms")[0]) / 1e3


def summarize(times):
    """median, quartiles, min, max (seconds → ms) of a list of timings."""
    if not times:
        return {}
    s = sorted(times)

    def q(p):  # linear interpolation, as numpy's default
        x = p * (len(s) - 1)
        lo = int(math.floor(x))
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (x - lo)

    return {"median_ms": q(0.5) * 1e3, "q1_ms": q(0.25) * 1e3, "q3_ms": q(0.75) * 1e3,
            "min_ms": s[0] * 1e3, "max_ms": s[-1] * 1e3, "reps": len(s)}


# --- subprocess protocol ------------------------------------------------------------

RESULT_TAG = "BENCH-RESULT "


def worker_main(measure):
    """Entry point of a worker process: argv has `--worker JSON`; calls
    measure(spec) -> dict and prints it on one tagged line."""
    spec = json.loads(sys.argv[sys.argv.index("--worker") + 1])
    pin_to_cpus(spec["threads"])
    try:
        out = measure(spec)
    except MemoryError:
        out = {"status": "skipped", "reason": "MemoryError"}
    except Exception as e:  # a peer failing is a result, not a crash
        import traceback
        traceback.print_exc()
        out = {"status": "error", "reason": "%s: %s" % (type(e).__name__, str(e)[:300])}
    sys.stdout.write("\n" + RESULT_TAG + json.dumps(out) + "\n")
    sys.stdout.flush()


def run_worker(cmd, spec, env, timeout_s):
    """Runs `cmd --worker JSON(spec)` with `env` added; returns its result dict,
    or {"status": "skipped"/"error", "reason": ...} on timeout, kill or crash."""
    full_env = dict(os.environ)
    full_env.update(env)
    t0 = time.time()
    try:
        res = subprocess.run(cmd + ["--worker", json.dumps(spec)], env=full_env,
                             capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "skipped", "reason": "timed out after %.0f s" % timeout_s}
    for line in reversed(res.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            out = json.loads(line[len(RESULT_TAG):])
            out["wall_s"] = time.time() - t0
            if out.get("status") == "error":
                out["log"] = res.stderr[-2000:]
            return out
    if res.returncode in (-9, 137):
        return {"status": "skipped", "reason": "killed (SIGKILL: out of memory?)"}
    return {"status": "error", "reason": "worker exited %d without a result" % res.returncode,
            "log": (res.stderr or res.stdout)[-2000:]}


# --- machine -----------------------------------------------------------------------

def machine_info():
    """CPU model, flags of interest, cores, memory, Python and library versions."""
    info = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        for line in text.splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                info["simd"] = " ".join(x for x in ("avx2", "fma", "avx512f", "avx512_fp16",
                                                    "amx_tile", "amx_bf16") if x in flags)
                break
        info["cpus"] = os.cpu_count()
        with open("/proc/meminfo") as f:
            info["mem_gb"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    info["allocators"] = [n for n, paths in _PRELOADS.items()
                          if any(os.path.exists(p) for p in paths)]
    return info


def mem_total_gb():
    with open("/proc/meminfo") as f:
        return int(f.readline().split()[1]) / 2**20


def have(cmd):
    return shutil.which(cmd) is not None


# --- tables --------------------------------------------------------------------------

def markdown_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def fmt_ms(ms):
    if ms is None:
        return "–"
    if ms >= 1000:
        return "%.2f s" % (ms / 1e3)
    if ms >= 10:
        return "%.1f ms" % ms
    return "%.2f ms" % ms
