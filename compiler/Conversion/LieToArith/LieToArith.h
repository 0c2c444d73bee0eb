//===- LieToArith.h - Lower lie ops to scalar loops -------------*- C++ -*-===//
//
// Entry point of the lie → arith/math/scf/tensor conversion.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_CONVERSION_LIETOARITH_LIETOARITH_H
#define TORSOR_COMPILER_CONVERSION_LIETOARITH_LIETOARITH_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace torsor {

/// Adds the patterns that rewrite every lie op into a loop nest over its
/// batch dims running the group model's scalar builder.
void populateLieToArithConversionPatterns(mlir::RewritePatternSet &patterns);

} // namespace torsor

#endif // TORSOR_COMPILER_CONVERSION_LIETOARITH_LIETOARITH_H
