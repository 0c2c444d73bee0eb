//===- CPUPipeline.cpp - From lie/geo on tensors to the LLVM dialect ------===//
//
// The CPU pipeline, top to bottom:
//   1. simplify   canonicalize + CSE (lie folds, DRR identities)
//   2. ABI        the model in destination-passing style (torsor-wrap-model)
//   3. lower      geo → linalg/lie, lie → scalar loops
//   4. bufferize  one-shot, function boundaries included, identity layouts
//   5. threads    parallel loops → runtime tasks (above -O0)
//   6. LLVM       loops → cf, math → libm/intrinsics, memref/func → LLVM
//   7. entry      torsor_forward / torsor_abi_version (torsor-emit-entry)
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Conversion/Passes.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Geo/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void torsor::buildTorsorOptimizationPipeline(OpPassManager &pm,
                                             const PipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void torsor::buildCPULoweringPipeline(OpPassManager &pm,
                                      const PipelineOptions &options) {
  // The runtime's calling convention: it owns every buffer.
  pm.addPass(createTorsorWrapModel());
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());

  // Tile sizes and vector widths for this CPU, in one attribute.
  TorsorSelectStrategyOptions strategy;
  strategy.vectorBits = options.vectorBits;
  pm.addPass(createTorsorSelectStrategy(strategy));

  // Above -O0, Lie attention is fused: pair features, query tiles on the
  // thread pool, and vector kernels with an online softmax
  // (docs/compiler.md). -O0 keeps the unfused lowering: the oracle.
  if (options.optLevel > 0) {
    pm.addPass(geo::createGeoFuseAttention());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    pm.addPass(geo::createGeoTileAttention());
    pm.addPass(geo::createGeoDecomposeAttention());
  }

  // Sequence-level and group ops to loops of scalar arith/math on tensors.
  // Above -O0, Grassmann mixing takes its fused form first.
  if (options.optLevel > 0)
    pm.addPass(createGeoFuseGrassmann());
  pm.addPass(createConvertGeoToLinalg());
  pm.addPass(createConvertLieToArith());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Dense contractions to tiled FMA micro-kernels (tasks are scf.forall).
  if (options.optLevel > 0) {
    pm.addNestedPass<func::FuncOp>(createTorsorTileDense());
    pm.addNestedPass<func::FuncOp>(createTorsorFuseRows());
  }

  // Tensors to buffers. Function boundaries use plain (identity-layout)
  // memrefs: that is the descriptor ABI the runtime passes.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);

  // Structured ops and loops to the CFG.
  // Above -O0, structured ops become scf.parallel where their iterators
  // are parallel, and the outermost parallel loops become tasks of the
  // runtime's thread pool. -O0 stays serial: it is the oracle.
  if (options.optLevel > 0) {
    // The dense kernels' tiles leave copies of a subview onto an equal
    // subview; CSE makes them one value and the canonicalizer drops them.
    pm.addPass(createCSEPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createForallToParallelLoopPass());
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    // Drops the buffer iter_args bufferization left on marked loops.
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createTorsorOutlineParallelLoops());
  } else {
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  }
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());

  // Everything to the LLVM dialect. math ops without an LLVM intrinsic
  // (atan2, atanh, ...) become libm calls, which are correctly rounded to
  // within an ulp in f32 and f64.
  // rsqrt has neither an LLVM intrinsic nor a libm function: 1/sqrt.
  math::MathExpandOpsPassOptions expand;
  expand.opMnemonics = {"rsqrt"};
  pm.addPass(math::createMathExpandOpsPass(expand));
  // Exactly rounded ops (fma, sqrt, ...) become instructions first;
  // math-to-libm alone would call fmaf for every math.fma.
  pm.addPass(createTorsorLowerExactMath());
  pm.addPass(createConvertMathToLibmPass());
  // n-D vector transfers of the dense kernels to 1-D ones, then vectors to
  // LLVM (the generic conversion below lacks the transfer lowerings).
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  // The fused kernels' vector transfers become (masked) vector loads and
  // stores before the generic conversion.
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createTorsorLowerParallelLaunch());
  pm.addPass(createTorsorEmitEntry());
}

void torsor::registerPipelines() {
  PassPipelineRegistration<>(
      "torsor-cpu-pipeline",
      "Lower lie/geo/linalg on tensors to the LLVM dialect for the CPU",
      [](OpPassManager &pm) {
        PipelineOptions options;
        buildTorsorOptimizationPipeline(pm, options);
        buildCPULoweringPipeline(pm, options);
      });
}
