//===- GeoToLinalg.cpp - Lower geo ops to linalg --------------------------===//
//
// The straightforward, unfused lowering of the geo ops: every intermediate of
// the math in docs/math.md (pairwise algebra coordinates, scores, softmax
// probabilities, Plücker coordinates, gates) is materialised as a tensor and
// computed by one linalg.generic or named op. This is the -O0 oracle the
// fused kernels are tested against, so each step mirrors one line of the
// formula, and clarity beats speed. Two rules still hold: no step is worse
// than the math's own complexity (no accidental O(L³)), and no tensor is
// created per element (only per op, or per query row in lie_attention).
//
// Group math (inverse, compose, log) is emitted as lie ops on tensors and
// lowered later by convert-lie-to-arith through the group model, so nothing
// here switches on the group.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GeoToLinalg/GeoToLinalg.h"
#include "compiler/Conversion/GeoToLinalg/LinalgEmitter.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace torsor {
#define GEN_PASS_DEF_CONVERTGEOTOLINALG
#include "compiler/Conversion/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using namespace torsor::geotolinalg;

namespace {

//===----------------------------------------------------------------------===//
// LieAttentionOp
//===----------------------------------------------------------------------===//

/// Lowers geo.lie_attention in four steps:
///   1. w[.., i, j, :] = log(g_i⁻¹ g_j): an scf.for over query rows i; each
///      iteration broadcasts g_i⁻¹ over the L keys and emits one lie.compose
///      and one lie.log on the row (L·n² temporaries, never L²·n²).
///   2. s[.., h, i, j] = Σ_k c[h, k] w[.., i, j, k]² with the constant
///      c[h, k] = −λ[h, block(k)] / τ_h: every head's weighted norm from
///      one ‖log‖ computation per pair.
///   3. Stable (masked) softmax over j.
///   4. out[.., i, h, c] = Σ_j p[.., h, i, j] v[.., j, h, c] on v viewed as
///      [.., L, heads, D/heads].
/// The operands and attributes of one attention to lower: self-attention
/// (`queries` = `keys`, no diagonal, no lse) or the cross form.
struct AttentionParts {
  Value queries, keys, values;
  lie::GroupAttr group;
  int64_t heads = 1;
  ArrayRef<double> tau, lambda;
  bool causal = false;
  /// The cross form: key j is live for row i iff j ≤ diagonal + i (with
  /// `causal`); also returns the lse.
  bool cross = false;
  Value diagonal;
};

/// The lowering of both attention ops; returns out (and, cross, the lse
/// [batch..., Lq, heads]).
SmallVector<Value> lowerAttention(PatternRewriter &rewriter, Location loc,
                                  const AttentionParts &a) {
  {
    Value g = a.queries, gk = a.keys, v = a.values;
    auto gType = cast<RankedTensorType>(g.getType());
    auto gkType = cast<RankedTensorType>(gk.getType());
    auto vType = cast<RankedTensorType>(v.getType());
    LinalgEmitter e(rewriter, loc, vType.getElementType());
    lie::GroupAttr group = a.group;
    const lie::GroupModel &model = group.getModel();
    unsigned nb = vType.getRank() - 2; // batch dims
    int64_t heads = a.heads;
    int64_t m = model.getAlgebraDim();
    int64_t dim = vType.getShape().back();
    SmallVector<OpFoldResult> gShape = e.sizes(g);
    SmallVector<OpFoldResult> gkShape = e.sizes(gk);
    OpFoldResult len = gShape[nb], keyLen = gkShape[nb];
    SmallVector<OpFoldResult> batch(gShape.begin(), gShape.begin() + nb);
    OpFoldResult zero = rewriter.getIndexAttr(0),
                 one = rewriter.getIndexAttr(1);

    // 1. Pairwise algebra coordinates, one query row per iteration.
    Value inv = lie::InverseOp::create(rewriter, e.loc, gType, g, group);
    SmallVector<OpFoldResult> wShape =
        catSizes(batch, {len, keyLen, e.b.getIndexAttr(m)});
    // (Operands are built one statement each: C++ leaves the order of
    // argument evaluation, and so the order of the IR, unspecified.)
    Value lb0 = e.index(0);
    Value lenV = getValueOrCreateConstantIndexOp(rewriter, e.loc, len);
    Value step = e.index(1);
    Value wInit = e.empty(wShape);
    auto loop = scf::ForOp::create(
        rewriter, e.loc, lb0, lenV, step, ValueRange{wInit},
        [&](OpBuilder &lb, Location nloc, Value i, ValueRange iterArgs) {
          LinalgEmitter r(lb, nloc, e.elt);
          // g_i⁻¹ as [batch..., n, n] (the sequence dim dropped) ...
          SmallVector<OpFoldResult> offs(gType.getRank(), zero);
          offs[nb] = i;
          SmallVector<OpFoldResult> rowSizes = gShape;
          rowSizes[nb] = one;
          SmallVector<OpFoldResult> strides(gType.getRank(), one);
          SmallVector<int64_t> rowShape(gType.getShape());
          rowShape.erase(rowShape.begin() + nb);
          Value row = tensor::ExtractSliceOp::create(
              lb, nloc, RankedTensorType::get(rowShape, r.elt), inv, offs,
              rowSizes, strides);
          // ... broadcast along the keys, so one lie op covers the row.
          Value rowInv = linalg::BroadcastOp::create(
                             lb, nloc, row, r.empty(gkShape),
                             ArrayRef<int64_t>{static_cast<int64_t>(nb)})
                             .getResult()[0];
          Value rel =
              lie::ComposeOp::create(lb, nloc, gkType, rowInv, gk, group);
          SmallVector<int64_t> logShape(gkType.getShape().drop_back(2));
          logShape.push_back(m);
          Value w = lie::LogOp::create(
              lb, nloc, RankedTensorType::get(logShape, r.elt), rel, group);
          // w is [batch..., L, m]; it becomes the slab [batch..., i, :, :],
          // copied by a linalg.copy into that slab so that bufferization
          // writes it in place (an insert_slice of a fresh tensor would
          // become a strided memref.copy, i.e. a runtime memrefCopy call).
          SmallVector<OpFoldResult> wOffs(wShape.size(), zero);
          wOffs[nb] = i;
          SmallVector<OpFoldResult> wSizes = wShape;
          wSizes[nb] = one;
          SmallVector<OpFoldResult> wStrides(wShape.size(), one);
          Value slab = tensor::ExtractSliceOp::create(
              lb, nloc, cast<RankedTensorType>(w.getType()), iterArgs[0], wOffs,
              wSizes, wStrides);
          Value filled = linalg::CopyOp::create(lb, nloc, w, slab).getResult(0);
          Value next = tensor::InsertSliceOp::create(
              lb, nloc, filled, iterArgs[0], wOffs, wSizes, wStrides);
          scf::YieldOp::create(lb, nloc, next);
        });
    // Not marked torsor.parallel: the rows' temporaries may be bufferized
    // into buffers hoisted out of the loop and shared by every row, so
    // running rows concurrently would race. The lie ops inside each row
    // are parallel over the keys instead.
    Value w = loop.getResult(0);

    // 2. Scores of every head from the same coordinates.
    ArrayRef<double> tau = a.tau, lambda = a.lambda;
    ArrayRef<lie::AlgebraBlock> blocks = model.getBlocks();
    SmallVector<Attribute> coef(heads * m);
    for (int64_t h = 0; h < heads; ++h)
      for (auto [bi, block] : llvm::enumerate(blocks))
        for (unsigned k = block.offset; k < block.offset + block.size; ++k)
          coef[h * m + k] = rewriter.getFloatAttr(
              e.elt, -lambda[h * blocks.size() + bi] / tau[h]);
    Value coefT = arith::ConstantOp::create(
        rewriter, e.loc,
        DenseElementsAttr::get(RankedTensorType::get({heads, m}, e.elt), coef));
    unsigned hL = nb, iL = nb + 1, jL = nb + 2, kL = nb + 3;
    SmallVector<unsigned> bL = iota(0, nb);
    SmallVector<OpFoldResult> sShape =
        catSizes(batch, {rewriter.getIndexAttr(heads), len, keyLen});
    Value scores = e.generic(
        {w, coefT}, e.full(sShape, 0.0),
        {e.map(nb + 4, cat(bL, {iL, jL, kL})), e.map(nb + 4, {hL, kL}),
         e.map(nb + 4, cat(bL, {hL, iL, jL}))},
        nb + 4, {kL}, [](OpBuilder &lb, Location nloc, ValueRange a) -> Value {
          Value sq = arith::MulFOp::create(lb, nloc, a[0], a[0]);
          Value t = arith::MulFOp::create(lb, nloc, a[1], sq);
          return arith::AddFOp::create(lb, nloc, a[2], t);
        });

    // 3. Probabilities (and, cross, the lse [batch..., h, i]).
    Value probs, lse;
    if (a.cross)
      std::tie(probs, lse) =
          e.softmaxWithLse(scores, a.causal ? a.diagonal : Value());
    else
      probs = e.softmax(scores, 1.0, a.causal);

    // 4. Weighted values per head on v viewed as [batch..., L, H, D/H].
    int64_t headDim = dim / heads;
    SmallVector<ReassociationIndices> reassoc;
    for (unsigned d = 0; d <= nb; ++d)
      reassoc.push_back({d});
    reassoc.push_back({nb + 1, nb + 2});
    SmallVector<int64_t> v4Shape(vType.getShape().drop_back());
    v4Shape.append({heads, headDim});
    SmallVector<OpFoldResult> v4Sizes = e.sizes(v);
    v4Sizes.pop_back();
    v4Sizes.append(
        {rewriter.getIndexAttr(heads), rewriter.getIndexAttr(headDim)});
    Value v4 = tensor::ExpandShapeOp::create(
        rewriter, e.loc, RankedTensorType::get(v4Shape, e.elt), v, reassoc,
        v4Sizes);
    // loops: batch..., i, h, c, j
    unsigned oi = nb, oh = nb + 1, oc = nb + 2, oj = nb + 3;
    SmallVector<OpFoldResult> out4Sizes(v4Sizes);
    out4Sizes[nb] = len;
    Value out4 = e.generic(
        {probs, v4}, e.full(out4Sizes, 0.0),
        {e.map(nb + 4, cat(bL, {oh, oi, oj})),
         e.map(nb + 4, cat(bL, {oj, oh, oc})),
         e.map(nb + 4, cat(bL, {oi, oh, oc}))},
        nb + 4, {oj}, [](OpBuilder &lb, Location nloc, ValueRange a) -> Value {
          Value p = arith::MulFOp::create(lb, nloc, a[0], a[1]);
          return arith::AddFOp::create(lb, nloc, a[2], p);
        });
    Value out = tensor::CollapseShapeOp::create(rewriter, e.loc, out4, reassoc);
    if (!a.cross)
      return {out};
    // lse [batch..., h, i] → [batch..., i, h].
    SmallVector<OpFoldResult> lseSizes =
        catSizes(batch, {len, rewriter.getIndexAttr(heads)});
    Value lseT = e.generic(
        lse, e.empty(lseSizes),
        {e.map(nb + 2, cat(bL, {nb + 1, nb})), e.map(nb + 2, iota(0, nb + 2))},
        nb + 2, {}, [](OpBuilder &, Location, ValueRange x) { return x[0]; });
    return {out, lseT};
  }
}

/// Lowers geo.lie_attention (lowerAttention, self form).
struct LowerLieAttention : OpRewritePattern<LieAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LieAttentionOp op,
                                PatternRewriter &rewriter) const override {
    AttentionParts a;
    a.queries = a.keys = op.getElements();
    a.values = op.getValues();
    a.group = op.getGroup();
    a.heads = op.getHeads();
    a.tau = op.getTau();
    a.lambda = op.getLambda();
    a.causal = op.getCausal();
    SmallVector<Value> results = lowerAttention(rewriter, op.getLoc(), a);
    LinalgEmitter e(rewriter, op.getLoc(), getElementTypeOrSelf(op.getType()));
    rewriter.replaceOp(op, e.castTo(results[0], op.getType()));
    return success();
  }
};

/// Lowers geo.lie_cross_attention (lowerAttention, cross form): the pair
/// logs log(g_q,i⁻¹ g_k,j) of Lq rows against Lk keys, the causal mask at
/// the offsets' diagonal, and the lse beside the output.
struct LowerLieCrossAttention : OpRewritePattern<LieCrossAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LieCrossAttentionOp op,
                                PatternRewriter &rewriter) const override {
    AttentionParts a;
    a.queries = op.getQueries();
    a.keys = op.getKeys();
    a.values = op.getValues();
    a.group = op.getGroup();
    a.heads = op.getHeads();
    a.tau = op.getTau();
    a.lambda = op.getLambda();
    a.causal = op.getCausal();
    a.cross = true;
    a.diagonal = arith::SubIOp::create(rewriter, op.getLoc(),
                                       op.getQueryOffset(), op.getKeyOffset());
    SmallVector<Value> results = lowerAttention(rewriter, op.getLoc(), a);
    LinalgEmitter e(rewriter, op.getLoc(),
                    getElementTypeOrSelf(op.getResult().getType()));
    rewriter.replaceOp(op, {e.castTo(results[0], op.getResult().getType()),
                            e.castTo(results[1], op.getLse().getType())});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// PluckerOp
//===----------------------------------------------------------------------===//

/// Lowers geo.plucker to one gathering linalg.generic (LinalgEmitter::plucker).
struct LowerPlucker : OpRewritePattern<PluckerOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PluckerOp op,
                                PatternRewriter &rewriter) const override {
    LinalgEmitter e(rewriter, op.getLoc(), op.getType().getElementType());
    Value p = e.plucker(op.getLhs(), op.getRhs());
    rewriter.replaceOp(op, e.castTo(p, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// GrassmannMixOp
//===----------------------------------------------------------------------===//

/// Lowers geo.grassmann_mix following docs/math.md §3 line by line:
///   z = h W_redᵀ + b_red; then per offset Δ (unrolled: offsets are
///   attributes) the n = max(L − Δ, 0) valid pairs are two slices of z,
///   p = plucker(z_t, z_{t±Δ}), p̂ = p / max(‖p‖, ε), g^Δ = p̂ W_pluᵀ + b_plu,
///   added into the rows t of an accumulator; then g = acc / max(count_t, 1)
///   with count_t the number of valid offsets of row t (0 rows stay 0), and
///   out = α ⊙ h + (1 − α) ⊙ g with α = σ(h W_g,hᵀ + g W_g,gᵀ + b_gate),
///   W_gate = [W_g,h | W_g,g] (so [h; g] is never concatenated).
struct LowerGrassmannMix : OpRewritePattern<GrassmannMixOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GrassmannMixOp op,
                                PatternRewriter &rewriter) const override {
    Value h = op.getInput();
    auto hType = cast<RankedTensorType>(h.getType());
    LinalgEmitter e(rewriter, op.getLoc(), hType.getElementType());
    unsigned rank = hType.getRank(), seq = rank - 2;
    int64_t d = hType.getShape().back();
    bool causal = op.getCausal();
    SmallVector<OpFoldResult> hShape = e.sizes(h);
    OpFoldResult zero = rewriter.getIndexAttr(0),
                 one = rewriter.getIndexAttr(1);

    // z = h W_redᵀ + b_red: [batch..., L, r].
    SmallVector<OpFoldResult> zShape = hShape;
    zShape.back() = e.sizes(op.getWRed())[0];
    Value z = e.linear(h, op.getWRed(), e.broadcastBias(op.getBRed(), zShape));

    Value len = e.dimValue(h, seq);
    Value acc = e.full(hShape, 0.0);
    SmallVector<OpFoldResult> strides(rank, one);
    for (int64_t delta : op.getOffsets()) {
      // Rows t ∈ [first, first + n) pair with t ± Δ; first = 0 looking
      // ahead, Δ looking back (clamped to L so the slices stay in bounds
      // when L < Δ and n = 0).
      Value deltaV = e.index(delta);
      Value rest = arith::SubIOp::create(rewriter, e.loc, len, deltaV);
      Value zeroV = e.index(0);
      Value n = arith::MaxSIOp::create(rewriter, e.loc, rest, zeroV);
      Value shifted = arith::MinSIOp::create(rewriter, e.loc, deltaV, len);
      OpFoldResult self = causal ? OpFoldResult(shifted) : zero;
      OpFoldResult partner = causal ? zero : OpFoldResult(shifted);
      auto slice = [&](Value t, OpFoldResult start) {
        SmallVector<OpFoldResult> offs(rank, zero), sz = e.sizes(t);
        offs[seq] = start;
        sz[seq] = n;
        return tensor::ExtractSliceOp::create(rewriter, e.loc, t, offs, sz,
                                              strides)
            .getResult();
      };
      Value p = e.plucker(slice(z, self), slice(z, partner));
      // p̂ = p / max(‖p‖, ε).
      Value norm2 = e.rowSumSquares(p);
      Value eps = e.cst(op.getEps().convertToDouble());
      unsigned pr = rank;
      Value pHat = e.generic(
          {p, norm2}, e.empty(e.sizes(p)),
          {e.map(pr, iota(0, pr)), e.map(pr, iota(0, pr - 1)),
           e.map(pr, iota(0, pr))},
          pr, {}, [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
            Value norm = math::SqrtOp::create(nb, nloc, a[1]);
            Value den = arith::MaximumFOp::create(nb, nloc, norm, eps);
            return arith::DivFOp::create(nb, nloc, a[0], den);
          });
      // g^Δ = p̂ W_pluᵀ + b_plu, added into rows [self, self + n).
      SmallVector<OpFoldResult> gShape = e.sizes(pHat);
      gShape.back() = rewriter.getIndexAttr(d);
      Value gDelta =
          e.linear(pHat, op.getWPlu(), e.broadcastBias(op.getBPlu(), gShape));
      // The sum is written into the accumulator's own rows (outs = the
      // slice), so bufferization updates them in place.
      Value rows = slice(acc, self);
      Value sum =
          linalg::AddOp::create(rewriter, e.loc, ValueRange{rows, gDelta},
                                ValueRange{rows})
              .getResult(0);
      SmallVector<OpFoldResult> offs(rank, zero), sz = e.sizes(rows);
      offs[seq] = self;
      acc = tensor::InsertSliceOp::create(rewriter, e.loc, sum, acc, offs, sz,
                                          strides);
    }

    // g_t = acc_t / max(count_t, 1): the mean over valid offsets, 0 if none.
    SmallVector<int64_t> offsets(op.getOffsets());
    AffineMap all = e.map(rank, iota(0, rank));
    Value g = e.generic(
        acc, e.empty(hShape), {all, all}, rank, {},
        [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
          LinalgEmitter s(nb, nloc, e.elt);
          Value t = linalg::IndexOp::create(nb, nloc, seq);
          Value zeroF = s.cst(0.0), oneF = s.cst(1.0);
          Value count = zeroF;
          for (int64_t delta : offsets) {
            Value valid =
                causal
                    ? arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::sge,
                                            t, s.index(delta))
                    : arith::CmpIOp::create(
                          nb, nloc, arith::CmpIPredicate::slt,
                          arith::AddIOp::create(nb, nloc, t, s.index(delta)),
                          len);
            Value hit = arith::SelectOp::create(nb, nloc, valid, oneF, zeroF);
            count = arith::AddFOp::create(nb, nloc, count, hit);
          }
          Value den = arith::MaximumFOp::create(nb, nloc, count, oneF);
          return arith::DivFOp::create(nb, nloc, a[0], den);
        });

    // α = σ(W_gate [h; g] + b_gate), split into the h and g column halves.
    auto half = [&](int64_t col) {
      return tensor::ExtractSliceOp::create(
                 rewriter, e.loc, op.getWGate(),
                 {zero, rewriter.getIndexAttr(col)},
                 {rewriter.getIndexAttr(d), rewriter.getIndexAttr(d)},
                 {one, one})
          .getResult();
    };
    Value wGateH = half(0), wGateG = half(d);
    Value pre = e.linear(h, wGateH, e.broadcastBias(op.getBGate(), hShape));
    pre = e.linear(g, wGateG, pre);
    Value out = e.generic(
        {h, g, pre}, e.empty(hShape), {all, all, all, all}, rank, {},
        [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
          LinalgEmitter s(nb, nloc, e.elt);
          Value one = s.cst(1.0);
          Value en = math::ExpOp::create(nb, nloc,
                                         arith::NegFOp::create(nb, nloc, a[2]));
          Value alpha = arith::DivFOp::create(
              nb, nloc, one, arith::AddFOp::create(nb, nloc, one, en));
          Value beta = arith::SubFOp::create(nb, nloc, one, alpha);
          Value ah = arith::MulFOp::create(nb, nloc, alpha, a[0]);
          Value bg = arith::MulFOp::create(nb, nloc, beta, a[1]);
          return arith::AddFOp::create(nb, nloc, ah, bg);
        });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// RelationalAttentionOp
//===----------------------------------------------------------------------===//

/// Lowers geo.relational_attention (docs/math.md §4):
///   q[.., h, i, :] = x_i G_QK^h, s[.., h, i, j] = scale · ⟨q_hi, x_j⟩,
///   p = softmax_j(s), u[.., h, j, :] = x_j G_VO^h,
///   out[.., i, :] = Σ_h Σ_j p[.., h, i, j] u[.., h, j, :].
/// O(H L d² + H L² d), the cost of ordinary multi-head attention.
struct LowerRelationalAttention : OpRewritePattern<RelationalAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  /// `y[.., h, i, e] = Σ_c x[.., i, c] G[h, c, e]`: x through each head's
  /// d×d form.
  static Value perHead(LinalgEmitter &e, Value x, Value form, unsigned nb) {
    SmallVector<OpFoldResult> shape = e.sizes(x);
    shape.insert(shape.begin() + nb, e.sizes(form)[0]);
    unsigned h = nb, i = nb + 1, o = nb + 2, c = nb + 3, n = nb + 4;
    SmallVector<unsigned> bL = iota(0, nb);
    return e.generic({x, form}, e.full(shape, 0.0),
                     {e.map(n, cat(bL, {i, c})), e.map(n, {h, c, o}),
                      e.map(n, cat(bL, {h, i, o}))},
                     n, {c},
                     [](OpBuilder &b, Location loc, ValueRange a) -> Value {
                       Value p = arith::MulFOp::create(b, loc, a[0], a[1]);
                       return arith::AddFOp::create(b, loc, a[2], p);
                     });
  }

  LogicalResult matchAndRewrite(RelationalAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getInput();
    auto xType = cast<RankedTensorType>(x.getType());
    LinalgEmitter e(rewriter, op.getLoc(), xType.getElementType());
    unsigned nb = xType.getRank() - 2;
    SmallVector<unsigned> bL = iota(0, nb);
    SmallVector<OpFoldResult> xShape = e.sizes(x);
    OpFoldResult len = xShape[nb];

    // Scores s[.., h, i, j] = Σ_e q[.., h, i, e] x[.., j, e].
    Value q = perHead(e, x, op.getGQk(), nb);
    SmallVector<OpFoldResult> sShape(xShape.begin(), xShape.begin() + nb);
    sShape.append({e.sizes(op.getGQk())[0], len, len});
    unsigned h = nb, i = nb + 1, j = nb + 2, c = nb + 3, n = nb + 4;
    auto mulAdd = [](OpBuilder &b, Location loc, ValueRange a) -> Value {
      Value p = arith::MulFOp::create(b, loc, a[0], a[1]);
      return arith::AddFOp::create(b, loc, a[2], p);
    };
    Value scores =
        e.generic({q, x}, e.full(sShape, 0.0),
                  {e.map(n, cat(bL, {h, i, c})), e.map(n, cat(bL, {j, c})),
                   e.map(n, cat(bL, {h, i, j}))},
                  n, {c}, mulAdd);
    Value probs =
        e.softmax(scores, op.getScale().convertToDouble(), op.getCausal());

    // out[.., i, c] = Σ_h Σ_j p[.., h, i, j] u[.., h, j, c]
    // (loops: batch..., i, c, h, j).
    Value u = perHead(e, x, op.getGVo(), nb);
    unsigned oi = nb, oc = nb + 1, oh = nb + 2, oj = nb + 3;
    Value out = e.generic({probs, u}, e.full(xShape, 0.0),
                          {e.map(n, cat(bL, {oh, oi, oj})),
                           e.map(n, cat(bL, {oh, oj, oc})),
                           e.map(n, cat(bL, {oi, oc}))},
                          n, {oh, oj}, mulAdd);
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// RelationalNormOp
//===----------------------------------------------------------------------===//

/// Lowers geo.relational_norm: ss = Σ_k x_k² per row, then
/// out = x / sqrt(ss / d + eps), with no gain and no centering.
struct LowerRelationalNorm : OpRewritePattern<RelationalNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RelationalNormOp op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getInput();
    auto xType = cast<RankedTensorType>(x.getType());
    LinalgEmitter e(rewriter, op.getLoc(), xType.getElementType());
    unsigned rank = xType.getRank();
    Value ss = e.rowSumSquares(x);
    Value d = e.dimAsFloat(x, rank - 1);
    Value eps = e.cst(op.getEps().convertToDouble());
    AffineMap all = e.map(rank, iota(0, rank));
    Value out =
        e.generic({x, ss}, e.empty(e.sizes(x)),
                  {all, e.map(rank, iota(0, rank - 1)), all}, rank, {},
                  [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
                    Value mean = arith::DivFOp::create(b, loc, a[1], d);
                    Value rms = math::SqrtOp::create(
                        b, loc, arith::AddFOp::create(b, loc, mean, eps));
                    return arith::DivFOp::create(b, loc, a[0], rms);
                  });
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

/// Rewrites every geo op; geo is illegal afterwards, everything else
/// (including the lie ops the lowering emits) is left alone.
struct ConvertGeoToLinalg
    : torsor::impl::ConvertGeoToLinalgBase<ConvertGeoToLinalg> {
  void runOnOperation() override {
    ConversionTarget target(getContext());
    target.addIllegalDialect<GeoDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    populateGeoToLinalgConversionPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void torsor::populateGeoToLinalgConversionPatterns(
    RewritePatternSet &patterns) {
  patterns
      .add<LowerLieAttention, LowerLieCrossAttention, LowerPlucker,
           LowerGrassmannMix, LowerRelationalAttention, LowerRelationalNorm>(
          patterns.getContext());
}
