//===- MLIRGenTrain.cpp - MLIR generation: training built-ins -------------===//
//
// embedding, cross_entropy and mse as plain linalg.generic ops, so that the
// VJP rules of linalg (compiler/Autodiff) differentiate them:
//   embedding      a gather: out[t..., d] = table[clamp(tok[t...]), d]
//                  (tensor.extract from the table inside the body)
//   cross_entropy  mean over tokens of logsumexp(logits) − logits[target],
//                  with the max subtracted before exp
//   mse            mean of (a − b)²
// Losses are rank-0 tensors (a scalar output).
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGenImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace torsor::frontend;
using FType = torsor::frontend::Type;
using mlir::utils::IteratorType;

namespace {
/// Builds reductions for the losses over one iteration space of `rank`
/// loops.
struct Reducer {
  MLIRGenImpl &gen;
  Location l;

  /// A tensor of `type` filled with `value`.
  Value filled(const FType &type, double value) {
    Value init = gen.emptyTensor(type, l);
    Value v = gen.floatConst(type.dtype, value, l);
    return linalg::FillOp::create(gen.b, l, ValueRange{v}, ValueRange{init})
        ->getResult(0);
  }

  /// out = combine(out, fn(ins)) over loops whose first `keep` are parallel.
  Value reduce(Value init, ValueRange ins, ArrayRef<AffineMap> maps,
               unsigned rank, unsigned keep,
               function_ref<Value(OpBuilder &, Location, ValueRange)> fn,
               bool max = false) {
    SmallVector<AffineExpr> kept;
    for (unsigned i = 0; i < keep; ++i)
      kept.push_back(gen.b.getAffineDimExpr(i));
    SmallVector<AffineMap> all(maps.begin(), maps.end());
    all.push_back(AffineMap::get(rank, 0, kept, &gen.ctx));
    SmallVector<IteratorType> iters(rank, IteratorType::reduction);
    for (unsigned i = 0; i < keep; ++i)
      iters[i] = IteratorType::parallel;
    return linalg::GenericOp::create(
               gen.b, l, TypeRange{init.getType()}, ins, ValueRange{init}, all,
               iters,
               [&](OpBuilder &nb, Location nl, ValueRange a) {
                 Value v = fn(nb, nl, a.drop_back());
                 Value r =
                     max ? Value(arith::MaxNumFOp::create(nb, nl, v, a.back()))
                         : Value(arith::AddFOp::create(nb, nl, a.back(), v));
                 linalg::YieldOp::create(nb, nl, r);
               })
        ->getResult(0);
  }

  /// The rank-0 mean of `perElement` (type `type`): Σ / (number of
  /// elements, read at run time for symbolic dims).
  Value mean(Value perElement, const FType &type) {
    unsigned rank = type.rank();
    FType scalar = FType::tensor(type.dtype, {});
    Value sum = reduce(
        filled(scalar, 0.0), {perElement}, {gen.b.getMultiDimIdentityMap(rank)},
        rank, 0, [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    Value count = arith::ConstantIndexOp::create(gen.b, l, 1);
    for (const Dim &d : type.shape)
      count = arith::MulIOp::create(
          gen.b, l, count,
          d.symbolic
              ? gen.dimValue(d, l)
              : Value(arith::ConstantIndexOp::create(gen.b, l, d.value)));
    Value n = arith::SIToFPOp::create(
        gen.b, l, gen.elementType(type.dtype),
        arith::IndexCastOp::create(gen.b, l, gen.b.getI64Type(), count));
    Value inv =
        arith::DivFOp::create(gen.b, l, gen.floatConst(type.dtype, 1.0, l), n);
    return gen.generic(
        scalar, {sum}, {AffineMap::get(0, 0, {}, &gen.ctx)}, l,
        [&](OpBuilder &nb, Location nl, ArrayRef<Value> v) {
          return arith::MulFOp::create(nb, nl, v[0], inv).getResult();
        });
  }
};
} // namespace

/// Token ids clamped into [0, n): out-of-range ids never read out of bounds.
static Value clampedIndex(OpBuilder &nb, Location nl, Value token, int64_t n) {
  Value lo = arith::ConstantIntOp::create(nb, nl, nb.getI64Type(), 0);
  Value hi = arith::ConstantIntOp::create(nb, nl, nb.getI64Type(), n - 1);
  Value c = arith::MinSIOp::create(
      nb, nl, arith::MaxSIOp::create(nb, nl, token, lo), hi);
  return arith::IndexCastOp::create(nb, nl, nb.getIndexType(), c);
}

Value MLIRGenImpl::emitTraining(const CallExpr &call, const Env &env) {
  Location l = loc(call.getLoc());
  StringRef name = call.callee;
  SmallVector<Value> args;
  for (const ExprPtr &arg : call.args) {
    args.push_back(emitExpr(*arg, env));
    if (!args.back())
      return nullptr;
  }
  const FType &type = call.type;
  Reducer red{*this, l};
  if (name == "embedding") {
    const FType &tokens = call.args[0]->type;
    int64_t vocab = call.args[1]->type.shape[0].value;
    unsigned rank = type.rank();
    SmallVector<AffineExpr> lead;
    for (unsigned i = 0; i + 1 < rank; ++i)
      lead.push_back(b.getAffineDimExpr(i));
    (void)tokens;
    Value table = args[1];
    return generic(type, {args[0]}, {AffineMap::get(rank, 0, lead, &ctx)}, l,
                   [&](OpBuilder &nb, Location nl, ArrayRef<Value> v) {
                     Value row = clampedIndex(nb, nl, v[0], vocab);
                     Value col = linalg::IndexOp::create(nb, nl, rank - 1);
                     return tensor::ExtractOp::create(nb, nl, table,
                                                      ValueRange{row, col})
                         .getResult();
                   });
  }
  if (name == "cross_entropy") {
    const FType &logits = call.args[0]->type;
    const FType &targets = call.args[1]->type;
    unsigned rank = logits.rank();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    SmallVector<AffineExpr> leadExprs;
    for (unsigned i = 0; i + 1 < rank; ++i)
      leadExprs.push_back(b.getAffineDimExpr(i));
    AffineMap lead = AffineMap::get(rank, 0, leadExprs, &ctx);
    FType rowType = FType::tensor(logits.dtype, targets.shape);
    Value x = args[0], t = args[1];
    // m = max_v x; s = Σ_v exp(x − m); picked = x[target].
    Value m = red.reduce(
        red.filled(rowType, -std::numeric_limits<double>::infinity()), {x},
        {id}, rank, rank - 1,
        [](OpBuilder &, Location, ValueRange a) { return a[0]; },
        /*max=*/true);
    Value s = red.reduce(
        red.filled(rowType, 0.0), {x, m}, {id, lead}, rank, rank - 1,
        [](OpBuilder &nb, Location nl, ValueRange a) {
          return math::ExpOp::create(nb, nl,
                                     arith::SubFOp::create(nb, nl, a[0], a[1]))
              .getResult();
        });
    DType dt = logits.dtype;
    Value picked =
        red.reduce(red.filled(rowType, 0.0), {x, t}, {id, lead}, rank, rank - 1,
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     Value v = arith::IndexCastOp::create(
                         nb, nl, nb.getI64Type(),
                         linalg::IndexOp::create(nb, nl, rank - 1));
                     Value hit = arith::CmpIOp::create(
                         nb, nl, arith::CmpIPredicate::eq, v, a[1]);
                     return arith::SelectOp::create(nb, nl, hit, a[0],
                                                    floatConst(dt, 0.0, nl))
                         .getResult();
                   });
    AffineMap rowId = b.getMultiDimIdentityMap(rank - 1);
    Value perToken =
        generic(rowType, {m, s, picked}, {rowId, rowId, rowId}, l,
                [](OpBuilder &nb, Location nl, ArrayRef<Value> v) {
                  Value lse = arith::AddFOp::create(
                      nb, nl, math::LogOp::create(nb, nl, v[1]), v[0]);
                  return arith::SubFOp::create(nb, nl, lse, v[2]).getResult();
                });
    return red.mean(perToken, rowType);
  }
  // mse
  const FType &a = call.args[0]->type;
  AffineMap id = b.getMultiDimIdentityMap(a.rank());
  Value sq = generic(a, {args[0], args[1]}, {id, id}, l,
                     [](OpBuilder &nb, Location nl, ArrayRef<Value> v) {
                       Value d = arith::SubFOp::create(nb, nl, v[0], v[1]);
                       return arith::MulFOp::create(nb, nl, d, d).getResult();
                     });
  (void)type;
  return red.mean(sq, a);
}
