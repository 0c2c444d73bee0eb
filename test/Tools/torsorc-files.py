# The files torsorc reads and writes (issue 24, items 1, 9 and 10;
# compiler/Support/FileIO.h). Sources must be regular files of at most
# 64 MiB; outputs follow links and are staged beside their real target,
# complete or absent; two outputs that are one file are refused; signals
# remove temporaries. Everything stays inside the test's temporary
# directory: FIFOs and oversized files are made there, no /dev path is used.
#
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %torsor_bin/torsorc %S/Inputs/two-models.tsr %t | FileCheck %s
# CHECK: FIFO source: torsorc: error: cannot read '{{.*}}src.fifo': it is a FIFO, not a model source file; give the path of a regular file
# CHECK-NEXT: large source: torsorc: error: cannot read '{{.*}}big.tsr': a model source of 67108865 bytes or more is larger than the 64 MiB torsorc reads; split the model into files of at most that size
# CHECK-NEXT: large stdin: torsorc: error: cannot read '<stdin>': a model source of {{[0-9]+}} bytes or more is larger than the 64 MiB torsorc reads
# CHECK-NEXT: symlink -o: links kept, targets written, no temporaries: ok
# CHECK-NEXT: -o m.json: torsorc: error: -o and the manifest would both be written to '{{.*}}m.json'; one would overwrite the other (name the library OUT.so: its manifest is OUT.json)
# CHECK-NEXT: -o the input: torsorc: error: -o '{{.*}}m.tsr' is the input file; writing it would destroy the model source: choose another output path
# CHECK-NEXT: -o a directory: torsorc: error: cannot write '{{.*}}': it is a directory; a model library goes to a regular file
# CHECK-NEXT: -o a FIFO (library): torsorc: error: cannot write '{{.*}}out.fifo': it is a FIFO; a model library must be a regular file (give a path in a directory)
# CHECK-NEXT: --emit=mlir to a FIFO: written in place, still a FIFO: ok
# CHECK-NEXT: failed compile: old output kept: ok
# CHECK-NEXT: file-size limit: torsorc: error: cannot write '{{.*}}tmpdir/torsor-{{.*}}.o': File too large
# CHECK-NEXT: file-size limit: old library kept, no temporaries: ok
# CHECK-NEXT: SIGTERM: no $TMPDIR/torsor-*.o and no staged file left: ok
# CHECK-NEXT: SIGINT: no $TMPDIR/torsor-*.o and no staged file left: ok
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

torsorc, model_src, tmp = sys.argv[1:4]
j = lambda *names: os.path.join(tmp, *names)
model = j("m.tsr")
shutil.copy(model_src, model)
# torsorc's own temporaries (the object file) stay in here too.
os.makedirs(j("tmpdir"))
env = dict(os.environ, TMPDIR=j("tmpdir"))


def run(*args, check=False, stdin=None, preexec=None):
    p = subprocess.run([torsorc, *args], capture_output=True, text=True,
                       stdin=stdin, preexec_fn=preexec, env=env, timeout=120)
    if check and p.returncode != 0:
        sys.exit("torsorc failed: " + p.stderr)
    return p


def error(p):
    assert p.returncode == 1, (p.returncode, p.stderr)
    return p.stderr.strip().splitlines()[0]


def hidden(directory):
    return [n for n in os.listdir(directory) if n.startswith(".")]


# Sources: a FIFO (nobody writes it; torsorc must not wait or read it) and
# a sparse file one byte past the cap, on disk and on standard input.
os.mkfifo(j("src.fifo"))
print("FIFO source:", error(run(j("src.fifo"), "--emit=mlir")))
with open(j("big.tsr"), "wb") as f:
    f.truncate((64 << 20) + 1)
print("large source:", error(run(j("big.tsr"), "--emit=mlir")))
with open(j("big.tsr"), "rb") as f:
    print("large stdin:", error(run("-", "--emit=mlir", stdin=f)))
os.unlink(j("big.tsr"))

# -o through links: the library and manifest land in the files the links
# name (the manifest is OUT.json beside the name given, where the runtime
# looks), and the links stay links.
os.makedirs(j("real"))
for name in ("lib.so", "lib.json"):
    with open(j("real", name), "wb") as f:
        f.write(b"stale")
    os.symlink(os.path.join("real", name), j(name))
run(model, "--model", "A", "-o", j("lib.so"), check=True)
ok = os.path.islink(j("lib.so")) and os.path.islink(j("lib.json"))
ok = ok and open(j("real", "lib.so"), "rb").read(4) == b"\x7fELF"
ok = ok and b'"model": "A"' in open(j("real", "lib.json"), "rb").read()
ok = ok and not hidden(tmp) and not hidden(j("real"))
print("symlink -o: links kept, targets written, no temporaries:",
      "ok" if ok else "FAIL")

print("-o m.json:", error(run(model, "--model", "A", "-o", j("m.json"))))
print("-o the input:", error(run(model, "--model", "A", "-o", model)))
print("-o a directory:", error(run(model, "--model", "A", "-o", j("real"))))
os.mkfifo(j("out.fifo"))
print("-o a FIFO (library):",
      error(run(model, "--model", "A", "-o", j("out.fifo"))))

# Text emits may go to a FIFO (a pipe to another program): written in place.
got = []


def read_fifo():
    with open(j("out.fifo"), "rb") as f:
        got.append(f.read())


reader = threading.Thread(target=read_fifo)
reader.start()
run(model, "--model", "A", "--emit=mlir", "-o", j("out.fifo"), check=True)
reader.join(60)
ok = stat.S_ISFIFO(os.stat(j("out.fifo")).st_mode) and b"func.func @A" in got[0]
print("--emit=mlir to a FIFO: written in place, still a FIFO:",
      "ok" if ok else "FAIL")

# A compile that fails leaves the file -o names as it was (it used to be
# removed, whatever it was).
with open(j("bad.tsr"), "w") as f:
    f.write("model M { input x: f32[4]; output y = nope(x); }\n")
with open(j("kept.mlir"), "w") as f:
    f.write("previous")
p = run(j("bad.tsr"), "--emit=mlir", "-o", j("kept.mlir"))
ok = p.returncode == 1 and open(j("kept.mlir")).read() == "previous"
print("failed compile: old output kept:", "ok" if ok else "FAIL")


# A write error (EFBIG under RLIMIT_FSIZE, as ENOSPC or EIO would be) is an
# error, and the old library stays.
def limit_file_size():
    import resource
    resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))


p = run(model, "--model", "A", "-o", j("lib.so"), preexec=limit_file_size)
print("file-size limit:", error(p))
ok = open(j("real", "lib.so"), "rb").read(4) == b"\x7fELF"
ok = ok and not hidden(tmp) and not hidden(j("real"))
ok = ok and not os.listdir(j("tmpdir"))
print("file-size limit: old library kept, no temporaries:",
      "ok" if ok else "FAIL")

# SIGTERM and SIGINT while the object file exists: LLVM's signal handler
# removes it and the staged library before the signal ends torsorc.
for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")):
    caught = False
    for attempt in range(20):
        # Default dispositions, as in a foreground shell (a background
        # job, such as a CI runner, starts with SIGINT ignored).
        p = subprocess.Popen([torsorc, model, "--model", "A", "-o",
                              j("sig.so")], env=env,
                             preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
        while p.poll() is None:
            if any(n.startswith("torsor-") for n in os.listdir(j("tmpdir"))):
                p.send_signal(sig)
                caught = True
                break
            time.sleep(0.0005)
        rc = p.wait(120)
        if caught:
            break
    left = os.listdir(j("tmpdir")) + hidden(tmp)
    ok = caught and rc == -sig and not left
    print(name + ": no $TMPDIR/torsor-*.o and no staged file left:",
          "ok" if ok else "FAIL (caught %s, rc %s, left %s)" % (caught, rc, left))
