"""compiler.py - torsor.compile: run torsorc, cache the result by source hash.

The cache key is a SHA-256 of the model's source text, the torsorc options
(dtype, opt, target, extra flags) and the identity of the torsorc binary
(path, size, modification time), so a rebuilt compiler never serves stale
code. Each entry is a folder <cache>/<key>/ with model.so, model.json and
the source; it is written to a temporary folder and renamed into place, so
concurrent compiles of the same model (two processes) are safe. The cache
lives in $TORSOR_CACHE_DIR, else $XDG_CACHE_HOME/torsor, else
~/.cache/torsor; delete it at any time.
"""
import hashlib
import os
import shutil
import subprocess
import tempfile

from . import _locate
from .errors import CompileError
from .model import Model

_TEXT_NAME = "<source>"


def cache_dir():
    """The folder compiled models are cached in."""
    explicit = os.environ.get("TORSOR_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torsor")


def _read_source(source):
    """(text, path or None): a path (str or PathLike) is read; a string
    that contains a newline or a '{' is source text."""
    if isinstance(source, os.PathLike) or (
            isinstance(source, str) and "\n" not in source and "{" not in source):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise FileNotFoundError("%s: no such file (torsor.compile takes a "
                                    "path to a .tsr file or the source text)" % path)
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return f.read(), path
    if isinstance(source, bytes):
        source = source.decode("utf-8", "surrogateescape")
    return source, None


def compile(source, dtype="f32", opt=None, target="cpu", flags=(), output=None,
            cache=True, grad=False, model=None):
    """Compiles a .tsr model with torsorc and loads it.

    source  a path to a .tsr file, or the model's source text
    dtype   "f32" or "f64" (torsorc --dtype)
    opt     0..3 (torsorc -O; None: torsorc's default). -O0 is the unfused
            oracle the optimised code is tested against
    target  "cpu" (torsorc --target)
    flags   more torsorc flags, e.g. ["--mcpu=generic"]
    output  write OUT.so (and OUT.json) here instead of the cache
    cache   reuse an earlier compile of the same source and options
    grad    also emit the backward entry (torsorc --grad): Model.backward
            returns the gradients of every param and float input
    model   the model to compile, by name, from a file that declares
            several (torsorc --model)

    Returns a torsor.Model. Raises CompileError with torsorc's located
    diagnostics (`file.tsr:12:9: error: ...`, caret line); for source text
    the file is called `<source>` in them."""
    text, path = _read_source(source)
    torsorc = _locate.torsorc_path()
    args = ["--dtype=" + dtype]
    if target is not None:
        args.append("--target=" + target)
    if opt is not None:
        if opt not in (0, 1, 2, 3):
            raise ValueError("opt must be 0, 1, 2 or 3, got %r" % (opt,))
        args.append("-O%d" % opt)
    if grad:
        args.append("--grad")
    if model is not None:
        args.append("--model=" + model)
    args += list(flags)

    if output is not None:
        out = os.fspath(output)
        _run_torsorc(torsorc, text, path, args, out)
        return Model(out)

    st = os.stat(torsorc)
    key = hashlib.sha256("\0".join(
        [text, *args, os.path.realpath(torsorc), str(st.st_size),
         str(st.st_mtime_ns)]).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    entry = os.path.join(cache_dir(), key)
    so = os.path.join(entry, "model.so")
    if cache and os.path.exists(so) and os.path.exists(os.path.join(entry, "model.json")):
        m = Model(so)
        m.cached = True
        return m
    os.makedirs(cache_dir(), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=key + ".tmp-", dir=cache_dir())
    try:
        _run_torsorc(torsorc, text, path, args, os.path.join(tmp, "model.so"))
        with open(os.path.join(tmp, "model.tsr"), "w", encoding="utf-8",
                  errors="surrogateescape") as f:
            f.write(text)
        try:
            os.rename(tmp, entry)
        except OSError:  # another process won the race, or a stale entry
            if not os.path.exists(os.path.join(entry, "model.json")):
                shutil.rmtree(entry, ignore_errors=True)
                os.rename(tmp, entry)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    m = Model(so)
    m.cached = False
    return m


def _run_torsorc(torsorc, text, path, args, out):
    """Runs torsorc on `path` (or on `text` written to a temporary file
    whose name is replaced by `<source>` in the diagnostics)."""
    with tempfile.TemporaryDirectory(prefix="torsor-src-") as tmp:
        src = path
        if src is None:
            src = os.path.join(tmp, "model.tsr")
            with open(src, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
        cmd = [torsorc, src, "-o", out, *args]
        res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        diag = res.stderr
        if path is None:
            diag = diag.replace(src, _TEXT_NAME)
        # The message names the Python call for torsorc's flag hints.
        msg = diag.replace("pick it with torsorc --model NAME",
                           "pick it with torsor.compile(..., model='NAME')")
        raise CompileError(msg.rstrip("\n") or "torsorc exited with %d" % res.returncode,
                           diagnostics=diag, command=cmd)
