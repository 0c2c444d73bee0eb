//===- InitAll.cpp - Register every Torsor dialect and pass ---------------===//
//
// Torsor's dialects and passes plus all upstream ones: the upstream set is
// what the CPU and NVPTX pipelines are built from, and exposing all of it in
// torsor-opt lets every pipeline stage be replayed and tested by hand.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "compiler/Autodiff/Passes.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Transforms/GPUHostCode.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/SubsetEquivalence.h"
#include "dialects/Geo/IR/GeoDialect.h"
#include "dialects/Geo/Transforms/Passes.h"
#include "dialects/Lie/IR/LieDialect.h"
#include "dialects/Strategy/IR/Strategy.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void torsor::registerAllDialects(mlir::DialectRegistry &registry) {
  registry
      .insert<lie::LieDialect, geo::GeoDialect, strategy::StrategyDialect>();
  // Before the upstream models of the same ops: the first attached wins.
  registerSubsetEquivalence(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registerGPUBarrierEffects(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
}

void torsor::registerAllPasses() {
  mlir::registerAllPasses();
  registerTorsorConversionPasses();
  registerTorsorAutodiffPasses();
  registerTorsorTransformsPasses();
  geo::registerGeoTransformsPasses();
  registerPipelines();
}
