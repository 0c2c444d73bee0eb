#!/usr/bin/env python3
"""Lie-algebra attention (`lie_attention`): Torsor against PyTorch and JAX,
side by side in one run.

One layer: tokens g [L, n, n] of SO(2), SE(2), SO(3) or SE(3), values
v [L, dv] (dv = 64, H heads, per-head τ and λ), f32, 2 threads.

Peers (select with --peers):
  torsor-O2      torsorc -O2 model, run in-process through the runtime's C API
                 (ctypes on libtorsor_runtime.so; only torsorModuleRun is timed)
  torsor-O0      the unfused oracle lowering (optional; small L)
  torch-naive    PyTorch eager, materialised L² form (g_i⁻¹g_j, log, scores)
  torch-chunked  PyTorch eager, closed pairwise forms over query chunks
  torch-compile  torch.compile (inductor) of the chunk function
  jax-jit        jax.jit of the chunked closed form (lax.map over chunks)
  sdpa           torch scaled_dot_product_attention, plain attention at the
                 same L and d = dv: the yardstick
The PyTorch/JAX implementations are in lie_peers.py.

Every measurement runs in a fresh subprocess (clean peak RSS; a crash or
OOM loses only that point), pinned to --threads CPUs, with the tuned
environment of harness.py. A point is skipped, with the reason recorded,
when its predicted time per call (from the previous L, ∝ L²) exceeds
--max-call-s or its predicted memory exceeds --max-mem-gb, when one call
takes longer than --max-call-s, or when the worker times out or is killed.

Before timing, every peer's output at a small L is compared with an
independent float64 reference (scipy logm per pair); a peer that disagrees
by more than --tol is marked WRONG and never counts as the fastest.

Run with the benchmark venv (bench/setup-venv.sh) after `make build`:
    /work/bench-venv/bin/python bench/bench_lie_attention.py --quick
    /work/bench-venv/bin/python bench/bench_lie_attention.py          # full
    .../python bench/bench_lie_attention.py --bound   # machine bound only
Outputs: bench/results/lie_attention.{csv,md,json,png}; --readme also
rewrites the results section of bench/README.md.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

# The orchestrator's own NumPy/SciPy (the float64 reference: thousands of
# tiny logm calls) runs single-threaded: OpenBLAS threads spinning on 3×3
# matrices make it ~7× slower on a busy machine. Workers get their own env.
if "--worker" not in sys.argv:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import harness  # noqa: E402
import lie_peers  # noqa: E402

ALL_PEERS = ["torsor-O2", "torsor-O0", "torch-naive", "torch-chunked", "torch-compile",
             "jax-jit", "sdpa"]
DEFAULT_PEERS = ["torsor-O2", "torch-naive", "torch-chunked", "torch-compile", "jax-jit",
                 "sdpa"]
LIE_PEERS = ["torch-naive", "torch-chunked", "torch-compile", "jax-jit"]  # "fastest peer"
CHUNKED = ["torch-chunked", "torch-compile", "jax-jit"]
QUADRATIC_MEMORY = ("torch-naive", "torsor-O0")


def is_torsor(peer):
    return peer.startswith("torsor-O")


# --- worker ------------------------------------------------------------------------

def _setup(spec):
    """Builds the inputs and the peer; returns call() -> output (blocking)."""
    peer, group, L, dv, H = spec["peer"], spec["group"], spec["L"], spec["dv"], spec["heads"]
    threads = spec["threads"]
    if peer == "sdpa":
        import torch
        torch.set_num_threads(threads)
        rng = np.random.default_rng(spec["seed"] + L)
        h = spec["sdpa_heads"]
        q, k, v = (torch.from_numpy(rng.standard_normal((1, h, L, dv // h)).astype(np.float32))
                   for _ in range(3))
        spec["_ref_inputs"] = (q, k, v)
        torch.set_grad_enabled(False)
        return lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v)
    g64, v64 = lie_peers.random_inputs(group, L, dv, spec["seed"], spec.get("near_pi", False))
    g, v = g64.astype(np.float32), v64.astype(np.float32)
    cf = lie_peers.coef(group, H).astype(np.float32)
    C = spec["chunk"] or lie_peers.chunk_rows(L, spec["chunk_elems"])
    if is_torsor(peer):
        from torsor_ctypes import Runtime
        rt = Runtime(spec["lib"])
        rt.set_threads(threads)
        m = rt.load(spec["so"])
        m.bind_input("g", g)
        m.bind_input("v", v)
        spec["_keep"] = (rt, m)

        def call():
            m.run()
        spec["_output"] = lambda: m.output("y")
        return call
    if peer == "jax-jit":
        import jax
        import jax.numpy as jnp
        fn = lie_peers.jax_chunked_fn(group, L, dv, cf, C)
        gj, vj = jnp.asarray(g), jnp.asarray(v)
        jax.block_until_ready((gj, vj))
        return lambda: fn(gj, vj).block_until_ready()
    import torch
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    gt, vt, cft = torch.from_numpy(g), torch.from_numpy(v), torch.from_numpy(cf)
    if peer == "torch-naive":
        return lambda: lie_peers.torch_naive(torch, group, gt, vt, cft)
    if peer == "torch-chunked":
        return lambda: lie_peers.torch_chunked(torch, group, gt, vt, cft, C)
    if peer == "torch-compile":
        chunk = lie_peers.torch_compiled_chunk(torch, group)
        return lambda: lie_peers.torch_chunked(torch, group, gt, vt, cft, C, chunk)
    raise ValueError("unknown peer " + peer)


def measure(spec):
    """Worker body: verify (write the output) or time one (peer, group, L)."""
    baseline = harness.rss_mb()
    call = _setup(spec)
    baseline = max(baseline, harness.rss_mb())
    if spec["mode"] == "verify":
        out = call()
        if "_output" in spec:
            out = spec["_output"]()
        np.save(spec["out"], np.asarray(out, dtype=np.float64))
        if spec["peer"] == "sdpa":
            q, k, v = (x.numpy().astype(np.float64) for x in spec["_ref_inputs"])
            np.save(spec["out"] + ".ref.npy", _sdpa_ref(q, k, v))
        return {"status": "ok"}
    # Warm-up: the first call of a JIT compiles, the next runs warm.
    warm = []
    for _ in range(2 if spec["peer"] in ("torch-compile", "jax-jit") else 1):
        t0 = time.perf_counter()
        call()
        warm.append(time.perf_counter() - t0)
    res = {"warmup_ms": [t * 1e3 for t in warm],
           "warmup_peak_mb": harness.peak_mb() - baseline, "baseline_mb": baseline}
    if warm[-1] > spec["max_call_s"]:
        res.update(status="skipped", one_call_ms=warm[-1] * 1e3,
                   reason="one call took %.1f s > cap %.0f s" % (warm[-1], spec["max_call_s"]))
        return res
    # Peak over the timed calls only; memory the warm-up left resident (freed
    # blocks the allocator keeps, a JIT's state) is counted in it.
    harness.reset_peak()
    # Slow points (seconds per call) get 3 timed calls, not --min-reps.
    min_reps = min(spec["min_reps"], 3) if warm[-1] > 2.0 else spec["min_reps"]
    times, _, _ = harness.time_calls(call, warmup=0, min_reps=min_reps,
                                     max_reps=spec["max_reps"], budget_s=spec["budget_s"])
    res.update(harness.summarize(times))
    res.update(status="ok", peak_mb=harness.peak_mb() - baseline,
               out_mb=spec["L"] * spec["dv"] * 4 / 2**20)
    if spec["peer"] in CHUNKED:
        res["chunk_rows"] = spec["chunk"] or lie_peers.chunk_rows(spec["L"], spec["chunk_elems"])
    return res


def _sdpa_ref(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


# --- orchestration ---------------------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.results = os.path.abspath(args.results)
        self.cache = os.path.join(self.results, "cache")
        os.makedirs(self.cache, exist_ok=True)
        self.env = harness.allocator_env(args.allocator)
        self.env.update(harness.thread_env(args.threads))
        if args.omp_wait_policy != "default":
            self.env["OMP_WAIT_POLICY"] = args.omp_wait_policy.upper()
        self.cmd = [sys.executable, os.path.abspath(__file__)]
        self.models = {}
        self.rows = []
        self.verify = {}
        self.max_mem_mb = args.max_mem_gb * 1024

    # torsor models
    def compile_models(self):
        torsorc = os.path.join(self.build, "bin", "torsorc")
        lib = os.path.join(self.build, "lib", "libtorsor_runtime.so")
        for p in self.args.peers:
            if not is_torsor(p):
                continue
            if not (os.path.exists(torsorc) and os.path.exists(lib)):
                raise SystemExit("no %s or %s: run `make build` first (or --build DIR)"
                                 % (torsorc, lib))
            for group in self.args.groups:
                tsr = os.path.join(self.cache, "lie_%s_h%d_d%d.tsr"
                                   % (group, self.args.heads, self.args.dv))
                with open(tsr, "w") as f:
                    f.write(lie_peers.tsr_model(group, self.args.heads, self.args.dv))
                so = tsr[:-4] + "-%s.so" % p.split("-")[1]
                cmd = [torsorc, tsr, "-o", so, "--dtype=f32", "-" + p.split("-")[1]]
                t0 = time.time()
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    self.models[(p, group)] = {"error": r.stderr.strip()[-500:]}
                    print("  %s: torsorc failed: %s" % (p, r.stderr.strip()[-200:]))
                else:
                    self.models[(p, group)] = {"so": so, "lib": lib,
                                               "compile_s": time.time() - t0}

    def spec(self, peer, group, L, mode, **kw):
        a = self.args
        s = {"peer": peer, "group": group, "L": L, "dv": a.dv, "heads": a.heads,
             "sdpa_heads": a.sdpa_heads, "threads": a.threads, "mode": mode,
             "seed": a.seed, "chunk": a.chunk, "chunk_elems": a.chunk_elems[0],
             "min_reps": a.min_reps, "max_reps": a.max_reps, "budget_s": a.budget_s,
             "max_call_s": a.max_call_s}
        if is_torsor(peer):
            s.update(self.models[(peer, group)])
        s.update(kw)
        return s

    def run_verify(self):
        """Each peer at L = --verify-L against the float64 reference; with
        --verify-near-pi also on tokens whose relative rotations are near π
        (reported, not a gate: the timing gate is the random-input check)."""
        a = self.args
        L = a.verify_L
        print("verify: L = %d, chunk %d rows, tolerance %.0e (max|out − ref| / max|ref|)"
              % (L, a.verify_chunk, a.tol))
        for near_pi in ([False, True] if a.verify_near_pi else [False]):
            for group in a.groups:
                ref = self.reference(group, L, near_pi)
                label = group + (" near π" if near_pi else "")
                for peer in a.peers:
                    if peer == "sdpa" or (is_torsor(peer)
                                          and "error" in self.models[(peer, group)]):
                        continue
                    self.verify[(peer, label)] = self._verify_one(peer, group, L, ref, near_pi)
        if "sdpa" in a.peers:
            self.verify[("sdpa", None)] = self._verify_one("sdpa", a.groups[0], L, None, False)

    def reference(self, group, L, near_pi):
        a = self.args
        g64, v64 = lie_peers.random_inputs(group, L, a.dv, a.seed, near_pi)
        cached = os.path.join(self.cache, "ref-%s-L%d-h%d-d%d-s%d%s.npy"
                              % (group, L, a.heads, a.dv, a.seed, "-pi" if near_pi else ""))
        t0 = time.time()
        hit = os.path.exists(cached)
        if hit:
            ref = np.load(cached)
        else:
            ref = lie_peers.reference_f64(group, g64, v64, a.heads)
            np.save(cached, ref)
        print("  %s%s: float64 reference (scipy logm per pair%s) %.1f s"
              % (group, " near π" if near_pi else "", ", cached" if hit else "",
                 time.time() - t0))
        return ref

    def _verify_one(self, peer, group, L, ref, near_pi):
        out = os.path.join(self.cache, "verify-%s-%s%s.npy"
                           % (peer, group, "-pi" if near_pi else ""))
        res = harness.run_worker(self.cmd, self.spec(peer, group, L, "verify", out=out,
                                                     chunk=self.args.verify_chunk,
                                                     near_pi=near_pi),
                                 self.env, self.args.timeout_s)
        if res.get("status") != "ok":
            v = {"ok": False, "rel_err": None, "reason": res.get("reason")}
        else:
            got = np.load(out)
            want = np.load(out + ".ref.npy") if peer == "sdpa" else ref
            err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
            if not np.all(np.isfinite(got)):
                err = float("inf")
            v = {"ok": err <= self.args.tol, "rel_err": err}
        print("  %-14s %-11s %s" % (peer, "" if peer == "sdpa" else group
                                    + (" near π" if near_pi else ""),
                                    "rel err %.1e %s" % (v["rel_err"], "ok" if v["ok"] else "WRONG")
                                    if v["rel_err"] is not None else "failed: %s" % v["reason"]))
        return v

    def predict_skip(self, peer, group, L, history):
        """Reason to skip (peer, group, L) from the previous sizes, or None."""
        a = self.args
        pts = [(l, r) for l, r in history if r.get("status") == "ok"]
        if not pts:
            done = [r for _, r in history if r.get("status") == "skipped"]
            if done:
                return "larger than a skipped L (%s)" % done[-1]["reason"]
            return None
        L0, r0 = pts[-1]
        t = r0["median_ms"] / 1e3 * (L / L0) ** 2
        if t > a.max_call_s:
            return ("predicted %.0f s per call (∝ L² from %s at L = %d) > cap %.0f s"
                    % (t, harness.fmt_ms(r0["median_ms"]), L0, a.max_call_s))
        if len(pts) >= 2 and pts[-2][1]["peak_mb"] > 1 and r0["peak_mb"] > 1:
            (L1, r1) = pts[-2]
            k = np.log(r0["peak_mb"] / r1["peak_mb"]) / np.log(L0 / L1)
            k = min(max(k, 1.0), 2.0)
        else:
            k = 2.0 if peer in QUADRATIC_MEMORY else 1.0
        m = max(r0["peak_mb"], 1.0) * (L / L0) ** k
        if m > self.max_mem_mb:
            return ("predicted peak %.1f GB (∝ L^%.1f from %.0f MB at L = %d) > %.0f GB"
                    % (m / 1024, k, r0["peak_mb"], L0, a.max_mem_gb))
        return None

    def run_timing(self):
        a = self.args
        sdpa = {}
        jobs = []
        for group in a.groups:
            for peer in a.peers:
                if peer != "sdpa":
                    jobs.append((peer, group))
        if "sdpa" in a.peers:
            jobs.insert(0, ("sdpa", None))
        for peer, group in jobs:
            history = []
            for L in a.sizes:
                row = {"group": group or "-", "L": L, "peer": peer}
                if is_torsor(peer) and "error" in self.models[(peer, group)]:
                    res = {"status": "error", "reason": "torsorc failed: "
                           + self.models[(peer, group)]["error"][-200:]}
                else:
                    reason = self.predict_skip(peer, group, L, history)
                    if reason:
                        res = {"status": "skipped", "reason": reason}
                    else:
                        timeout = min(180 + (3 + a.min_reps) * a.max_call_s, a.timeout_s)
                        kw, tuning = {}, None
                        if peer in CHUNKED and len(a.chunk_elems) > 1 and not a.chunk:
                            kw["chunk_elems"], tuning = self.tune_chunk(peer, group, L,
                                                                        timeout)
                        res = harness.run_worker(
                            self.cmd, self.spec(peer, group or a.groups[0], L, "time", **kw),
                            self.env, timeout)
                        if tuning:
                            res["chunk_tuning"] = tuning
                history.append((L, res))
                row.update({k: v for k, v in res.items() if k != "log"})
                v = self.verify.get((peer, group if peer != "sdpa" else None))
                if v is not None:
                    row["verify_rel_err"] = v["rel_err"]
                    row["verified"] = v["ok"]
                self.rows.append(row)
                if peer == "sdpa":
                    sdpa[L] = row
                print("  %-14s %-4s L=%-6d %s" % (peer, group or "", L, _describe(res)),
                      flush=True)
                if res.get("status") == "error" and res.get("log"):
                    print("    " + res["log"].strip().splitlines()[-1])
        self.add_ratios(sdpa)

    def tune_chunk(self, peer, group, L, timeout):
        """The best of --chunk-elems for (peer, group, L): one warm-up and two
        timed calls each, in fresh processes. Returns (best, {elems: ms})."""
        a = self.args
        times = {}
        for ce in a.chunk_elems:
            r = harness.run_worker(self.cmd, self.spec(peer, group, L, "time", chunk_elems=ce,
                                                       min_reps=2, max_reps=2, budget_s=0),
                                   self.env, timeout)
            if r.get("status") == "ok":
                times[ce] = r["median_ms"]
        if not times:
            return a.chunk_elems[0], None
        return min(times, key=times.get), {str(k): v for k, v in times.items()}

    def add_ratios(self, sdpa):
        for r in self.rows:
            if r.get("status") != "ok" or r["peer"] == "sdpa":
                continue
            peers = [x for x in self.rows if x["group"] == r["group"] and x["L"] == r["L"]
                     and x["peer"] in LIE_PEERS and x.get("status") == "ok"
                     and x.get("verified", True)]
            if peers:
                best = min(peers, key=lambda x: x["median_ms"])
                r["fastest_peer"] = best["peer"]
                r["fastest_peer_ms"] = best["median_ms"]
                r["vs_fastest_peer"] = r["median_ms"] / best["median_ms"]
            s = sdpa.get(r["L"])
            if s and s.get("status") == "ok":
                r["sdpa_ms"] = s["median_ms"]
                r["vs_sdpa"] = r["median_ms"] / s["median_ms"]


    def add_bound(self, ns_per_pair):
        """bound_ms = L² × the machine bound per pair; vs_bound = time / it."""
        for r in self.rows:
            if r.get("status") == "ok" and r["group"] in ns_per_pair:
                r["bound_ms"] = r["L"] ** 2 * ns_per_pair[r["group"]] * 1e-6
                r["vs_bound"] = r["median_ms"] / r["bound_ms"]


def _describe(res):
    if res.get("status") == "ok":
        return "median %s  [IQR %s – %s]  n=%d  peak +%.0f MB" % (
            harness.fmt_ms(res["median_ms"]), harness.fmt_ms(res["q1_ms"]),
            harness.fmt_ms(res["q3_ms"]), res["reps"], res["peak_mb"])
    return "%s: %s" % (res.get("status", "?").upper(), res.get("reason"))


# --- reports ------------------------------------------------------------------------------

CSV_FIELDS = ["group", "L", "peer", "status", "median_ms", "q1_ms", "q3_ms", "min_ms",
              "max_ms", "reps", "peak_mb", "out_mb", "warmup_peak_mb", "chunk_rows", "fastest_peer",
              "vs_fastest_peer", "sdpa_ms", "vs_sdpa", "bound_ms", "vs_bound", "verify_rel_err", "verified", "reason"]


def write_reports(bench, meta):
    a = bench.args
    rows = bench.rows
    base = os.path.join(bench.results, a.name)
    with open(base + ".csv", "w") as f:
        f.write(",".join(CSV_FIELDS) + "\n")
        for r in rows:
            vals = []
            for k in CSV_FIELDS:
                x = r.get(k, "")
                if isinstance(x, float):
                    x = "%.6g" % x
                vals.append('"%s"' % str(x).replace('"', "'") if k == "reason" else str(x))
            f.write(",".join(vals) + "\n")
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "rows": rows,
                   "verify": {"%s/%s" % k: v for k, v in bench.verify.items()}}, f, indent=1)
    md = markdown_report(bench, meta)
    with open(base + ".md", "w") as f:
        f.write(md)
    png = plot(bench, base + ".png")
    print("\nwrote %s.{csv,json,md}%s" % (base, " and .png" if png else ""))
    return md


def headline_table(bench):
    """Per group and L: Torsor, fastest peer, SDPA, ratios, Torsor's memory."""
    a = bench.args
    torsor = next((p for p in a.peers if p == "torsor-O2"), None) or next(
        (p for p in a.peers if is_torsor(p)), None)
    rows = []
    for group in a.groups:
        for L in a.sizes:
            get = {r["peer"]: r for r in bench.rows if r["L"] == L
                   and r["group"] in (group, "-")}
            t = get.get(torsor, {})
            sd = get.get("sdpa", {})
            peers = [get[p] for p in LIE_PEERS if p in get and get[p].get("status") == "ok"
                     and get[p].get("verified", True)]
            best = min(peers, key=lambda x: x["median_ms"]) if peers else {}
            ok = t.get("status") == "ok"
            rows.append([
                group, L,
                harness.fmt_ms(t["median_ms"]) if ok else t.get("status", "–"),
                "%s (%s)" % (harness.fmt_ms(best["median_ms"]), best["peer"]) if best else "–",
                "%.2f×" % (best["median_ms"] / t["median_ms"]) if ok and best else "–",
                harness.fmt_ms(sd["median_ms"]) if sd.get("status") == "ok" else "–",
                "%.2f×" % (t["median_ms"] / sd["median_ms"])
                if ok and sd.get("status") == "ok" else "–",
                "%.2f×" % t["vs_bound"] if "vs_bound" in t else "–",
                "%.0f MB" % (t["peak_mb"] - t.get("out_mb", 0)) if ok else "–"])
    return harness.markdown_table(
        ["group", "L", torsor or "torsor", "fastest PyTorch/JAX", "speedup (peer / Torsor)",
         "SDPA d=%d" % a.dv, "Torsor / SDPA", "Torsor / bound",
         "Torsor peak above inputs and output"], rows)


def markdown_report(bench, meta):
    a = bench.args
    lines = ["# Lie attention benchmark", "",
             "`%s`" % meta["command"], "",
             "Torsor %s; %s; %s; %d threads (pinned); f32; dv = %d, heads = %d; allocator: %s; env: %s; "
             "%s." % (meta.get("torsor_commit", "?"), meta["machine"].get("cpu", "?"),
                      meta["machine"].get("simd", ""),
                      a.threads, a.dv, a.heads, a.allocator,
                      " ".join("%s=%s" % kv for kv in sorted(meta["env"].items())
                               if not kv[0].startswith("XLA") and "NUM_THREADS" not in kv[0])
                      or "defaults", meta["versions"]),
             "Median of n timed calls after warm-up (%d-%d; 3 when a call takes over 2 s); "
             "IQR = interquartile range; peak = max RSS during the timed calls − RSS with "
             "inputs (output included, except in the headline); bound = L² × the machine "
             "bound per pair (below); "
             "ratio columns: time / fastest verified PyTorch-or-JAX peer, time / SDPA. "
             "Load average at start / end: %.1f / %.1f (on %s CPUs)."
             % (a.min_reps, a.max_reps, meta["loadavg_start"], meta["loadavg_end"],
                meta["machine"].get("cpus")), "", "## Headline", "", headline_table(bench), "",
             "## Correctness (L = %d vs float64 scipy-logm reference, tolerance %.0e)"
             % (a.verify_L, a.tol), ""]
    vrows = [[p, g or "(plain attention)", "%.1e" % v["rel_err"] if v["rel_err"] is not None
              else "–", "ok" if v["ok"] else "WRONG / " + str(v.get("reason"))]
             for (p, g), v in sorted(bench.verify.items(), key=lambda kv: str(kv[0]))]
    lines += [harness.markdown_table(["peer", "group", "max rel diff", "verdict"], vrows), "",
              "## All measurements", ""]
    trows = []
    for r in bench.rows:
        ok = r.get("status") == "ok"
        trows.append([r["group"], r["L"], r["peer"],
                      harness.fmt_ms(r["median_ms"]) if ok else r.get("status"),
                      "%s – %s" % (harness.fmt_ms(r["q1_ms"]), harness.fmt_ms(r["q3_ms"]))
                      if ok else "", "%s – %s" % (harness.fmt_ms(r["min_ms"]),
                                                  harness.fmt_ms(r["max_ms"])) if ok else "",
                      r.get("reps", ""), "%.0f" % r["peak_mb"] if ok else "",
                      r.get("chunk_rows", ""),
                      "%.2f" % r["vs_fastest_peer"] if "vs_fastest_peer" in r else "",
                      "%.2f" % r["vs_sdpa"] if "vs_sdpa" in r else "",
                      "" if ok else str(r.get("reason", ""))[:120]])
    lines += [harness.markdown_table(["group", "L", "peer", "median", "IQR", "min – max", "n",
                                      "peak MB", "chunk rows", "/ fastest", "/ SDPA", "skipped because"],
                                     trows), ""]
    if meta.get("bound"):
        lines += ["## Machine bound", "", "```", meta["bound"].rstrip(), "```", ""]
    return "\n".join(lines)


def plot(bench, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return False
    a = bench.args
    n = len(a.groups)
    cols = min(2, n)
    fig, axes = plt.subplots((n + cols - 1) // cols, cols, figsize=(6 * cols, 4.2 * ((n + 1) // 2)),
                             squeeze=False)
    styles = {"sdpa": dict(color="k", ls="--"), "torsor-O2": dict(color="C3", lw=2.5),
              "torsor-O0": dict(color="C3", ls=":"), "torch-naive": dict(color="C1"),
              "torch-chunked": dict(color="C2"), "torch-compile": dict(color="C0"),
              "jax-jit": dict(color="C4")}
    for ax, group in zip(axes.flat, a.groups):
        for i, peer in enumerate(a.peers):
            pts = sorted((r["L"], r["median_ms"]) for r in bench.rows if r["peer"] == peer
                         and r["group"] in (group, "-") and r.get("status") == "ok")
            if pts:
                x, y = zip(*pts)
                ax.plot(x, y, marker="o", label=peer, **styles.get(peer, dict(color="C%d" % i)))
        ax.set_xscale("log", base=2)
        ax.set_xticks(a.sizes, [str(x) for x in a.sizes])
        ax.set_yscale("log")
        ax.set_title("%s, dv = %d, %d heads, f32, %d threads" % (group, a.dv, a.heads, a.threads))
        ax.set_xlabel("L (tokens)")
        ax.set_ylabel("time per call (ms)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


README_BEGIN = "<!-- lie-attention-results:begin -->"
README_END = "<!-- lie-attention-results:end -->"


def update_readme(bench, meta):
    path = os.path.join(HERE, "README.md")
    text = open(path).read()
    if README_BEGIN not in text:
        print("README has no %s marker; not updated" % README_BEGIN)
        return
    body = "\n".join([README_BEGIN, "",
                      "Measured %s with `%s` on Torsor %s (%s, %s CPUs, load average %.1f at "
                      "the start, %.1f at the end; `bench/results/%s.md` has every point, the "
                      "spreads, the correctness check and the machine bound):"
                      % (meta["date"], meta["command"], meta.get("torsor_commit", "?"),
                         meta["machine"].get("cpu", "?"), meta["machine"].get("cpus"),
                         meta["loadavg_start"], meta["loadavg_end"], bench.args.name), "",
                      headline_table(bench), "", README_END])
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    with open(path, "w") as f:
        f.write(head + body + tail)
    print("updated", path)


def rerender(path, readme):
    """Reports from a saved run (lie_attention.json) without measuring."""
    with open(path) as f:
        saved = json.load(f)
    meta = saved["meta"]
    args = argparse.Namespace(**meta["args"])
    args.results = os.path.dirname(os.path.abspath(path))
    bench = Bench.__new__(Bench)
    bench.args, bench.rows, bench.results = args, saved["rows"], args.results
    bench.verify = {}
    for key, v in saved["verify"].items():
        peer, group = key.split("/")
        bench.verify[(peer, None if group == "None" else group)] = v
    if meta.get("bound_ns_per_pair"):
        bench.add_bound(meta["bound_ns_per_pair"])
    print(write_reports(bench, meta).split("## Correctness")[0])
    if readme:
        update_readme(bench, meta)


def versions():
    code = ("import importlib\nout=[]\nfor m in ('torch','jax','numpy'):\n"
            "  try: out.append(m+' '+importlib.import_module(m).__version__)\n"
            "  except Exception: pass\nprint(', '.join(out))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return r.stdout.strip()


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="Torsor build dir")
    p.add_argument("--results", default=os.path.join(HERE, "results"))
    p.add_argument("--name", default="lie_attention", help="results file stem")
    p.add_argument("--groups", nargs="+", default=["SO3", "SE2", "SE3", "SO2"],
                   choices=sorted(lie_peers.GROUPS))
    p.add_argument("--sizes", nargs="+", type=int, default=[256, 1024, 4096, 16384, 65536])
    p.add_argument("--peers", nargs="+", default=DEFAULT_PEERS, choices=ALL_PEERS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dv", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--sdpa-heads", type=int, default=1,
                   help="heads of the SDPA yardstick (d per head = dv / this)")
    p.add_argument("--allocator", default="glibc-tuned",
                   choices=["glibc-tuned", "glibc", "jemalloc", "tcmalloc"])
    p.add_argument("--omp-wait-policy", default="passive",
                   choices=["passive", "active", "default"],
                   help="OMP_WAIT_POLICY of the workers (PyTorch's OpenMP pool): with the "
                        "default spin-wait, 2-thread torch is up to 100x slower whenever "
                        "another process competes for the cores")
    p.add_argument("--chunk", type=int, default=0,
                   help="query rows per chunk (0: about --chunk-elems pairs per chunk)")
    p.add_argument("--chunk-elems", type=int, nargs="+", default=[1 << 20],
                   help="pairs per chunk; several values: each chunked peer is tuned per "
                        "point (2 calls each, fresh processes) and runs with the fastest")
    p.add_argument("--min-reps", type=int, default=5)
    p.add_argument("--max-reps", type=int, default=30)
    p.add_argument("--budget-s", type=float, default=3.0,
                   help="time each point for at least this long (after --min-reps)")
    p.add_argument("--max-call-s", type=float, default=60.0,
                   help="skip points whose single call takes (or is predicted to) longer")
    p.add_argument("--max-mem-gb", type=float, default=round(0.6 * harness.mem_total_gb(), 1))
    p.add_argument("--timeout-s", type=float, default=1800)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verify-L", type=int, default=64)
    p.add_argument("--verify-chunk", type=int, default=24,
                   help="chunk rows when verifying (so chunk remainders are exercised)")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--no-verify", action="store_true")
    p.add_argument("--verify-near-pi", action="store_true",
                   help="also compare on tokens whose relative rotations are near π "
                        "(reported only; f32 implementations of log lose accuracy there)")
    p.add_argument("--verify-only", action="store_true", help="check correctness, time nothing")
    p.add_argument("--quick", action="store_true",
                   help="L = 256 1024, 3-5 reps, 0.5 s per point")
    p.add_argument("--bound", action="store_true",
                   help="only measure this machine's FMA/transcendental throughput and print "
                        "the per-group bound (machine_bound.py)")
    p.add_argument("--no-bound", action="store_true", help="skip the machine-bound section")
    p.add_argument("--readme", action="store_true",
                   help="rewrite the results section of bench/README.md")
    p.add_argument("--from-json", metavar="PATH",
                   help="measure nothing: rewrite the reports (and with --readme the README "
                        "table) from a saved results .json")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.from_json:
        rerender(a.from_json, a.readme)
        return
    if a.quick:
        if a.sizes == p.get_default("sizes"):
            a.sizes = [256, 1024]
        a.min_reps, a.max_reps, a.budget_s = 3, 5, 0.5
    a.sizes = sorted(a.sizes)
    if a.dv % a.heads or a.dv % a.sdpa_heads:
        raise SystemExit("--dv must be divisible by --heads and --sdpa-heads")

    bound_cmd = [sys.executable, os.path.join(HERE, "machine_bound.py"),
                 "--threads", str(a.threads), "--heads", str(a.heads), "--dv", str(a.dv),
                 "--L", "4096"]
    if a.bound:
        os.execve(sys.executable, bound_cmd, {**os.environ, **harness.thread_env(a.threads)})

    bench = Bench(a)
    meta = {"command": "python3 bench/bench_lie_attention.py " + " ".join(
                shlex.quote(x) for x in sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": harness.machine_info(), "env": bench.env, "versions": versions(),
            "args": vars(a), "loadavg_start": os.getloadavg()[0],
            "torsor_commit": subprocess.run(["git", "-C", ROOT, "describe", "--always",
                                             "--dirty"], capture_output=True,
                                            text=True).stdout.strip() or "?"}
    if meta["loadavg_start"] > 0.5 * (os.cpu_count() or 1):
        print("warning: load average %.1f on %d CPUs: other processes compete for the "
              "cores, timings will be noisy" % (meta["loadavg_start"], os.cpu_count()))
    print("%s | %s | %s threads | allocator %s | %s" % (
        meta["machine"].get("cpu"), meta["machine"].get("simd"), a.threads, a.allocator,
        meta["versions"]))
    bench.compile_models()
    if not a.no_verify:
        bench.run_verify()
    if a.verify_only:
        return
    print("timing: L = %s, groups %s" % (a.sizes, " ".join(a.groups)))
    bench.run_timing()
    if not a.no_bound:
        bound_json = os.path.join(bench.cache, "bound.json")
        r = subprocess.run(bound_cmd + ["--json", bound_json], capture_output=True, text=True,
                           env={**os.environ, **harness.thread_env(a.threads)})
        meta["bound"] = r.stdout if r.returncode == 0 else "machine_bound.py failed:\n" + r.stderr
        if r.returncode == 0:
            with open(bound_json) as f:
                meta["bound_ns_per_pair"] = json.load(f)["ns_per_pair"]
            bench.add_bound(meta["bound_ns_per_pair"])
    meta["loadavg_end"] = os.getloadavg()[0]
    md = write_reports(bench, meta)
    print()
    print(md.split("## Correctness")[0].split("## Headline")[1].strip())
    if a.readme:
        update_readme(bench, meta)


if __name__ == "__main__":
    if "--worker" in sys.argv:
        harness.worker_main(measure)
    else:
        main()
