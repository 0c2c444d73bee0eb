//===- FuzzSupport.h - Shared pieces of the compiler fuzz targets -*- C++
//-*-===//
//
// The compiler's libFuzzer targets share one MLIRContext per process (making
// a context and loading every dialect costs far more than compiling a small
// model) and one rule for judging a run: bad input must end in a located
// error, never in a crash, a hang, or a failure nobody reported.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FUZZ_COMPILER_FUZZSUPPORT_H
#define TORSOR_FUZZ_COMPILER_FUZZSUPPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace torsor::fuzz {

/// What one compile of a fuzz input produced.
struct FrontendResult {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// Error diagnostics, in order, as "[located] message".
  std::string errors;
  bool anyError = false;
  bool anyUnlocatedError = false;
  /// An op verifier rejected what MLIRGen built: Sema accepted a program
  /// the IR cannot express, which is a front-end bug.
  bool verifierRejected = false;
};

/// The process-wide context with every Torsor dialect loaded and
/// multithreading off (libFuzzer runs one input at a time).
mlir::MLIRContext &getContext();

/// Parses, checks and lowers `source` to MLIR (the torsorc --emit=mlir path,
/// ending in mlir::verify). `dtype` is 0 (as written), 1 (f32) or 2 (f64).
FrontendResult runFrontend(llvm::StringRef source, unsigned dtype = 0);

/// Runs what `torsorc -o OUT.so` runs after the front end, short of the
/// machine-code emission: the manifest, the optimization and CPU lowering
/// pipelines, and the translation to LLVM IR. Returns an empty string on
/// success or on the manifest's located refusal of a type the runtime
/// cannot pass, else what failed.
std::string runBackend(mlir::ModuleOp module, unsigned optLevel);

/// Prints the input and the reason, then aborts so libFuzzer saves a
/// reproducer.
[[noreturn]] void reportBug(llvm::StringRef what, llvm::StringRef source,
                            llvm::StringRef details);

} // namespace torsor::fuzz

#endif // TORSOR_FUZZ_COMPILER_FUZZSUPPORT_H
