//===- NVPTXPipeline.cpp - From lie/geo on tensors to GPU kernels ---------===//
//
// The NVPTX target: the GPU-common part (GPUPipeline.cpp: ABI, attention,
// dense and loop mapping onto gpu.launch kernels, outlining, and the
// common LLVM stage) around the NVVM part here, as upstream's
// GPUToNVVMPipeline is organised:
//   target    nvvm-attach-target (chip, PTX ISA, O3) on the gpu.module
//   device    NVVM (math → libdevice; vector transfers → loads)
//   binary    gpu-module-to-binary: PTX → cubin by ptxas for --gpu-arch,
//             libdevice linked; the host's launches become mgpu* calls,
//             the cubin an embedded global loaded by a module constructor
//   entry     torsor_forward / torsor_abi_version() = 2
// A second GPU target keeps the GPU-common calls and replaces this part.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// The PTX ISA version LLVM must emit for `chip`: the oldest that knows
/// it (LLVM's default, 6.0, predates sm_80).
static std::string ptxFeatures(StringRef chip) {
  unsigned sm = torsor::parseSMVersion(chip);
  if (sm >= 120)
    return "+ptx87";
  if (sm >= 100)
    return "+ptx86";
  if (sm >= 90)
    return "+ptx80";
  if (sm >= 86)
    return "+ptx71";
  return "+ptx70";
}

void torsor::buildNVVMAttachTargetPipeline(OpPassManager &pm,
                                           const PipelineOptions &options) {
  GpuNVVMAttachTargetOptions target;
  target.chip = options.gpuArch;
  target.features = ptxFeatures(options.gpuArch);
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
}

void torsor::buildNVVMBinaryPipeline(OpPassManager &pm,
                                     const PipelineOptions &options) {
  // Device: gpu/math/memref → NVVM; math becomes libdevice calls (__nv_*).
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createConvertGpuOpsToNVVMOps());
  // What is left are the vector transfers of the kernels built from the
  // CPU's vector code (the flash backward): convert-gpu-to-nvvm has the
  // vector ops' patterns but not the transfers' lowering to (masked) loads.
  device.addPass(createConvertVectorToLLVMPass());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());

  // Host: launches and device allocations become mgpu* calls; the kernels
  // become a cubin (ptxas), embedded with a constructor that loads it.
  pm.addPass(createGpuToLLVMConversionPass());
  // It also visits the kernels and leaves dead casts of their memref and
  // index arguments there.
  pm.nest<gpu::GPUModuleOp>().addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = resolveCUDAPath(options.cudaPath);
  binary.compilationTarget = options.gpuFormat;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());

  // torsor_forward and torsor_abi_version() = 2: device buffers.
  TorsorEmitEntryOptions entry;
  entry.abiVersion = kGPUModelABIVersion;
  pm.addPass(createTorsorEmitEntry(entry));
}

void torsor::buildNVPTXLoweringPipeline(OpPassManager &pm,
                                        const PipelineOptions &options) {
  // Kernels on gpu.launch and outlined into one gpu.module (GPU-common).
  buildGPUMappingPipeline(pm, options, "nvptx");
  // The module is for NVVM: chip, PTX ISA and ptxas level.
  buildNVVMAttachTargetPipeline(pm, options);
  // Host and kernels to the LLVM dialect (GPU-common).
  buildGPUToLLVMCommonPipeline(pm);
  // The kernels to NVVM and a cubin, the host to mgpu* calls, the entry.
  buildNVVMBinaryPipeline(pm, options);
}
