//===- FuseGrassmann.cpp - Fused lowering of geo.grassmann_mix ------------===//
//
// geo-fuse-grassmann: geo.grassmann_mix without the L × |offsets| × C(r,2)
// Plücker tensor (MATH.md §3), for -O1 and above; -O0 keeps the unfused
// oracle of convert-geo-to-linalg.
//
// Two identities do the work. Lagrange: ‖u ∧ v‖² = ‖u‖²‖v‖² − (u·v)², so
// the normaliser of p_t^Δ = z_t ∧ z_{t∓Δ} needs three dot products, not
// C(r,2) coordinates. Bilinearity: W_plü (u ∧ v) = B(u) v with B(u) linear
// in v, so the offsets' normalised terms of token t share B(z_t), and
// since B(z_t) is linear their sum is one product:
//
//   Σ_Δ W_plü (z_t ∧ z_Δ) / n_Δ = B(z_t) Σ_Δ z_Δ / n_Δ = W_plü (z_t ∧ w_t),
//   w_t = Σ_Δ c_Δ z_Δ,  c_Δ = 1 / max(‖z_t ∧ z_Δ‖, ε)   (valid Δ only).
//
// So B(z_t) is applied once per token, through the C(r,2)-wide
// contraction q W_plüᵀ with q_t = z_t ∧ w_t: O(L(d r² / 2 + |offsets| r)).
//
// Near-parallel pairs (‖z_t ∧ z_Δ‖ < ε) get c_Δ = 1/ε: summed into w_t as
// is, the component of z_Δ along z_t would be amplified by 1/ε and cancel
// in z_t ∧ w_t only up to rounding. Each z_Δ is therefore projected off
// z_t first (z_t ∧ z_Δ = z_t ∧ (z_Δ − s z_t), s = z_t·z_Δ / ‖z_t‖²), and
// the per-pair scalars and w_t are computed in f64, which costs
// O(L |offsets| r) and leaves the C(r,2)- and d-wide work in the model's
// type. The tensors are z, w [L, r], the pair scalars [L, |offsets|],
// q [L, C(r,2)] and the [L, d] rows of g and the gate. Every step is a
// linalg op parallel over tokens (threads), and the three contractions
// are plain linear layers for torsor-tile-dense.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GeoToLinalg/LinalgEmitter.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/Geo/IR/GeoOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace torsor {
#define GEN_PASS_DEF_GEOFUSEGRASSMANN
#include "compiler/Conversion/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using namespace torsor::geotolinalg;

namespace {

/// Element-type conversions between the model's type and f64.
Value convert(OpBuilder &b, Location loc, Value v, Type to) {
  if (v.getType() == to)
    return v;
  if (to.getIntOrFloatBitWidth() > v.getType().getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

/// A linalg.generic with several outputs (LinalgEmitter's has one).
SmallVector<Value> genericN(
    OpBuilder &b, Location loc, ValueRange inputs, ValueRange inits,
    ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iters,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body) {
  auto op = linalg::GenericOp::create(
      b, loc, ValueRange(inits).getTypes(), inputs, inits, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
      });
  return SmallVector<Value>(op.getResults());
}

struct FuseGrassmannMix : OpRewritePattern<GrassmannMixOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GrassmannMixOp op,
                                PatternRewriter &rewriter) const override {
    Value h = op.getInput();
    auto hType = cast<RankedTensorType>(h.getType());
    int64_t r = cast<RankedTensorType>(op.getWRed().getType()).getShape()[0];
    if (ShapedType::isDynamic(r))
      return rewriter.notifyMatchFailure(op, "reduced dim r must be static");
    Location loc = op.getLoc();
    LinalgEmitter e(rewriter, loc, hType.getElementType());
    Type wide = rewriter.getF64Type();
    LinalgEmitter w(rewriter, loc, wide);
    unsigned rank = hType.getRank(), nb = rank - 2, seq = nb;
    int64_t d = hType.getShape().back();
    bool causal = op.getCausal();
    ArrayRef<int64_t> offsets = op.getOffsets();
    int64_t m = offsets.size();
    double eps = op.getEps().convertToDouble();
    SmallVector<OpFoldResult> hShape = e.sizes(h);
    SmallVector<OpFoldResult> batchLen(hShape.begin(), hShape.end() - 1);
    SmallVector<unsigned> bL = iota(0, nb);
    auto par = utils::IteratorType::parallel;

    // z = h W_redᵀ + b_red: [batch..., L, r].
    SmallVector<OpFoldResult> zShape =
        catSizes(batchLen, {e.b.getIndexAttr(r)});
    Value z = e.linear(h, op.getWRed(), e.broadcastBias(op.getBRed(), zShape));
    Value len = e.dimValue(h, seq);

    // The offsets as a constant index table, one entry per loop i.
    SmallVector<Attribute> offAttrs;
    for (int64_t delta : offsets)
      offAttrs.push_back(rewriter.getIndexAttr(delta));
    Value offTable = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(
            RankedTensorType::get({m}, rewriter.getIndexType()), offAttrs));

    // Partner row of row t for offset delta, clamped into [0, L) so that
    // reads stay in bounds, and whether it is really inside.
    auto partner = [&](OpBuilder &b, Location l, Value t,
                       Value delta) -> std::pair<Value, Value> {
      Value zero = arith::ConstantIndexOp::create(b, l, 0);
      Value one = arith::ConstantIndexOp::create(b, l, 1);
      Value p = causal ? arith::SubIOp::create(b, l, t, delta).getResult()
                       : arith::AddIOp::create(b, l, t, delta).getResult();
      Value valid =
          causal
              ? arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, t, delta)
                    .getResult()
              : arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, p, len)
                    .getResult();
      Value last = arith::SubIOp::create(b, l, len, one);
      Value clamped = arith::MaxSIOp::create(
          b, l, arith::MinSIOp::create(b, l, p, last), zero);
      return {clamped, valid};
    };
    // z[batch..., row, col] read from inside a generic, widened to f64.
    auto zAt = [&](OpBuilder &b, Location l, Value row, Value col) {
      SmallVector<Value> idx;
      for (unsigned i = 0; i < nb; ++i)
        idx.push_back(linalg::IndexOp::create(b, l, i));
      idx.push_back(row);
      idx.push_back(col);
      return convert(b, l, tensor::ExtractOp::create(b, l, z, idx), wide);
    };

    // n2_t = ‖z_t‖² in f64.
    unsigned n = nb + 2; // loops (batch..., t, a) or (batch..., t, i)
    Value n2 = w.generic(
        z, w.full(batchLen, 0.0),
        {e.map(n, cat(bL, {nb, nb + 1})), e.map(n, cat(bL, {nb}))}, n, {nb + 1},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value x = convert(b, l, a[0], wide);
          return arith::AddFOp::create(b, l, a[1],
                                       arith::MulFOp::create(b, l, x, x));
        });

    // dot[t, i] = z_t · z_{partner(t, Δ_i)}: loops (batch..., t, i, a).
    SmallVector<OpFoldResult> pairShape =
        catSizes(batchLen, {e.b.getIndexAttr(m)});
    unsigned tL = nb, iL = nb + 1, aL = nb + 2;
    Value dot = w.generic(
        {z, offTable}, w.full(pairShape, 0.0),
        {e.map(n + 1, cat(bL, {tL, aL})), e.map(n + 1, {iL}),
         e.map(n + 1, cat(bL, {tL, iL}))},
        n + 1, {aL}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value t = linalg::IndexOp::create(b, l, tL);
          Value col = linalg::IndexOp::create(b, l, aL);
          Value zp = zAt(b, l, partner(b, l, t, a[1]).first, col);
          Value zt = convert(b, l, a[0], wide);
          return arith::AddFOp::create(b, l, a[2],
                                       arith::MulFOp::create(b, l, zt, zp));
        });

    // Per pair: c = 1 / max(‖p‖, ε) (Lagrange: ‖p‖² = n2_t n2_p − dot²),
    // s = dot / n2_t; cv = c and cu = c s for valid pairs, 0 otherwise.
    SmallVector<Value> coefs = genericN(
        rewriter, loc, {dot, n2, offTable},
        {w.empty(pairShape), w.empty(pairShape)},
        {e.map(n, cat(bL, {tL, iL})), e.map(n, cat(bL, {tL})), e.map(n, {iL}),
         e.map(n, cat(bL, {tL, iL})), e.map(n, cat(bL, {tL, iL}))},
        SmallVector<utils::IteratorType>(n, par),
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          LinalgEmitter s(b, l, wide);
          Value t = linalg::IndexOp::create(b, l, tL);
          auto [p, valid] = partner(b, l, t, a[2]);
          SmallVector<Value> idx;
          for (unsigned i = 0; i < nb; ++i)
            idx.push_back(linalg::IndexOp::create(b, l, i));
          idx.push_back(p);
          Value n2p = tensor::ExtractOp::create(b, l, n2, idx);
          Value dt = a[0], n2t = a[1], zero = s.cst(0.0);
          Value prod = arith::MulFOp::create(b, l, n2t, n2p);
          Value p2 = arith::SubFOp::create(b, l, prod,
                                           arith::MulFOp::create(b, l, dt, dt));
          // Rounding may leave a tiny negative for parallel pairs.
          p2 = arith::MaximumFOp::create(b, l, p2, zero);
          Value norm = math::SqrtOp::create(b, l, p2);
          Value c = arith::DivFOp::create(
              b, l, s.cst(1.0),
              arith::MaximumFOp::create(b, l, norm, s.cst(eps)));
          // z_t = 0: nothing to project off (and dot = 0).
          Value nonzero =
              arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, n2t, zero);
          Value safe = arith::SelectOp::create(b, l, nonzero, n2t, s.cst(1.0));
          Value sc = arith::DivFOp::create(b, l, dt, safe);
          Value cv = arith::SelectOp::create(b, l, valid, c, zero);
          Value cu = arith::SelectOp::create(
              b, l, valid, arith::MulFOp::create(b, l, c, sc), zero);
          return {cv, cu};
        });

    // w_t = Σ_i cv_ti z_{partner} − cu_ti z_t (f64), then in the model's
    // type: loops (batch..., t, j, i).
    unsigned jL = nb + 1, kL = nb + 2;
    Value wt = w.generic(
        {coefs[0], coefs[1], z, offTable}, w.full(zShape, 0.0),
        {e.map(n + 1, cat(bL, {tL, kL})), e.map(n + 1, cat(bL, {tL, kL})),
         e.map(n + 1, cat(bL, {tL, jL})), e.map(n + 1, {kL}),
         e.map(n + 1, cat(bL, {tL, jL}))},
        n + 1, {kL}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value t = linalg::IndexOp::create(b, l, tL);
          Value col = linalg::IndexOp::create(b, l, jL);
          Value zp = zAt(b, l, partner(b, l, t, a[3]).first, col);
          Value zt = convert(b, l, a[2], wide);
          Value add = arith::MulFOp::create(b, l, a[0], zp);
          Value sub = arith::MulFOp::create(b, l, a[1], zt);
          return arith::AddFOp::create(b, l, a[4],
                                       arith::SubFOp::create(b, l, add, sub));
        });
    AffineMap all = e.map(rank, iota(0, rank));
    if (wide != e.elt)
      wt = e.generic(wt, e.empty(zShape), {all, all}, rank, {},
                     [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                       return convert(b, l, a[0], e.elt);
                     });

    // q_t = z_t ∧ w_t and the offsets' sum W_plü q_t: [batch..., L, d].
    Value q = e.plucker(z, wt);
    Value gSum = e.linear(q, op.getWPlu(), e.full(hShape, 0.0));

    // g_t = gSum_t / count_t + b_plu, 0 where no offset is valid.
    Value bPlu = op.getBPlu();
    Value g = e.generic(
        {gSum, bPlu}, e.empty(hShape), {all, e.map(rank, {rank - 1}), all},
        rank, {}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          LinalgEmitter s(b, l, e.elt);
          Value t = linalg::IndexOp::create(b, l, seq);
          Value zeroF = s.cst(0.0), oneF = s.cst(1.0);
          Value count = zeroF;
          for (int64_t delta : offsets) {
            Value valid = partner(b, l, t, s.index(delta)).second;
            count = arith::AddFOp::create(
                b, l, count, arith::SelectOp::create(b, l, valid, oneF, zeroF));
          }
          Value any = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                            count, zeroF);
          Value mean = arith::DivFOp::create(
              b, l, a[0], arith::MaximumFOp::create(b, l, count, oneF));
          Value gv = arith::AddFOp::create(b, l, mean, a[1]);
          return arith::SelectOp::create(b, l, any, gv, zeroF);
        });

    // α = σ(W_gate [h; g] + b_gate), out = α h + (1 − α) g, as in the
    // oracle. The two halves of W_gate are two linear layers, each with a
    // fill or bias init, summed in the gate's generic: torsor-tile-dense
    // then fuses that generic into one of their tasks as its epilogue (a
    // layer accumulating onto the other's result would not be fusable).
    OpFoldResult zero = rewriter.getIndexAttr(0),
                 one = rewriter.getIndexAttr(1);
    auto half = [&](int64_t col) {
      return tensor::ExtractSliceOp::create(
                 rewriter, loc, op.getWGate(),
                 {zero, rewriter.getIndexAttr(col)},
                 {rewriter.getIndexAttr(d), rewriter.getIndexAttr(d)},
                 {one, one})
          .getResult();
    };
    Value preH = e.linear(h, half(0), e.broadcastBias(op.getBGate(), hShape));
    Value preG = e.linear(g, half(d), e.full(hShape, 0.0));
    Value out = e.generic(
        {h, g, preH, preG}, e.empty(hShape), {all, all, all, all, all}, rank,
        {}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          LinalgEmitter s(b, l, e.elt);
          Value oneF = s.cst(1.0);
          Value pre = arith::AddFOp::create(b, l, a[2], a[3]);
          Value en =
              math::ExpOp::create(b, l, arith::NegFOp::create(b, l, pre));
          Value alpha = arith::DivFOp::create(
              b, l, oneF, arith::AddFOp::create(b, l, oneF, en));
          Value beta = arith::SubFOp::create(b, l, oneF, alpha);
          return arith::AddFOp::create(b, l,
                                       arith::MulFOp::create(b, l, alpha, a[0]),
                                       arith::MulFOp::create(b, l, beta, a[1]));
        });
    rewriter.replaceOp(op, e.castTo(out, op.getType()));
    return success();
  }
};

/// Rewrites every geo.grassmann_mix; other geo ops are left for
/// convert-geo-to-linalg.
struct GeoFuseGrassmann : torsor::impl::GeoFuseGrassmannBase<GeoFuseGrassmann> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGrassmannMix>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
