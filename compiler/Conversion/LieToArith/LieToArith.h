//===- LieToArith.h - Lower lie ops to scalar loops -------------*- C++ -*-===//
//
// Entry point of the lie → arith/math/scf/tensor conversion.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_CONVERSION_LIETOARITH_LIETOARITH_H
#define TORSOR_COMPILER_CONVERSION_LIETOARITH_LIETOARITH_H

#include "dialects/Lie/IR/GroupModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace torsor {

/// One operand of an element-wise op: its value and how many trailing dims
/// form one element (2 for matrices, 1 for vectors, 0 for scalars).
struct ElementOperand {
  mlir::Value value;
  unsigned trailing;
};

/// Builds the result scalars of one element from each operand's scalars.
using ElementBody = llvm::function_ref<lie::Scalars(
    lie::ScalarBuilder &, llvm::ArrayRef<lie::Scalars> operands)>;

/// The loop nest every lie lowering shares: over the batch dims of
/// `resultType` (all but its last `resultTrailing` dims), extract each
/// operand's element as scalars, run `body`, insert the result scalars.
/// The loops carry the result tensor and are marked torsor.parallel (each
/// iteration touches only its own elements). Returns the result tensor.
mlir::Value buildElementwiseLoops(mlir::OpBuilder &builder, mlir::Location loc,
                                  llvm::ArrayRef<ElementOperand> operands,
                                  mlir::RankedTensorType resultType,
                                  unsigned resultTrailing, ElementBody body);

/// Adds the patterns that rewrite every lie op into a loop nest over its
/// batch dims running the group model's scalar builder.
void populateLieToArithConversionPatterns(mlir::RewritePatternSet &patterns);

/// Adds the lowering of lie.pullback (LowerPullback.cpp): the group model's
/// derivative builders per element.
void populateLiePullbackPatterns(mlir::RewritePatternSet &patterns);

} // namespace torsor

#endif // TORSOR_COMPILER_CONVERSION_LIETOARITH_LIETOARITH_H
