"""compiler.py - torsor.compile: run torsorc, cache the result by source hash.

The cache key is a SHA-256 of the model's source text, the torsorc options
(dtype, opt, target, extra flags) and the identity of the torsorc binary
(path, size, modification time), so a rebuilt compiler never serves stale
code. Each entry is a folder <cache>/<key>/ with model.so, model.json, the
source (model.tsr) and, written last, entry.json: a record of the source's
hash, the options, the compiler's identity, the manifest's model name and
the SHA-256 of model.so and model.json. An entry is served only when that
record matches the request and the files on disk (source text equal, hashes
equal, manifest naming the recorded model); any other entry (truncated,
tampered with, replaced by another model's files, half deleted) is rebuilt.
An entry is built in a temporary folder and renamed into place, so
concurrent compiles (threads or processes) never see a half entry; a
rebuild first renames the old entry aside. `cache=False` always recompiles
and replaces the entry. The cache lives in $TORSOR_CACHE_DIR, else
$XDG_CACHE_HOME/torsor, else ~/.cache/torsor; delete it at any time.

A compile interrupted on the Python side (Ctrl-C, any exception) stops
torsorc with SIGTERM, so it removes its temporary files, and only after a
grace period with SIGKILL.
"""
import errno
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from . import _locate
from .errors import CompileError, TorsorError, TorsorIOError
from .model import Model

_TEXT_NAME = "<source>"
_RECORD = "entry.json"
_RECORD_FORMAT = 1
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
    if os.path.lexists(folder) and not os.path.isdir(folder):
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


def _entry_problem(entry, want, source_bytes):
    """None when the cache entry `entry` may be served for the request
    `want` (the record fields that must match), else what is wrong with it
    (for messages and tests)."""
    try:
        with open(os.path.join(entry, _RECORD), "rb") as f:
            record = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as e:
        return "no readable entry record (%s)" % e
    if not isinstance(record, dict) or record.get("format") != _RECORD_FORMAT:
        return "entry record of another format"
    for field, value in want.items():
        if record.get(field) != value:
            return "recorded %s differs" % field
    try:
        with open(os.path.join(entry, "model.tsr"), "rb") as f:
            if f.read() != source_bytes:
                return "stored source differs"
        files = record.get("files") or {}
        for name in ("model.so", "model.json"):
            if _sha256_file(os.path.join(entry, name)) != files.get(name):
                return "%s does not match its recorded hash" % name
        with open(os.path.join(entry, "model.json"), "rb") as f:
            manifest = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as e:
        return "unreadable entry (%s)" % e
    if not isinstance(manifest, dict) or manifest.get("model") != record.get("model"):
        return "manifest names another model"
    return None


def _remove(path):
    """Removes a folder tree or a file, ignoring errors."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def _install(tmp, entry, accept_existing):
    """Renames the complete entry folder `tmp` to `entry`. An entry already
    there is kept when accept_existing(entry) says it is good (another
    process built the same thing first: `tmp` is then dropped), else moved
    aside and removed. Returns True when `tmp` became the entry."""
    for _ in range(8):
        try:
            os.rename(tmp, entry)
            return True
        except OSError as e:
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR,
                               errno.EISDIR):
                raise TorsorIOError("cannot install the compile cache entry '%s': %s"
                                    % (entry, e.strerror or e)) from e
        if accept_existing(entry):
            return False
        trash = "%s.old-%s" % (entry, os.urandom(6).hex())
        try:
            os.rename(entry, trash)
        except FileNotFoundError:
            continue  # someone else moved it: try again
        except OSError as e:
            raise TorsorIOError("cannot replace the compile cache entry '%s': %s; "
                                "delete it" % (entry, e.strerror or e)) from e
        _remove(trash)
    if accept_existing(entry):
        return False
    raise TorsorIOError("cannot install the compile cache entry '%s': other "
                        "processes keep replacing it; try again" % entry)


def compile(source, dtype="f32", opt=None, target="cpu", flags=(), output=None,
            cache=True, grad=False):
    """Compiles a .tsr model with torsorc and loads it.

    source  a path to a .tsr file, or the model's source text
    dtype   "f32" or "f64" (torsorc --dtype)
    opt     0..3 (torsorc -O; None: torsorc's default). -O0 is the unfused
            oracle the optimised code is tested against
    target  "cpu" (torsorc --target)
    flags   more torsorc flags, e.g. ["--mcpu=generic"]
    output  write OUT.so (and OUT.json) here instead of the cache
    cache   reuse an earlier compile of the same source and options (an
            entry is checked against its record first, and rebuilt when it
            does not match); False recompiles and replaces the entry
    grad    also emit the backward entry (torsorc --grad): Model.backward
            returns the gradients of every param and float input

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
    args += list(flags)

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
    entry = os.path.join(folder, key)
    so = os.path.join(entry, "model.so")
    good = lambda e: _entry_problem(e, want, source_bytes) is None  # noqa: E731

    if cache and good(entry):
        try:
            m = Model(so)
            m.cached = True
            return m
        except TorsorError:
            pass  # e.g. a runtime of another ABI since: rebuild the entry
    tmp = tempfile.mkdtemp(prefix=".%s.tmp-" % key, dir=folder)
    try:
        built = os.path.join(tmp, "model.so")
        _run_torsorc(torsorc, text, path, args, built)
        if path is not None:
            with open(path, "rb") as f:
                if f.read() != source_bytes:
                    raise CompileError(
                        "%s changed while torsorc compiled it; compile it again"
                        % path, command=[torsorc, path])
        with open(os.path.join(tmp, "model.tsr"), "wb") as f:
            f.write(source_bytes)
        with open(os.path.join(tmp, "model.json"), "rb") as f:
            name = json.loads(f.read().decode("utf-8")).get("model")
        record = dict(want, format=_RECORD_FORMAT, model=name, files={
            n: _sha256_file(os.path.join(tmp, n)) for n in ("model.so", "model.json")})
        with open(os.path.join(tmp, _RECORD), "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)  # last: the entry is complete
        # cache=False: our build replaces whatever is there. Otherwise an
        # entry that became good meanwhile (another process) is served.
        _install(tmp, entry, (lambda e: False) if not cache else good)
    finally:
        _remove(tmp)
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
        raise CompileError(diag.rstrip("\n") or "torsorc exited with %d" % proc.returncode,
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
