# Output staging (issue 24, item 1): torsor-run never replaces what the user
# did not name. Links are followed and staged beside their real target,
# FIFOs are written in place, two outputs to one file are refused before the
# model runs, and write errors (a FIFO whose reader left, a file-size limit)
# are errors that leave every target as it was. Everything happens inside
# the test's own temporary directory; no /dev path is ever an output.
#
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %torsor_bin %t | FileCheck %s
# CHECK: symlink: link kept, target written, no temporaries: ok
# CHECK-NEXT: symlink to another directory: staged beside the target: ok
# CHECK-NEXT: dangling symlink: creates the file it names: ok
# CHECK-NEXT: FIFO: written in place, still a FIFO: ok
# CHECK-NEXT: FIFO whose reader closes: error: cannot write '{{.*}}fifo2': Broken pipe (the reader of the pipe closed it)
# CHECK-NEXT: FIFO whose reader closes: other outputs untouched: ok
# CHECK-NEXT: duplicate: error: --output out and --gradient grad.w write the same file '{{.*}}dup.npy'; one would overwrite the other: give each output its own path
# CHECK-NEXT: duplicate through a link: error: --output out and --output rowsum write the same file '{{.*}}real.npy' (through a link); one would overwrite the other: give each output its own path
# CHECK-NEXT: duplicate through a hard link: error: {{.*}}write the same file{{.*}}
# CHECK-NEXT: duplicate refused before running: ok
# CHECK-NEXT: directory: error: cannot write '{{.*}}': it is a directory; outputs go to regular files, FIFOs or character devices
# CHECK-NEXT: file-size limit: error: cannot write '{{.*}}big.npy': File too large
# CHECK-NEXT: file-size limit: old contents kept, no temporaries: ok
import io
import os
import stat
import subprocess
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import make_inputs  # noqa: E402

bin_dir, tmp = sys.argv[1], sys.argv[2]
run_tool = os.path.join(bin_dir, "torsor-run")
model = os.path.join(bin_dir, "..", "lib", "torsor_fake_model.so")
make_inputs.main(tmp)
j = lambda *names: os.path.join(tmp, *names)


def run(*outputs, preexec=None, check=True):
    args = [run_tool, model, "--input", "pose=" + j("pose.npy"),
            "--input", "x=" + j("x.npy"), "--weights", j("w.safetensors")]
    for flag, spec in outputs:
        args += [flag, spec]
    p = subprocess.run(args, capture_output=True, text=True,
                       preexec_fn=preexec, timeout=60)
    if check and p.returncode != 0:
        sys.exit("torsor-run failed: " + p.stderr)
    return p


def error(p):
    assert p.returncode == 1, (p.returncode, p.stderr)
    return p.stderr.strip().replace("torsor-run: error: ", "error: ")


def no_temporaries(directory):
    hidden = [n for n in os.listdir(directory) if n.startswith(".")]
    assert not hidden, hidden
    return True


def is_npy(path, shape):
    return np.load(path).shape == shape


# A symlink stays a symlink; the file it names gets the data.
with open(j("real.npy"), "wb") as f:
    f.write(b"stale")
os.symlink("real.npy", j("link.npy"))
run(("--output", "out=" + j("link.npy")))
assert os.path.islink(j("link.npy"))
assert is_npy(j("real.npy"), (5, 8))
print("symlink: link kept, target written, no temporaries:",
      "ok" if no_temporaries(tmp) else "FAIL")

# A link into another directory: the temporary goes next to the target
# (where the rename is atomic), not next to the link.
os.makedirs(j("other"))
with open(j("other", "far.npy"), "wb") as f:
    f.write(b"stale")
os.chmod(j("other", "far.npy"), 0o640)
os.symlink(os.path.join("other", "far.npy"), j("far-link.npy"))
run(("--output", "out=" + j("far-link.npy")))
assert os.path.islink(j("far-link.npy")) and is_npy(j("other", "far.npy"), (5, 8))
assert stat.S_IMODE(os.stat(j("other", "far.npy")).st_mode) == 0o640
ok = no_temporaries(tmp) and no_temporaries(j("other"))
print("symlink to another directory: staged beside the target:",
      "ok" if ok else "FAIL")

os.symlink("fresh.npy", j("dangling.npy"))
run(("--output", "rowsum=" + j("dangling.npy")))
ok = os.path.islink(j("dangling.npy")) and is_npy(j("fresh.npy"), (5,))
print("dangling symlink: creates the file it names:", "ok" if ok else "FAIL")


# A FIFO is written in place (a pipe to another program), not replaced.
def read_fifo(path, sink, close_at_once=False):
    with open(path, "rb") as f:
        if not close_at_once:
            sink.append(f.read())


os.mkfifo(j("fifo"))
got = []
reader = threading.Thread(target=read_fifo, args=(j("fifo"), got))
reader.start()
run(("--output", "out=" + j("fifo")))
reader.join(30)
ok = stat.S_ISFIFO(os.stat(j("fifo")).st_mode) and \
    np.load(io.BytesIO(got[0])).shape == (5, 8)
print("FIFO: written in place, still a FIFO:", "ok" if ok else "FAIL")

# A reader that closes at once: the write fails with EPIPE (not SIGPIPE),
# and the regular output of the same run keeps its old contents. L = 5000
# makes the output larger than a pipe's buffer, so the write must fail.
np.save(j("pose.npy"), make_inputs.pose(5000))
np.save(j("x.npy"), make_inputs.x(5000))
os.mkfifo(j("fifo2"))
with open(j("kept.npy"), "wb") as f:
    f.write(b"old")
reader = threading.Thread(target=read_fifo, args=(j("fifo2"), [], True))
reader.start()
p = run(("--output", "rowsum=" + j("kept.npy")),
        ("--output", "out=" + j("fifo2")), check=False)
reader.join(30)
print("FIFO whose reader closes:", error(p))
ok = open(j("kept.npy"), "rb").read() == b"old" and no_temporaries(tmp)
print("FIFO whose reader closes: other outputs untouched:",
      "ok" if ok else "FAIL")
make_inputs.main(tmp)

# Two destinations for one file are refused up front, by path, through a
# link, and through a hard link. The fake model has no gradients, so the
# first case fails on the duplicate before it can fail on --gradient.
p = run(("--output", "out=" + j("dup.npy")), ("--cotangent", "out=" + j("x.npy")),
        ("--gradient", "grad.w=" + j("dup.npy")), check=False)
print("duplicate:", error(p))
p = run(("--output", "out=" + j("real.npy")),
        ("--output", "rowsum=" + j("link.npy")), check=False)
print("duplicate through a link:", error(p))
os.link(j("real.npy"), j("hard.npy"))
p = run(("--output", "out=" + j("real.npy")),
        ("--output", "rowsum=" + j("hard.npy")), check=False)
print("duplicate through a hard link:", error(p))
ok = not os.path.exists(j("dup.npy")) and is_npy(j("real.npy"), (5, 8))
print("duplicate refused before running:", "ok" if ok else "FAIL")

p = run(("--output", "out=" + j("other")), check=False)
print("directory:", error(p))


# A write error while writing (here EFBIG under RLIMIT_FSIZE, as ENOSPC or
# EIO would be) is reported and leaves the old file and no temporary.
def limit_file_size():
    import resource
    resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))


with open(j("big.npy"), "wb") as f:
    f.write(b"previous")
p = run(("--output", "out=" + j("big.npy")), preexec=limit_file_size,
        check=False)
print("file-size limit:", error(p))
ok = open(j("big.npy"), "rb").read() == b"previous" and no_temporaries(tmp)
print("file-size limit: old contents kept, no temporaries:",
      "ok" if ok else "FAIL")
