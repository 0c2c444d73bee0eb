//===- CPUPipeline.cpp - From lie/geo on tensors to the LLVM dialect ------===//
//
// The CPU part, top to bottom (steps 1-4 are CommonPipeline.cpp's):
//   1. simplify   canonicalize + CSE (lie folds, DRR identities)
//   2. ABI        the model in destination-passing style (torsor-wrap-model)
//      attention  fused, tiled and decomposed into vector kernels (above -O0)
//   3. lower      geo → linalg/lie, lie → scalar loops
//      dense      contractions to tiled FMA micro-kernels (above -O0)
//   4. bufferize  one-shot, function boundaries included, identity layouts
//      bf16       packed bf16 products to AMX / AVX512-BF16 kernels
//   5. threads    parallel loops → runtime tasks (above -O0)
//   6. LLVM       loops → cf, math → libm/intrinsics, memref/func → LLVM
//   7. entry      torsor_forward / torsor_abi_version (torsor-emit-entry)
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Conversion/Passes.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/RouteAllocations.h"
#include "dialects/Geo/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void torsor::buildCPULoweringPipeline(OpPassManager &pm,
                                      const PipelineOptions &options) {
  // The runtime's calling convention, and tile sizes and vector widths
  // for this CPU in one attribute.
  buildModelABIPipeline(pm, options, "cpu");

  // Above -O0, Lie attention is fused: pair features, query tiles on the
  // thread pool, and vector kernels with an online softmax
  // (docs/compiler.md). -O0 keeps the unfused lowering: the oracle.
  if (options.optLevel > 0) {
    pm.addPass(geo::createGeoFuseAttention());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    addSelectStrategy(pm, options, "cpu");
    pm.addPass(geo::createGeoTileAttention());
    pm.addPass(geo::createGeoDecomposeAttention());
  }

  // The flash backward of Lie attention (gradients, docs/lie-gradients.md) has
  // one lowering at every level: it is O(L) memory by construction.
  pm.addPass(geo::createGeoDecomposeAttentionGrad());

  // Sequence-level and group ops to loops of scalar arith/math on tensors.
  buildGeoLieLoweringPipeline(pm, options);

  // Dense contractions to tiled FMA micro-kernels (tasks are scf.forall).
  if (options.optLevel > 0) {
    // The flash backward's outlined per-lane functions are new.
    addSelectStrategy(pm, options, "cpu");
    pm.addNestedPass<func::FuncOp>(createTorsorTileDense());
    // Packed copies of params (f32 panels, bf16 VNNI pairs) are made once
    // per load.
    pm.addPass(createTorsorHoistPackedParams());
    pm.addNestedPass<func::FuncOp>(createTorsorFuseRows());
  }

  // Tensors to buffers. Dims of loop results first become dims of what
  // the loops were built on: bufferization's slice proofs then end there
  // instead of re-proving the loops shape-preserving at every query.
  pm.addNestedPass<func::FuncOp>(createTorsorResolveDims());
  // Above -O0, a result that ends in a model output is computed in the
  // output's buffer instead of a fresh one copied there (empty-tensor
  // elimination); first each use of a shared fill gets its own, so that
  // the elimination rewrites only what the output's chain alone uses
  // (torsor-split-shared-fills).
  if (options.optLevel > 0) {
    pm.addNestedPass<func::FuncOp>(createTorsorSplitSharedFills());
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
  }
  buildBufferizationPipeline(pm);

  // --compute=bf16: the packed products torsor-tile-dense left become AMX
  // or AVX512-BF16 kernels, by the strategy's matmul unit.
  if (options.optLevel > 0 && options.compute == "bf16")
    pm.addNestedPass<func::FuncOp>(createTorsorLowerDenseBF16());

  // Structured ops and loops to the CFG.
  // Above -O0, structured ops become scf.parallel where their iterators
  // are parallel, and the outermost parallel loops become tasks of the
  // runtime's thread pool. -O0 stays serial: it is the oracle.
  if (options.optLevel > 0) {
    // The dense kernels' tiles leave copies of a subview onto an equal
    // subview; CSE makes them one value and the canonicalizer drops them.
    // The deallocation pipeline ends with both, so only the bf16 kernels,
    // lowered after it, need them again (a --grad compile's IR is large:
    // each pass over it costs).
    if (options.compute == "bf16") {
      pm.addPass(createCSEPass());
      pm.addPass(createCanonicalizerPass());
    }
    pm.addPass(createForallToParallelLoopPass());
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    // Drops the buffer iter_args bufferization left on marked loops, which
    // then become scf.parallel too. Function by function, on MLIR's
    // threads (nothing here crosses a function).
    pm.nestAny().addPass(createCanonicalizerPass());
    pm.addPass(createTorsorParallelizeMarkedLoops());
    pm.addPass(createTorsorOutlineParallelLoops());
  } else {
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  }
  // n-D vector transfers of the dense kernels to 1-D ones (the generic
  // conversion to LLVM below lacks the transfer lowerings). Before scf and
  // affine are lowered: a 1-D transfer along a strided dimension (column
  // panels of depth 1, say) becomes an scf.for over affine indices.
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
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
  // The fused kernels' vector transfers become (masked) vector loads and
  // stores before the generic conversion.
  // bf16 products also have AMX and x86vector ops to lower (only then:
  // f32 models keep exactly the lowering they had).
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.amx = options.compute == "bf16";
  vectorToLLVM.x86Vector = options.compute == "bf16";
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.nestAny().addPass(createCanonicalizerPass());
  pm.addPass(createTorsorLowerParallelLaunch());
  // Checked allocations: out of memory is an error, not a crash.
  pm.addPass(createTorsorRouteAllocations());
  pm.addPass(createTorsorEmitEntry());
}
