//===- GeoToLinalg.h - Lower geo ops to linalg ------------------*- C++ -*-===//
//
// Entry point of the geo → linalg/tensor/arith/math/scf conversion, the
// unfused -O0 lowering the fused code is tested against.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_CONVERSION_GEOTOLINALG_GEOTOLINALG_H
#define TORSOR_COMPILER_CONVERSION_GEOTOLINALG_GEOTOLINALG_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace torsor {

/// Adds the patterns that rewrite every geo op into linalg.generic / named
/// linalg ops on tensors (plus lie ops for the group math of
/// geo.lie_attention, left for convert-lie-to-arith).
void populateGeoToLinalgConversionPatterns(mlir::RewritePatternSet &patterns);

/// The vector-Jacobian product of the geo.grassmann_mix `op` for the
/// cotangent `cot` of its result, on the bilinear form (GrassmannGrad.cpp):
/// the cotangents of its seven operands (h, W_red, b_red, W_plu, b_plu,
/// W_gate, b_gate), each of its operand's type, built at `b`'s insertion
/// point. No tensor has both an offset and a Plücker dim. Fails (with an
/// error at `op`) when r is not static.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildGrassmannMixVJP(mlir::OpBuilder &b, mlir::Operation *op, mlir::Value cot);

} // namespace torsor

#endif // TORSOR_COMPILER_CONVERSION_GEOTOLINALG_GEOTOLINALG_H
