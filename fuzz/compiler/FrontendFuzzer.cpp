//===- FrontendFuzzer.cpp - torsor-fuzz-frontend: .tsr bytes to MLIR ------===//
//
// Arbitrary bytes through lexer → parser → Sema → MLIRGen → verifier, the
// path of `torsorc FILE.tsr --emit=mlir`. A run fails (and libFuzzer keeps
// the input) when the compiler crashes, trips a sanitizer, rejects the input
// without a located error, or when Sema accepts a program that MLIRGen turns
// into IR an op verifier rejects. Successful modules also go through the
// manifest builder. The first byte picks --dtype so all three spellings of
// the float type are covered.
//
//===----------------------------------------------------------------------===//

#include "fuzz/compiler/FuzzSupport.h"

#include "compiler/Target/Manifest.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  unsigned dtype = data[0] % 3;
  llvm::StringRef source(reinterpret_cast<const char *>(data) + 1, size - 1);
  torsor::fuzz::FrontendResult result =
      torsor::fuzz::runFrontend(source, dtype);
  if (result.verifierRejected)
    torsor::fuzz::reportBug("Sema accepted a program the IR verifier rejects",
                            source, result.errors);
  if (!result.module) {
    if (!result.anyError)
      torsor::fuzz::reportBug("rejected without an error", source,
                              result.errors);
    if (result.anyUnlocatedError)
      torsor::fuzz::reportBug("an error without a source location", source,
                              result.errors);
    return 0;
  }
  (void)torsor::buildManifest(*result.module, "cpu");
  return 0;
}
