//===- Redundancy.h - The parameter redundancy report -----------*- C++ -*-===//
//
// `torsorc --report=redundancy`: for every attention block of a model, the
// stored parameter count, the degrees of freedom that reach the output, the
// gauge dimension of each symmetry, and the redundant fraction; with a
// weight file, the numerical ranks of the actual G_QK and G_VO and heads
// that nearly duplicate each other (docs/relational.md).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_ANALYSIS_REDUNDANCY_H
#define TORSOR_COMPILER_ANALYSIS_REDUNDANCY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace torsor {

/// What the report reads and how it prints.
struct RedundancyOptions {
  bool json = false;          ///< JSON instead of text (same data)
  std::string weights;        ///< a .safetensors file, or "" for counts only
  double rankTolerance = 0;   ///< relative σ cut; 0: max(m, n)·ε(dtype)
  double duplicateCos = 0.99; ///< cosine of G_QK at which heads are duplicates
};

/// Writes the report for every model function of `module` to `os`. Errors
/// (no attention block, missing or mis-shaped weights) are emitted at the
/// model's or the param's location.
mlir::LogicalResult writeRedundancyReport(mlir::ModuleOp module,
                                          const RedundancyOptions &options,
                                          llvm::raw_ostream &os);

} // namespace torsor

#endif // TORSOR_COMPILER_ANALYSIS_REDUNDANCY_H
