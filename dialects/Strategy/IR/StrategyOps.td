//===- StrategyOps.td - The strategy dialect ---------------*- tablegen -*-===//
//
// The `strategy` dialect has no ops: it is the home of the typed tiling
// attributes (StrategyAttrs.td). This file exists because
// add_mlir_dialect generates the dialect class from it.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_STRATEGY_OPS
#define TORSOR_STRATEGY_OPS

include "dialects/Strategy/IR/StrategyDialect.td"

#endif // TORSOR_STRATEGY_OPS
