//===- FileIO.h - How the compiler reads and writes files -----*- C++ -*-===//
//
// One place for the file rules of torsorc (docs/runtime.md, "Output files";
// docs/reliability.md, classes 1 and 9):
//
// Reading. A model source or weight file must be a regular file: a device
// (/dev/zero, /dev/urandom) or a FIFO would be read without a bound. Model
// sources are capped at kMaxSourceBytes, standard input included.
//
// Writing. Every file torsorc writes (-o, the manifest, --convert-weights)
// follows the runtime's rules (runtime/src/StagedFiles.h): the destination
// is resolved through symbolic links; a regular or new file is written to
// a temporary beside its real target, flushed and renamed over it only when
// complete (so a failed compile, a full disk or a signal leaves the old
// file); temporaries are removed on SIGINT and SIGTERM. A FIFO or character
// device is written in place where the output may be a stream (text
// emits), and refused where it must be a file (a library and its
// manifest). Directories, block devices and sockets are refused. Nothing is
// ever removed that torsorc did not create.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_SUPPORT_FILEIO_H
#define TORSOR_COMPILER_SUPPORT_FILEIO_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>
#include <sys/types.h>
#include <system_error>

namespace torsor {

/// The largest model source torsorc reads: 64 MiB.
constexpr uint64_t kMaxSourceBytes = uint64_t(64) << 20;

/// Creates and opens (for writing, mode `mode`) a new file named after
/// `model`, each '%' a random hex digit (llvm::sys::fs::createUniqueFile's
/// models). The path is registered with llvm::sys::RemoveFileOnSignal
/// before the file exists, so a SIGINT or SIGTERM at any moment leaves no
/// file behind; a name that already exists is never registered.
std::error_code createFileRemovedOnSignal(const llvm::Twine &model, int &fd,
                                          llvm::SmallVectorImpl<char> &path,
                                          unsigned mode);

/// Reads `path` ("-": standard input) into a buffer. Refuses anything but a
/// regular file (standard input may be a pipe) and more than `maxBytes`
/// (0: no cap), with a message naming the file and the fix.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readInputFile(llvm::StringRef path, uint64_t maxBytes, llvm::StringRef what);

/// A file being written by the rules above.
class OutputFile {
public:
  /// Resolves `path` (links followed) and checks what it names; `what`
  /// names the file in messages ("the library"). `allowSpecial`: a FIFO or
  /// character device is written in place instead of refused.
  static llvm::Expected<std::unique_ptr<OutputFile>>
  resolve(llvm::StringRef path, bool allowSpecial, llvm::StringRef what);
  /// resolve, then stage.
  static llvm::Expected<std::unique_ptr<OutputFile>>
  create(llvm::StringRef path, bool allowSpecial, llvm::StringRef what);

  /// Creates the temporary beside the real target (removed on SIGINT and
  /// SIGTERM); nothing to do for a special file.
  llvm::Error stage();

  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;
  /// Removes the temporary unless committed.
  ~OutputFile();

  /// Where a writer puts the bytes: the temporary (once staged), or the
  /// special file.
  llvm::StringRef writePath() const { return special ? target : temp; }
  /// The file written, links resolved.
  llvm::StringRef targetPath() const { return target; }
  /// The path as given, for messages.
  llvm::StringRef givenPath() const { return given; }
  /// True for a FIFO or character device written in place.
  bool isSpecial() const { return special; }
  /// Whether two outputs name one file (same resolved path or inode).
  bool sameFile(const OutputFile &other) const;

  /// Flushes the temporary to disk and renames it over the target.
  llvm::Error commit();

private:
  OutputFile() = default;
  std::string given, target, temp;
  bool exists = false, special = false;
  dev_t device = 0;
  ino_t inode = 0;
  mode_t mode = 0;
};

/// Writes all of `bytes` to `file.writePath()` (creating or truncating the
/// temporary, opening a special file without either), checking every write
/// and the close; SIGPIPE and SIGXFSZ are held back so a closed pipe or a
/// file-size limit is an error, not the end of the compiler.
llvm::Error writeBytes(const OutputFile &file, llvm::StringRef bytes);

/// create + writeBytes + commit.
llvm::Error writeFileSafely(llvm::StringRef path, llvm::StringRef bytes,
                            bool allowSpecial, llvm::StringRef what);

} // namespace torsor

#endif // TORSOR_COMPILER_SUPPORT_FILEIO_H
