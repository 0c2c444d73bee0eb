//===- Diagnostics.h - MLIR-free error reporting for the frontend -*- C++ -*-=//
//
// The lexer, parser and Sema report errors through this small interface so
// they stay free of MLIR headers. The driver implements it by
// turning the `SMLoc` into an `mlir::FileLineColLoc` and calling
// `mlir::emitError`, which lets MLIR's SourceMgr handlers print carets and
// implement `--verify-diagnostics`. Unit tests use CollectingDiagnostics.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_DIAGNOSTICS_H
#define TORSOR_FRONTEND_DIAGNOSTICS_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include <string>
#include <vector>

namespace torsor::frontend {

/// Receives every frontend error. Implementations decide how to print.
class DiagnosticEngine {
public:
  virtual ~DiagnosticEngine() = default;

  /// Reports an error at `loc` and counts it.
  void emitError(llvm::SMLoc loc, const llvm::Twine &msg) {
    ++numErrors;
    report(loc, msg);
  }

  /// Number of errors reported so far.
  unsigned getNumErrors() const { return numErrors; }

protected:
  /// Prints or records one error.
  virtual void report(llvm::SMLoc loc, const llvm::Twine &msg) = 0;

private:
  unsigned numErrors = 0;
};

/// Records errors as strings (for unit tests and tools that post-process).
class CollectingDiagnostics : public DiagnosticEngine {
public:
  /// One recorded error.
  struct Entry {
    llvm::SMLoc loc;
    std::string message;
  };
  std::vector<Entry> entries;

protected:
  void report(llvm::SMLoc loc, const llvm::Twine &msg) override {
    entries.push_back({loc, msg.str()});
  }
};

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_DIAGNOSTICS_H
