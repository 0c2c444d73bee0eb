//===- MergeGPUModules.cpp - One gpu.module (one cubin) per model ---------===//
//
// gpu-kernel-outlining makes one gpu.module per kernel, and each becomes a
// ptxas run and an embedded cubin loaded by its own constructor. Compile
// time grows with the kernel count (the Grassmann example has ~200), so
// the NVPTX pipeline merges them into one module first.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORMERGEGPUMODULES
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Name of the one module every kernel ends up in.
constexpr StringLiteral kMergedModuleName = "torsor_kernels";

struct TorsorMergeGPUModules
    : torsor::impl::TorsorMergeGPUModulesBase<TorsorMergeGPUModules> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
    if (modules.empty())
      return;
    if (module.lookupSymbol(kMergedModuleName)) {
      module.emitError() << "the symbol '" << kMergedModuleName
                         << "' is reserved for the merged GPU module";
      return signalPassFailure();
    }
    OpBuilder builder(modules.front());
    auto merged = gpu::GPUModuleOp::create(builder, modules.front().getLoc(),
                                           kMergedModuleName,
                                           modules.front().getTargetsAttr());
    SymbolTable mergedSymbols(merged);
    for (gpu::GPUModuleOp from : modules) {
      for (Operation &op :
           llvm::make_early_inc_range(from.getBody()->getOperations())) {
        // Outlining clones a helper into each module that calls it; the
        // clones are one function.
        // Outlining names kernels after their function, so two modules
        // may hold the same kernel name; the module names are unique, so
        // each kernel takes its module's.
        if (auto kernel = dyn_cast<gpu::GPUFuncOp>(op);
            kernel && kernel.isKernel())
          SymbolTable::setSymbolName(kernel, from.getNameAttr());
        auto name =
            op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
        if (name && mergedSymbols.lookup(name))
          continue;
        op.moveBefore(merged.getBody(), merged.getBody()->end());
        if (name)
          mergedSymbols.insert(&op);
      }
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      launch.setKernelAttr(SymbolRefAttr::get(
          merged.getNameAttr(),
          {FlatSymbolRefAttr::get(launch.getKernelModuleName())}));
    });
    for (gpu::GPUModuleOp from : modules)
      from.erase();
  }
};

} // namespace
