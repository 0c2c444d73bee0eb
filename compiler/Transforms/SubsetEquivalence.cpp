//===- SubsetEquivalence.cpp - Cheap equality of tensor slices ------------===//
//
// SubsetEquivalence.h says why. The models mirror upstream's
// (mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.cpp: the
// accessed slice is the op's offsets, sizes and strides) and differ only in
// how operatesOnEquivalentSubset compares two slices; disjointness keeps
// the interface's default.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/SubsetEquivalence.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SubsetOpInterface.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace {

/// What the two components are known to be without a constraint set.
enum class Known { Equal, Different, Unknown };

Known compareSyntactically(OpFoldResult a, OpFoldResult b) {
  if (a == b)
    return Known::Equal;
  std::optional<int64_t> ca = getConstantIntValue(a);
  std::optional<int64_t> cb = getConstantIntValue(b);
  if (ca && cb)
    return *ca == *cb ? Known::Equal : Known::Different;
  return Known::Unknown;
}

/// The SubsetOpInterface model of a slice op (`OpTy` has offsets, sizes
/// and strides).
template <typename OpTy>
struct SliceSubsetModel
    : public SubsetOpInterface::ExternalModel<SliceSubsetModel<OpTy>, OpTy> {
  FailureOr<HyperrectangularSlice>
  getAccessedHyperrectangularSlice(Operation *op) const {
    return HyperrectangularSlice(cast<OffsetSizeAndStrideOpInterface>(op));
  }

  bool operatesOnEquivalentSubset(
      Operation *op, SubsetOpInterface candidate,
      function_ref<bool(Value, Value)> equivalenceFn) const {
    FailureOr<HyperrectangularSlice> otherSlice =
        candidate.getAccessedHyperrectangularSlice();
    if (failed(otherSlice))
      return false;
    auto subsetOp = cast<SubsetOpInterface>(op);
    if (!equivalenceFn(subsetOp.getTensorContainer(),
                       candidate.getTensorContainer()))
      return false;
    FailureOr<bool> equivalent = torsor::areEquivalentSlices(
        HyperrectangularSlice(cast<OffsetSizeAndStrideOpInterface>(op)),
        *otherSlice);
    return succeeded(equivalent) && *equivalent;
  }
};

/// Offsets, sizes and strides, in that order.
SmallVector<OpFoldResult> components(const HyperrectangularSlice &slice) {
  SmallVector<OpFoldResult> all;
  llvm::append_range(all, slice.getMixedOffsets());
  llvm::append_range(all, slice.getMixedSizes());
  llvm::append_range(all, slice.getMixedStrides());
  return all;
}

template <typename OpTy> bool hasModel(OperationName name) {
  using Traits = detail::SubsetOpInterfaceInterfaceTraits;
  auto *impl = name.getInterface<SubsetOpInterface>();
  return impl && name.getTypeID() == TypeID::get<OpTy>() &&
         impl->operatesOnEquivalentSubset ==
             &Traits::FallbackModel<
                 SliceSubsetModel<OpTy>>::operatesOnEquivalentSubset;
}

} // namespace

FailureOr<bool>
torsor::areEquivalentSlices(const HyperrectangularSlice &slice1,
                            const HyperrectangularSlice &slice2) {
  if (slice1.getMixedOffsets().size() != slice2.getMixedOffsets().size())
    return false;
  SmallVector<OpFoldResult> lhs = components(slice1);
  SmallVector<OpFoldResult> rhs = components(slice2);
  // A proven difference anywhere decides, before any constraint set is built.
  SmallVector<std::pair<OpFoldResult, OpFoldResult>> unknown;
  for (auto [a, b] : llvm::zip_equal(lhs, rhs)) {
    switch (compareSyntactically(a, b)) {
    case Known::Equal:
      break;
    case Known::Different:
      return false;
    case Known::Unknown:
      unknown.emplace_back(a, b);
      break;
    }
  }
  bool undecided = false;
  for (auto [a, b] : unknown) {
    FailureOr<bool> equal = ValueBoundsConstraintSet::areEqual(a, b);
    if (succeeded(equal) && !*equal)
      return false;
    undecided |= failed(equal);
  }
  if (undecided)
    return failure();
  return true;
}

void torsor::registerSubsetEquivalence(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    tensor::ExtractSliceOp::attachInterface<
        SliceSubsetModel<tensor::ExtractSliceOp>>(*context);
    tensor::InsertSliceOp::attachInterface<
        SliceSubsetModel<tensor::InsertSliceOp>>(*context);
    tensor::ParallelInsertSliceOp::attachInterface<
        SliceSubsetModel<tensor::ParallelInsertSliceOp>>(*context);
  });
}

bool torsor::hasTorsorSubsetModel(OperationName name) {
  return hasModel<tensor::ExtractSliceOp>(name) ||
         hasModel<tensor::InsertSliceOp>(name) ||
         hasModel<tensor::ParallelInsertSliceOp>(name);
}
