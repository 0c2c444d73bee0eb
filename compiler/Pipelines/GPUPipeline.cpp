//===- GPUPipeline.cpp - The stages every GPU target shares ---------------===//
//
// The GPU-common part of a GPU target's pipeline, as upstream splits
// GPUToNVVMPipeline and GPUToXeVMPipeline into a common stage, a device
// stage and a host stage. Everything here is independent of the GPU's
// vendor: a second GPU target (ROCDL, say) calls these two functions and
// adds its own device part, as NVPTXPipeline.cpp does for NVVM.
//   mapping   (buildGPUMappingPipeline), top to bottom:
//     1. simplify   canonicalize + CSE (CommonPipeline.cpp)
//     2. ABI        torsor-wrap-model; the target's GPU strategy
//        attention  above -O0: geo-fuse-attention, then
//                   geo-map-attention-to-gpu (one gpu.launch per attention:
//                   query tiles → blocks, rows → threads, K/V tiles in
//                   shared memory, online softmax in registers)
//        gradients  geo-decompose-attention-grad: the flash backward's
//                   vector loops, mapped onto threads in step 5
//     3. lower      geo → linalg/lie, lie → scalar loops
//     4. bufferize  one-shot, identity layouts at the boundary
//     5. map        above -O0 dense contractions → tiled kernels (shared
//                   memory block tiles, register thread tiles);
//                   linalg → scf.parallel; marked loops → scf.parallel;
//                   outermost parallel loops → gpu.launch (tiles of
//                   gpu_threads_per_block iterations: tiles are blocks,
//                   lanes are threads); anything else touching data →
//                   one-thread kernels; host allocs → gpu.alloc
//     6. outline    gpu-kernel-outlining into one gpu.module (one binary);
//                   verify the host touches no data
//   LLVM      (buildGPUToLLVMCommonPipeline): host and kernels to the LLVM
//             dialect, except what needs the device's own dialect (gpu ops,
//             math) or the binary (launches).
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/Geo/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void torsor::buildGPUMappingPipeline(OpPassManager &pm,
                                     const PipelineOptions &options,
                                     StringRef target) {
  // The runtime's calling convention and the GPU strategy.
  buildModelABIPipeline(pm, options, target);

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
    addSelectStrategy(pm, options, target);
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
  addSelectStrategy(pm, options, target);
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
}

void torsor::buildGPUToLLVMCommonPipeline(OpPassManager &pm) {
  // Both sides to the LLVM dialect (GPUToNVVMPipeline's common stage):
  // loops, memref metadata, functions, arithmetic. The gpu ops of the
  // kernels, math, and the launches are the target part's.
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}
