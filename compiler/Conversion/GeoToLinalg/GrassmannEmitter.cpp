//===- GrassmannEmitter.cpp - The fused form of geo.grassmann_mix ---------===//
//
// The forward of FuseGrassmann.cpp's header, step by step; see there for
// the identities (Lagrange, bilinearity) and the f64 pair scalars.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GeoToLinalg/GrassmannEmitter.h"

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using namespace torsor::geotolinalg;

Value torsor::geotolinalg::convertFloat(OpBuilder &b, Location loc, Value v,
                                        Type to) {
  if (v.getType() == to)
    return v;
  if (to.getIntOrFloatBitWidth() > v.getType().getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

SmallVector<Value> torsor::geotolinalg::genericN(
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

GrassmannEmitter::GrassmannEmitter(OpBuilder &b, GrassmannMixOp op)
    : op(op),
      e(b, op.getLoc(),
        cast<RankedTensorType>(op.getInput().getType()).getElementType()),
      wide(b, op.getLoc(), b.getF64Type()) {
  auto hType = cast<RankedTensorType>(op.getInput().getType());
  r = cast<RankedTensorType>(op.getWRed().getType()).getShape()[0];
  rank = hType.getRank();
  nb = rank - 2;
  d = hType.getShape().back();
  causal = op.getCausal();
  offsets.assign(op.getOffsets().begin(), op.getOffsets().end());
  m = offsets.size();
  eps = op.getEps().convertToDouble();
  hShape = e.sizes(op.getInput());
  batchLen.assign(hShape.begin(), hShape.end() - 1);
  zShape = catSizes(batchLen, {b.getIndexAttr(r)});
  pairShape = catSizes(batchLen, {b.getIndexAttr(m)});
}

std::pair<Value, Value> GrassmannEmitter::partner(OpBuilder &b, Location l,
                                                  Value t, Value delta,
                                                  bool reverse) const {
  bool back = causal != reverse;
  Value zero = arith::ConstantIndexOp::create(b, l, 0);
  Value one = arith::ConstantIndexOp::create(b, l, 1);
  Value p = back ? arith::SubIOp::create(b, l, t, delta).getResult()
                 : arith::AddIOp::create(b, l, t, delta).getResult();
  Value valid =
      back ? arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, t, delta)
                 .getResult()
           : arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, p, len)
                 .getResult();
  Value last = arith::SubIOp::create(b, l, len, one);
  Value clamped =
      arith::MaxSIOp::create(b, l, arith::MinSIOp::create(b, l, p, last), zero);
  return {clamped, valid};
}

Value GrassmannEmitter::at(OpBuilder &b, Location l, Value x, ValueRange rowCol,
                           Type to) const {
  SmallVector<Value> idx;
  for (unsigned i = 0; i < nb; ++i)
    idx.push_back(linalg::IndexOp::create(b, l, i));
  idx.append(rowCol.begin(), rowCol.end());
  Value v = tensor::ExtractOp::create(b, l, x, idx);
  return to ? convertFloat(b, l, v, to) : v;
}

Value GrassmannEmitter::validCount(OpBuilder &b, Location l, Value t,
                                   Type type) const {
  LinalgEmitter s(b, l, type);
  Value zeroF = s.cst(0.0), oneF = s.cst(1.0);
  Value count = zeroF;
  for (int64_t delta : offsets) {
    Value valid = partner(b, l, t, s.index(delta)).second;
    count = arith::AddFOp::create(
        b, l, count, arith::SelectOp::create(b, l, valid, oneF, zeroF));
  }
  return count;
}

GrassmannMixValues GrassmannEmitter::forward() {
  GrassmannMixValues v;
  OpBuilder &rewriter = e.b;
  Location loc = e.loc;
  Value h = op.getInput();
  Type f64 = wide.elt;
  unsigned seq = nb;
  SmallVector<unsigned> bL = iota(0, nb);
  auto par = utils::IteratorType::parallel;

  // z = h W_redᵀ + b_red: [batch..., L, r].
  v.z = e.linear(h, op.getWRed(), e.broadcastBias(op.getBRed(), zShape));
  Value z = v.z;
  len = e.dimValue(h, seq);

  // The offsets as a constant index table, one entry per loop i.
  SmallVector<Attribute> offAttrs;
  for (int64_t delta : offsets)
    offAttrs.push_back(rewriter.getIndexAttr(delta));
  offTable = arith::ConstantOp::create(
      rewriter, loc,
      DenseElementsAttr::get(
          RankedTensorType::get({m}, rewriter.getIndexType()), offAttrs));

  // n2_t = ‖z_t‖² in f64.
  unsigned n = nb + 2; // loops (batch..., t, a) or (batch..., t, i)
  v.n2 = wide.generic(
      z, wide.full(batchLen, 0.0),
      {e.map(n, cat(bL, {nb, nb + 1})), e.map(n, cat(bL, {nb}))}, n, {nb + 1},
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value x = convertFloat(b, l, a[0], f64);
        return arith::AddFOp::create(b, l, a[1],
                                     arith::MulFOp::create(b, l, x, x));
      });
  Value n2 = v.n2;

  // dot[t, i] = z_t · z_{partner(t, Δ_i)}: loops (batch..., t, i, a).
  unsigned tL = nb, iL = nb + 1, aL = nb + 2;
  v.dot = wide.generic(
      {z, offTable}, wide.full(pairShape, 0.0),
      {e.map(n + 1, cat(bL, {tL, aL})), e.map(n + 1, {iL}),
       e.map(n + 1, cat(bL, {tL, iL}))},
      n + 1, {aL}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value t = linalg::IndexOp::create(b, l, tL);
        Value col = linalg::IndexOp::create(b, l, aL);
        Value zp = at(b, l, z, {partner(b, l, t, a[1]).first, col}, f64);
        Value zt = convertFloat(b, l, a[0], f64);
        return arith::AddFOp::create(b, l, a[2],
                                     arith::MulFOp::create(b, l, zt, zp));
      });

  // Per pair: c = 1 / max(‖p‖, ε) (Lagrange: ‖p‖² = n2_t n2_p − dot²),
  // s = dot / n2_t; cv = c and cu = c s for valid pairs, 0 otherwise.
  SmallVector<Value> coefs = genericN(
      rewriter, loc, {v.dot, n2, offTable},
      {wide.empty(pairShape), wide.empty(pairShape)},
      {e.map(n, cat(bL, {tL, iL})), e.map(n, cat(bL, {tL})), e.map(n, {iL}),
       e.map(n, cat(bL, {tL, iL})), e.map(n, cat(bL, {tL, iL}))},
      SmallVector<utils::IteratorType>(n, par),
      [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
        LinalgEmitter s(b, l, f64);
        Value t = linalg::IndexOp::create(b, l, tL);
        auto [p, valid] = partner(b, l, t, a[2]);
        Value n2p = at(b, l, n2, {p});
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
  v.cv = coefs[0];
  v.cu = coefs[1];

  // w_t = Σ_i cv_ti z_{partner} − cu_ti z_t (f64), then in the model's
  // type: loops (batch..., t, j, i).
  unsigned jL = nb + 1, kL = nb + 2;
  v.w64 = wide.generic(
      {v.cv, v.cu, z, offTable}, wide.full(zShape, 0.0),
      {e.map(n + 1, cat(bL, {tL, kL})), e.map(n + 1, cat(bL, {tL, kL})),
       e.map(n + 1, cat(bL, {tL, jL})), e.map(n + 1, {kL}),
       e.map(n + 1, cat(bL, {tL, jL}))},
      n + 1, {kL}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value t = linalg::IndexOp::create(b, l, tL);
        Value col = linalg::IndexOp::create(b, l, jL);
        Value zp = at(b, l, z, {partner(b, l, t, a[3]).first, col}, f64);
        Value zt = convertFloat(b, l, a[2], f64);
        Value add = arith::MulFOp::create(b, l, a[0], zp);
        Value sub = arith::MulFOp::create(b, l, a[1], zt);
        return arith::AddFOp::create(b, l, a[4],
                                     arith::SubFOp::create(b, l, add, sub));
      });
  AffineMap all = e.map(rank, iota(0, rank));
  v.w = v.w64;
  if (f64 != e.elt)
    v.w = e.generic(v.w64, e.empty(zShape), {all, all}, rank, {},
                    [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                      return convertFloat(b, l, a[0], e.elt);
                    });

  // q_t = z_t ∧ w_t and the offsets' sum W_plü q_t: [batch..., L, d].
  v.q = e.plucker(z, v.w);
  v.gSum = e.linear(v.q, op.getWPlu(), e.full(hShape, 0.0));

  // g_t = gSum_t / count_t + b_plu, 0 where no offset is valid.
  v.g =
      e.generic({v.gSum, op.getBPlu()}, e.empty(hShape),
                {all, e.map(rank, {rank - 1}), all}, rank, {},
                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                  LinalgEmitter s(b, l, e.elt);
                  Value t = linalg::IndexOp::create(b, l, seq);
                  Value zeroF = s.cst(0.0), oneF = s.cst(1.0);
                  Value count = validCount(b, l, t, e.elt);
                  Value any = arith::CmpFOp::create(
                      b, l, arith::CmpFPredicate::OGT, count, zeroF);
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
  v.preH = e.linear(h, gateHalf(0), e.broadcastBias(op.getBGate(), hShape));
  v.preG = e.linear(v.g, gateHalf(d), e.full(hShape, 0.0));
  v.out = e.generic(
      {h, v.g, v.preH, v.preG}, e.empty(hShape), {all, all, all, all, all},
      rank, {}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        LinalgEmitter s(b, l, e.elt);
        Value oneF = s.cst(1.0);
        Value pre = arith::AddFOp::create(b, l, a[2], a[3]);
        Value en = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, pre));
        Value alpha = arith::DivFOp::create(
            b, l, oneF, arith::AddFOp::create(b, l, oneF, en));
        Value beta = arith::SubFOp::create(b, l, oneF, alpha);
        return arith::AddFOp::create(b, l,
                                     arith::MulFOp::create(b, l, alpha, a[0]),
                                     arith::MulFOp::create(b, l, beta, a[1]));
      });
  return v;
}

Value GrassmannEmitter::gateHalf(int64_t col) {
  OpBuilder &b = e.b;
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  return tensor::ExtractSliceOp::create(
             b, e.loc, op.getWGate(), {zero, b.getIndexAttr(col)},
             {b.getIndexAttr(d), b.getIndexAttr(d)}, {one, one})
      .getResult();
}
