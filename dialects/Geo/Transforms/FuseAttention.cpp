//===- FuseAttention.cpp - geo.lie_attention → pair features + flash ------===//
//
// geo-fuse-attention: the first step of the fused attention pipeline. The
// group model's factored pairwise form splits dist2 into per-token features
// (computed once per token by lie.pair_features) and a per-pair epilogue;
// geo.flash_lie_attention consumes the features with an online softmax, so
// neither the L × L × k log coordinates nor the L × L scores of the -O0
// lowering exist any more.
//
// When a geo.flash_lie_attention_grad of the same attention (same
// features, values and attributes: what the gradient rule of
// geo.lie_attention emits) takes the result as its `out`, the fused op
// also returns the per-row log-sum-exp and the gradient takes it, so the
// backward does not recompute the softmax statistics
// (FlashAttention-2's backward).
//
// geo.lie_cross_attention (two token sets, offsets, lse) fuses the same
// way into the flash op's cross form (`key_offset`, always with lse).
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/AttentionKernel.h"
#include "dialects/Geo/Transforms/Passes.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace torsor::geo {
#define GEN_PASS_DEF_GEOFUSEATTENTION
#include "dialects/Geo/Transforms/Passes.h.inc"
} // namespace torsor::geo

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;

namespace {

/// Whether `features` is lie.pair_features of `g` (key features when
/// `key`), possibly through the feature-major transpose of keys.
bool isPairFeaturesOf(Value features, Value g, bool key) {
  if (key) {
    auto transpose = features.getDefiningOp<linalg::TransposeOp>();
    if (!transpose)
      return false;
    features = transpose.getInput();
  }
  auto op = features.getDefiningOp<lie::PairFeaturesOp>();
  return op && op.getInput() == g && op.getKey() == key;
}

/// The flash_lie_attention_grad that differentiates `op` itself and has
/// no log-sum-exp yet, if any.
FlashLieAttentionGradOp findGradient(LieAttentionOp op) {
  for (Operation *user : op->getUsers()) {
    auto grad = dyn_cast<FlashLieAttentionGradOp>(user);
    if (grad && grad.getOut() == op.getResult() && !grad.getLse() &&
        grad.getValues() == op.getValues() &&
        grad.getScores() == op.getScores() &&
        isPairFeaturesOf(grad.getQueries(), op.getElements(), false) &&
        isPairFeaturesOf(grad.getKeys(), op.getElements(), true))
      return grad;
  }
  return {};
}

/// geo.lie_attention(g, v) → flash_lie_attention(q(g), k(g)ᵀ, v, 0, empty).
struct FuseLieAttention : OpRewritePattern<LieAttentionOp> {
  FuseLieAttention(MLIRContext *ctx, bool lse)
      : OpRewritePattern(ctx), handLse(lse) {}

  LogicalResult matchAndRewrite(LieAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value g = op.getElements(), v = op.getValues();
    auto gType = cast<RankedTensorType>(g.getType());
    Type elt = gType.getElementType();
    lie::GroupAttr group = op.getGroup();
    const lie::GroupModel &model = group.getModel();
    unsigned rank = gType.getRank() - 1; // of features and values
    SmallVector<int64_t> tokens(gType.getShape().drop_back(2));

    auto features = [&](bool key) -> Value {
      SmallVector<int64_t> shape(tokens);
      shape.push_back(key ? model.getKeyFeatureCount()
                          : model.getQueryFeatureCount());
      return lie::PairFeaturesOp::create(
          rewriter, loc, RankedTensorType::get(shape, elt), g, group, key);
    };
    Value queries = features(/*key=*/false);
    Value keys = features(/*key=*/true);

    // Keys feature-major ([batch...] x F x L): lanes load consecutive keys.
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 1], perm[rank - 2]);
    SmallVector<OpFoldResult> keySizes =
        tensor::getMixedSizes(rewriter, loc, keys);
    std::swap(keySizes[rank - 1], keySizes[rank - 2]);
    Value keysT = tensor::EmptyOp::create(rewriter, loc, keySizes, elt);
    keysT = linalg::TransposeOp::create(rewriter, loc, keys, keysT, perm)
                .getResult()[0];

    Value init = tensor::EmptyOp::create(
        rewriter, loc, tensor::getMixedSizes(rewriter, loc, v), elt);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);

    // The log-sum-exp, [batch...] x L x heads, when a gradient needs it.
    FlashLieAttentionGradOp grad = handLse ? findGradient(op) : nullptr;
    Value lseInit;
    Type lseType;
    if (grad) {
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, v);
      sizes.back() = rewriter.getIndexAttr(op.getHeads());
      SmallVector<int64_t> shape(
          cast<RankedTensorType>(v.getType()).getShape());
      shape.back() = op.getHeads();
      lseType = RankedTensorType::get(shape, elt);
      lseInit = tensor::EmptyOp::create(rewriter, loc, sizes, elt);
    }
    auto flash = FlashLieAttentionOp::create(
        rewriter, loc, op.getType(), lseType, queries, keysT, v, zero,
        /*key_offset=*/Value(), init, lseInit, op.getScores(),
        /*key_tile=*/IntegerAttr());
    if (grad)
      rewriter.modifyOpInPlace(
          grad, [&] { grad.getLseMutable().assign(flash.getLse()); });
    rewriter.replaceOp(op, flash.getResult());
    return success();
  }

  bool handLse;
};

/// geo.lie_cross_attention(g_q, g_k, v, qo, ko) →
/// flash_lie_attention(q(g_q), k(g_k)ᵀ, v, qo, key_offset ko, lse): the
/// cross form, which always returns its log-sum-exp.
struct FuseLieCrossAttention : OpRewritePattern<LieCrossAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LieCrossAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value queries =
        buildPairFeatures(rewriter, loc, op.getQueries(), op.getGroup(), false);
    Value keys =
        buildPairFeatures(rewriter, loc, op.getKeys(), op.getGroup(), true);
    // Destinations: [batch...] x Lq x D and [batch...] x Lq x heads, the
    // query elements' leading sizes.
    auto rowsOf = [&](Type type, OpFoldResult last) -> Value {
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, loc, op.getQueries());
      sizes.pop_back();
      sizes.back() = last;
      return tensor::EmptyOp::create(
          rewriter, loc, sizes, cast<RankedTensorType>(type).getElementType());
    };
    int64_t dim =
        cast<RankedTensorType>(op.getValues().getType()).getShape().back();
    Value init = rowsOf(op.getResult().getType(), rewriter.getIndexAttr(dim));
    Value lseInit =
        rowsOf(op.getLse().getType(), rewriter.getIndexAttr(op.getHeads()));
    auto flash = FlashLieAttentionOp::create(
        rewriter, loc, init.getType(), lseInit.getType(), queries, keys,
        op.getValues(), op.getQueryOffset(), op.getKeyOffset(), init, lseInit,
        op.getScores(), /*key_tile=*/IntegerAttr());
    auto cast = [&](Value v, Type type) -> Value {
      return v.getType() == type
                 ? v
                 : tensor::CastOp::create(rewriter, loc, type, v).getResult();
    };
    rewriter.replaceOp(op, {cast(flash.getResult(), op.getResult().getType()),
                            cast(flash.getLse(), op.getLse().getType())});
    return success();
  }
};

struct GeoFuseAttention
    : torsor::geo::impl::GeoFuseAttentionBase<GeoFuseAttention> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLieAttention>(&getContext(), lse);
    patterns.add<FuseLieCrossAttention>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
