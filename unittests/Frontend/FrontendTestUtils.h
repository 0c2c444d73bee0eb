//===- FrontendTestUtils.h - Helpers for frontend unit tests ---*- C++ -*-===//
//
// Runs the lexer, parser or parser+Sema on a string and collects the
// errors as `line:col: message` strings, so tests can compare them exactly.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_UNITTESTS_FRONTEND_FRONTENDTESTUTILS_H
#define TORSOR_UNITTESTS_FRONTEND_FRONTENDTESTUTILS_H

#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "llvm/Support/MemoryBuffer.h"
#include <string>
#include <vector>

namespace torsor::frontend::test {

/// Source text plus everything the frontend produced for it.
struct Compiled {
  llvm::SourceMgr srcMgr;
  CollectingDiagnostics diags;
  std::unique_ptr<Module> module;

  /// Errors as `line:col: message`.
  std::vector<std::string> errors() const {
    std::vector<std::string> out;
    for (const auto &e : diags.entries) {
      auto lc = srcMgr.getLineAndColumn(e.loc);
      out.push_back(std::to_string(lc.first) + ":" + std::to_string(lc.second) +
                    ": " + e.message);
    }
    return out;
  }
};

/// Parses (and with `sema`, checks) `text`.
inline std::unique_ptr<Compiled> compile(llvm::StringRef text,
                                         bool sema = true) {
  auto c = std::make_unique<Compiled>();
  c->srcMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "test.tsr"), llvm::SMLoc());
  c->module = parseTorsor(c->srcMgr, 1, c->diags);
  if (sema)
    Sema(c->diags).check(*c->module);
  return c;
}

} // namespace torsor::frontend::test

#endif // TORSOR_UNITTESTS_FRONTEND_FRONTENDTESTUTILS_H
