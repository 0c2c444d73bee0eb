//===- LinalgEmitter.h - Tensor IR builders for geo lowering ----*- C++ -*-===//
//
// The building blocks convert-geo-to-linalg writes each op's formula with:
// linalg.generic with named loops, row-wise linear layers, sums of squares,
// a stable masked softmax and Plücker coordinates, all on tensors of one
// float element type. Private to this folder.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_CONVERSION_GEOTOLINALG_LINALGEMITTER_H
#define TORSOR_COMPILER_CONVERSION_GEOTOLINALG_LINALGEMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace torsor::geotolinalg {

using namespace mlir;

/// The body of a linalg.generic: gets the block arguments (inputs, then the
/// output) and returns the value to yield.
using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// Loop indices [begin, end), for building indexing maps.
inline SmallVector<unsigned> iota(unsigned begin, unsigned end) {
  return llvm::to_vector(llvm::seq<unsigned>(begin, end));
}

/// Concatenation of loop-index lists, for building indexing maps.
inline SmallVector<unsigned> cat(ArrayRef<unsigned> a, ArrayRef<unsigned> b) {
  SmallVector<unsigned> r(a);
  r.append(b.begin(), b.end());
  return r;
}

/// Concatenation of size lists, for building tensor shapes.
inline SmallVector<OpFoldResult> catSizes(ArrayRef<OpFoldResult> a,
                                          ArrayRef<OpFoldResult> b) {
  SmallVector<OpFoldResult> r(a);
  r.append(b.begin(), b.end());
  return r;
}

/// Builds the IR of one lowering: one location and one float element type.
/// Helpers return tensors; each names the formula it computes.
class LinalgEmitter {
public:
  LinalgEmitter(OpBuilder &b, Location loc, Type elt)
      : b(b), loc(loc), elt(elt) {}

  /// A scalar constant of the element type.
  Value cst(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, v));
  }
  /// −∞, the score of a masked pair (exp(−∞ − max) = 0 exactly).
  Value negInf() {
    const llvm::fltSemantics &sem = cast<FloatType>(elt).getFloatSemantics();
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(elt, APFloat::getInf(sem, /*Negative=*/true)));
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// The sizes of `t`: constants for static dims, tensor.dim for dynamic.
  SmallVector<OpFoldResult> sizes(Value t) {
    return tensor::getMixedSizes(b, loc, t);
  }
  /// Size `dim` of `t` as an index value.
  Value dimValue(Value t, int64_t dim) {
    return getValueOrCreateConstantIndexOp(b, loc, sizes(t)[dim]);
  }
  /// Size `dim` of `t` as a scalar of the element type (a constant when
  /// static).
  Value dimAsFloat(Value t, int64_t dim) {
    int64_t size = cast<RankedTensorType>(t.getType()).getDimSize(dim);
    if (!ShapedType::isDynamic(size))
      return cst(static_cast<double>(size));
    Value i64 =
        arith::IndexCastOp::create(b, loc, b.getI64Type(), dimValue(t, dim));
    return arith::SIToFPOp::create(b, loc, elt, i64);
  }

  Value empty(ArrayRef<OpFoldResult> shape) {
    return tensor::EmptyOp::create(b, loc, shape, elt);
  }
  /// A tensor of `shape` filled with `v` (accumulator inits).
  Value full(ArrayRef<OpFoldResult> shape, Value v) {
    return linalg::FillOp::create(b, loc, ValueRange{v},
                                  ValueRange{empty(shape)})
        .getResult(0);
  }
  Value full(ArrayRef<OpFoldResult> shape, double v) {
    return full(shape, cst(v));
  }

  /// The indexing map selecting loops `dims` out of `numLoops`.
  AffineMap map(unsigned numLoops, ArrayRef<unsigned> dims) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : dims)
      exprs.push_back(b.getAffineDimExpr(d));
    return AffineMap::get(numLoops, 0, exprs, b.getContext());
  }

  /// A linalg.generic over `numLoops` loops with one output `init`; loops in
  /// `reductions` are reductions, the others parallel. `maps` lists inputs'
  /// maps then the output's.
  Value generic(ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
                unsigned numLoops, ArrayRef<unsigned> reductions, BodyFn body) {
    SmallVector<utils::IteratorType> iters(numLoops,
                                           utils::IteratorType::parallel);
    for (unsigned r : reductions)
      iters[r] = utils::IteratorType::reduction;
    return linalg::GenericOp::create(
               b, loc, init.getType(), inputs, ValueRange{init}, maps, iters,
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
               })
        .getResult(0);
  }

  /// `y[..., o] = init[..., o] + Σ_c x[..., c] · w[o, c]`: a row-wise
  /// linear layer `x Wᵀ` accumulated into `init` (which holds the bias or an
  /// earlier partial product).
  Value linear(Value x, Value w, Value init) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    unsigned o = rank - 1, c = rank; // loops: leading..., o, c
    SmallVector<unsigned> lead = iota(0, rank - 1);
    return generic({x, w}, init,
                   {map(rank + 1, cat(lead, {c})), map(rank + 1, {o, c}),
                    map(rank + 1, cat(lead, {o}))},
                   rank + 1, {c},
                   [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                     Value p = arith::MulFOp::create(nb, nloc, a[0], a[1]);
                     return arith::AddFOp::create(nb, nloc, a[2], p);
                   });
  }

  /// `bias` (one vector of the last dim) broadcast to `shape`.
  Value broadcastBias(Value bias, ArrayRef<OpFoldResult> shape) {
    return linalg::BroadcastOp::create(
               b, loc, bias, empty(shape),
               llvm::to_vector_of<int64_t>(iota(0, shape.size() - 1)))
        .getResult()[0];
  }

  /// `Σ_k x[..., k]²`: the squared norm of each row.
  Value rowSumSquares(Value x) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<OpFoldResult> shape = sizes(x);
    shape.pop_back();
    return generic(x, full(shape, 0.0),
                   {map(rank, iota(0, rank)), map(rank, iota(0, rank - 1))},
                   rank, {rank - 1},
                   [](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
                     Value sq = arith::MulFOp::create(nb, nloc, a[0], a[0]);
                     return arith::AddFOp::create(nb, nloc, a[1], sq);
                   });
  }

  /// Row-wise softmax over the last dim of `scores` (`[..., i, j]`), after
  /// multiplying by `scale` and, with `causal`, masking j > i to −∞. Stable:
  /// the row max is subtracted before exp. Row i always keeps j = i, so no
  /// row is fully masked.
  Value softmax(Value scores, double scale, bool causal);
  /// The softmax of the cross form over the last dim of `scores`
  /// ([..., i, j]) and its log-sum-exp ([..., i]): with `diagonal`
  /// (causal), j is live for row i iff j ≤ diagonal + i (signed). A row
  /// with no live j gets p = 0 and lse = −∞, not NaN.
  std::pair<Value, Value> softmaxWithLse(Value scores, Value diagonal);

  /// Plücker coordinates `p_k = u_a v_b − u_b v_a` over the lexicographic
  /// pairs (a, b) = pairs[k], a < b, of the last dim.
  Value plucker(Value u, Value v);

  /// Casts `v` to `type` when the lowering's static shape information
  /// differs from the op's result type (e.g. `?` vs a static dim).
  Value castTo(Value v, Type type) {
    if (v.getType() == type)
      return v;
    return tensor::CastOp::create(b, loc, type, v);
  }

  OpBuilder &b;
  Location loc;
  Type elt;
};

} // namespace torsor::geotolinalg

#endif // TORSOR_COMPILER_CONVERSION_GEOTOLINALG_LINALGEMITTER_H
