//===- NVPTXPipeline.cpp - From lie/geo on tensors to GPU kernels ---------===//
//
// The NVPTX part, top to bottom (steps 1-4 are CommonPipeline.cpp's; the
// device lowering follows MLIR's GPUToNVVMPipeline):
//   1. simplify   canonicalize + CSE
//   2. ABI        torsor-wrap-model; the GPU strategy (torsor.strategy)
//      attention  above -O0: geo-fuse-attention, then
//                 geo-map-attention-to-gpu (one gpu.launch per attention:
//                 query tiles → blocks, rows → threads, K/V tiles in
//                 shared memory, online softmax in registers)
//      gradients  geo-decompose-attention-grad: the flash backward's
//                 vector loops, mapped onto threads in step 5
//   3. lower      geo → linalg/lie, lie → scalar loops
//   4. bufferize  one-shot, identity layouts at the boundary
//   5. map        above -O0 dense contractions → tiled kernels (shared
//                 memory block tiles, register thread tiles);
//                 linalg → scf.parallel; marked loops → scf.parallel;
//                 outermost parallel loops → gpu.launch (tiles of
//                 gpu_threads_per_block iterations: tiles are blocks,
//                 lanes are threads); anything else touching data →
//                 one-thread kernels; host allocs → gpu.alloc
//   6. outline    gpu-kernel-outlining into one gpu.module (one cubin);
//                 verify the host touches no data
//   7. device     NVVM (math → libdevice; vector transfers → loads),
//                 then gpu-module-to-binary:
//                 PTX → cubin by ptxas for --gpu-arch, libdevice linked
//   8. host       gpu-to-llvm: launches become mgpu* calls, the cubin an
//                 embedded global loaded by a module constructor
//   9. entry      torsor_forward / torsor_abi_version() = 2
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/Geo/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
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

void torsor::buildNVPTXLoweringPipeline(OpPassManager &pm,
                                        const PipelineOptions &options) {
  // The runtime's calling convention and the GPU strategy.
  buildModelABIPipeline(pm, options, "nvptx");

  // Above -O0, Lie attention is fused as on the CPU (geo-fuse-attention:
  // pair features, one geo.flash_lie_attention per attention), then each
  // fused op becomes one gpu.launch: query tiles are blocks, query rows
  // threads, key/value tiles staged in shared memory, the online softmax
  // in registers (geo-map-attention-to-gpu; the tiles are the strategy's
  // gpu_attention_* fields). -O0 keeps the unfused loops: the oracle.
  if (options.optLevel > 0) {
    pm.addPass(geo::createGeoFuseAttention());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    addSelectStrategy(pm, options, "nvptx");
    pm.addPass(geo::createGeoMapAttentionToGPU());
  }

  // The flash backward of Lie attention (gradients): the CPU's two
  // parallel loops of vectors; torsor-map-parallel-loops-to-gpu maps their
  // query tiles and key vectors onto threads.
  pm.addPass(geo::createGeoDecomposeAttentionGrad());

  // Sequence-level and group ops to loops on tensors, then buffers.
  buildGeoLieLoweringPipeline(pm, options);
  buildBufferizationPipeline(pm);
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());

  // Above -O0, dense contractions become shared-memory tiled kernels
  // (block tiles BM × BN, register tiles TM × TN per thread; the
  // strategy's gpu_matmul_* fields) before linalg turns into loops.
  // The flash backward's outlined functions are new since the ABI stage.
  addSelectStrategy(pm, options, "nvptx");
  if (options.optLevel > 0)
    pm.addPass(createTorsorMapDenseToGPU());

  // Every loop nest with parallel iterations becomes an scf.parallel, and
  // each outermost one a kernel; what is left touching data runs in
  // one-thread kernels, and buffers live on the device.
  pm.addPass(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createTorsorParallelizeMarkedLoops());
  pm.addPass(createTorsorMapParallelLoopsToGPU());
  pm.addPass(createTorsorMapSerialCodeToGPU());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Kernels into a gpu.module; helpers only kernels call go with them.
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createTorsorMergeGPUModules());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createTorsorVerifyGPUHostCode());

  // Both sides to the LLVM dialect (GPUToNVVMPipeline's common stage).
  GpuNVVMAttachTargetOptions target;
  target.chip = options.gpuArch;
  target.features = ptxFeatures(options.gpuArch);
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

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
