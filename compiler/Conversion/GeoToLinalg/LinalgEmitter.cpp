//===- LinalgEmitter.cpp - Tensor IR builders for geo lowering ------------===//
//
// The two multi-step builders of LinalgEmitter: the stable masked softmax
// shared by both attention lowerings, and the gathering Plücker generic
// shared by geo.plucker and geo.grassmann_mix.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GeoToLinalg/LinalgEmitter.h"

using namespace mlir;
using namespace torsor::geotolinalg;

Value LinalgEmitter::softmax(Value scores, double scale, bool causal) {
  unsigned rank = cast<RankedTensorType>(scores.getType()).getRank();
  SmallVector<OpFoldResult> shape = sizes(scores);
  SmallVector<OpFoldResult> rowShape(shape.begin(), shape.end() - 1);
  AffineMap all = map(rank, iota(0, rank));
  AffineMap row = map(rank, iota(0, rank - 1));
  Value ninf = negInf();

  // s = scale · s, then mask: causal attention sees j ≤ i only.
  if (scale != 1.0 || causal) {
    Value scaleV = scale != 1.0 ? cst(scale) : Value();
    scores = generic(scores, empty(shape), {all, all}, rank, {},
                     [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                       Value s = a[0];
                       if (scale != 1.0)
                         s = arith::MulFOp::create(nb, nloc, s, scaleV);
                       if (!causal)
                         return s;
                       Value i = linalg::IndexOp::create(nb, nloc, rank - 2);
                       Value j = linalg::IndexOp::create(nb, nloc, rank - 1);
                       Value seen = arith::CmpIOp::create(
                           nb, nloc, arith::CmpIPredicate::ule, j, i);
                       return arith::SelectOp::create(nb, nloc, seen, s, ninf);
                     });
  }
  // m_i = max_j s_ij.
  Value rowMax =
      generic(scores, full(rowShape, ninf), {all, row}, rank, {rank - 1},
              [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                return arith::MaximumFOp::create(nb, nloc, a[0], a[1]);
              });
  // e_ij = exp(s_ij − m_i).
  Value exps =
      generic({scores, rowMax}, empty(shape), {all, row, all}, rank, {},
              [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                Value d = arith::SubFOp::create(nb, nloc, a[0], a[1]);
                return math::ExpOp::create(nb, nloc, d);
              });
  // z_i = Σ_j e_ij.
  Value rowSum =
      generic(exps, full(rowShape, 0.0), {all, row}, rank, {rank - 1},
              [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                return arith::AddFOp::create(nb, nloc, a[1], a[0]);
              });
  // p_ij = e_ij / z_i.
  return generic({exps, rowSum}, empty(shape), {all, row, all}, rank, {},
                 [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                   return arith::DivFOp::create(nb, nloc, a[0], a[1]);
                 });
}

std::pair<Value, Value> LinalgEmitter::softmaxWithLse(Value scores,
                                                      Value diagonal) {
  unsigned rank = cast<RankedTensorType>(scores.getType()).getRank();
  SmallVector<OpFoldResult> shape = sizes(scores);
  SmallVector<OpFoldResult> rowShape(shape.begin(), shape.end() - 1);
  AffineMap all = map(rank, iota(0, rank));
  AffineMap row = map(rank, iota(0, rank - 1));
  AffineMap rowOnly = map(rank - 1, iota(0, rank - 1)); // loops over rows
  Value ninf = negInf();

  // Mask: key j is live for row i iff j ≤ diagonal + i.
  if (diagonal)
    scores =
        generic(scores, empty(shape), {all, all}, rank, {},
                [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                  Value i = linalg::IndexOp::create(nb, nloc, rank - 2);
                  Value j = linalg::IndexOp::create(nb, nloc, rank - 1);
                  Value last = arith::AddIOp::create(nb, nloc, diagonal, i);
                  Value seen = arith::CmpIOp::create(
                      nb, nloc, arith::CmpIPredicate::sle, j, last);
                  return arith::SelectOp::create(nb, nloc, seen, a[0], ninf);
                });
  // m_i = max_j s_ij, taken as 0 for a row with no live key.
  Value rowMax =
      generic(scores, full(rowShape, ninf), {all, row}, rank, {rank - 1},
              [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                return arith::MaximumFOp::create(nb, nloc, a[0], a[1]);
              });
  Value zero = cst(0.0);
  rowMax =
      generic(rowMax, empty(rowShape), {rowOnly, rowOnly}, rank - 1, {},
              [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                Value empty = arith::CmpFOp::create(
                    nb, nloc, arith::CmpFPredicate::OEQ, a[0], ninf);
                return arith::SelectOp::create(nb, nloc, empty, zero, a[0]);
              });
  // e_ij = exp(s_ij − m_i), z_i = Σ_j e_ij.
  Value exps =
      generic({scores, rowMax}, empty(shape), {all, row, all}, rank, {},
              [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                Value d = arith::SubFOp::create(nb, nloc, a[0], a[1]);
                return math::ExpOp::create(nb, nloc, d);
              });
  Value rowSum =
      generic(exps, full(rowShape, 0.0), {all, row}, rank, {rank - 1},
              [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                return arith::AddFOp::create(nb, nloc, a[1], a[0]);
              });
  // p_ij = e_ij / z_i (0 when z_i = 0); lse_i = m_i + log z_i.
  Value probs =
      generic({exps, rowSum}, empty(shape), {all, row, all}, rank, {},
              [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                Value live = arith::CmpFOp::create(
                    nb, nloc, arith::CmpFPredicate::OGT, a[1], zero);
                Value p = arith::DivFOp::create(nb, nloc, a[0], a[1]);
                return arith::SelectOp::create(nb, nloc, live, p, zero);
              });
  Value lse = generic({rowMax, rowSum}, empty(rowShape),
                      {rowOnly, rowOnly, rowOnly}, rank - 1, {},
                      [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                        Value log = math::LogOp::create(nb, nloc, a[1]);
                        return arith::AddFOp::create(nb, nloc, a[0], log);
                      });
  return {probs, lse};
}

Value LinalgEmitter::plucker(Value u, Value v) {
  auto uType = cast<RankedTensorType>(u.getType());
  unsigned rank = uType.getRank();
  int64_t r = uType.getShape().back();
  if (ShapedType::isDynamic(r))
    r = cast<RankedTensorType>(v.getType()).getShape().back();

  // The pair (a, b) of coordinate k, as two constant index tables: the
  // generic runs over the C(r,2) outputs and gathers its two operands' a-th
  // and b-th entries, so no r×r outer product is formed.
  SmallVector<Attribute> as, bs;
  for (int64_t a = 0; a < r; ++a)
    for (int64_t c = a + 1; c < r; ++c) {
      as.push_back(b.getIndexAttr(a));
      bs.push_back(b.getIndexAttr(c));
    }
  auto tableType = RankedTensorType::get({static_cast<int64_t>(as.size())},
                                         b.getIndexType());
  Value tableA =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(tableType, as));
  Value tableB =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(tableType, bs));

  SmallVector<OpFoldResult> shape = sizes(u);
  shape.back() = b.getIndexAttr(as.size());
  return generic(
      {tableA, tableB}, empty(shape),
      {map(rank, {rank - 1}), map(rank, {rank - 1}), map(rank, iota(0, rank))},
      rank, {}, [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
        SmallVector<Value> ia, ib;
        for (unsigned d = 0; d + 1 < rank; ++d)
          ia.push_back(linalg::IndexOp::create(nb, nloc, d));
        ib = ia;
        ia.push_back(args[0]);
        ib.push_back(args[1]);
        Value ua = tensor::ExtractOp::create(nb, nloc, u, ia);
        Value ub = tensor::ExtractOp::create(nb, nloc, u, ib);
        Value va = tensor::ExtractOp::create(nb, nloc, v, ia);
        Value vb = tensor::ExtractOp::create(nb, nloc, v, ib);
        Value lhs = arith::MulFOp::create(nb, nloc, ua, vb);
        Value rhs = arith::MulFOp::create(nb, nloc, ub, va);
        return arith::SubFOp::create(nb, nloc, lhs, rhs);
      });
}
