//===- Target.cpp - The CPU and NVPTX targets -----------------------------===//
//
// The two implementations of Target and the factory torsorc calls. A target
// is a small object on purpose: the real work is in its pipeline
// (compiler/Pipelines/) and in the shared host code generation
// (CPUTarget.cpp).
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/Target.h"

#include "compiler/Target/CPUTarget.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Strategy/IR/Strategy.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Target/TargetMachine.h"

using namespace torsor;

Target::Target(TargetOptions options, std::unique_ptr<llvm::TargetMachine> host)
    : options(std::move(options)), hostMachine(std::move(host)) {}

Target::~Target() = default;

/// The CPU options of the host code for `options`.
static CPUTargetOptions hostOptions(const TargetOptions &options) {
  CPUTargetOptions host;
  host.triple = options.triple;
  host.cpu = options.cpu;
  host.optLevel = options.optLevel;
  return host;
}

std::unique_ptr<llvm::TargetMachine>
Target::createHostMachine(std::string &error) const {
  return createCPUTargetMachine(hostOptions(options), error);
}

void Target::fillPipelineOptions(PipelineOptions &pipeline) const {
  pipeline.optLevel = options.optLevel;
  pipeline.vectorBits = getVectorBits(*hostMachine);
  pipeline.compute = options.compute;
  pipeline.amx = hasCPUFeatures(*hostMachine, "+amx-tile,+amx-bf16");
  pipeline.avx512bf16 = hasCPUFeatures(*hostMachine, "+avx512bf16");
  pipeline.gpuArch = options.gpuArch;
  pipeline.cudaPath = resolveCUDAPath(options.cudaPath);
}

namespace {

/// Whether models for `options` on `machine` run bf16 products on AMX:
/// the strategy's choice (strategy::selectMatmulUnit) for this CPU.
bool usesAMX(const TargetOptions &options, const llvm::TargetMachine &machine) {
  torsor::strategy::Target cpu =
      torsor::strategy::Target::cpu(getVectorBits(machine));
  cpu.hasAMX = hasCPUFeatures(machine, "+amx-tile,+amx-bf16");
  cpu.hasAVX512BF16 = hasCPUFeatures(machine, "+avx512bf16");
  return options.compute == "bf16" && options.optLevel > 0 &&
         torsor::strategy::selectMatmulUnit(cpu) ==
             torsor::strategy::MatmulUnit::AMX;
}

/// The host CPU: vector kernels and thread-pool tasks (CPUPipeline.cpp).
class CPUTarget final : public Target {
public:
  CPUTarget(TargetOptions options, std::unique_ptr<llvm::TargetMachine> host)
      : Target(std::move(options), std::move(host)) {}
  llvm::StringRef getName() const override { return "cpu"; }
  int getABIVersion() const override { return kModelABIVersion; }
  /// "compute" when not f32, and "amx": true when the products run on AMX
  /// tiles, so the runtime requests tile state before the first run.
  llvm::json::Object getManifestFields() const override {
    llvm::json::Object fields;
    if (options.compute == "f32")
      return fields;
    fields["compute"] = options.compute;
    if (usesAMX(options, *hostMachine))
      fields["amx"] = true;
    return fields;
  }
  void buildLoweringPipeline(mlir::OpPassManager &pm,
                             const PipelineOptions &options) const override {
    buildCPULoweringPipeline(pm, options);
  }
};

/// NVIDIA GPUs: kernels in a cubin ptxas assembled, launched by host code
/// through the runtime's mgpu* functions (NVPTXPipeline.cpp).
class NVPTXTarget final : public Target {
public:
  NVPTXTarget(TargetOptions options, std::unique_ptr<llvm::TargetMachine> host)
      : Target(std::move(options), std::move(host)) {}
  llvm::StringRef getName() const override { return "nvptx"; }
  int getABIVersion() const override { return kGPUModelABIVersion; }
  llvm::json::Object getManifestFields() const override {
    return llvm::json::Object{{"gpu_arch", options.gpuArch}};
  }
  void buildLoweringPipeline(mlir::OpPassManager &pm,
                             const PipelineOptions &options) const override {
    buildNVPTXLoweringPipeline(pm, options);
  }
};

/// Checks what gpu-module-to-binary will need, so a missing toolkit is
/// torsorc's clear error rather than a pass failure deep in the pipeline.
bool checkNVPTXOptions(const TargetOptions &options, std::string &error) {
  unsigned sm = parseSMVersion(options.gpuArch);
  if (sm == 0) {
    error = "--gpu-arch must name an NVIDIA chip such as sm_90, got '" +
            options.gpuArch + "'";
    return false;
  }
  if (sm < kMinimumSMVersion) {
    error = "--gpu-arch=" + options.gpuArch +
            " is too old: CUDA 13's ptxas assembles sm_" +
            std::to_string(kMinimumSMVersion) +
            " and newer only (use e.g. --gpu-arch=sm_80 or sm_90)";
    return false;
  }
  std::string cuda = resolveCUDAPath(options.cudaPath);
  llvm::SmallString<128> ptxas(cuda);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (!llvm::sys::fs::can_execute(ptxas)) {
    error = "--target=nvptx needs CUDA's ptxas, not found at " +
            ptxas.str().str() +
            " (install the CUDA toolkit there, or set CUDA_HOME or "
            "--cuda-path to its root)";
    return false;
  }
  llvm::SmallString<128> libdevice(cuda);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  if (!llvm::sys::fs::exists(libdevice)) {
    error = "--target=nvptx needs CUDA's libdevice (the GPU math library), "
            "not found at " +
            libdevice.str().str();
    return false;
  }
  return true;
}

} // namespace

std::unique_ptr<Target> torsor::createTarget(llvm::StringRef name,
                                             const TargetOptions &options,
                                             std::string &error) {
  if (name != "cpu" && name != "nvptx") {
    error = "unknown target '" + name.str() + "' (expected cpu or nvptx)";
    return nullptr;
  }
  if (name == "nvptx" && !checkNVPTXOptions(options, error))
    return nullptr;
  // Both targets generate the host code for this CPU (NVPTX's is the
  // launch code around the kernels).
  std::unique_ptr<llvm::TargetMachine> machine =
      createCPUTargetMachine(hostOptions(options), error);
  if (!machine)
    return nullptr;
  if (name == "cpu")
    return std::make_unique<CPUTarget>(options, std::move(machine));
  return std::make_unique<NVPTXTarget>(options, std::move(machine));
}
