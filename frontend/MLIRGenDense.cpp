//===- MLIRGenDense.cpp - Torsor MLIRGen: dense layers --------------------===//
//
// Dense layers on upstream dialects (no new ops for them):
// elementwise arithmetic and activations are `linalg.generic` with
// numpy-style broadcasting maps and `arith`/`math` bodies; `@` is
// `linalg.matmul` for 2-D operands and a `linalg.generic` contraction
// otherwise; softmax is upstream's decomposition of `linalg.softmax`;
// layer/RMS norms are two-pass
// reductions; concat is `tensor.concat`; heads are `tensor.expand_shape` +
// `linalg.transpose`. Literal scalars are folded and materialised inside
// the generic bodies.
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGenImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include <cmath>

using namespace torsor::frontend;
using namespace mlir;
using FType = torsor::frontend::Type;
using llvm::StringRef;
using utils::IteratorType;

/// Folds a weak (literal-only) expression to a number.
static double foldConstant(const Expr &expr) {
  if (auto *num = llvm::dyn_cast<NumberExpr>(&expr))
    return num->value;
  if (auto *var = llvm::dyn_cast<VarExpr>(&expr))
    return var->dim ? double(var->dim->value) : 0.0;
  if (auto *un = llvm::dyn_cast<UnaryExpr>(&expr))
    return -foldConstant(*un->operand);
  if (auto *bin = llvm::dyn_cast<BinaryExpr>(&expr)) {
    double a = foldConstant(*bin->lhs), c = foldConstant(*bin->rhs);
    switch (bin->op) {
    case '+':
      return a + c;
    case '-':
      return a - c;
    case '*':
      return a * c;
    default:
      return a / c;
    }
  }
  return 0.0;
}

MLIRGenImpl::Operand MLIRGenImpl::emitOperand(const Expr &expr,
                                              const Env &env) {
  Operand op;
  op.type = &expr.type;
  if (expr.type.weak)
    op.constant = foldConstant(expr);
  else
    op.value = emitExpr(expr, env);
  return op;
}

Value MLIRGenImpl::generic(const FType &result, ValueRange inputs,
                           ArrayRef<AffineMap> maps, Location l, ScalarFn fn) {
  SmallVector<AffineMap> allMaps(maps.begin(), maps.end());
  allMaps.push_back(b.getMultiDimIdentityMap(result.rank()));
  SmallVector<IteratorType> iters(result.rank(), IteratorType::parallel);
  Value init = emptyTensor(result, l);
  auto op = linalg::GenericOp::create(
      b, l, TypeRange{init.getType()}, inputs, ValueRange{init}, allMaps, iters,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> scalars(args.drop_back());
        Value v = fn(nb, nl, scalars);
        linalg::YieldOp::create(nb, nl, v);
      });
  return op->getResult(0);
}

Value MLIRGenImpl::elementwise(const FType &result, ArrayRef<Operand> ops,
                               Location l, ScalarFn fn) {
  unsigned rank = result.rank();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (const Operand &op : ops) {
    if (!op.value)
      continue;
    // Right-aligned broadcasting: a size-1 dim reads index 0.
    SmallVector<AffineExpr> exprs;
    unsigned r = op.type->rank();
    for (unsigned i = 0; i < r; ++i) {
      unsigned outIdx = rank - r + i;
      bool bcast = op.type->shape[i].isOne() && !result.shape[outIdx].isOne();
      exprs.push_back(bcast ? b.getAffineConstantExpr(0)
                            : b.getAffineDimExpr(outIdx));
    }
    inputs.push_back(op.value);
    maps.push_back(AffineMap::get(rank, 0, exprs, &ctx));
  }
  DType dtype = result.dtype;
  return generic(result, inputs, maps, l,
                 [&](OpBuilder &nb, Location nl, ArrayRef<Value> args) {
                   SmallVector<Value> scalars;
                   size_t next = 0;
                   auto ft = cast<FloatType>(elementType(dtype));
                   for (const Operand &op : ops)
                     scalars.push_back(
                         op.value ? args[next++]
                                  : Value(arith::ConstantOp::create(
                                        nb, nl,
                                        checkedFloatAttr(ft, op.constant, nl,
                                                         "the constant"))));
                   return fn(nb, nl, scalars);
                 });
}

Value MLIRGenImpl::emitBinary(const BinaryExpr &expr, const Env &env) {
  Location l = loc(expr.getLoc());
  if (expr.type.weak) {
    auto type = RankedTensorType::get({}, elementType(expr.type.dtype));
    return arith::ConstantOp::create(
        b, l,
        DenseElementsAttr::get(
            type, checkedFloatAttr(cast<FloatType>(type.getElementType()),
                                   foldConstant(expr), l, "the constant")));
  }
  Operand lhs = emitOperand(*expr.lhs, env);
  Operand rhs = emitOperand(*expr.rhs, env);
  if ((lhs.type && !lhs.type->weak && !lhs.value) ||
      (rhs.type && !rhs.type->weak && !rhs.value))
    return nullptr;
  if (expr.op == '@')
    return emitMatmul(expr, lhs.value, rhs.value);
  char op = expr.op;
  return elementwise(
      expr.type, {lhs, rhs}, l,
      [op](OpBuilder &nb, Location nl, ArrayRef<Value> v) -> Value {
        switch (op) {
        case '+':
          return arith::AddFOp::create(nb, nl, v[0], v[1]);
        case '-':
          return arith::SubFOp::create(nb, nl, v[0], v[1]);
        case '*':
          return arith::MulFOp::create(nb, nl, v[0], v[1]);
        default:
          return arith::DivFOp::create(nb, nl, v[0], v[1]);
        }
      });
}

/// A zero-filled tensor of `type` (the init of a reduction).
static Value zeros(MLIRGenImpl &gen, const FType &type, Location l) {
  Value init = gen.emptyTensor(type, l);
  Value zero = gen.floatConst(type.dtype, 0.0, l);
  return linalg::FillOp::create(gen.b, l, ValueRange{zero}, ValueRange{init})
      ->getResult(0);
}

Value MLIRGenImpl::emitMatmul(const BinaryExpr &expr, Value lhs, Value rhs) {
  Location l = loc(expr.getLoc());
  const FType &lt = expr.lhs->type, &rt = expr.rhs->type, &out = expr.type;
  Value init = zeros(*this, out, l);
  if (lt.rank() == 2 && rt.rank() == 2)
    return linalg::MatmulOp::create(b, l, TypeRange{init.getType()},
                                    ValueRange{lhs, rhs}, ValueRange{init})
        ->getResult(0);
  // Batched with broadcasting: loops (batch..., m, n, k).
  unsigned rank = out.rank(), k = rank;
  auto operandMap = [&](const FType &t, unsigned row, unsigned col) {
    SmallVector<AffineExpr> exprs;
    unsigned batch = t.rank() - 2;
    for (unsigned i = 0; i < batch; ++i) {
      unsigned outIdx = (rank - 2) - batch + i;
      bool bcast = t.shape[i].isOne() && !out.shape[outIdx].isOne();
      exprs.push_back(bcast ? b.getAffineConstantExpr(0)
                            : b.getAffineDimExpr(outIdx));
    }
    exprs.push_back(b.getAffineDimExpr(row));
    exprs.push_back(b.getAffineDimExpr(col));
    return AffineMap::get(rank + 1, 0, exprs, &ctx);
  };
  SmallVector<AffineExpr> outExprs;
  for (unsigned i = 0; i < rank; ++i)
    outExprs.push_back(b.getAffineDimExpr(i));
  SmallVector<AffineMap> maps = {operandMap(lt, rank - 2, k),
                                 operandMap(rt, k, rank - 1),
                                 AffineMap::get(rank + 1, 0, outExprs, &ctx)};
  SmallVector<IteratorType> iters(rank, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  return linalg::GenericOp::create(
             b, l, TypeRange{init.getType()}, ValueRange{lhs, rhs},
             ValueRange{init}, maps, iters,
             [](OpBuilder &nb, Location nl, ValueRange a) {
               Value mul = arith::MulFOp::create(nb, nl, a[0], a[1]);
               Value sum = arith::AddFOp::create(nb, nl, a[2], mul);
               linalg::YieldOp::create(nb, nl, sum);
             })
      ->getResult(0);
}

Value MLIRGenImpl::reduceLast(Value x, const FType &type, Location l,
                              ScalarFn fn) {
  FType rowType = FType::tensor(type.dtype, type.shape);
  rowType.shape.pop_back();
  Value init = zeros(*this, rowType, l);
  unsigned rank = type.rank();
  SmallVector<AffineExpr> rowExprs;
  for (unsigned i = 0; i + 1 < rank; ++i)
    rowExprs.push_back(b.getAffineDimExpr(i));
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, rowExprs, &ctx)};
  SmallVector<IteratorType> iters(rank - 1, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  return linalg::GenericOp::create(
             b, l, TypeRange{init.getType()}, ValueRange{x}, ValueRange{init},
             maps, iters,
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value v = fn(nb, nl, {a[0]});
               linalg::YieldOp::create(
                   nb, nl, arith::AddFOp::create(nb, nl, a[1], v).getResult());
             })
      ->getResult(0);
}

Value MLIRGenImpl::emitNorm(const CallExpr &call, const Env &env) {
  Location l = loc(call.getLoc());
  bool isLayer = call.callee == "layer_norm";
  SmallVector<Value> args;
  for (const ExprPtr &arg : call.args) {
    args.push_back(emitExpr(*arg, env));
    if (!args.back())
      return nullptr;
  }
  const FType &type = call.type;
  unsigned rank = type.rank();
  DType dt = type.dtype;
  // 1/D, read at run time when the feature dim is symbolic.
  const Dim &d = type.shape.back();
  Value invD;
  if (d.symbolic) {
    Value n = arith::IndexCastOp::create(b, l, b.getI64Type(), dimValue(d, l));
    Value nf = arith::SIToFPOp::create(b, l, elementType(dt), n);
    invD = arith::DivFOp::create(b, l, floatConst(dt, 1.0, l), nf);
  } else {
    invD = floatConst(dt, 1.0 / double(d.value), l);
  }
  Value eps = floatConst(dt, call.getConstant("eps"), l);
  SmallVector<AffineExpr> rowExprs;
  for (unsigned i = 0; i + 1 < rank; ++i)
    rowExprs.push_back(b.getAffineDimExpr(i));
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap row = AffineMap::get(rank, 0, rowExprs, &ctx);
  AffineMap last = AffineMap::get(rank, 0, b.getAffineDimExpr(rank - 1));
  auto square = [](OpBuilder &nb, Location nl, ArrayRef<Value> v) -> Value {
    return arith::MulFOp::create(nb, nl, v[0], v[0]);
  };
  Value x = args[0];
  if (isLayer) {
    Value sum =
        reduceLast(x, type, l, [](OpBuilder &, Location, ArrayRef<Value> v) {
          return v[0];
        });
    x = generic(type, {x, sum}, {id, row}, l,
                [&](OpBuilder &nb, Location nl, ArrayRef<Value> v) -> Value {
                  Value mean = arith::MulFOp::create(nb, nl, v[1], invD);
                  return arith::SubFOp::create(nb, nl, v[0], mean);
                });
  }
  Value ss = reduceLast(x, type, l, square);
  SmallVector<Value> inputs = {x, ss, args[1]};
  SmallVector<AffineMap> maps = {id, row, last};
  if (isLayer) {
    inputs.push_back(args[2]);
    maps.push_back(last);
  }
  return generic(
      type, inputs, maps, l,
      [&](OpBuilder &nb, Location nl, ArrayRef<Value> v) -> Value {
        Value var = arith::MulFOp::create(nb, nl, v[1], invD);
        Value scale = math::RsqrtOp::create(
            nb, nl, arith::AddFOp::create(nb, nl, var, eps));
        Value y = arith::MulFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, v[0], scale), v[2]);
        return isLayer ? Value(arith::AddFOp::create(nb, nl, y, v[3])) : y;
      });
}

Value MLIRGenImpl::transpose(Value x, const FType &type, ArrayRef<int64_t> perm,
                             Location l) {
  FType out = type;
  for (size_t i = 0; i < perm.size(); ++i)
    out.shape[i] = type.shape[perm[i]];
  return linalg::TransposeOp::create(b, l, x, emptyTensor(out, l), perm)
      ->getResult(0);
}

Value MLIRGenImpl::emitDense(const CallExpr &call, const Env &env) {
  Location l = loc(call.getLoc());
  StringRef name = call.callee;
  if (name == "layer_norm" || name == "rms_norm")
    return emitNorm(call, env);
  SmallVector<Value> args;
  for (const ExprPtr &arg : call.args) {
    args.push_back(emitExpr(*arg, env));
    if (!args.back())
      return nullptr;
  }
  const FType &type = call.type;
  DType dt = type.dtype;
  if (name == "softmax") {
    // Built as linalg.softmax and expanded at once into upstream's own
    // decomposition (max, exp(x - max), sum, divide) so that every pipeline
    // sees plain linalg.generic ops.
    auto softmax = linalg::SoftmaxOp::create(b, l, TypeRange{tensorType(type)},
                                             args[0], emptyTensor(type, l),
                                             int64_t(call.getConstant("axis")));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(softmax);
    FailureOr<SmallVector<Value>> parts = softmax.decomposeOperation(b);
    if (failed(parts))
      return softmax->getResult(0);
    softmax->erase();
    return (*parts)[0];
  }
  if (name == "concat")
    return tensor::ConcatOp::create(b, l, int64_t(call.getConstant("axis")),
                                    args);
  if (name == "transpose") {
    SmallVector<int64_t> perm;
    for (unsigned i = 0; i < type.rank(); ++i)
      perm.push_back(i);
    std::swap(perm[type.rank() - 1], perm[type.rank() - 2]);
    return transpose(args[0], call.args[0]->type, perm, l);
  }
  if (name == "heads") {
    // [L, D] -> [L, H, D/H] -> [H, L, D/H].
    const FType &x = call.args[0]->type;
    FType split = FType::tensor(dt, {x.shape[0], type.shape[0], type.shape[2]});
    SmallVector<OpFoldResult> sizes;
    for (const Dim &dim : split.shape)
      sizes.push_back(dim.symbolic ? OpFoldResult(dimValue(dim, l))
                                   : OpFoldResult(b.getIndexAttr(dim.value)));
    Value expanded = tensor::ExpandShapeOp::create(
        b, l, tensorType(split), args[0],
        ArrayRef<ReassociationIndices>{{0}, {1, 2}}, sizes);
    return transpose(expanded, split, {1, 0, 2}, l);
  }
  if (name == "merge_heads") {
    // [H, L, Dh] -> [L, H, Dh] -> [L, H*Dh].
    const FType &x = call.args[0]->type;
    Value t = transpose(args[0], x, {1, 0, 2}, l);
    return tensor::CollapseShapeOp::create(
        b, l, tensorType(type), t, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  }
  Operand x{args[0], &call.args[0]->type, 0};
  auto fn = [&](OpBuilder &nb, Location nl, ArrayRef<Value> v) -> Value {
    auto ft = cast<FloatType>(elementType(dt));
    auto c = [&](double value) -> Value {
      return arith::ConstantOp::create(nb, nl, nb.getFloatAttr(ft, value));
    };
    if (name == "relu")
      return arith::MaximumFOp::create(nb, nl, v[0], c(0.0));
    if (name == "tanh")
      return math::TanhOp::create(nb, nl, v[0]);
    if (name == "exp")
      return math::ExpOp::create(nb, nl, v[0]);
    if (name == "sigmoid") {
      Value e =
          math::ExpOp::create(nb, nl, arith::NegFOp::create(nb, nl, v[0]));
      return arith::DivFOp::create(nb, nl, c(1.0),
                                   arith::AddFOp::create(nb, nl, c(1.0), e));
    }
    // gelu (exact): 0.5 x (1 + erf(x / sqrt 2)).
    Value erf = math::ErfOp::create(
        nb, nl, arith::MulFOp::create(nb, nl, v[0], c(M_SQRT1_2)));
    Value half = arith::MulFOp::create(nb, nl, v[0], c(0.5));
    return arith::MulFOp::create(nb, nl, half,
                                 arith::AddFOp::create(nb, nl, c(1.0), erf));
  };
  return elementwise(type, {x}, l, fn);
}
