//===- LieGeoRules.cpp - VJPs of lie ops and the Lie/Grassmann layers -----===//
//
// The rules for `lie.*` and `geo.lie_attention`, and the group-input hook
// that turns an ambient matrix cotangent into the left-trivialised gradient
// in algebra coordinates (VJP.h). Every rule is one `lie.pullback` per
// differentiable operand: the group model builds the derivative from its
// own formulas (dialects/Lie/IR/Groups/Derivatives.h), so the math of each
// group is written once. geo.lie_attention's rule is the flash backward
// (geo.flash_lie_attention_grad, O(L) memory) on the fused forward's pair
// features, for every group and any batch dims (only a declared group
// whose pair form builds loops, with batch dims, falls back to the unfused
// lowering). geo.lie_cross_attention's rule is its block backward
// (geo.lie_cross_attention_grad) on its own out and lse, a cotangent of
// the lse folded in through one extra column per head.
// geo.grassmann_mix's rule is GrassmannRules.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/VJP.h"
#include "compiler/Conversion/GeoToLinalg/GeoToLinalg.h"
#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace torsor;
using namespace torsor::autodiff;

namespace {

using Cots = ArrayRef<Value>;
using Grads = SmallVectorImpl<Value>;

/// lie.pullback kind(inputs), cot for operand `wrt` (its own type).
Value pullback(OpBuilder &b, Location loc, lie::PullbackKind kind,
               ValueRange inputs, Value cot, lie::GroupAttr group, unsigned wrt,
               DenseF64ArrayAttr lambda = {}) {
  return lie::PullbackOp::create(
      b, loc, inputs[wrt].getType(),
      lie::PullbackKindAttr::get(b.getContext(), kind), inputs, cot, group,
      b.getI64IntegerAttr(wrt), lambda);
}

/// One pullback per operand of an element-wise lie op.
template <typename OpT>
LogicalResult lieVJP(OpBuilder &b, Operation *raw, Cots cots, Grads &grads,
                     lie::PullbackKind kind) {
  auto op = cast<OpT>(raw);
  for (unsigned i = 0; i < raw->getNumOperands(); ++i)
    grads[i] = pullback(b, raw->getLoc(), kind, raw->getOperands(), cots[0],
                        op.getGroup(), i);
  return success();
}

LogicalResult composeVJP(OpBuilder &b, Operation *op, Cots cots, Grads &grads) {
  return lieVJP<lie::ComposeOp>(b, op, cots, grads, lie::PullbackKind::Compose);
}
LogicalResult inverseVJP(OpBuilder &b, Operation *op, Cots cots, Grads &grads) {
  return lieVJP<lie::InverseOp>(b, op, cots, grads, lie::PullbackKind::Inverse);
}
LogicalResult logVJP(OpBuilder &b, Operation *op, Cots cots, Grads &grads) {
  return lieVJP<lie::LogOp>(b, op, cots, grads, lie::PullbackKind::Log);
}
LogicalResult expVJP(OpBuilder &b, Operation *op, Cots cots, Grads &grads) {
  return lieVJP<lie::ExpOp>(b, op, cots, grads, lie::PullbackKind::Exp);
}
LogicalResult actVJP(OpBuilder &b, Operation *op, Cots cots, Grads &grads) {
  return lieVJP<lie::ActOp>(b, op, cots, grads, lie::PullbackKind::Act);
}
LogicalResult pairFeaturesVJP(OpBuilder &b, Operation *raw, Cots cots,
                              Grads &grads) {
  auto op = cast<lie::PairFeaturesOp>(raw);
  return lieVJP<lie::PairFeaturesOp>(b, raw, cots, grads,
                                     op.getKey()
                                         ? lie::PullbackKind::KeyFeatures
                                         : lie::PullbackKind::QueryFeatures);
}
LogicalResult dist2VJP(OpBuilder &b, Operation *raw, Cots cots, Grads &grads) {
  auto op = cast<lie::Dist2Op>(raw);
  DenseF64ArrayAttr lambda = b.getDenseF64ArrayAttr(op.getLambdaOrDefault());
  for (unsigned i = 0; i < 2; ++i)
    grads[i] = pullback(b, raw->getLoc(), lie::PullbackKind::Dist2,
                        raw->getOperands(), cots[0], op.getGroup(), i, lambda);
  return success();
}

/// `t` ([batch...] x M x N) with its last two dims swapped.
Value transpose(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, t);
  std::swap(sizes[rank - 2], sizes[rank - 1]);
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  Value empty = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  return linalg::TransposeOp::create(b, loc, t, empty, perm).getResult()[0];
}

/// log(g_i⁻¹·g_j) of every pair at once, [batch..., L, L, m]: what the
/// -O0 lowering's row loop computes one query row per iteration, here as
/// one lie.compose and one lie.log on broadcasts (L²·n² memory, an oracle)
/// so that the reverse sweep sees no loop.
Value allPairsLog(OpBuilder &b, Location loc, Value g, lie::GroupAttr group,
                  Type wType) {
  auto gType = cast<RankedTensorType>(g.getType());
  unsigned nb = gType.getRank() - 3;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, g);
  SmallVector<int64_t> shape(gType.getShape());
  sizes.insert(sizes.begin() + nb + 1, sizes[nb]);
  shape.insert(shape.begin() + nb + 1, shape[nb]);
  auto pairType = RankedTensorType::get(shape, gType.getElementType());
  auto broadcast = [&](Value t, int64_t dim) {
    Value empty =
        tensor::EmptyOp::create(b, loc, sizes, gType.getElementType());
    return linalg::BroadcastOp::create(b, loc, t, empty, ArrayRef<int64_t>{dim})
        .getResult()[0];
  };
  Value inv = lie::InverseOp::create(b, loc, gType, g, group);
  Value rel = lie::ComposeOp::create(b, loc, pairType, broadcast(inv, nb + 1),
                                     broadcast(g, nb), group);
  return lie::LogOp::create(b, loc, wType, rel, group);
}

/// The unfused backward of `raw`: its -O0 lowering (lie ops and linalg,
/// with L × L intermediates) rebuilt here and swept by the other rules.
/// Only for batch dims on groups whose pair form builds loops (declared
/// groups with an iterative log). The lowering's row loop becomes
/// allPairsLog.
LogicalResult unfusedVJP(OpBuilder &b, Operation *raw, Cots cots,
                         Grads &grads) {
  Block *block = b.getInsertionBlock();
  Block::iterator point = b.getInsertionPoint();
  Operation *before = point == block->begin() ? nullptr : &*std::prev(point);
  Operation *clone = b.clone(*raw);
  // The marker keeps the lowered result findable after the rewrite.
  auto marker = UnrealizedConversionCastOp::create(
      b, raw->getLoc(), clone->getResultTypes(), clone->getResults());
  RewritePatternSet patterns(raw->getContext());
  populateGeoToLinalgConversionPatterns(patterns);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingOps);
  if (failed(applyOpPatternsGreedily({clone}, std::move(patterns), config)))
    return raw->emitOpError("could not be lowered for its unfused gradient");
  SmallVector<Operation *> ops;
  for (Operation *op = before ? before->getNextNode() : &block->front();
       op != marker.getOperation(); op = op->getNextNode())
    ops.push_back(op);
  if (auto attention = dyn_cast<geo::LieAttentionOp>(raw)) {
    for (Operation *op : ops) {
      auto loop = dyn_cast<scf::ForOp>(op);
      if (!loop || loop.getNumResults() != 1)
        continue;
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop);
      Value w = allPairsLog(b, loop.getLoc(), attention.getElements(),
                            attention.getGroup(), loop.getResult(0).getType());
      loop.getResult(0).replaceAllUsesWith(w);
      loop.erase();
    }
    ops.clear();
    for (Operation *op = before ? before->getNextNode() : &block->front();
         op != marker.getOperation(); op = op->getNextNode())
      ops.push_back(op);
  }
  llvm::DenseMap<Value, Value> cotangents;
  cotangents[marker.getOperand(0)] = cots[0];
  b.setInsertionPointAfter(marker);
  if (failed(backpropagate(b, ops, cotangents, getVJPRegistry())))
    return failure();
  for (auto [i, operand] : llvm::enumerate(raw->getOperands()))
    grads[i] = cotangents.lookup(operand);
  marker.erase();
  return success();
}

/// geo.lie_attention: pair features as the fused forward has them, the
/// flash backward on them, and the features' pullbacks to the poses. Batch
/// dims stay on every tensor (the kernel runs over them). The gradient
/// has no lse yet: geo-fuse-attention gives it the fused forward's.
LogicalResult lieAttentionVJP(OpBuilder &b, Operation *raw, Cots cots,
                              Grads &grads) {
  auto op = cast<geo::LieAttentionOp>(raw);
  Location loc = op.getLoc();
  auto gType = cast<RankedTensorType>(op.getElements().getType());
  lie::GroupAttr group = op.getGroup();
  const lie::GroupModel &model = group.getModel();
  if (gType.getRank() != 3 && !model.hasStraightLinePairForm())
    return unfusedVJP(b, raw, cots, grads);
  Type elt = gType.getElementType();
  Value g = op.getElements();
  auto features = [&](bool key) -> Value {
    SmallVector<int64_t> shape(gType.getShape().drop_back(2));
    shape.push_back(key ? model.getKeyFeatureCount()
                        : model.getQueryFeatureCount());
    return lie::PairFeaturesOp::create(
        b, loc, RankedTensorType::get(shape, elt), g, group, key);
  };
  Value q = features(false), k = features(true);
  Value kT = transpose(b, loc, k);
  auto flash = geo::FlashLieAttentionGradOp::create(
      b, loc, TypeRange{q.getType(), kT.getType(), op.getValues().getType()}, q,
      kT, op.getValues(), op.getResult(), cots[0], /*lse=*/Value(),
      /*query_offset=*/Value(), /*key_offset=*/Value(), op.getScores());
  Value dk = transpose(b, loc, flash.getKeysGrad());
  Value dq = flash.getQueriesGrad();
  Value fromQ = pullback(b, loc, lie::PullbackKind::QueryFeatures,
                         ValueRange{g}, dq, group, 0);
  Value fromK = pullback(b, loc, lie::PullbackKind::KeyFeatures, ValueRange{g},
                         dk, group, 0);
  grads[0] = addValues(b, loc, fromQ, fromK);
  grads[1] = flash.getValuesGrad();
  return success();
}

/// Whether `cot` is a materialised zero (zerosLike: a fill of 0.0).
bool isZeroCotangent(Value cot) {
  auto fill = cot.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  auto cst = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto value = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  return value && value.getValue().isZero();
}

/// The reassociation that splits (or joins) the last dim of a rank-`rank`
/// tensor into two: {0}, ..., {rank - 2}, {rank - 1, rank}.
SmallVector<ReassociationIndices> splitLast(int64_t rank) {
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i + 1 < rank; ++i)
    groups.push_back({i});
  groups.push_back({rank - 1, rank});
  return groups;
}

/// `x` [batch..., L, H·dh] with one more column per head, [batch..., L,
/// H·(dh + 1)]: each head's dh columns, then `fill`, or, when `extra`
/// [batch..., L, H] is given, that head's entry of `extra`.
Value widenHeads(OpBuilder &b, Location loc, Value x, int64_t heads,
                 double fill, Value extra = {}) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), dh = type.getShape().back() / heads;
  Type elt = type.getElementType();
  SmallVector<int64_t> split(type.getShape());
  split.back() = heads;
  split.push_back(dh);
  auto groups = splitLast(rank);
  Value perHead = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(split, elt), x, groups);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, perHead);
  SmallVector<OpFoldResult> wide = sizes;
  wide.back() = b.getIndexAttr(dh + 1);
  Value empty = tensor::EmptyOp::create(b, loc, wide, elt);
  Value cst = arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, fill));
  Value acc = linalg::FillOp::create(b, loc, cst, empty).getResult(0);
  SmallVector<OpFoldResult> at(rank + 1, b.getIndexAttr(0)),
      unit(rank + 1, b.getIndexAttr(1));
  acc = tensor::InsertSliceOp::create(b, loc, perHead, acc, at, sizes, unit);
  if (extra) {
    SmallVector<int64_t> column(
        cast<RankedTensorType>(extra.getType()).getShape());
    column.push_back(1);
    Value col = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(column, elt), extra, groups);
    at.back() = b.getIndexAttr(dh);
    SmallVector<OpFoldResult> one = sizes;
    one.back() = b.getIndexAttr(1);
    acc = tensor::InsertSliceOp::create(b, loc, col, acc, at, one, unit);
  }
  SmallVector<int64_t> joined(type.getShape());
  joined.back() = heads * (dh + 1);
  return tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get(joined, elt), acc, groups);
}

/// The inverse of widenHeads: `x` [batch..., L, H·(dh + 1)] without each
/// head's last column, of type `want` [batch..., L, H·dh].
Value narrowHeads(OpBuilder &b, Location loc, Value x, int64_t heads,
                  RankedTensorType want) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), dh = want.getShape().back() / heads;
  Type elt = type.getElementType();
  SmallVector<int64_t> split(type.getShape());
  split.back() = heads;
  split.push_back(dh + 1);
  auto groups = splitLast(rank);
  Value perHead = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(split, elt), x, groups);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, perHead);
  sizes.back() = b.getIndexAttr(dh);
  SmallVector<OpFoldResult> at(rank + 1, b.getIndexAttr(0)),
      unit(rank + 1, b.getIndexAttr(1));
  SmallVector<int64_t> narrow(split);
  narrow.back() = dh;
  Value cut = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(narrow, elt), perHead, at, sizes, unit);
  return tensor::CollapseShapeOp::create(b, loc, want, cut, groups);
}

/// geo.lie_cross_attention: the block backward on its own out and lse
/// (geo.lie_cross_attention_grad), whose ambient cotangents of the query
/// and key elements the group inputs' hook turns into gradients. The
/// offsets (indices) get none.
///
/// A cotangent dlse on the lse result adds dlse_i · ∂lse_i/∂s_ij =
/// dlse_i · P_ij to the scores' gradient, so dS_ij = P_ij (⟨dO_i, v_j⟩ −
/// (D_i − dlse_i)) with D_i = ⟨dO_i, O_i⟩: the block backward with D_i
/// lowered by dlse_i. The block backward computes D_i itself, so every
/// head gets one more column: v's is 0 (scores and ⟨dO_i, v_j⟩ unchanged),
/// dO's is −1 and O's is dlse_i (D_i becomes D_i − dlse_i); v's gradient
/// drops the column again (it holds Σ_i −P_ij). Exact, one more column
/// per head, and only when dlse is not a materialised zero.
LogicalResult lieCrossAttentionVJP(OpBuilder &b, Operation *raw, Cots cots,
                                   Grads &grads) {
  auto op = cast<geo::LieCrossAttentionOp>(raw);
  Location loc = op.getLoc();
  Value values = op.getValues(), out = op.getResult(), dout = cots[0];
  int64_t heads = op.getHeads();
  bool withLse = !isZeroCotangent(cots[1]);
  if (withLse) {
    values = widenHeads(b, loc, values, heads, 0.0);
    dout = widenHeads(b, loc, dout, heads, -1.0);
    out = widenHeads(b, loc, out, heads, 0.0, cots[1]);
  }
  auto grad = geo::LieCrossAttentionGradOp::create(
      b, loc,
      TypeRange{op.getQueries().getType(), op.getKeys().getType(),
                values.getType()},
      op.getQueries(), op.getKeys(), values, out, op.getLse(), dout,
      op.getQueryOffset(), op.getKeyOffset(), op.getScores());
  grads[0] = grad.getQueriesGrad();
  grads[1] = grad.getKeysGrad();
  grads[2] = grad.getValuesGrad();
  if (withLse)
    grads[2] = narrowHeads(b, loc, grads[2], heads,
                           cast<RankedTensorType>(op.getValues().getType()));
  return success();
}

/// The group of input `g` named `name` (its torsor.group): the
/// #lie.group attribute of an op that uses it (declared groups carry their
/// generators only there), else the built-in group of that name.
lie::GroupAttr findGroup(Value g, Attribute name) {
  if (auto group = dyn_cast_or_null<lie::GroupAttr>(name))
    return group;
  auto text = dyn_cast_or_null<StringAttr>(name);
  for (Operation *user : g.getUsers()) {
    auto group = user->getAttrOfType<lie::GroupAttr>("group");
    if (auto scores = user->getAttrOfType<geo::ScoresAttr>("scores"))
      group = scores.getGroup();
    if (group && (!text || group.getName() == text ||
                  group.getModel().getDisplayName() == text.getValue()))
      return group;
  }
  if (!text)
    return {};
  std::string lower = text.getValue().lower();
  if (!lie::lookupBuiltinGroupModel(lower))
    return {};
  return lie::GroupAttr::get(StringAttr::get(g.getContext(), lower));
}

/// Ambient cotangent of a group input → left-trivialised gradient.
FailureOr<Value> groupInputGradient(OpBuilder &b, Location loc, Value g,
                                    Value cot, Attribute groupAttr) {
  lie::GroupAttr group = findGroup(g, groupAttr);
  if (!group) {
    emitError(loc, "no group model for the gradient of a group input of "
                   "group ")
        << groupAttr;
    return failure();
  }
  auto gType = cast<RankedTensorType>(g.getType());
  SmallVector<int64_t> shape(gType.getShape().drop_back(2));
  shape.push_back(group.getModel().getAlgebraDim());
  return lie::PullbackOp::create(
             b, loc, RankedTensorType::get(shape, gType.getElementType()),
             lie::PullbackKindAttr::get(b.getContext(),
                                        lie::PullbackKind::LeftTrivialize),
             ValueRange{g}, cot, group, b.getI64IntegerAttr(0),
             DenseF64ArrayAttr())
      .getResult();
}

} // namespace

void torsor::autodiff::registerLieGeoVJPRules(VJPRegistry &registry) {
  registry.add("lie.compose", {composeVJP});
  registry.add("lie.inverse", {inverseVJP});
  registry.add("lie.log", {logVJP});
  registry.add("lie.exp", {expVJP});
  registry.add("lie.act", {actVJP});
  registry.add("lie.dist2", {dist2VJP});
  registry.add("lie.pair_features", {pairFeaturesVJP});
  registry.add("geo.lie_attention", {lieAttentionVJP});
  registry.add("geo.lie_cross_attention", {lieCrossAttentionVJP});
  registry.groupInputGradient = groupInputGradient;
}
