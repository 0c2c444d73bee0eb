//===- SubsetEquivalence.h - Cheap equality of tensor slices ----*- C++ -*-===//
//
// One-shot bufferization and empty-tensor elimination ask, for every
// tensor.insert_slice / tensor.parallel_insert_slice on a use-def chain,
// whether it writes the subset an extract_slice read. Upstream answers each
// query by building a ValueBounds constraint set per offset, size and
// stride and asking Presburger arithmetic whether it is empty, even when
// the two slices name the same SSA values and constants: about a tenth of a
// `--grad` compile's cycles. The models here decide identical and
// different-constant components syntactically and leave only the rest to
// ValueBounds, so every answer is the one upstream gives.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TRANSFORMS_SUBSETEQUIVALENCE_H
#define TORSOR_COMPILER_TRANSFORMS_SUBSETEQUIVALENCE_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class DialectRegistry;
class HyperrectangularSlice;
class MLIRContext;
class OperationName;
} // namespace mlir

namespace torsor {

/// Whether the two slices have equal offsets, sizes and strides: true or
/// false when that is proven, failure when it cannot be. Components that
/// are the same value or attribute are equal and components that are two
/// different integer constants differ, without a constraint set; any other
/// pair is compared by mlir::ValueBoundsConstraintSet::areEqual.
mlir::FailureOr<bool>
areEquivalentSlices(const mlir::HyperrectangularSlice &slice1,
                    const mlir::HyperrectangularSlice &slice2);

/// Gives tensor.extract_slice, tensor.insert_slice and
/// tensor.parallel_insert_slice a SubsetOpInterface model that answers
/// operatesOnEquivalentSubset with areEquivalentSlices above. It must be
/// added to the registry before the upstream models
/// (mlir::registerAllDialects): the first model attached to an op wins.
void registerSubsetEquivalence(mlir::DialectRegistry &registry);

/// Whether `name` (one of the three ops) carries the model above, for the
/// test that the registration order holds.
bool hasTorsorSubsetModel(mlir::OperationName name);

} // namespace torsor

#endif // TORSOR_COMPILER_TRANSFORMS_SUBSETEQUIVALENCE_H
