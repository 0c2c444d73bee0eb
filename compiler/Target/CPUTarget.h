//===- CPUTarget.h - LLVM IR, objects and shared libraries ------*- C++ -*-===//
//
// The last steps of the CPU path: translate an LLVM-dialect module to LLVM
// IR for a concrete target, optimize it with LLVM's pipeline, emit an object
// file with LLVM's x86 code generator, and link it into a shared object
// with lld.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TARGET_CPUTARGET_H
#define TORSOR_COMPILER_TARGET_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace torsor {

/// Which CPU to generate code for.
struct CPUTargetOptions {
  /// Target triple; empty means the host's.
  std::string triple;
  /// "host" (this machine, all its features), "generic" (portable x86-64
  /// baseline) or an LLVM CPU name such as "x86-64-v3" or "sapphirerapids".
  std::string cpu = "host";
  /// LLVM optimization level, 0 to 3.
  unsigned optLevel = 2;
};

/// Creates the target machine for `options`, or reports why it can't.
std::unique_ptr<llvm::TargetMachine>
createCPUTargetMachine(const CPUTargetOptions &options, std::string &error);

/// Width in bits of the widest SIMD registers `machine` may use (512 with
/// AVX-512, 256 with AVX, else 128); what torsor-select-strategy is given.
unsigned getVectorBits(const llvm::TargetMachine &machine);

/// Whether `machine` is an x86 CPU with every feature of `features`
/// ("+amx-tile,+amx-bf16").
bool hasCPUFeatures(const llvm::TargetMachine &machine,
                    llvm::StringRef features);

/// Translates `module` (LLVM dialect only) to LLVM IR for `machine`, with
/// triple, data layout and every function's CPU attributes set.
std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &machine);

/// Runs LLVM's optimization pipeline at `optLevel` (0: none) on `module`.
void optimizeLLVMModule(llvm::Module &module, llvm::TargetMachine &machine,
                        unsigned optLevel);

/// Writes `module` as an ELF object file to `path`.
mlir::LogicalResult emitObjectFile(llvm::Module &module,
                                   llvm::TargetMachine &machine,
                                   llvm::StringRef path, std::string &error);

/// Links the object files at `objectPaths` into the shared object
/// `outputPath` with lld, linking libm for the math the kernels call.
mlir::LogicalResult linkSharedObject(llvm::ArrayRef<std::string> objectPaths,
                                     llvm::StringRef outputPath,
                                     std::string &error);

} // namespace torsor

#endif // TORSOR_COMPILER_TARGET_CPUTARGET_H
