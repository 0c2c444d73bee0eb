//===- Target.h - What torsorc asks of a code generation target -*- C++ -*-===//
//
// torsorc compiles for a target through this interface alone, as Triton's
// driver asks a backend for its stages (`add_stages`) rather than testing
// which backend it has: the target builds its lowering pipeline, says what
// goes into the manifest, and names its ABI. Both targets emit a host
// shared object through LLVM's code generator and lld (CPUTarget.h);
// NVPTX's device code is a cubin embedded in it by the pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TARGET_TARGET_H
#define TORSOR_COMPILER_TARGET_TARGET_H

#include "compiler/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <memory>
#include <string>

namespace llvm {
class TargetMachine;
} // namespace llvm

namespace torsor {

/// What the user chose on torsorc's command line.
struct TargetOptions {
  /// Host triple; empty means this machine's.
  std::string triple;
  /// Host CPU: "host", "generic" or an LLVM CPU name.
  std::string cpu = "host";
  /// 0-3; 0 keeps the unfused oracle lowering.
  unsigned optLevel = 2;
  /// Precision of matrix products: "f32" or "bf16" (--compute).
  std::string compute = "f32";
  /// NVPTX: the GPU chip.
  std::string gpuArch = "sm_90";
  /// NVPTX: the CUDA toolkit root; empty means $CUDA_HOME or
  /// /usr/local/cuda.
  std::string cudaPath;
};

/// A code generation target.
class Target {
public:
  virtual ~Target();

  /// "cpu" or "nvptx": the manifest's "target" and torsorc's --target.
  virtual llvm::StringRef getName() const = 0;
  /// What the model's torsor_abi_version() returns (and the manifest's
  /// "abi"): 1 for host buffers, 2 for device buffers.
  virtual int getABIVersion() const = 0;
  /// Manifest fields only this target has.
  virtual llvm::json::Object getManifestFields() const { return {}; }
  /// Adds the target's lowering (after the common optimization passes) to
  /// `pm`: lie/geo/linalg on tensors to a module in the LLVM dialect.
  virtual void buildLoweringPipeline(mlir::OpPassManager &pm,
                                     const PipelineOptions &options) const = 0;

  /// The machine the host code (the whole model, on the CPU) is
  /// generated for.
  llvm::TargetMachine &getHostMachine() const { return *hostMachine; }
  /// A new machine like getHostMachine(), for a thread of its own (LLVM's
  /// code generator keeps state in its target machine); null with `error`
  /// saying why.
  std::unique_ptr<llvm::TargetMachine>
  createHostMachine(std::string &error) const;
  /// The pipeline options these target options imply.
  void fillPipelineOptions(PipelineOptions &options) const;

protected:
  Target(TargetOptions options, std::unique_ptr<llvm::TargetMachine> host);

  TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> hostMachine;
};

/// The target named `name` ("cpu" or "nvptx") for `options`, or null with
/// `error` saying why (unknown name, unsupported --gpu-arch, no ptxas).
std::unique_ptr<Target> createTarget(llvm::StringRef name,
                                     const TargetOptions &options,
                                     std::string &error);

} // namespace torsor

#endif // TORSOR_COMPILER_TARGET_TARGET_H
