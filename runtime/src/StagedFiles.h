//===- StagedFiles.h - Safe, all-or-nothing writing of files ---*- C++ -*-===//
//
// Every file the runtime writes goes through here (torsor-run's outputs and
// gradients, writeNpy, writeSafeTensors). The rules, in docs/runtime.md
// ("Output files"):
//
//  - A destination is resolved first: symbolic links are followed to the
//    file they name (a dangling link to the file it would create), so the
//    link stays a link and its target gets the new data.
//  - A regular file (or a new one) is written to a temporary in the real
//    target's directory, flushed to disk, and renamed over the target only
//    when every file of the set is complete: no half-written file, no mix
//    of new and old outputs. An existing file keeps its permissions.
//  - A FIFO or a character device (a pipe to another program, /dev/null,
//    a terminal) cannot be replaced by a regular file: it is opened
//    without creating or truncating and written in place, with every
//    write and the close checked. A block device, socket or directory is
//    refused.
//  - Every write, flush and close error (ENOSPC, EIO, EFBIG under
//    RLIMIT_FSIZE, EPIPE from a FIFO whose reader left) is an error naming
//    the file; SIGPIPE and SIGXFSZ are held back while writing so they do
//    not kill the host process instead.
//  - Two destinations that resolve to the same file (the same path through
//    links, or hard links to one inode) are refused.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_STAGEDFILES_H
#define TORSOR_RUNTIME_STAGEDFILES_H

#include "Support.h"

#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace torsor::rt {

/// What a destination path resolves to.
struct Destination {
  /// The path as given (used in messages).
  std::string given;
  /// The file written: `given` with every symbolic link resolved, or the
  /// name it would be created under in its (resolved) directory.
  std::string target;
  /// True for an existing FIFO or character device, written in place.
  bool special = false;
  /// Whether `target` exists, and then its device, inode and mode.
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  mode_t mode = 0;
  uid_t owner = 0;
  gid_t group = 0;
};

/// Resolves `path` as described above; refuses directories, block devices,
/// sockets, empty names and missing directories.
Status resolveDestination(const std::string &path, Destination &out);

/// Resolves every path and refuses two that name the same file. `labels`
/// (as many as `paths`, e.g. "--output y") name them in the message.
Status checkDestinations(const std::vector<std::string> &labels,
                         const std::vector<std::string> &paths);

/// Writes all of `bytes` to `fd`, retrying short writes and EINTR, with
/// SIGPIPE and SIGXFSZ held back; the error names `path`.
Status writeAll(int fd, const std::string &bytes, const std::string &path);

/// A set of files written together.
class StagedFiles {
public:
  StagedFiles() = default;
  StagedFiles(const StagedFiles &) = delete;
  StagedFiles &operator=(const StagedFiles &) = delete;
  /// Removes every temporary that was not committed.
  ~StagedFiles();

  /// Resolves `path` and, for a regular or new file, writes `bytes` to a
  /// temporary beside its real target; a special file's bytes are kept
  /// for commit. Refuses a path that names a file already staged.
  Status stage(const std::string &path, const std::string &bytes);
  /// Writes the special files in place, then renames every temporary to
  /// its target. A failed special write leaves every regular target
  /// untouched. Renames within a directory do not fail for lack of space;
  /// if one fails anyway, the files not yet renamed are removed and the
  /// error names the ones already in place.
  Status commit();

private:
  /// A staged file: its destination and either a temporary (regular) or
  /// the bytes to write in place (special).
  struct Entry {
    Destination destination;
    std::string temp;
    std::string bytes;
  };
  std::vector<Entry> staged;
};

/// Writes one file by the rules above (a StagedFiles of one).
Status writeFileSafely(const std::string &path, const std::string &bytes);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_STAGEDFILES_H
