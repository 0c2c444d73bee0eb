//===- GrassmannGrad.cpp - The VJP of geo.grassmann_mix -------------------===//
//
// The backward of geo.grassmann_mix on the bilinear form, after the fused
// forward (GrassmannEmitter) recomputed: no L × |offsets| × C(r,2) tensor,
// O(L(d C(r,2) + d² + |offsets| r + r²)) work, O(L(d + C(r,2) + |offsets|
// + r)) memory. Per token t (batch dims are carried along):
//
//   gate    α = σ(pre), h̄ = α ȳ + W_hᵀ p̄re, ḡ = (1 − α) ȳ + W_gᵀ p̄re,
//           p̄re = ȳ (h − g) α (1 − α); W̄_gate = [p̄reᵀ h, p̄reᵀ g]
//   mean    ḡ masked to tokens with a valid offset, ḡSum = ḡ / count;
//           b̄_plu = Σ_t ḡ, W̄_plu = ḡSumᵀ q (q_t = z_t ∧ w_t: the offsets
//           summed before the contraction, so the weight gradient needs no
//           per-offset Plücker vector), q̄ = ḡSum W_plu   [L, C(r,2)]
//   wedge   ⟨q̄, z ∧ v⟩ = zᵀ P̄ v with P̄ the antisymmetric r×r matrix of
//           q̄ (P̄_ab = q̄_ab for a < b): z̄_t += P̄ v_t, v̄_t = −P̄ z_t,
//           where v_t = Σ_Δ c_Δ z_Δ = w_t + (Σ_Δ c_Δ s_Δ) z_t (w_t is the
//           forward's projected sum; z_t ∧ z_t = 0). P̄ is read out of q̄
//           with an index and a sign table, never formed.
//   pairs   v_t = Σ_Δ c_Δ z_Δ: z̄_Δ += c_Δ v̄_t and c̄_Δ = v̄_t·z_Δ
//           (= −P̄z_t·(z_Δ − s_Δ z_t): the projection removes the rounding
//           of z_tᵀP̄z_t, exactly 0). c = 1/‖p‖ above eps (constant 1/eps
//           below), ‖p‖² = ‖z_t‖²‖z_Δ‖² − (z_t·z_Δ)² (Lagrange), so with
//           N̄ = −c̄ c³ / 2: z̄_t += 2N̄‖z_Δ‖² z_t − 2N̄ dot z_Δ and
//           z̄_Δ += 2N̄‖z_t‖² z_Δ − 2N̄ dot z_t. The pair scalars [L, m]
//           are f64, as in the forward.
//   reduce  z̄ collects its own pairs' terms and, as a gather, those of the
//           tokens that take it as their partner (t ± Δ the other way);
//           h̄ += z̄ W_red, W̄_red = z̄ᵀ h, b̄_red = Σ z̄.
//
// Every step is a linalg op parallel over tokens or a contraction over
// them (tokens and batch flattened into one row dim, so torsor-tile-dense
// tiles the weight gradients as matmuls).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GeoToLinalg/GeoToLinalg.h"
#include "compiler/Conversion/GeoToLinalg/GrassmannEmitter.h"

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using namespace torsor::geotolinalg;

namespace {

/// A 2-D `x` transposed (weights only: small).
Value transposed(LinalgEmitter &e, Value x) {
  SmallVector<OpFoldResult> sizes = e.sizes(x);
  std::swap(sizes[0], sizes[1]);
  return linalg::TransposeOp::create(e.b, e.loc, x, e.empty(sizes),
                                     ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

/// `x` [rows..., k] as [N, k] (rows flattened; itself when 2-D).
Value flattenRows(LinalgEmitter &e, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() == 2)
    return x;
  ReassociationIndices rows =
      llvm::to_vector_of<int64_t>(llvm::seq<int64_t>(0, type.getRank() - 1));
  return tensor::CollapseShapeOp::create(
      e.b, e.loc, x,
      ArrayRef<ReassociationIndices>{rows, {type.getRank() - 1}});
}

/// Σ_rows x[row, i] y[row, j]: [i, j], a contraction over every row.
Value rowsProduct(LinalgEmitter &e, Value x, Value y) {
  x = flattenRows(e, x);
  y = flattenRows(e, y);
  SmallVector<OpFoldResult> shape = {e.sizes(x)[1], e.sizes(y)[1]};
  // loops (i, j, n)
  return e.generic({x, y}, e.full(shape, 0.0),
                   {e.map(3, {2, 0}), e.map(3, {2, 1}), e.map(3, {0, 1})}, 3,
                   {2}, [](OpBuilder &b, Location l, ValueRange a) -> Value {
                     Value p = arith::MulFOp::create(b, l, a[0], a[1]);
                     return arith::AddFOp::create(b, l, a[2], p);
                   });
}

/// Σ_rows x[row, i]: [i].
Value rowsSum(LinalgEmitter &e, Value x) {
  unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
  return e.generic(x, e.full({e.sizes(x).back()}, 0.0),
                   {e.map(rank, iota(0, rank)), e.map(rank, {rank - 1})}, rank,
                   iota(0, rank - 1),
                   [](OpBuilder &b, Location l, ValueRange a) -> Value {
                     return arith::AddFOp::create(b, l, a[1], a[0]);
                   });
}

} // namespace

FailureOr<SmallVector<Value>>
torsor::buildGrassmannMixVJP(OpBuilder &builder, Operation *raw, Value cot) {
  auto op = cast<GrassmannMixOp>(raw);
  if (!GrassmannEmitter::supports(op))
    return op.emitOpError("needs a static reduced dim r for its gradient");
  GrassmannEmitter ge(builder, op);
  GrassmannMixValues f = ge.forward();
  LinalgEmitter &e = ge.e, &wide = ge.wide;
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Type elt = e.elt, f64 = wide.elt;
  Value h = op.getInput();
  auto hType = cast<RankedTensorType>(h.getType());
  if (cot.getType() != hType)
    cot = tensor::CastOp::create(b, loc, hType, cot);
  unsigned rank = ge.rank, nb = ge.nb, seq = nb;
  int64_t r = ge.r;
  SmallVector<unsigned> bL = iota(0, nb);
  AffineMap all = e.map(rank, iota(0, rank));
  auto parallel = [](unsigned n) {
    return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
  };
  auto add = [](OpBuilder &nb, Location l, Value x, Value y) -> Value {
    return arith::AddFOp::create(nb, l, x, y);
  };
  auto mul = [](OpBuilder &nb, Location l, Value x, Value y) -> Value {
    return arith::MulFOp::create(nb, l, x, y);
  };

  // Gate: h̄ = α ȳ, ḡ = (1 − α) ȳ, p̄re = ȳ (h − g) α (1 − α).
  SmallVector<Value> gate = genericN(
      b, loc, {h, f.g, f.preH, f.preG, cot},
      {e.empty(ge.hShape), e.empty(ge.hShape), e.empty(ge.hShape)},
      SmallVector<AffineMap>(8, all), parallel(rank),
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        LinalgEmitter s(nb, l, elt);
        Value oneF = s.cst(1.0);
        Value pre = add(nb, l, a[2], a[3]);
        Value en =
            math::ExpOp::create(nb, l, arith::NegFOp::create(nb, l, pre));
        Value alpha = arith::DivFOp::create(nb, l, oneF, add(nb, l, oneF, en));
        Value beta = arith::SubFOp::create(nb, l, oneF, alpha);
        Value diff = arith::SubFOp::create(nb, l, a[0], a[1]);
        Value dPre =
            mul(nb, l, mul(nb, l, a[4], diff), mul(nb, l, alpha, beta));
        return {mul(nb, l, alpha, a[4]), mul(nb, l, beta, a[4]), dPre};
      });
  Value hBarGate = gate[0], gBarGate = gate[1], preBar = gate[2];
  Value wgH = ge.gateHalf(0), wgG = ge.gateHalf(ge.d);
  Value hFromPre = e.linear(preBar, transposed(e, wgH), e.full(ge.hShape, 0.0));
  Value gFromPre = e.linear(preBar, transposed(e, wgG), e.full(ge.hShape, 0.0));
  Value bGateBar = rowsSum(e, preBar);
  Value wGateBar = e.empty({b.getIndexAttr(ge.d), b.getIndexAttr(2 * ge.d)});
  OpFoldResult zeroI = b.getIndexAttr(0), oneI = b.getIndexAttr(1),
               dI = b.getIndexAttr(ge.d);
  for (auto [col, x] : {std::pair<int64_t, Value>{0, h}, {ge.d, f.g}})
    wGateBar = tensor::InsertSliceOp::create(
        b, loc, rowsProduct(e, preBar, x), wGateBar,
        ArrayRef<OpFoldResult>{zeroI, b.getIndexAttr(col)},
        ArrayRef<OpFoldResult>{dI, dI}, ArrayRef<OpFoldResult>{oneI, oneI});

  // Mean: ḡ on tokens with a valid offset (b̄_plu), ḡSum = ḡ / count.
  SmallVector<Value> mean = genericN(
      b, loc, {gBarGate, gFromPre}, {e.empty(ge.hShape), e.empty(ge.hShape)},
      SmallVector<AffineMap>(4, all), parallel(rank),
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        LinalgEmitter s(nb, l, elt);
        Value zeroF = s.cst(0.0), oneF = s.cst(1.0);
        Value t = linalg::IndexOp::create(nb, l, seq);
        Value count = ge.validCount(nb, l, t, elt);
        Value any = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                          count, zeroF);
        Value gBar =
            arith::SelectOp::create(nb, l, any, add(nb, l, a[0], a[1]), zeroF);
        Value gSumBar = arith::DivFOp::create(
            nb, l, gBar, arith::MaximumFOp::create(nb, l, count, oneF));
        return {gBar, gSumBar};
      });
  Value bPluBar = rowsSum(e, mean[0]);
  Value gSumBar = mean[1];
  Value wPluBar = rowsProduct(e, gSumBar, f.q);
  SmallVector<OpFoldResult> qShape = e.sizes(f.q);
  Value qBar =
      e.linear(gSumBar, transposed(e, op.getWPlu()), e.full(qShape, 0.0));

  // Wedge: y = P̄ z, pw = P̄ w (f64), P̄_ab = sign_ab q̄[pair(a, b)].
  SmallVector<Attribute> pairIdx, signs;
  auto pairOf = [&](int64_t a, int64_t c) { // a < c
    return a * r - a * (a + 1) / 2 + (c - a - 1);
  };
  for (int64_t a = 0; a < r; ++a)
    for (int64_t c = 0; c < r; ++c) {
      pairIdx.push_back(
          b.getIndexAttr(a == c ? 0 : pairOf(std::min(a, c), std::max(a, c))));
      signs.push_back(b.getF64FloatAttr(a < c ? 1.0 : a > c ? -1.0 : 0.0));
    }
  Value idxTable = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({r, r}, b.getIndexType()),
                             pairIdx));
  Value signTable = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({r, r}, f64), signs));
  unsigned n = nb + 2;
  unsigned tL = nb, aL = nb + 1, cL = nb + 2; // loops (batch..., t, a, c)
  SmallVector<AffineMap> wedgeMaps = {
      e.map(n + 1, {aL, cL}),          e.map(n + 1, {aL, cL}),
      e.map(n + 1, cat(bL, {tL, cL})), e.map(n + 1, cat(bL, {tL, cL})),
      e.map(n + 1, cat(bL, {tL, aL})), e.map(n + 1, cat(bL, {tL, aL}))};
  SmallVector<utils::IteratorType> wedgeIters = parallel(n + 1);
  wedgeIters[cL] = utils::IteratorType::reduction;
  SmallVector<Value> wedge = genericN(
      b, loc, {idxTable, signTable, f.z, f.w64},
      {wide.full(ge.zShape, 0.0), wide.full(ge.zShape, 0.0)}, wedgeMaps,
      wedgeIters,
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        Value t = linalg::IndexOp::create(nb, l, tL);
        Value pBar = mul(nb, l, a[1], ge.at(nb, l, qBar, {t, a[0]}, f64));
        Value zc = convertFloat(nb, l, a[2], f64);
        return {add(nb, l, a[4], mul(nb, l, pBar, zc)),
                add(nb, l, a[5], mul(nb, l, pBar, a[3]))};
      });
  Value y = wedge[0], pw = wedge[1];

  // c̄_ti = −y_t · (z_Δ − s z_t): loops (batch..., t, i, a).
  unsigned iL = nb + 1, kL = nb + 2;
  Value cBar = wide.generic(
      {y, f.z, ge.offTable, f.dot, f.n2}, wide.full(ge.pairShape, 0.0),
      {e.map(n + 1, cat(bL, {tL, kL})), e.map(n + 1, cat(bL, {tL, kL})),
       e.map(n + 1, {iL}), e.map(n + 1, cat(bL, {tL, iL})),
       e.map(n + 1, cat(bL, {tL})), e.map(n + 1, cat(bL, {tL, iL}))},
      n + 1, {kL}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        LinalgEmitter s(nb, l, f64);
        Value t = linalg::IndexOp::create(nb, l, tL);
        Value col = linalg::IndexOp::create(nb, l, kL);
        Value zp =
            ge.at(nb, l, f.z, {ge.partner(nb, l, t, a[2]).first, col}, f64);
        Value zt = convertFloat(nb, l, a[1], f64);
        Value nonzero = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                              a[4], s.cst(0.0));
        Value safe = arith::SelectOp::create(nb, l, nonzero, a[4], s.cst(1.0));
        Value sc = arith::DivFOp::create(nb, l, a[3], safe);
        Value proj = arith::SubFOp::create(nb, l, zp, mul(nb, l, sc, zt));
        return arith::SubFOp::create(nb, l, a[5], mul(nb, l, a[0], proj));
      });

  // Pair scalars: N̄ = −c̄ c³/2 where ‖p‖ > eps (valid pairs), and the
  // coefficients A = 2N̄‖z_Δ‖² (z_t in z̄_t), X = −2N̄ dot (cross) and
  // G = 2N̄‖z_t‖² (z_Δ in z̄_Δ): loops (batch..., t, i).
  SmallVector<AffineMap> pairMaps = {e.map(n, cat(bL, {tL, iL})),
                                     e.map(n, cat(bL, {tL, iL})),
                                     e.map(n, cat(bL, {tL})),
                                     e.map(n, cat(bL, {tL, iL})),
                                     e.map(n, {iL}),
                                     e.map(n, cat(bL, {tL, iL})),
                                     e.map(n, cat(bL, {tL, iL})),
                                     e.map(n, cat(bL, {tL, iL}))};
  SmallVector<Value> pair = genericN(
      b, loc, {cBar, f.dot, f.n2, f.cv, ge.offTable},
      {wide.empty(ge.pairShape), wide.empty(ge.pairShape),
       wide.empty(ge.pairShape)},
      pairMaps, parallel(n),
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        LinalgEmitter s(nb, l, f64);
        Value t = linalg::IndexOp::create(nb, l, tL);
        auto [p, valid] = ge.partner(nb, l, t, a[4]);
        Value n2p = ge.at(nb, l, f.n2, {p});
        Value dt = a[1], n2t = a[2], c = a[3], zero = s.cst(0.0);
        Value p2 = arith::SubFOp::create(nb, l, mul(nb, l, n2t, n2p),
                                         mul(nb, l, dt, dt));
        p2 = arith::MaximumFOp::create(nb, l, p2, zero);
        Value norm = math::SqrtOp::create(nb, l, p2);
        Value above = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                            norm, s.cst(ge.eps));
        Value active = arith::AndIOp::create(nb, l, valid, above);
        Value c3 = mul(nb, l, c, mul(nb, l, c, c));
        Value nBar2 = mul(nb, l, s.cst(-1.0), mul(nb, l, a[0], c3)); // 2N̄
        nBar2 = arith::SelectOp::create(nb, l, active, nBar2, zero);
        Value x = mul(nb, l, s.cst(-1.0), mul(nb, l, nBar2, dt));
        return {mul(nb, l, nBar2, n2p), x, mul(nb, l, nBar2, n2t)};
      });
  Value coefA = pair[0], coefX = pair[1], coefG = pair[2];

  // z̄_s = P̄ w_s + Σ_i [own pair (s, s ∓ Δ_i)] A z_s + X z_Δ + cu P̄ z_s
  //       + [the pair (t, s) with t = s ± Δ_i] G z_s + X z_t − cv P̄ z_t:
  // loops (batch..., s, j, i), the gather form of the partners' scatter.
  unsigned jL = nb + 1;
  Value zBar64 = wide.generic(
      {coefA, coefX, f.cu, y, f.z, ge.offTable}, pw,
      {e.map(n + 1, cat(bL, {tL, kL})), e.map(n + 1, cat(bL, {tL, kL})),
       e.map(n + 1, cat(bL, {tL, kL})), e.map(n + 1, cat(bL, {tL, jL})),
       e.map(n + 1, cat(bL, {tL, jL})), e.map(n + 1, {kL}),
       e.map(n + 1, cat(bL, {tL, jL}))},
      n + 1, {kL}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        LinalgEmitter s(nb, l, f64);
        Value sIdx = linalg::IndexOp::create(nb, l, tL);
        Value i = linalg::IndexOp::create(nb, l, kL);
        Value col = linalg::IndexOp::create(nb, l, jL);
        Value zs = convertFloat(nb, l, a[4], f64);
        Value zp =
            ge.at(nb, l, f.z, {ge.partner(nb, l, sIdx, a[5]).first, col}, f64);
        Value own =
            add(nb, l, add(nb, l, mul(nb, l, a[0], zs), mul(nb, l, a[1], zp)),
                mul(nb, l, a[2], a[3]));
        auto [t, valid] = ge.partner(nb, l, sIdx, a[5], /*reverse=*/true);
        Value zt = ge.at(nb, l, f.z, {t, col}, f64);
        Value yt = ge.at(nb, l, y, {t, col});
        Value rev = add(nb, l, mul(nb, l, ge.at(nb, l, coefG, {t, i}), zs),
                        mul(nb, l, ge.at(nb, l, coefX, {t, i}), zt));
        rev = arith::SubFOp::create(nb, l, rev,
                                    mul(nb, l, ge.at(nb, l, f.cv, {t, i}), yt));
        rev = arith::SelectOp::create(nb, l, valid, rev, s.cst(0.0));
        return add(nb, l, a[6], add(nb, l, own, rev));
      });
  Value zBar = zBar64;
  if (elt != f64)
    zBar = e.generic(zBar64, e.empty(ge.zShape), {all, all}, rank, {},
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       return convertFloat(nb, l, a[0], elt);
                     });

  // z = h W_redᵀ + b_red.
  Value hFromZ =
      e.linear(zBar, transposed(e, op.getWRed()), e.full(ge.hShape, 0.0));
  Value wRedBar = rowsProduct(e, zBar, h);
  Value bRedBar = rowsSum(e, zBar);
  Value hBar = e.generic({hBarGate, hFromPre, hFromZ}, e.empty(ge.hShape),
                         {all, all, all, all}, rank, {},
                         [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           return add(nb, l, add(nb, l, a[0], a[1]), a[2]);
                         });

  SmallVector<Value> grads = {hBar,    wRedBar,  bRedBar, wPluBar,
                              bPluBar, wGateBar, bGateBar};
  for (auto [grad, operand] : llvm::zip(grads, raw->getOperands()))
    grad = e.castTo(grad, operand.getType());
  return grads;
}
