//===- StagedFiles.cpp - Safe, all-or-nothing writing of files ------------===//
//
// Implements StagedFiles.h with realpath/readlink, mkstemp, fsync and
// rename(2). Temporaries are named ".<target>.XXXXXX" in the target's own
// directory (so the rename stays on one file system and is atomic), and a
// crash leaves only hidden files behind.
//
//===----------------------------------------------------------------------===//

#include "StagedFiles.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

namespace torsor::rt {

namespace {

/// "cannot write 'path': why".
Status writeError(const std::string &path, const std::string &why) {
  return ioError(format("cannot write '%s': %s", path.c_str(), why.c_str()));
}

/// Splits "a/b/c" into "a/b" and "c" ("c" into "." and "c").
void splitPath(const std::string &path, std::string &dir, std::string &base) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    dir = ".";
    base = path;
    return;
  }
  dir = slash == 0 ? "/" : path.substr(0, slash);
  base = path.substr(slash + 1);
}

/// realpath(3) into a std::string; false with errno set on failure.
bool realPath(const std::string &path, std::string &out) {
  char *resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved)
    return false;
  out = resolved;
  std::free(resolved);
  return true;
}

/// The name a dangling link chain ends in, or an error (a loop, an
/// unreadable link). `path` is a symbolic link.
Status followDangling(const std::string &given, std::string path,
                      std::string &last) {
  for (int hop = 0; hop < 40; ++hop) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      last = path; // the first name that does not exist
      return Status();
    }
    if (!S_ISLNK(st.st_mode)) {
      last = path;
      return Status();
    }
    char buf[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
    if (n < 0)
      return writeError(given, std::strerror(errno));
    std::string link(buf, static_cast<size_t>(n));
    if (!link.empty() && link[0] != '/') {
      std::string dir, base;
      splitPath(path, dir, base);
      link = dir + "/" + link;
    }
    path = link;
  }
  return writeError(given, "too many levels of symbolic links");
}

/// Word for a file type in messages.
const char *fileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  return "not a regular file";
}

/// Holds SIGPIPE and SIGXFSZ back for the calling thread while it writes,
/// so a closed pipe or a file-size limit is an error (EPIPE, EFBIG) and not
/// the death of the host process; a signal raised by those writes is
/// consumed before the mask is restored.
class QuietWrites {
public:
  QuietWrites() {
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigaddset(&set, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    pipeWasPending = sigismember(&pending, SIGPIPE) == 1;
    sizeWasPending = sigismember(&pending, SIGXFSZ) == 1;
  }
  ~QuietWrites() {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    struct timespec zero = {0, 0};
    for (int sig : {SIGPIPE, SIGXFSZ}) {
      bool was = sig == SIGPIPE ? pipeWasPending : sizeWasPending;
      if (!was && sigismember(&pending, sig) == 1) {
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        (void)sigtimedwait(&one, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

private:
  sigset_t set, old;
  bool pipeWasPending = false, sizeWasPending = false;
};

/// Closes `fd`, folding a close error into `error` (0: none so far).
void closeChecked(int fd, int &error) {
  if (::close(fd) != 0 && !error && errno != EINTR)
    error = errno;
}

} // namespace

Status resolveDestination(const std::string &path, Destination &out) {
  out = Destination();
  out.given = path;
  std::string dir, base;
  splitPath(path, dir, base);
  if (path.empty() || base.empty() || base == "." || base == "..")
    return writeError(path, "not a file name");
  struct stat st;
  std::string target;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Follow the link: to the file it names, or (dangling) to the name
    // it would create.
    struct stat named;
    if (!realPath(path, target) && ::stat(path.c_str(), &named) == 0) {
      // A link that stat follows but realpath cannot name: /dev/stdout
      // through /proc/self/fd/1 to "pipe:[N]". Written in place if it is a
      // pipe or device; a regular file there has no directory to stage in.
      if (!S_ISFIFO(named.st_mode) && !S_ISCHR(named.st_mode))
        return writeError(path, "it is a link whose target has no path to "
                                "stage beside; name the file itself");
      target = path;
    } else if (target.empty()) {
      std::string last;
      Status s = followDangling(path, path, last);
      if (!s.ok())
        return s;
      std::string lastDir, lastBase;
      splitPath(last, lastDir, lastBase);
      std::string realDir;
      if (!realPath(lastDir, realDir))
        return writeError(path, format("the link leads to '%s', whose "
                                       "directory cannot be used: %s",
                                       last.c_str(), std::strerror(errno)));
      target = (realDir == "/" ? "" : realDir) + "/" + lastBase;
    }
  } else if (::lstat(path.c_str(), &st) == 0) {
    if (!realPath(path, target))
      return writeError(path, std::strerror(errno));
  } else {
    if (errno != ENOENT)
      return writeError(path, std::strerror(errno));
    std::string realDir;
    if (!realPath(dir, realDir))
      return writeError(path, std::strerror(errno));
    struct stat dirStat;
    if (::stat(realDir.c_str(), &dirStat) != 0 || !S_ISDIR(dirStat.st_mode))
      return writeError(path, std::strerror(ENOTDIR));
    target = (realDir == "/" ? "" : realDir) + "/" + base;
  }
  out.target = target;
  if (::stat(target.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return writeError(path, std::strerror(errno));
    return Status();
  }
  out.exists = true;
  out.device = st.st_dev;
  out.inode = st.st_ino;
  out.mode = st.st_mode;
  out.owner = st.st_uid;
  out.group = st.st_gid;
  if (S_ISREG(st.st_mode))
    return Status();
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
    out.special = true;
    return Status();
  }
  return writeError(path, format("it is %s; outputs go to regular files, FIFOs "
                                 "or character devices",
                                 fileKind(st.st_mode)));
}

/// True when `a` and `b` name one file.
static bool sameFile(const Destination &a, const Destination &b) {
  if (a.target == b.target)
    return true;
  return a.exists && b.exists && a.device == b.device && a.inode == b.inode;
}

Status checkDestinations(const std::vector<std::string> &labels,
                         const std::vector<std::string> &paths) {
  std::vector<Destination> resolved(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    Status s = resolveDestination(paths[i], resolved[i]);
    if (!s.ok())
      return s; // the message names the path
    for (size_t j = 0; j < i; ++j) {
      if (!sameFile(resolved[j], resolved[i]))
        continue;
      // A character device such as /dev/null may take several outputs.
      if (resolved[i].special && S_ISCHR(resolved[i].mode))
        continue;
      std::string li = i < labels.size() ? labels[i] : "'" + paths[i] + "'";
      std::string lj = j < labels.size() ? labels[j] : "'" + paths[j] + "'";
      bool samePath = paths[i] == paths[j];
      return invalidArg(format(
          "%s and %s write the same file '%s'%s; one would overwrite the "
          "other: give each output its own path",
          lj.c_str(), li.c_str(), resolved[i].target.c_str(),
          samePath ? "" : " (through a link)"));
    }
  }
  return Status();
}

Status writeAll(int fd, const std::string &bytes, const std::string &path) {
  QuietWrites quiet;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int error = errno;
      return writeError(path,
                        std::strerror(error) +
                            std::string(error == EPIPE ? " (the reader of the "
                                                         "pipe closed it)"
                                                       : ""));
    }
    if (n == 0)
      return writeError(path, "the file took no more bytes");
    done += static_cast<size_t>(n);
  }
  return Status();
}

StagedFiles::~StagedFiles() {
  for (const Entry &entry : staged)
    if (!entry.temp.empty())
      ::unlink(entry.temp.c_str());
}

Status StagedFiles::stage(const std::string &path, const std::string &bytes) {
  Entry entry;
  Status s = resolveDestination(path, entry.destination);
  if (!s.ok())
    return s;
  const Destination &d = entry.destination;
  for (const Entry &other : staged)
    if (sameFile(other.destination, d) && !(d.special && S_ISCHR(d.mode)))
      return invalidArg(format("'%s' and '%s' write the same file '%s'; give "
                               "each output its own path",
                               other.destination.given.c_str(), path.c_str(),
                               d.target.c_str()));
  if (d.special) {
    entry.bytes = bytes;
    staged.push_back(std::move(entry));
    return Status();
  }
  std::string dir, base;
  splitPath(d.target, dir, base);
  std::string temp = dir + (dir == "/" ? "." : "/.") + base + ".XXXXXX";
  int fd = ::mkstemp(&temp[0]);
  if (fd < 0)
    return writeError(path, std::strerror(errno));
  // mkstemp makes the file 0600: give it the mode of the file it replaces,
  // or the mode a plain create would.
  if (d.exists) {
    (void)::fchmod(fd, d.mode & 07777);
    if (::geteuid() == 0)
      (void)::fchown(fd, d.owner, d.group);
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    (void)::fchmod(fd, 0666 & ~mask);
  }
  s = writeAll(fd, bytes, path);
  int error = 0;
  // Flushed before the rename, so a crash or a full disk cannot leave an
  // empty or partial file under the target's name.
  if (s.ok() && ::fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
    error = errno;
  closeChecked(fd, error);
  if (s.ok() && error)
    s = writeError(path, std::strerror(error));
  if (!s.ok()) {
    ::unlink(temp.c_str());
    return s;
  }
  entry.temp = temp;
  staged.push_back(std::move(entry));
  return Status();
}

Status StagedFiles::commit() {
  // Special files first: they are the writes that can still fail (a FIFO
  // whose reader left, a full device), and until they are done no regular
  // target has been touched.
  for (Entry &entry : staged) {
    if (!entry.temp.empty())
      continue;
    const Destination &d = entry.destination;
    int fd = ::open(d.target.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
      return writeError(d.given, std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0 ||
        !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
      ::close(fd);
      return writeError(d.given, "it changed while the outputs were written");
    }
    Status s = writeAll(fd, entry.bytes, d.given);
    int error = 0;
    closeChecked(fd, error);
    if (s.ok() && error)
      s = writeError(d.given, std::strerror(error));
    if (!s.ok())
      return s;
    entry.bytes.clear();
  }
  std::string done;
  for (size_t i = 0; i < staged.size(); ++i) {
    Entry &entry = staged[i];
    if (entry.temp.empty())
      continue;
    if (::rename(entry.temp.c_str(), entry.destination.target.c_str()) != 0) {
      int error = errno;
      staged.erase(staged.begin(), staged.begin() + i);
      return ioError(
          format("cannot write '%s': %s%s%s", entry.destination.given.c_str(),
                 std::strerror(error),
                 done.empty() ? "" : "; already written: ", done.c_str()));
    }
    entry.temp.clear();
    done += (done.empty() ? "" : ", ") + entry.destination.given;
  }
  staged.clear();
  return Status();
}

Status writeFileSafely(const std::string &path, const std::string &bytes) {
  StagedFiles files;
  Status s = files.stage(path, bytes);
  return s.ok() ? files.commit() : s;
}

} // namespace torsor::rt
