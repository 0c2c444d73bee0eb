//===- LieFolds.cpp - Lie dialect folds and canonicalizations -------------===//
//
// Algebraic simplifications that hold in every group. Each identity is
// written above its code; the DRR ones are in LieCanonicalize.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/LieOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace torsor::lie;

namespace {
#include "dialects/Lie/IR/LieCanonicalize.inc"
} // namespace

/// Whether `value` is the identity of `group` everywhere: a lie.identity of
/// the same group, or a constant whose every n×n block is the identity.
static bool isIdentity(Value value, GroupAttr group) {
  if (auto identity = value.getDefiningOp<IdentityOp>())
    return identity.getGroup() == group;
  DenseElementsAttr dense;
  if (!matchPattern(value, m_Constant(&dense)))
    return false;
  SmallVector<double> id = group.getModel().getIdentity();
  size_t i = 0;
  for (APFloat entry : dense.getValues<APFloat>()) {
    if (entry.convertToDouble() != id[i])
      return false;
    i = (i + 1) % id.size();
  }
  return true;
}

// compose(x, e) -> x,  compose(e, x) -> x
OpFoldResult ComposeOp::fold(FoldAdaptor) {
  if (isIdentity(getRhs(), getGroup()))
    return getLhs();
  if (isIdentity(getLhs(), getGroup()))
    return getRhs();
  return {};
}

// inverse(e) -> e
OpFoldResult InverseOp::fold(FoldAdaptor) {
  if (isIdentity(getInput(), getGroup()))
    return getInput();
  return {};
}

// log(exp(v)) -> v   only when every coordinate vector of the constant v is
// inside the chart (e.g. |θ| < π), where exp is injective.
OpFoldResult LogOp::fold(FoldAdaptor) {
  auto exp = getInput().getDefiningOp<ExpOp>();
  if (!exp || exp.getGroup() != getGroup() ||
      exp.getInput().getType() != getType())
    return {};
  DenseElementsAttr dense;
  if (!matchPattern(exp.getInput(), m_Constant(&dense)))
    return {};
  const GroupModel &model = getGroup().getModel();
  unsigned k = model.getAlgebraDim();
  SmallVector<double> values;
  for (APFloat entry : dense.getValues<APFloat>())
    values.push_back(entry.convertToDouble());
  if (dense.isSplat())
    values.assign(k, values.front());
  for (size_t i = 0; i + k <= values.size(); i += k)
    if (!model.isInsideChart(ArrayRef<double>(values).slice(i, k)))
      return {};
  return exp.getInput();
}

void InverseOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<InverseInverse>(context);
}

void ExpOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<ExpLog>(context);
}

namespace {
/// dist2(a, a) -> 0: log(a⁻¹a) = log(e) = 0 in every group.
struct Dist2OfSelf : OpRewritePattern<Dist2Op> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Dist2Op op,
                                PatternRewriter &rewriter) const override {
    if (op.getLhs() != op.getRhs())
      return failure();
    RankedTensorType type = op.getType();
    Location loc = op.getLoc();
    Value zero = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(type.getElementType(), 0.0));
    SmallVector<Value> dynamicSizes;
    for (auto [i, size] : llvm::enumerate(type.getShape()))
      if (ShapedType::isDynamic(size))
        dynamicSizes.push_back(
            tensor::DimOp::create(rewriter, loc, op.getLhs(), i));
    rewriter.replaceOpWithNewOp<tensor::SplatOp>(op, type, zero, dynamicSizes);
    return success();
  }
};
} // namespace

void Dist2Op::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<Dist2OfSelf>(context);
}
