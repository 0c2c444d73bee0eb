//===- StagedFiles.cpp - All-or-nothing writing of several files ----------===//
//
// Implements StagedFiles.h with mkstemp and rename(2). Temporaries are
// named ".<target>.XXXXXX" so a crash leaves only hidden files behind.
//
//===----------------------------------------------------------------------===//

#include "StagedFiles.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace torsor::rt {

StagedFiles::~StagedFiles() {
  for (const auto &entry : staged)
    ::unlink(entry.first.c_str());
}

Status StagedFiles::stage(const std::string &path, const std::string &bytes) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty())
    return ioError(format("cannot write '%s': not a file name", path.c_str()));
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return ioError(
        format("cannot write '%s': it is a directory", path.c_str()));
  std::string temp = (dir.empty() ? "" : dir) + "/." + base + ".XXXXXX";
  int fd = ::mkstemp(&temp[0]);
  if (fd < 0)
    return ioError(
        format("cannot write '%s': %s", path.c_str(), std::strerror(errno)));
  // mkstemp makes the file 0600; give it the mode a plain create would.
  mode_t mask = ::umask(0);
  ::umask(mask);
  (void)::fchmod(fd, 0666 & ~mask);
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
  if (::close(fd) != 0 && !error)
    error = errno;
  if (error) {
    ::unlink(temp.c_str());
    return ioError(
        format("cannot write '%s': %s", path.c_str(), std::strerror(error)));
  }
  staged.emplace_back(temp, path);
  return Status();
}

Status StagedFiles::commit() {
  std::string done;
  for (size_t i = 0; i < staged.size(); ++i) {
    const auto &[temp, path] = staged[i];
    if (::rename(temp.c_str(), path.c_str()) != 0) {
      int error = errno;
      staged.erase(staged.begin(), staged.begin() + i);
      return ioError(format(
          "cannot write '%s': %s%s%s", path.c_str(), std::strerror(error),
          done.empty() ? "" : "; already written: ", done.c_str()));
    }
    done += (done.empty() ? "" : ", ") + path;
  }
  staged.clear();
  return Status();
}

} // namespace torsor::rt
