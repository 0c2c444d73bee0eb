//===- GeoToLinalg.h - Lower geo ops to linalg ------------------*- C++ -*-===//
//
// Entry point of the geo → linalg/tensor/arith/math/scf conversion, the
// unfused -O0 lowering the fused code is tested against.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_CONVERSION_GEOTOLINALG_GEOTOLINALG_H
#define TORSOR_COMPILER_CONVERSION_GEOTOLINALG_GEOTOLINALG_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace torsor {

/// Adds the patterns that rewrite every geo op into linalg.generic / named
/// linalg ops on tensors (plus lie ops for the group math of
/// geo.lie_attention, left for convert-lie-to-arith).
void populateGeoToLinalgConversionPatterns(mlir::RewritePatternSet &patterns);

} // namespace torsor

#endif // TORSOR_COMPILER_CONVERSION_GEOTOLINALG_GEOTOLINALG_H
