"""_files.py - how the package writes files: complete or not at all.

Every file the package writes for a user (checkpoints, torsor.save_weights
bundles) goes through write_atomic:

- the destination's symlinks are resolved first, so a link keeps pointing
  at its file and that file gets the new data (replacing the link itself
  would leave the file it named stale);
- the data goes to a fresh temporary in the real target's directory (so the
  rename stays on one file system), is flushed and fsync'ed, and only then
  renamed over the target with os.replace: a reader sees the old file or
  the new one, never a partial one, and a failure (a full disk, an I/O
  error, an exception while the data is produced) removes the temporary
  and leaves the old file as it was;
- a destination that exists and is not a regular file (a FIFO, a device
  node, a socket, a directory) is refused with a message: the runtime reads
  only regular files, so a bundle written there could never be loaded, and
  replacing it by a regular file would destroy the node.

The compile cache (compiler.py) builds whole entries the same way, as a
temporary folder renamed into place.
"""
import os
import stat
import tempfile

from .errors import TorsorIOError

_KIND_NAMES = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket")]


def file_kind(mode):
    """A phrase for a non-regular st_mode ("a FIFO"), or None for a file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in _KIND_NAMES:
        if test(mode):
            return name
    return "not a regular file"


def _umask():
    """The process umask: from /proc (Linux), which leaves it alone, else by
    setting and restoring it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_destination(path, what="file"):
    """Raises TorsorIOError now if write_atomic(path) would refuse `path`
    for its kind (a FIFO, a device, a directory) or because its folder is
    missing: callers that write late (a training loop's checkpoint) check
    before they start."""
    _destination(path, what)


def _destination(path, what):
    """(path as given, real path, how to show it, its stat or None)."""
    given = os.fspath(path)
    real = os.path.realpath(given)
    shown = given if real == os.path.abspath(given) else "%s (-> %s)" % (given, real)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
        folder = os.path.dirname(real) or "."
        if not os.path.isdir(folder):
            raise TorsorIOError("cannot write %s '%s': the folder '%s' does not "
                                "exist; create it first" % (what, shown, folder))
    except OSError as e:
        raise TorsorIOError("cannot write %s '%s': %s" % (what, shown, e.strerror or e))
    if st is not None:
        kind = file_kind(st.st_mode)
        if kind is not None:
            raise TorsorIOError(
                "cannot write %s '%s': it is %s, not a regular file; Torsor "
                "writes %ss only to regular files (they are read back from "
                "regular files only), so give the path of a new or existing "
                "regular file" % (what, shown, kind, what))
    return given, real, shown, st


def write_atomic(path, write, what="file"):
    """Writes the file at `path` (str or PathLike) all at once.

    write  a callable taking the open binary file object, or bytes
    what   a word for messages ("checkpoint", "weights bundle")

    Returns the real path written (symlinks resolved). Raises TorsorIOError
    naming the path and the cause; the destination is then untouched."""
    given, real, shown, st = _destination(path, what)
    folder = os.path.dirname(real) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(real) + ".",
                                   suffix=".tmp", dir=folder)
    except OSError as e:
        raise TorsorIOError("cannot write %s '%s': cannot create a temporary file "
                            "in '%s': %s" % (what, shown, folder, e.strerror or e))
    try:
        try:
            # mkstemp makes the file 0600; give it the mode the target has,
            # or the one a plain open() would give a new file.
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None
                      else 0o666 & ~_umask())
            with os.fdopen(fd, "wb") as f:
                fd = None
                if callable(write):
                    write(f)
                else:
                    f.write(write)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, real)
            tmp = None
        except OSError as e:
            raise TorsorIOError("cannot write %s '%s': %s; the %s was not changed"
                                % (what, shown, e.strerror or e,
                                   "file" if st is not None else "destination")) from e
        _fsync_dir(folder)
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return real


def _fsync_dir(folder):
    """Makes a rename in `folder` durable (best effort: not every file
    system lets a directory be opened or synced)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
