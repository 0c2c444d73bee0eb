//===- StrategyDialect.td - The strategy dialect -----------*- tablegen -*-===//
//
// `strategy`: how a kernel is tiled, as one typed attribute per op.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_STRATEGY_DIALECT
#define TORSOR_STRATEGY_DIALECT

include "mlir/IR/OpBase.td"

def Strategy_Dialect : Dialect {
  let name = "strategy";
  let summary = "Tile sizes and vector widths, one typed attribute per op";
  let description = [{
    How Torsor's kernels are tiled for a target. `torsor-select-strategy`
    stamps each op that a tiling pass lowers with one of these attributes,
    under the discardable name `torsor.strategy`: the fused attention ops
    with `#strategy.vector_attention` (CPU, and the backward on both
    targets) or `#strategy.gpu_attention` (the NVPTX forward), and each
    function with `#strategy.dense` (CPU dense and row kernels) or
    `#strategy.gpu_dense` (NVPTX dense and loop kernels). A tiling pass
    reads the attribute of the op it lowers; an op without one gets the
    portable CPU choice (128-bit vectors), so a single-pass test needs no
    second pass to be tiled.

    The dialect sits below the `geo` and `lie` dialects: it knows no op of
    theirs, only the numbers a schedule needs.
  }];
  let cppNamespace = "::torsor::strategy";
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

#endif // TORSOR_STRATEGY_DIALECT
