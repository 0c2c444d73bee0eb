//===- LieToArith.h - Lower lie ops to scalar loops -------------*- C++ -*-===//
//
// Entry point of the lie → arith/math/scf/tensor conversion.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_CONVERSION_LIETOARITH_LIETOARITH_H
#define TORSOR_COMPILER_CONVERSION_LIETOARITH_LIETOARITH_H

#include "dialects/Lie/IR/LieInterfaces.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace torsor {

/// One operand of an element-wise op and its element rank (LieInterfaces.h).
using lie::ElementOperand;

/// Builds the result scalars of one element from each operand's scalars.
using ElementBody = llvm::function_ref<lie::Scalars(
    lie::ScalarBuilder &, llvm::ArrayRef<lie::Scalars> operands)>;

/// The loop nest every lie lowering shares: over the batch dims of
/// `resultType` (all but its last `resultTrailing` dims), extract each
/// operand's element as scalars, run `body`, insert the result scalars.
/// The loops carry the result tensor and are marked torsor.parallel (each
/// iteration touches only its own elements). With no operands, the batch
/// extents are `resultType`'s static sizes and `dynamicBatchSizes` for its
/// dynamic ones. Returns the result tensor.
mlir::Value buildElementwiseLoops(mlir::OpBuilder &builder, mlir::Location loc,
                                  llvm::ArrayRef<ElementOperand> operands,
                                  mlir::RankedTensorType resultType,
                                  unsigned resultTrailing, ElementBody body,
                                  mlir::ValueRange dynamicBatchSizes = {});

/// Adds the one pattern that rewrites every lie op (every
/// lie::ElementOpInterface op, lie.pullback included) into a loop nest over
/// its batch dims running the op's group-model element builder.
void populateLieToArithConversionPatterns(mlir::RewritePatternSet &patterns);

} // namespace torsor

#endif // TORSOR_COMPILER_CONVERSION_LIETOARITH_LIETOARITH_H
