//===- ResolveDims.cpp - Sizes of loop results from what they were built on
//===//
//
// torsor-resolve-dims: runs right before one-shot bufferization. Each
// `tensor.dim %t, i` whose tensor is a loop result, an iter_arg or a
// destination-style result is rewritten to the same dim of the tensor
// `%t` was built on, found by following sizes that provably do not change:
//   - a destination-style op's result (linalg, tensor.insert,
//     tensor.insert_slice, ...) has the shape of its tied init;
//   - an scf.forall result or shared_outs argument has the shape of its
//     shared_outs operand;
//   - an scf.for result or iter_arg has the shape of its init when the
//     yielded value reaches the iter_arg this way;
//   - an scf.if result has the shape of a tensor defined above the if
//     when both branches yield values that reach that tensor;
//   - a tensor.empty's dynamic dim is its size operand.
// Why: one-shot bufferization proves the slices a tiled kernel reads and
// writes equal with ValueBoundsConstraintSet, and a slice size bounded by
// the dim of a loop result makes it re-prove that dim loop-invariant
// through the loop body at every query (a --grad compile's backward
// function, whose recomputed forward ends in such loops, spent most of
// its bufferization time there). A dim of a function argument (or its
// empty tensor's size) ends each query at once. The sizes are the same
// values, so the program is unchanged.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORRESOLVEDIMS
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Whether `value` is defined outside `op` (so it dominates `op`'s
/// regions).
bool isDefinedAbove(Value value, Operation *op) {
  Region *region = value.getParentRegion();
  return region && !op->isAncestor(region->getParentOp());
}

/// The tensor whose shape `value` provably has, found by walking up
/// shape-preserving definitions; stops at `stop` (returned when reached).
/// `depth` bounds the recursion through nested loops and ifs.
Value traceShape(Value value, Value stop, unsigned depth) {
  if (depth > 32)
    return value;
  while (value != stop) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (auto forOp = dyn_cast<scf::ForOp>(owner)) {
        if (arg.getArgNumber() == 0) // the induction variable
          return value;
        unsigned k = arg.getArgNumber() - 1;
        Value yielded = forOp.getYieldedValues()[k];
        if (traceShape(yielded, arg, depth + 1) != arg)
          return value;
        value = forOp.getInitArgs()[k];
        continue;
      }
      if (auto forall = dyn_cast<scf::ForallOp>(owner)) {
        unsigned n = forall.getRank();
        if (arg.getArgNumber() < n)
          return value;
        value = forall.getOutputs()[arg.getArgNumber() - n];
        continue;
      }
      return value;
    }
    auto result = cast<OpResult>(value);
    Operation *op = result.getOwner();
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op)) {
      if (!dps.hasPureTensorSemantics())
        return value;
      value = dps.getTiedOpOperand(result)->get();
      continue;
    }
    if (auto forall = dyn_cast<scf::ForallOp>(op)) {
      value = forall.getOutputs()[result.getResultNumber()];
      continue;
    }
    if (auto forOp = dyn_cast<scf::ForOp>(op)) {
      unsigned k = result.getResultNumber();
      Value iterArg = forOp.getRegionIterArgs()[k];
      if (traceShape(forOp.getYieldedValues()[k], iterArg, depth + 1) !=
          iterArg)
        return value;
      value = forOp.getInitArgs()[k];
      continue;
    }
    if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
      if (ifOp.getElseRegion().empty())
        return value;
      unsigned k = result.getResultNumber();
      Value thenShape =
          traceShape(ifOp.thenYield().getOperand(k), stop, depth + 1);
      Value elseShape =
          traceShape(ifOp.elseYield().getOperand(k), stop, depth + 1);
      if (thenShape != elseShape ||
          (thenShape != stop && !isDefinedAbove(thenShape, ifOp)))
        return value;
      value = thenShape;
      continue;
    }
    return value;
  }
  return value;
}

struct TorsorResolveDims
    : torsor::impl::TorsorResolveDimsBase<TorsorResolveDims> {
  void runOnOperation() override {
    SmallVector<tensor::DimOp> dims;
    getOperation().walk([&](tensor::DimOp op) { dims.push_back(op); });
    for (tensor::DimOp op : dims) {
      std::optional<int64_t> index = op.getConstantIndex();
      auto type = dyn_cast<RankedTensorType>(op.getSource().getType());
      if (!index || !type || *index < 0 || *index >= type.getRank() ||
          !type.isDynamicDim(*index))
        continue;
      Value source = traceShape(op.getSource(), Value(), 0);
      auto sourceType = cast<RankedTensorType>(source.getType());
      // A static size there (a cast hid it) is left to the canonicalizer.
      if (!sourceType.isDynamicDim(*index))
        continue;
      // An empty tensor's size is the value it was made with.
      if (auto empty = source.getDefiningOp<tensor::EmptyOp>()) {
        op.replaceAllUsesWith(empty.getDynamicSize(*index));
        op.erase();
        continue;
      }
      if (source != op.getSource())
        op.getSourceMutable().assign(source);
    }
  }
};

} // namespace
