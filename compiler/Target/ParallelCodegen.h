//===- ParallelCodegen.h - LLVM optimization and codegen in parts -*- C++
//-*-===//
//
// A model's LLVM module is a few serial entries and many thread-pool tasks
// that reach each other only through pointers handed to the runtime's
// dispatcher. Cut along those pointers, the module falls into parts with no
// direct call between them; each part is optimized and compiled on its own
// thread into its own object file, and lld links them into one library.
// Inside a part LLVM sees exactly the call graph it saw in the whole
// module, so every function is optimized as before.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TARGET_PARALLELCODEGEN_H
#define TORSOR_COMPILER_TARGET_PARALLELCODEGEN_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace torsor {

/// One part of a split module, as LLVM bitcode (each part is parsed into
/// its own LLVMContext on the thread that compiles it).
using ModulePart = llvm::SmallVector<char, 0>;

/// How finely a module is cut. The parts depend only on the module and
/// these numbers, never on the machine, so a library is the same whatever
/// number of threads compiled it.
struct SplitOptions {
  /// At most this many parts.
  unsigned maxParts = 8;
  /// At least this many LLVM instructions per part: below it, the bitcode
  /// round trip and the extra target machine cost more than they save.
  unsigned minPartInstructions = 1000;
};

/// Splits `module` (translated, not yet optimized) into parts with no
/// direct call between them: a function and everything it calls stay
/// together, a function reached only through its address may go to
/// another part (made a hidden global there), internal constants are
/// copied into every part that reads them, so the optimizer still folds
/// them, and so are small internal helpers that call only declarations
/// (the allocation and dispatch wrappers every task calls). Returns no parts
/// when the module is too small to be worth cutting; `module` is left changed
/// (linkage) either way.
llvm::SmallVector<ModulePart> splitModule(llvm::Module &module,
                                          const SplitOptions &options);

/// Optimizes (optimizeLLVMModule at `optLevel`) and compiles `parts[i]`
/// into the object file `objectPaths[i]` on up to `threads` threads, part
/// i with `machines[i]` (target machines are not shared between threads).
mlir::LogicalResult
compileParts(llvm::ArrayRef<ModulePart> parts,
             llvm::ArrayRef<std::unique_ptr<llvm::TargetMachine>> machines,
             unsigned optLevel, unsigned threads,
             llvm::ArrayRef<std::string> objectPaths, std::string &error);

} // namespace torsor

#endif // TORSOR_COMPILER_TARGET_PARALLELCODEGEN_H
