//===- StagedFiles.h - All-or-nothing writing of several files -*- C++ -*-===//
//
// torsor-run writes its outputs through this: each file goes to a temporary
// name in its own target directory (so the final rename stays on one file
// system and is atomic), and only when every file has been written
// completely are they renamed into place. A failure while writing (an
// unwritable directory, a full disk) removes the temporaries and leaves
// every target untouched: no half-written file, no mix of new and old
// outputs.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_STAGEDFILES_H
#define TORSOR_RUNTIME_STAGEDFILES_H

#include "Support.h"

#include <string>
#include <utility>
#include <vector>

namespace torsor::rt {

/// A set of files written together.
class StagedFiles {
public:
  StagedFiles() = default;
  StagedFiles(const StagedFiles &) = delete;
  StagedFiles &operator=(const StagedFiles &) = delete;
  /// Removes every temporary that was not committed.
  ~StagedFiles();

  /// Writes `bytes` to a temporary next to `path`.
  Status stage(const std::string &path, const std::string &bytes);
  /// Renames every staged file to its target. Renames within a directory
  /// do not fail for lack of space; if one fails anyway, the files not yet
  /// renamed are removed and the error names the ones already in place.
  Status commit();

private:
  /// (temporary, target) pairs not yet renamed.
  std::vector<std::pair<std::string, std::string>> staged;
};

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_STAGEDFILES_H
