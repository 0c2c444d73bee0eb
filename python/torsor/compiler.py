"""compiler.py - torsor.compile: run torsorc, cache the result by source hash.

The cache key is a SHA-256 of the model's source text, the torsorc options
(dtype, opt, target, extra flags) and the identity of the torsorc binary
(path, size, modification time), so a rebuilt compiler never serves stale
code. An entry is a record <cache>/<key>.json and the build folder it
names, <cache>/<key>-<id>/ with model.so, model.json and the source
(model.tsr). The record holds the source's hash, the options, the
compiler's identity, the manifest's model name and the SHA-256 of model.so
and model.json; an entry is served only when the record matches the
request and the files on disk (source text equal, hashes equal, manifest
naming the recorded model). Any other entry (truncated, tampered with,
replaced by another model's files, half deleted, of an older layout) is
rebuilt. A build goes into a fresh folder and is published by replacing
the record atomically, after the folder is complete, so concurrent
compiles (threads or processes) never see a half entry, and a rebuilt
entry never reuses a library path (the dynamic loader returns an already
loaded library for a path it has seen). Folders no record names are
removed by the next rebuild of their entry once they are an hour old. `cache=False` always recompiles and
publishes the new build. The cache lives in $TORSOR_CACHE_DIR, else
$XDG_CACHE_HOME/torsor, else ~/.cache/torsor; delete it at any time.

Prebuilt models (a machine without torsorc, e.g. a GPU machine without
LLVM): `prebuild(source, folder, ...)` compiles a model into
folder/<name>.so, the name a hash of the source text and the torsorc
options only (not of the compiler's identity), and compile() first looks
for that name in every folder of $TORSOR_PREBUILT_DIR (os.pathsep
separated); a hit is loaded as it is, without torsorc.

A compile interrupted on the Python side (Ctrl-C, any exception) stops
torsorc with SIGTERM, so it removes its temporary files, and only after a
grace period with SIGKILL.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from . import _locate
from ._files import write_atomic
from .errors import CompileError, TorsorError, TorsorIOError
from .model import Model

_TEXT_NAME = "<source>"
_RECORD_FORMAT = 1
_STALE_S = 3600  # unnamed build folders older than this are removed
_TERM_GRACE_S = 5.0  # SIGTERM -> SIGKILL


def cache_dir():
    """The folder compiled models are cached in."""
    explicit = os.environ.get("TORSOR_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torsor")


def _ensure_cache_dir(folder):
    """Creates the cache folder, or says why it cannot be used."""
    try:
        os.makedirs(folder, exist_ok=True)
        if os.path.isdir(folder):
            return
    except OSError as e:
        cause = e.strerror or str(e)
    else:
        cause = "File exists"
    if os.path.islink(folder) and not os.path.exists(folder):
        cause = "it is a symlink to '%s', which does not exist" % os.readlink(folder)
    elif os.path.lexists(folder) and not os.path.isdir(folder):
        cause = "it is a file, not a folder"
    else:
        parent = folder
        while parent and not os.path.lexists(parent):
            parent = os.path.dirname(parent)
        if parent and not os.path.isdir(parent):
            cause = "'%s' is a file, not a folder" % parent
    raise TorsorIOError(
        "cannot use the compile cache folder '%s': %s; remove or rename it, "
        "set TORSOR_CACHE_DIR to a folder, or pass output=PATH.so to compile "
        "without the cache" % (folder, cause))


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


def _sha256_file(path):
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _entry_problem(folder, key, want, source_bytes):
    """(None, library path) when the cache entry `key` may be served for the
    request `want` (the record fields that must match), else (what is wrong
    with it, None)."""
    try:
        with open(os.path.join(folder, key + ".json"), "rb") as f:
            record = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        return "no entry", None
    except (OSError, ValueError) as e:
        return "unreadable entry record (%s)" % e, None
    if not isinstance(record, dict) or record.get("format") != _RECORD_FORMAT:
        return "entry record of another format", None
    for field, value in want.items():
        if record.get(field) != value:
            return "recorded %s differs" % field, None
    build = record.get("dir")
    if not isinstance(build, str) or not re.fullmatch(re.escape(key) + "-[0-9a-f]{16}",
                                                      build):
        return "no build folder named in the record", None
    build = os.path.join(folder, build)
    try:
        with open(os.path.join(build, "model.tsr"), "rb") as f:
            if f.read() != source_bytes:
                return "stored source differs", None
        files = record.get("files") or {}
        for name in ("model.so", "model.json"):
            if _sha256_file(os.path.join(build, name)) != files.get(name):
                return "%s does not match its recorded hash" % name, None
        with open(os.path.join(build, "model.json"), "rb") as f:
            manifest = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as e:
        return "unreadable entry (%s)" % e, None
    if not isinstance(manifest, dict) or manifest.get("model") != record.get("model"):
        return "manifest names another model than the record", None
    declared = _declared_models(source_bytes.decode("utf-8", "surrogateescape"))
    if declared and manifest.get("model") not in declared:
        return ("manifest names model %r, the source declares %s"
                % (manifest.get("model"), ", ".join(sorted(declared)))), None
    return None, os.path.join(build, "model.so")


def _declared_models(text):
    """The names after `model` in source text (`//` comments skipped):
    `model` is a reserved word, so this finds every model declaration."""
    text = re.sub(r"//[^\n]*", "", text)
    return set(re.findall(r"\bmodel\s+([A-Za-z_][A-Za-z0-9_]*)", text))


def _remove_stale_builds(folder, key, keep):
    """Removes build folders of entry `key` other than `keep` that are
    older than _STALE_S: replaced builds (a Model loaded from one keeps
    working, but its path is gone) and builds interrupted midway."""
    now = time.time()
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name == keep or not name.startswith(key + "-"):
            continue
        path = os.path.join(folder, name)
        try:
            if now - os.stat(path).st_mtime > _STALE_S:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def _build_entry(folder, key, want, torsorc, text, source_bytes, path, args):
    """Compiles into a fresh build folder and publishes it as entry `key`
    (the record last, atomically). Returns the library's path."""
    name = "%s-%s" % (key, os.urandom(8).hex())
    build = os.path.join(folder, name)
    try:
        os.mkdir(build)
    except OSError as e:
        raise TorsorIOError("cannot create a build folder in the compile cache "
                            "'%s': %s" % (folder, e.strerror or e)) from e
    try:
        so = os.path.join(build, "model.so")
        _run_torsorc(torsorc, text, path, args, so)
        if path is not None:
            with open(path, "rb") as f:
                if f.read() != source_bytes:
                    raise CompileError(
                        "%s changed while torsorc compiled it; compile it again"
                        % path, command=[torsorc, path])
        with open(os.path.join(build, "model.tsr"), "wb") as f:
            f.write(source_bytes)
        with open(os.path.join(build, "model.json"), "rb") as f:
            model = json.loads(f.read().decode("utf-8")).get("model")
        record = dict(want, format=_RECORD_FORMAT, model=model, dir=name, files={
            n: _sha256_file(os.path.join(build, n)) for n in ("model.so", "model.json")})
        write_atomic(os.path.join(folder, key + ".json"),
                     json.dumps(record, indent=1).encode("utf-8"),
                     "compile cache record")
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    _remove_stale_builds(folder, key, name)
    return so


def compile(source, dtype="f32", opt=None, target="cpu", flags=(), output=None,
            cache=True, grad=False, model=None, compute="f32"):
    """Compiles a .tsr model with torsorc and loads it.

    source  a path to a .tsr file, or the model's source text
    dtype   "f32" or "f64" (torsorc --dtype)
    opt     0..3 (torsorc -O; None: torsorc's default). -O0 is the unfused
            oracle the optimised code is tested against
    target  "cpu" or "nvptx" (torsorc --target; an nvptx model runs on a
            CUDA GPU and takes its chip in flags: ["--gpu-arch=sm_90"])
    flags   more torsorc flags, e.g. ["--mcpu=generic"]
    output  write OUT.so (and OUT.json) here instead of the cache
    cache   reuse an earlier compile of the same source and options (an
            entry is checked against its record first, and rebuilt when it
            does not match); False recompiles and replaces the entry. A
            model prebuilt with prebuild() into a folder of
            $TORSOR_PREBUILT_DIR is served first, without torsorc
    grad    also emit the backward entry (torsorc --grad): Model.backward
            returns the gradients of every param and float input
    model   the model to compile, by name, from a file that declares
            several (torsorc --model)
    compute "f32" (default, the reference) or "bf16": matrix products take
            bf16 operands and sum in f32, on AMX or AVX512-BF16 where the
            CPU has them (torsorc --compute; docs/precision.md). I/O and
            params keep their dtype

    Returns a torsor.Model. Raises CompileError with torsorc's located
    diagnostics (`file.tsr:12:9: error: ...`, caret line); for source text
    the file is called `<source>` in them."""
    text, path = _read_source(source)
    args = _torsorc_args(dtype, opt, target, flags, grad, model, compute)
    if output is None and cache:
        hit = _prebuilt(text, args)
        if hit is not None:
            return hit
    try:
        torsorc = _locate.torsorc_path()
    except TorsorError as e:
        if os.environ.get("TORSOR_PREBUILT_DIR"):
            raise TorsorError("%s; and no folder of TORSOR_PREBUILT_DIR=%s holds a prebuilt "
                              "%s for this source and options (torsorc %s); stage it with "
                              "torsor.compiler.prebuild on a machine with torsorc"
                              % (e, os.environ["TORSOR_PREBUILT_DIR"],
                                 prebuilt_name(text, args) + ".so", " ".join(args))) from None
        raise

    if output is not None:
        out = os.fspath(output)
        _run_torsorc(torsorc, text, path, args, out)
        return Model(out)

    folder = cache_dir()
    _ensure_cache_dir(folder)
    real_torsorc = os.path.realpath(torsorc)
    st = os.stat(real_torsorc)
    identity = {"path": real_torsorc, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    source_bytes = text.encode("utf-8", "surrogateescape")
    key = hashlib.sha256("\0".join(
        [text, *args, real_torsorc, str(st.st_size),
         str(st.st_mtime_ns)]).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    want = {"source_sha256": hashlib.sha256(source_bytes).hexdigest(),
            "args": args, "torsorc": identity}
    if cache:
        problem, so = _entry_problem(folder, key, want, source_bytes)
        if problem is None:
            try:
                m = Model(so)
                m.cached = True
                return m
            except TorsorError:
                pass  # e.g. a runtime of another ABI since: rebuild the entry
    m = Model(_build_entry(folder, key, want, torsorc, text, source_bytes, path, args))
    m.cached = False
    return m


def _torsorc_args(dtype, opt, target, flags, grad, model, compute):
    """torsorc's options for compile()'s arguments (also part of the keys)."""
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
    if compute not in ("f32", "bf16"):
        raise ValueError("compute must be 'f32' or 'bf16', got %r" % (compute,))
    # f32 adds no flag, so earlier cache entries stay valid.
    if compute != "f32":
        args.append("--compute=" + compute)
    return args + list(flags)


def prebuilt_name(text, args):
    """The file stem of a prebuilt model: a hash of the source text and the
    torsorc options (not of the compiler's identity)."""
    return "prebuilt-" + hashlib.sha256("\0".join([text, *args]).encode(
        "utf-8", "surrogateescape")).hexdigest()[:32]


def _prebuilt(text, args):
    """The prebuilt model of (text, args) from $TORSOR_PREBUILT_DIR, or None."""
    folders = os.environ.get("TORSOR_PREBUILT_DIR", "")
    name = prebuilt_name(text, args) + ".so"
    for folder in folders.split(os.pathsep):
        so = os.path.join(folder, name) if folder else ""
        if so and os.path.exists(so) and os.path.exists(so[:-3] + ".json"):
            m = Model(so)
            m.cached = True
            return m
    return None


def prebuild(source, folder, dtype="f32", opt=None, target="cpu", flags=(), grad=False,
             model=None, compute="f32"):
    """Compiles `source` with compile()'s options into folder/<name>.so
    (and .json), the name prebuilt_name() of the source text and options,
    without loading it (an nvptx model can be built on a machine without a
    GPU). With the folder in $TORSOR_PREBUILT_DIR, compile() with the same
    source and options loads it, on a machine without torsorc. Returns the
    .so path (an existing one is kept)."""
    text, path = _read_source(source)
    args = _torsorc_args(dtype, opt, target, flags, grad, model, compute)
    os.makedirs(folder, exist_ok=True)
    so = os.path.join(folder, prebuilt_name(text, args) + ".so")
    if not (os.path.exists(so) and os.path.exists(so[:-3] + ".json")):
        _run_torsorc(_locate.torsorc_path(), text, path, args, so)
    return so


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
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace")
        try:
            _, diag = proc.communicate()
        except BaseException:  # KeyboardInterrupt, SystemExit, ...
            _stop(proc)
            raise
    if proc.returncode != 0:
        if path is None:
            diag = diag.replace(src, _TEXT_NAME)
        # The message names the Python call for torsorc's flag hints.
        msg = diag.replace("pick it with torsorc --model NAME",
                           "pick it with torsor.compile(..., model='NAME')")
        raise CompileError(msg.rstrip("\n") or "torsorc exited with %d" % proc.returncode,
                           diagnostics=diag, command=cmd)


def _stop(proc):
    """Stops torsorc: SIGTERM first, so it removes its temporary files,
    then SIGKILL if it has not exited after _TERM_GRACE_S seconds (or at
    a second interrupt)."""
    try:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=_TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
