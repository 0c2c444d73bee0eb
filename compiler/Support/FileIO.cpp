//===- FileIO.cpp - How the compiler reads and writes files ---------------===//
//
// Implements FileIO.h with POSIX calls (realpath, readlink, fstat, fsync,
// rename) and LLVM's signal-time file removal
// (llvm::sys::RemoveFileOnSignal), which removes registered files on SIGINT,
// SIGTERM and SIGHUP before the signal ends the process.
//
//===----------------------------------------------------------------------===//

#include "compiler/Support/FileIO.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace torsor;

namespace {

/// An error "cannot <verb> '<path>': <why>".
llvm::Error fileError(llvm::StringRef verb, llvm::StringRef path,
                      const llvm::Twine &why) {
  return llvm::createStringError(std::errc::io_error, "cannot %s '%s': %s",
                                 verb.str().c_str(), path.str().c_str(),
                                 why.str().c_str());
}

/// Words for a file type in messages.
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

/// "dir" + "/" + "base" without doubling the root's slash.
std::string join(const std::string &dir, const std::string &base) {
  return (dir == "/" ? "" : dir) + "/" + base;
}

/// Holds SIGPIPE and SIGXFSZ back while writing (see writeBytes) and
/// consumes the ones the writes raised.
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
    pipePending = sigismember(&pending, SIGPIPE) == 1;
    sizePending = sigismember(&pending, SIGXFSZ) == 1;
  }
  ~QuietWrites() {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    struct timespec zero = {0, 0};
    for (int sig : {SIGPIPE, SIGXFSZ}) {
      bool was = sig == SIGPIPE ? pipePending : sizePending;
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
  bool pipePending = false, sizePending = false;
};

} // namespace

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
torsor::readInputFile(llvm::StringRef path, uint64_t maxBytes,
                      llvm::StringRef what) {
  std::string name = path.str();
  auto tooLarge = [&](uint64_t size) {
    return fileError("read", path == "-" ? "<stdin>" : path,
                     llvm::Twine(what) + " of " + llvm::Twine(size) +
                         " bytes or more is larger than the " +
                         llvm::Twine(maxBytes >> 20) +
                         " MiB torsorc reads; split the model into files "
                         "of at most that size");
  };
  if (path == "-") {
    // Standard input may be a pipe: read in chunks, up to the cap.
    std::string bytes;
    char chunk[65536];
    for (;;) {
      ssize_t n = ::read(STDIN_FILENO, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return fileError("read", "<stdin>", std::strerror(errno));
      if (n == 0)
        break;
      bytes.append(chunk, static_cast<size_t>(n));
      if (maxBytes && bytes.size() > maxBytes)
        return tooLarge(bytes.size());
    }
    return llvm::MemoryBuffer::getMemBufferCopy(bytes, "<stdin>");
  }
  // Open first, then check what was opened (no race with a swapped file).
  // O_NONBLOCK: opening a FIFO with no writer must not hang.
  int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fileError("open input file", path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int error = errno;
    ::close(fd);
    return fileError("read", path, std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fileError("read", path,
                     llvm::Twine("it is ") + fileKind(st.st_mode) + ", not " +
                         what + " file; give the path of a regular file");
  }
  if (maxBytes && static_cast<uint64_t>(st.st_size) > maxBytes) {
    ::close(fd);
    return tooLarge(static_cast<uint64_t>(st.st_size));
  }
  // Back to blocking reads for the regular file.
  (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  auto buffer = llvm::MemoryBuffer::getOpenFile(
      fd, path, static_cast<uint64_t>(st.st_size),
      /*RequiresNullTerminator=*/true);
  ::close(fd);
  if (!buffer)
    return fileError("read", path, buffer.getError().message());
  return std::move(*buffer);
}

llvm::Expected<std::unique_ptr<OutputFile>>
OutputFile::create(llvm::StringRef path, bool allowSpecial,
                   llvm::StringRef what) {
  auto file = resolve(path, allowSpecial, what);
  if (!file)
    return file.takeError();
  if (llvm::Error e = (*file)->stage())
    return std::move(e);
  return file;
}

llvm::Expected<std::unique_ptr<OutputFile>>
OutputFile::resolve(llvm::StringRef path, bool allowSpecial,
                    llvm::StringRef what) {
  std::unique_ptr<OutputFile> out(new OutputFile());
  out->given = path.str();
  std::string dir, base;
  splitPath(out->given, dir, base);
  if (base.empty() || base == "." || base == "..")
    return fileError("write", path, "not a file name");
  struct stat st;
  std::string target;
  bool isLink = ::lstat(out->given.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  if (::lstat(out->given.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return fileError("write", path, std::strerror(errno));
    std::string realDir;
    if (!realPath(dir, realDir))
      return fileError("write", path, std::strerror(errno));
    target = join(realDir, base);
  } else if (!realPath(out->given, target)) {
    if (!isLink || errno != ENOENT)
      return fileError("write", path, std::strerror(errno));
    struct stat named;
    if (::stat(out->given.c_str(), &named) == 0) {
      // A link stat follows but realpath cannot name (/dev/stdout through
      // /proc/self/fd/1 to "pipe:[N]"): a stream, written in place.
      if (!(S_ISFIFO(named.st_mode) || S_ISCHR(named.st_mode)) || !allowSpecial)
        return fileError("write", path,
                         llvm::Twine("it is a link to ") +
                             fileKind(named.st_mode) + "; " + what +
                             " must be a regular file with a path");
      out->target = out->given;
      out->exists = true;
      out->device = named.st_dev;
      out->inode = named.st_ino;
      out->mode = named.st_mode;
      out->special = true;
      return out;
    }
    // A dangling link: follow it to the name it would create.
    std::string link = out->given;
    for (int hop = 0;; ++hop) {
      if (hop == 40)
        return fileError("write", path, "too many levels of symbolic links");
      if (::lstat(link.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
        break;
      char buf[PATH_MAX];
      ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
      if (n < 0)
        return fileError("write", path, std::strerror(errno));
      std::string next(buf, static_cast<size_t>(n));
      if (next.empty() || next[0] != '/') {
        std::string linkDir, linkBase;
        splitPath(link, linkDir, linkBase);
        next = join(linkDir, next);
      }
      link = next;
    }
    std::string lastDir, lastBase, realDir;
    splitPath(link, lastDir, lastBase);
    if (!realPath(lastDir, realDir))
      return fileError(
          "write", path,
          "the link leads to '" + link +
              "', whose directory cannot be used: " + std::strerror(errno));
    target = join(realDir, lastBase);
  }
  out->target = target;
  if (::stat(target.c_str(), &st) == 0) {
    out->exists = true;
    out->device = st.st_dev;
    out->inode = st.st_ino;
    out->mode = st.st_mode;
    bool special = S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode);
    if (special && allowSpecial) {
      out->special = true;
      return out; // written in place: no temporary
    }
    if (!S_ISREG(st.st_mode))
      return fileError(
          "write", path,
          llvm::Twine("it is ") + fileKind(st.st_mode) + "; " + what +
              (special ? " must be a regular file (give a path in a "
                         "directory)"
                       : " goes to a regular file"));
  } else if (errno != ENOENT) {
    return fileError("write", path, std::strerror(errno));
  }
  return out;
}

std::error_code
torsor::createFileRemovedOnSignal(const llvm::Twine &model, int &fd,
                                  llvm::SmallVectorImpl<char> &path,
                                  unsigned mode) {
  // createUniqueFile registers nothing, and registering after it returns
  // leaves a window in which a signal leaves the new file behind. So: pick
  // a fresh name, register it, then create it exclusively (O_EXCL).
  for (int attempt = 0; attempt < 128; ++attempt) {
    llvm::SmallString<256> candidate;
    llvm::sys::fs::createUniquePath(model, candidate, /*MakeAbsolute=*/false);
    if (llvm::sys::fs::exists(candidate))
      continue;
    llvm::sys::RemoveFileOnSignal(candidate);
    std::error_code ec = llvm::sys::fs::openFileForWrite(
        candidate, fd, llvm::sys::fs::CD_CreateNew, llvm::sys::fs::OF_None,
        mode);
    if (!ec) {
      path.assign(candidate.begin(), candidate.end());
      return ec;
    }
    llvm::sys::DontRemoveFileOnSignal(candidate);
    if (ec != std::errc::file_exists)
      return ec;
  }
  return std::make_error_code(std::errc::file_exists);
}

llvm::Error OutputFile::stage() {
  if (special || !temp.empty())
    return llvm::Error::success();
  std::string targetDir, targetBase;
  splitPath(target, targetDir, targetBase);
  llvm::SmallString<256> model(join(targetDir, "." + targetBase + ".%%%%%%"));
  llvm::SmallString<256> staged;
  int fd;
  // Registered before it exists: a signal from here on removes it.
  if (std::error_code ec =
          torsor::createFileRemovedOnSignal(model, fd, staged, 0666))
    return fileError("write", given, ec.message());
  // The mode of the file it replaces, or the one a plain create gives.
  mode_t mask = ::umask(0);
  ::umask(mask);
  (void)::fchmod(fd, exists ? (mode & 07777) : (0666 & ~mask));
  ::close(fd);
  temp = staged.str().str();
  return llvm::Error::success();
}

OutputFile::~OutputFile() {
  if (temp.empty())
    return;
  ::unlink(temp.c_str());
  llvm::sys::DontRemoveFileOnSignal(temp);
}

bool OutputFile::sameFile(const OutputFile &other) const {
  if (target == other.target)
    return true;
  return exists && other.exists && device == other.device &&
         inode == other.inode;
}

llvm::Error OutputFile::commit() {
  if (temp.empty())
    return llvm::Error::success();
  // Flushed before the rename: a crash or full disk cannot leave an empty
  // or partial file under the target's name.
  int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || (::fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)) {
    int error = errno;
    if (fd >= 0)
      ::close(fd);
    return fileError("write", given, std::strerror(error));
  }
  ::close(fd);
  // The writer (the linker) may have replaced the temporary; keep the mode
  // of the file being replaced.
  if (exists)
    (void)::chmod(temp.c_str(), mode & 07777);
  if (::rename(temp.c_str(), target.c_str()) != 0)
    return fileError("write", given, std::strerror(errno));
  llvm::sys::DontRemoveFileOnSignal(temp);
  temp.clear();
  return llvm::Error::success();
}

llvm::Error torsor::writeBytes(const OutputFile &file, llvm::StringRef bytes) {
  bool special = file.isSpecial();
  std::string path = file.writePath().str();
  int fd = special ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY)
                   : ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0)
    return fileError("write", file.givenPath(), std::strerror(errno));
  QuietWrites quiet;
  size_t done = 0;
  int error = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && !error && errno != EINTR)
    error = errno;
  if (error)
    return fileError("write", file.givenPath(), std::strerror(error));
  return llvm::Error::success();
}

llvm::Error torsor::writeFileSafely(llvm::StringRef path, llvm::StringRef bytes,
                                    bool allowSpecial, llvm::StringRef what) {
  auto file = OutputFile::create(path, allowSpecial, what);
  if (!file)
    return file.takeError();
  if (llvm::Error e = writeBytes(**file, bytes))
    return e;
  return (*file)->commit();
}
