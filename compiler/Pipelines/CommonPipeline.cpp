//===- CommonPipeline.cpp - The stages every target shares ----------------===//
//
// What the CPU and NVPTX pipelines have in common, in order:
//   1. simplify   canonicalize + CSE (lie folds, DRR identities)
//   2. ABI        the model in destination-passing style (torsor-wrap-model)
//                 and the target's strategy (torsor-select-strategy)
//   3. lower      geo → linalg/lie, lie → scalar loops, still on tensors
//   4. bufferize  one-shot, function boundaries included, identity layouts
// Each target part (CPUPipeline.cpp, NVPTXPipeline.cpp) calls these in its
// own top-to-bottom function, adding what only it does in between (the
// CPU's vector attention kernels, for one). Also the pipeline registrations
// and the toolkit helpers both torsorc and torsor-opt use.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Transforms/RouteAllocations.h"

#include "compiler/Conversion/Passes.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Process.h"

using namespace mlir;

void torsor::buildTorsorOptimizationPipeline(OpPassManager &pm,
                                             const PipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void torsor::buildModelABIPipeline(OpPassManager &pm,
                                   const PipelineOptions &options,
                                   StringRef target) {
  // The runtime's calling convention: it owns every buffer.
  pm.addPass(createTorsorWrapModel());
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());

  // Tile sizes and vector widths for this target, one typed attribute on
  // each op that will be tiled.
  addSelectStrategy(pm, options, target);
}

void torsor::addSelectStrategy(OpPassManager &pm,
                               const PipelineOptions &options,
                               StringRef target) {
  TorsorSelectStrategyOptions strategy;
  strategy.vectorBits = options.vectorBits;
  strategy.target = target.str();
  strategy.compute = options.compute;
  strategy.amx = options.amx;
  strategy.avx512bf16 = options.avx512bf16;
  pm.addPass(createTorsorSelectStrategy(strategy));
}

void torsor::buildGeoLieLoweringPipeline(OpPassManager &pm,
                                         const PipelineOptions &options) {
  // Sequence-level and group ops to loops of scalar arith/math on tensors.
  // Above -O0, Grassmann mixing takes its fused form first.
  if (options.optLevel > 0)
    pm.addPass(createGeoFuseGrassmann());
  pm.addPass(createConvertGeoToLinalg());
  pm.addPass(createConvertLieToArith());
  // Function by function, on MLIR's threads: nothing here crosses one.
  OpPassManager &perFunction = pm.nestAny();
  perFunction.addPass(createCanonicalizerPass());
  perFunction.addPass(createCSEPass());
}

void torsor::buildBufferizationPipeline(OpPassManager &pm) {
  // Function boundaries use plain (identity-layout) memrefs: that is the
  // descriptor ABI the runtime passes.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  // Deallocation may leave bufferization.clone (a result that aliases an
  // argument, such as a group input returned next to its log); nothing
  // below lowers it, and it would reach LLVM as unrealized casts.
  pm.addPass(createConvertBufferizationToMemRefPass());
}

std::string torsor::resolveCUDAPath(StringRef requested) {
  if (!requested.empty())
    return requested.str();
  if (std::optional<std::string> home = llvm::sys::Process::GetEnv("CUDA_HOME"))
    if (!home->empty())
      return *home;
  return "/usr/local/cuda";
}

unsigned torsor::parseSMVersion(StringRef chip) {
  if (!chip.consume_front("sm_"))
    return 0;
  // Architecture-specific variants (sm_90a, sm_100f) keep their number.
  StringRef digits =
      chip.take_while([](char c) { return c >= '0' && c <= '9'; });
  StringRef suffix = chip.drop_front(digits.size());
  unsigned version = 0;
  if (digits.empty() || digits.getAsInteger(10, version) || suffix.size() > 1)
    return 0;
  return version;
}

void torsor::registerPipelines() {
  // Registered with the pipeline that runs it (its own .td; see the header).
  registerTorsorRouteAllocations();
  PassPipelineRegistration<PipelineOptions>(
      "torsor-cpu-pipeline",
      "Lower lie/geo/linalg on tensors to the LLVM dialect for the CPU",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildTorsorOptimizationPipeline(pm, options);
        buildCPULoweringPipeline(pm, options);
      });
  PassPipelineRegistration<PipelineOptions>(
      "torsor-nvptx-pipeline",
      "Lower lie/geo/linalg on tensors to host code launching NVPTX kernels "
      "(a cubin assembled by ptxas)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildTorsorOptimizationPipeline(pm, options);
        buildNVPTXLoweringPipeline(pm, options);
      });
}
