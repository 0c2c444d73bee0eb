"""test_reliability.py - the Python layer under hostile use (issue 24).

One class per failure class of docs/reliability.md ("The Python layer"):
files written through symlinks, to FIFOs and over user files; diverging
training runs and their checkpoints; the compile cache served for the wrong
source, truncated, tampered with or written concurrently; Ctrl-C during a
compile; NaN cotangents; integers that would wrap in the C API; torch views
whose memory does not hold their values; the Model's lifetime across
threads, copies and pickling; and the messages for missing inputs, empty
batch iterators and unusable cache folders. Every test writes only inside
its own temporary folder (CI runs as root).
"""
import copy
import json
import os
import pickle
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

import numpy as np

import common  # noqa: F401  (puts test/lib on sys.path)
from common import torsor
from torsor import _files
from torsor.train import SGD, Adam, TrainingDivergedError, train

try:
    import torch
except ImportError:
    torch = None

FIT = """model Fit {
  dim L;
  input x: f32[L, 3];
  input y: f32[L, 2];
  param W: f32[3, 2];
  param b: f32[2];
  output loss = mse(x @ W + b, y);
}
"""

DOUBLE = "model Double { dim L; input x: f32[L, 3]; output y = x * 2; }"


def read_safetensors(path):
    """{name: array} of a .safetensors file (F32/F64/I64 only)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    kinds = {"F32": "<f4", "F64": "<f8", "I64": "<i8"}
    out = {}
    for name, e in header.items():
        lo, hi = e["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + lo:8 + n + hi],
                                  kinds[e["dtype"]]).reshape(e["shape"])
    return out


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class TempDir(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="torsor-rel-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)


class Files(TempDir):
    """Item 1: torsor.save_weights (and so checkpoints) write complete
    files, through symlinks, never over special files or files the user
    did not name."""

    def test_symlink_keeps_pointing_at_the_new_data(self):
        target = self.path("real.safetensors")
        link = self.path("link.safetensors")
        torsor.save_weights(target, {"a": np.zeros(2, np.float32)})
        os.symlink(target, link)
        torsor.save_weights(link, {"a": np.ones(2, np.float32)})
        self.assertTrue(os.path.islink(link))
        np.testing.assert_array_equal(read_safetensors(target)["a"], [1, 1])
        # A dangling link gets its target created; the link stays a link.
        dangling = self.path("dangling.safetensors")
        os.symlink(self.path("made.safetensors"), dangling)
        torsor.save_weights(dangling, {"a": np.ones(1)})
        self.assertTrue(os.path.islink(dangling))
        self.assertTrue(os.path.isfile(self.path("made.safetensors")))

    def test_fifo_and_directory_are_refused_and_kept(self):
        fifo = self.path("w.fifo")
        os.mkfifo(fifo)
        with self.assertRaises(torsor.TorsorIOError) as cm:
            torsor.save_weights(fifo, {"a": np.zeros(2)})
        self.assertIn("it is a FIFO, not a regular file", str(cm.exception))
        self.assertIn(fifo, str(cm.exception))
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))
        # Through a symlink too: the message names both.
        link = self.path("to-fifo")
        os.symlink(fifo, link)
        with self.assertRaisesRegex(torsor.TorsorIOError, "to-fifo \\(-> .*w.fifo\\)"):
            torsor.save_weights(link, {"a": np.zeros(2)})
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))
        os.mkdir(self.path("d"))
        with self.assertRaisesRegex(torsor.TorsorIOError, "a directory"):
            torsor.save_weights(self.path("d"), {"a": np.zeros(2)})
        self.assertEqual(sorted(os.listdir(self.tmp)), ["d", "to-fifo", "w.fifo"])

    def test_no_file_beside_the_target_is_touched(self):
        target = self.path("w.safetensors")
        # The old code staged through "<path>.tmp", overwriting this file.
        with open(target + ".tmp", "w") as f:
            f.write("user data")
        torsor.save_weights(target, {"a": np.arange(3.0)})
        with open(target + ".tmp") as f:
            self.assertEqual(f.read(), "user data")
        self.assertEqual(sorted(os.listdir(self.tmp)),
                         ["w.safetensors", "w.safetensors.tmp"])

    def test_a_failed_write_leaves_the_old_file(self):
        target = self.path("w.safetensors")
        torsor.save_weights(target, {"a": np.arange(3.0)})
        os.chmod(target, 0o640)
        before = read_bytes(target)

        def half_then_full_disk(f):
            f.write(b"partial")
            raise OSError(28, "No space left on device")
        with self.assertRaises(torsor.TorsorIOError) as cm:
            _files.write_atomic(target, half_then_full_disk, "weights bundle")
        self.assertIn("No space left on device", str(cm.exception))
        self.assertIn("was not changed", str(cm.exception))
        self.assertEqual(read_bytes(target), before)
        self.assertEqual(os.listdir(self.tmp), ["w.safetensors"])  # no temporary left
        # A successful write keeps the file's mode.
        torsor.save_weights(target, {"a": np.arange(4.0)})
        self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o640)
        # A missing folder is named.
        with self.assertRaisesRegex(torsor.TorsorIOError, "the folder .* does not exist"):
            torsor.save_weights(self.path("no", "w.safetensors"), {"a": np.zeros(1)})


class Training(TempDir):
    """Item 2 (and the training part of item 10): a diverging run never
    writes a non-finite checkpoint over a finite one."""

    @classmethod
    def setUpClass(cls):
        cls.m = torsor.compile(FIT, dtype="f32", grad=True)
        rng = np.random.default_rng(0)
        x = rng.standard_normal((8, 3)).astype(np.float32)
        cls.batch = {"x": x, "y": (x @ np.ones((3, 2)) + 0.5).astype(np.float32)}

    def params(self):
        return {"W": np.full((3, 2), 0.1, np.float32), "b": np.zeros(2, np.float32)}

    def batches(self):
        while True:
            yield self.batch

    def test_diverging_runs_keep_the_last_finite_checkpoint(self):
        ckpt = self.path("fit.safetensors")
        quiet = lambda s: None  # noqa: E731
        train(self.m, self.params(), self.batches(), SGD(lr=0.01), steps=2,
              checkpoint=ckpt, out=quiet)
        good = read_bytes(ckpt)
        # lr = inf: the first update makes every param non-finite.
        with self.assertRaises(TrainingDivergedError) as cm:
            train(self.m, self.params(), self.batches(), SGD(lr=float("inf")),
                  steps=5, checkpoint=ckpt, checkpoint_every=1, out=quiet)
        self.assertEqual(cm.exception.step, 1)
        self.assertIn("step 1: the update made param", str(cm.exception))
        self.assertIn("a non-finite checkpoint is never written", str(cm.exception))
        self.assertEqual(read_bytes(ckpt), good)
        # Adam at lr = 1e30: params of 1e30 are still finite (and saved),
        # then the f32 loss overflows and the run stops.
        with self.assertRaises(TrainingDivergedError) as cm:
            train(self.m, self.params(), self.batches(), Adam(lr=1e30),
                  steps=5, checkpoint=ckpt, checkpoint_every=1, out=quiet)
        for name, arr in read_safetensors(ckpt).items():
            self.assertTrue(np.all(np.isfinite(arr)), name)
        self.assertGreaterEqual(cm.exception.step, 2)
        self.assertEqual(cm.exception.checkpoint_step, cm.exception.step - 1)
        self.assertEqual(os.listdir(self.tmp), ["fit.safetensors"])

    def test_non_finite_params_are_never_saved(self):
        ckpt = self.path("fit.safetensors")
        params = self.params()
        params["W"][0, 0] = np.nan
        with self.assertRaisesRegex(TrainingDivergedError, "param 'W' holds NaN"):
            train(self.m, params, self.batches(), SGD(lr=0.01), steps=0,
                  checkpoint=ckpt, out=lambda s: None)
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "param 'W' element 0"):
            train(self.m, params, self.batches(), SGD(lr=0.01), steps=2,
                  checkpoint=ckpt, out=lambda s: None)  # the runtime's input check
        self.assertFalse(os.path.exists(ckpt))

    def test_batches_that_run_out_and_bad_arguments(self):
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            train(self.m, self.params(), iter([]), SGD(), steps=3, out=lambda s: None)
        self.assertIn("batches ran out after 0 of steps=3 steps", str(cm.exception))
        self.assertIn("itertools.cycle", str(cm.exception))
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "ran out after 2 of"):
            train(self.m, self.params(), [self.batch] * 2, SGD(), steps=3,
                  out=lambda s: None)
        # A list of enough batches is taken as it is.
        self.assertEqual(len(train(self.m, self.params(), [self.batch] * 2, SGD(),
                                   steps=2, out=lambda s: None)), 2)
        with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                    "no output 'los' .* outputs are: loss"):
            train(self.m, self.params(), self.batches(), SGD(), steps=1, loss="los")
        fifo = self.path("ckpt.fifo")
        os.mkfifo(fifo)
        with self.assertRaisesRegex(torsor.TorsorIOError, "checkpoint .* a FIFO"):
            train(self.m, self.params(), self.batches(), SGD(), steps=1,
                  checkpoint=fifo, out=lambda s: None)
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))


class CompileCache(TempDir):
    """Item 3 and the cache folder message of item 10."""

    def setUp(self):
        super().setUp()
        self.old = os.environ.get("TORSOR_CACHE_DIR")
        os.environ["TORSOR_CACHE_DIR"] = self.path("cache")

    def tearDown(self):
        if self.old is None:
            os.environ.pop("TORSOR_CACHE_DIR", None)
        else:
            os.environ["TORSOR_CACHE_DIR"] = self.old
        super().tearDown()

    def records(self):
        return sorted(n for n in os.listdir(self.path("cache")) if n.endswith(".json"))

    def builds(self):
        return sorted(n for n in os.listdir(self.path("cache"))
                      if os.path.isdir(self.path("cache", n)))

    def record(self):
        (name,) = self.records()
        with open(self.path("cache", name)) as f:
            return self.path("cache", name), json.load(f)

    def check_double(self, m):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_array_equal(m(x=x), 2 * x)

    def test_truncated_so_is_rebuilt_and_cache_false_really_recompiles(self):
        m1 = torsor.compile(DOUBLE)
        so = m1.path
        size = os.path.getsize(so)
        m1.close()
        with open(so, "r+b") as f:
            f.truncate(size // 2)
        # cache=False recompiles into a fresh build and publishes it,
        # instead of loading the existing entry.
        m2 = torsor.compile(DOUBLE, cache=False)
        self.assertFalse(m2.cached)
        self.assertNotEqual(m2.path, so)
        self.assertEqual(os.path.getsize(m2.path), size)
        self.check_double(m2)
        self.assertTrue(torsor.compile(DOUBLE).cached)
        # A truncated entry is rebuilt by a plain compile as well, even
        # while a Model of it is loaded (the loader would hand back that
        # library for the same path).
        with open(m2.path, "r+b") as f:
            f.truncate(100)
        m3 = torsor.compile(DOUBLE)
        self.assertFalse(m3.cached)
        self.check_double(m3)
        self.assertTrue(torsor.compile(DOUBLE).cached)
        self.assertEqual(len(self.records()), 1)
        self.assertEqual(len(self.builds()), 3)  # replaced builds stay an hour

    def test_an_entry_of_another_model_is_not_served(self):
        other = DOUBLE.replace("Double", "Triple").replace("x * 2", "x * 3")
        a = torsor.compile(DOUBLE)
        record_a, _ = self.record()
        b = torsor.compile(other)
        build_a, build_b = os.path.dirname(a.path), os.path.dirname(b.path)
        a.close()
        b.close()
        # The library and the manifest swapped: the recorded hashes differ.
        for name in ("model.so", "model.json"):
            shutil.copy(os.path.join(build_b, name), os.path.join(build_a, name))
        m = torsor.compile(DOUBLE)
        self.assertFalse(m.cached)
        self.assertEqual(m.name, "Double")
        self.check_double(m)
        m.close()
        # A consistent forgery: B's files and hashes under A's record, A's
        # source beside them. Only the manifest's model name against the
        # source's declaration tells.
        with open(record_a) as f:
            rec = json.load(f)
        forged = os.path.join(self.path("cache"), rec["dir"])
        shutil.rmtree(forged)
        shutil.copytree(build_b, forged)
        with open(os.path.join(forged, "model.tsr"), "w") as f:
            f.write(DOUBLE)
        (record_b,) = [self.path("cache", n) for n in self.records()
                       if self.path("cache", n) != record_a]
        with open(record_b) as f:
            rec_b = json.load(f)
        rec.update(model="Triple", files=rec_b["files"])
        with open(record_a, "w") as f:
            json.dump(rec, f)
        m = torsor.compile(DOUBLE)
        self.assertFalse(m.cached)
        self.assertEqual(m.name, "Double")
        self.check_double(m)
        m.close()
        # A record whose options differ from the request's is not served.
        with open(record_a) as f:
            rec = json.load(f)
        rec["args"] = rec["args"] + ["-O0"]
        with open(record_a, "w") as f:
            json.dump(rec, f)
        self.assertFalse(torsor.compile(DOUBLE).cached)
        self.assertTrue(torsor.compile(DOUBLE).cached)
        # An entry without its record (an old or half-written one) is rebuilt.
        os.unlink(record_a)
        self.assertFalse(torsor.compile(DOUBLE).cached)
        self.assertTrue(os.path.exists(record_a))

    def test_concurrent_compiles_leave_one_complete_entry(self):
        src = DOUBLE.replace("x * 2", "x * 2 + 0")  # an entry nobody has
        results, errors = [], []

        def work(cache):
            try:
                results.append(torsor.compile(src, cache=cache))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=work, args=(c,))
                   for c in (True, False, True, False)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for m in results:
            self.check_double(m)
        self.assertEqual(len(self.records()), 1)
        _, rec = self.record()
        self.assertIn(rec["dir"], self.builds())
        self.assertEqual(sorted(os.listdir(self.path("cache", rec["dir"]))),
                         ["model.json", "model.so", "model.tsr"])
        # No temporaries beside the record.
        self.assertEqual([n for n in os.listdir(self.path("cache"))
                          if n not in self.records() and n not in self.builds()], [])
        self.assertTrue(torsor.compile(src).cached)

    def test_cache_folder_that_is_a_file(self):
        with open(self.path("cache"), "w") as f:
            f.write("not a folder")
        with self.assertRaises(torsor.TorsorIOError) as cm:
            torsor.compile(DOUBLE)
        msg = str(cm.exception)
        self.assertIn("cannot use the compile cache folder '%s': it is a file, "
                      "not a folder" % self.path("cache"), msg)
        self.assertIn("TORSOR_CACHE_DIR", msg)
        os.environ["TORSOR_CACHE_DIR"] = self.path("cache", "sub")
        with self.assertRaisesRegex(torsor.TorsorIOError, "'%s' is a file, not a folder"
                                    % self.path("cache")):
            torsor.compile(DOUBLE)


class Interrupts(TempDir):
    """Item 10: an interrupted torsor.compile sends torsorc SIGTERM (so it
    removes its temporary files), not SIGKILL."""

    def test_ctrl_c_sends_sigterm_first(self):
        fake = self.path("bin")
        os.mkdir(fake)
        mark = self.path("mark")
        with open(os.path.join(fake, "torsorc"), "w") as f:
            f.write(textwrap.dedent("""\
                #!/bin/sh
                trap 'kill $pid 2>/dev/null; echo TERM > "%s"; exit 143' TERM
                sleep 30 &
                pid=$!
                echo started > "%s.started"
                wait $pid
                """ % (mark, mark)))
        os.chmod(os.path.join(fake, "torsorc"), 0o755)
        main = threading.main_thread().ident
        self.assertEqual(threading.get_ident(), main)

        def interrupt():
            deadline = time.time() + 20
            while not os.path.exists(mark + ".started") and time.time() < deadline:
                time.sleep(0.02)
            signal.pthread_kill(main, signal.SIGINT)
        old = os.environ.get("TORSOR_BIN")
        os.environ["TORSOR_BIN"] = fake
        timer = threading.Thread(target=interrupt)
        start = time.time()
        try:
            timer.start()
            with self.assertRaises(KeyboardInterrupt):
                torsor.compile(DOUBLE, output=self.path("out.so"))
        finally:
            timer.join()
            if old is None:
                os.environ.pop("TORSOR_BIN", None)
            else:
                os.environ["TORSOR_BIN"] = old
        self.assertLess(time.time() - start, 15)
        self.assertTrue(os.path.exists(mark), "torsorc did not get SIGTERM")
        with open(mark) as f:
            self.assertEqual(f.read().strip(), "TERM")


class Backward(unittest.TestCase):
    """Items 4 and 10: NaN cotangents and missing inputs of Model.backward."""

    @classmethod
    def setUpClass(cls):
        cls.m = torsor.compile(FIT, dtype="f64", grad=True)
        cls.m.set_params({"W": np.ones((3, 2)), "b": np.zeros(2)})
        cls.inputs = {"x": np.ones((4, 3)), "y": np.zeros((4, 2))}

    def test_nan_cotangent_is_refused_while_checks_are_on(self):
        for bad, word in ((np.nan, "NaN"), (np.inf, "+Inf"), (-np.inf, "-Inf")):
            with self.assertRaises(torsor.InvalidArgumentError) as cm:
                self.m.backward(self.inputs, {"loss": np.array(bad)})
            self.assertEqual(str(cm.exception),
                             "cotangent 'loss' element 0 (index []) is %s; non-finite "
                             "values are rejected while input checks are on (turn "
                             "them off with Model.set_check_groups(False) to pass "
                             "them through)" % word)
        try:
            self.m.set_check_groups(False)
            g = self.m.backward(self.inputs, {"loss": np.array(np.nan)})
            self.assertTrue(np.all(np.isnan(g["grad.W"])))
        finally:
            self.m.set_check_groups(True)
        g = self.m.backward(self.inputs, {"loss": np.array(1.0)})
        self.assertTrue(np.all(np.isfinite(g["grad.W"])))

    def test_missing_inputs_are_named(self):
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            self.m.backward({}, {"loss": np.array(1.0)})
        self.assertEqual(str(cm.exception),
                         "backward: missing inputs 'x', 'y'; backward takes every "
                         "input of the model, as run() does (inputs: x, y)")
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "missing input 'y';"):
            self.m.backward({"x": self.inputs["x"]}, {})


class Integers(unittest.TestCase):
    """Item 5: integers bound for the C API are range-checked, not wrapped."""

    def test_thread_counts_do_not_wrap(self):
        before = torsor.get_num_threads()
        for n in (2 ** 32 + 3, 2 ** 31, -2 ** 31 - 1, 2 ** 64 + 1):
            with self.assertRaises(torsor.InvalidArgumentError) as cm:
                torsor.set_num_threads(n)
            self.assertIn("set_num_threads(n) = %d is out of range" % n, str(cm.exception))
            self.assertEqual(torsor.get_num_threads(), before)
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "must be an integer, got 2.5"):
            torsor.set_num_threads(2.5)
        m = torsor.compile(DOUBLE)
        for tol in (float("nan"), float("inf"), -1.0):
            with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                        "tol must be a finite number >= 0"):
                m.set_check_groups(True, tol)
        torsor.set_num_threads(np.int64(before))  # NumPy integers are integers
        self.assertEqual(torsor.get_num_threads(), before)

    def test_checked_conversions(self):
        from torsor import _capi
        self.assertEqual(_capi.int64(2 ** 63 - 1, "n"), 2 ** 63 - 1)
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "out of range"):
            _capi.int64(2 ** 63, "n")
        with self.assertRaisesRegex(torsor.InvalidArgumentError, "out of range"):
            _capi.int32(-2 ** 31 - 1, "n")


SUBPROCESS_CLOSE = r"""
import sys, threading, time
import numpy as np
import torsor
m = torsor.compile(sys.argv[1])
L = 3000
g = torsor.groups.random("SO3", L, seed=1)
x = np.ones((L, 16), np.float32)
want = m(g=g, x=x)
done, bad, errors = [0], [0], []
def work():
    while True:
        try:
            y = m(g=g, x=x)
        except torsor.FailedPreconditionError as e:
            errors.append(str(e))
            return
        done[0] += 1
        if not np.array_equal(y, want):
            bad[0] += 1
t = threading.Thread(target=work)
t.start()
while done[0] < 3 and t.is_alive():
    time.sleep(0.001)
m.close()   # while a call runs on the other thread
t.join()
print("calls", done[0], "bad", bad[0], "closed" if m.closed else "open")
print(errors[0] if errors else "no error")
"""

SLOW = ("model Slow { dim L; input g: SO3[L]; input x: f32[L, 16]; "
        "output y = lie_attention(g, x); }")


class Lifetime(TempDir):
    """Item 7: close() during a call, copies, use after close, pickling."""

    def test_close_from_another_thread_waits_for_the_call(self):
        script = self.path("close.py")
        with open(script, "w") as f:
            f.write(SUBPROCESS_CLOSE)
        for _ in range(3):
            res = subprocess.run([sys.executable, script, SLOW], capture_output=True,
                                 text=True, timeout=300)
            self.assertEqual(res.returncode, 0, res.stderr[-2000:])  # no SIGSEGV
            lines = res.stdout.splitlines()
            self.assertRegex(lines[0], r"^calls \d+ bad 0 closed$")
            self.assertRegex(lines[1], r"^model 'Slow' \(.*\) is closed; load it again "
                                       r"with torsor.load\(")

    def test_copies_share_the_module_safely(self):
        m = torsor.compile(DOUBLE)
        x = np.ones((2, 3), np.float32)
        for make in (copy.copy, copy.deepcopy):
            a = torsor.load(m.path)
            b = make(a)
            a.close()
            np.testing.assert_array_equal(b(x=x), 2 * x)  # b still owns the module
            self.assertTrue(a.closed)
            self.assertFalse(b.closed)
            c = make(b)
            b.close()
            b.close()  # twice: a no-op
            np.testing.assert_array_equal(c(x=x), 2 * x)
            c.close()
            with self.assertRaisesRegex(torsor.FailedPreconditionError, "is closed"):
                make(c)

    def test_use_after_close_is_a_clear_error(self):
        m = torsor.compile(FIT, grad=True)
        m.close()
        calls = {
            "run": lambda: m.run({"x": np.ones((1, 3), np.float32)}),
            "call": lambda: m(np.ones((1, 3), np.float32)),
            "backward": lambda: m.backward({}, {}),
            "has_backward": lambda: m.has_backward,
            "set_params": lambda: m.set_params({"b": np.zeros(2)}),
            "load_weights": lambda: m.load_weights(self.path("w.safetensors")),
            "set_check_groups": lambda: m.set_check_groups(False),
        }
        for what, call in calls.items():
            with self.assertRaises(torsor.FailedPreconditionError, msg=what) as cm:
                call()
            self.assertRegex(str(cm.exception),
                             r"^model 'Fit' \(.*model.so\) is closed; load it again "
                             r"with torsor.load\('.*model.so'\)$")
        self.assertIn("Fit", repr(m))
        self.assertEqual([s.name for s in m.inputs], ["x", "y"])  # the manifest view stays

    def test_close_inside_a_call_on_the_same_thread(self):
        """A signal handler may close the model while this thread is inside
        one of its calls: the module is unloaded when the call returns, and
        a nested call is refused instead of deadlocking."""
        m = torsor.compile(DOUBLE)
        native = m._native
        with m._lock:
            with self.assertRaisesRegex(torsor.FailedPreconditionError,
                                        "already running a call on this thread"):
                m(x=np.ones((1, 3), np.float32))
            m.close()
            self.assertTrue(native.ptr)  # still loaded inside the call
        self.assertFalse(native.ptr)

    def test_pickling_says_what_to_do(self):
        m = torsor.compile(DOUBLE)
        with self.assertRaises(TypeError) as cm:
            pickle.dumps(m)
        self.assertIn("cannot pickle torsor.Model 'Double'", str(cm.exception))
        self.assertIn("torsor.load(path)", str(cm.exception))


@unittest.skipIf(torch is None, "PyTorch is not installed in this environment "
                 "(it is optional; make test never installs it)")
class TorchViews(unittest.TestCase):
    """Item 6 and the sparse/mkldnn message of item 10."""

    @classmethod
    def setUpClass(cls):
        cls.m = torsor.compile(DOUBLE)
        cls.x = torch.arange(6, dtype=torch.float32).reshape(2, 3) + 1

    def test_lazy_negation_and_conjugation_are_resolved(self):
        z = torch.complex(self.x, -self.x)      # imag = -x
        view = z.conj().imag                    # = x, stored as -x with the neg bit
        self.assertTrue(view.is_neg())
        self.assertTrue(torch.equal(self.m(x=view), 2 * self.x))
        neg = torch._neg_view(self.x)           # = -x, stored as x
        self.assertTrue(neg.is_neg())
        self.assertTrue(torch.equal(self.m(x=neg), -2 * self.x))
        # Params and saved weights read views by value too.
        fit = torsor.compile(FIT, dtype="f32")
        W = torch.ones(3, 2)
        fit.set_params({"W": torch._neg_view(W), "b": torch.zeros(2)})
        x, y = torch.ones(1, 3), torch.full((1, 2), -3.0)
        self.assertEqual(float(fit(x=x, y=y)), 0.0)
        with tempfile.TemporaryDirectory() as d:
            torsor.save_weights(os.path.join(d, "w.safetensors"), {"W": torch._neg_view(W)})
            got = read_safetensors(os.path.join(d, "w.safetensors"))["W"]
        np.testing.assert_array_equal(got, -np.ones((3, 2)))

    def test_sparse_and_mkldnn_are_refused_by_name(self):
        with self.assertRaises(torsor.InvalidArgumentError) as cm:
            self.m(x=self.x.to_sparse())
        self.assertEqual(str(cm.exception),
                         "input 'x': torch tensor has layout sparse_coo; Torsor takes "
                         "dense strided tensors (convert it with .to_dense())")
        with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                    "input 'x': torch tensor has layout sparse_csr"):
            self.m(x=self.x.to_sparse_csr())
        if torch.backends.mkldnn.is_available():
            with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                        "input 'x': torch tensor has layout _mkldnn"):
                self.m(x=self.x.to_mkldnn())
        # Tensors without memory of their own (fake ones, as torch.compile
        # traces) are refused instead of lending a meaningless pointer.
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            fake = torch.empty(2, 3)
        with self.assertRaisesRegex(torsor.InvalidArgumentError,
                                    "input 'x': a FakeTensor has no memory of its own"):
            self.m(x=fake)
        # A lazy zero tensor is materialised.
        zero = torch._efficientzerotensor((2, 3))
        self.assertTrue(torch.equal(self.m(x=zero), torch.zeros(2, 3)))
        # Copies (set_params) take them by value.
        fit = torsor.compile(FIT, dtype="f32")
        fit.set_params({"W": torch.ones(3, 2).to_sparse(), "b": torch.zeros(2)})
        self.assertEqual(float(fit(x=torch.ones(1, 3), y=torch.full((1, 2), 3.0))), 0.0)


if __name__ == "__main__":
    unittest.main()
