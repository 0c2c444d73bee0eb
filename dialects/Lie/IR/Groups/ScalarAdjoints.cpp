//===- ScalarAdjoints.cpp - The one table of scalar adjoints --------------===//
//
// The local partials of every elementwise arith/math op that the two
// reverse-mode differentiators handle (ScalarAdjoints.h), written once.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/ScalarAdjoints.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace torsor::lie;

namespace {

/// Arithmetic on values of one float type (scalar, vector or tensor).
struct Math {
  OpBuilder &b;
  Location loc;
  Value c(Value like, double v) {
    Type type = like.getType();
    auto elem = cast<FloatType>(getElementTypeOrSelf(type));
    if (auto shaped = dyn_cast<ShapedType>(type))
      return arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(shaped, b.getFloatAttr(elem, v)));
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(elem, v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, loc, x, y, z);
  }
  Value sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value log(Value x) { return math::LogOp::create(b, loc, x); }
  Value sin(Value x) { return math::SinOp::create(b, loc, x); }
  Value cos(Value x) { return math::CosOp::create(b, loc, x); }
  /// ±1 with the sign of x.
  Value sign(Value x) { return math::CopySignOp::create(b, loc, c(x, 1.0), x); }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
};

ScalarPartial same() { return {ScalarPartial::Same, {}, false, {}}; }
ScalarPartial negated() { return {ScalarPartial::Negated, {}, false, {}}; }
ScalarPartial none() { return {}; }
/// ȳ·d with d finite where `from` is (null: always finite).
ScalarPartial scaled(Value d, Value from = {}) {
  return {ScalarPartial::Scaled, d, false, from};
}
/// ȳ·d with d unbounded at the op's singular points.
ScalarPartial unbounded(Value d) {
  return {ScalarPartial::Scaled, d, true, {}};
}
ScalarPartial where(Value cond) {
  return {ScalarPartial::Where, cond, false, {}};
}
ScalarPartial whereNot(Value cond) {
  return {ScalarPartial::WhereNot, cond, false, {}};
}

} // namespace

ArrayRef<StringRef> torsor::lie::getScalarAdjointOpNames() {
  static const StringRef names[] = {
      "arith.addf",     "arith.subf",     "arith.negf",     "arith.mulf",
      "arith.divf",     "arith.maximumf", "arith.minimumf", "arith.maxnumf",
      "arith.minnumf",  "arith.select",   "math.fma",       "math.sqrt",
      "math.rsqrt",     "math.absf",      "math.copysign",  "math.sin",
      "math.cos",       "math.exp",       "math.expm1",     "math.log",
      "math.log1p",     "math.tanh",      "math.atanh",     "math.erf",
      "math.atan",      "math.asin",      "math.acos",      "math.atan2",
      "math.powf",      "math.floor",     "math.ceil",      "math.round",
      "math.roundeven", "math.trunc"};
  return names;
}

bool torsor::lie::buildScalarPartials(OpBuilder &b, Location loc, Operation *op,
                                      SmallVectorImpl<ScalarPartial> &out) {
  using P = arith::CmpFPredicate;
  Math m{b, loc};
  out.clear();
  if (op->getNumResults() != 1)
    return false;
  Value y = op->getResult(0);
  auto x = [&](unsigned i) { return op->getOperand(i); };

  if (isa<arith::AddFOp>(op)) {
    out.assign({same(), same()});
  } else if (isa<arith::SubFOp>(op)) {
    out.assign({same(), negated()});
  } else if (isa<arith::NegFOp>(op)) {
    out.assign({negated()});
  } else if (isa<arith::MulFOp>(op)) {
    out.assign({scaled(x(1), x(1)), scaled(x(0), x(0))});
  } else if (isa<math::FmaOp>(op)) {
    out.assign({scaled(x(1), x(1)), scaled(x(0), x(0)), same()});
  } else if (isa<arith::DivFOp>(op)) {
    // y = a / b: ∂a = 1/b, ∂b = −y/b.
    Value inv = m.div(m.c(y, 1.0), x(1));
    out.assign({unbounded(inv), unbounded(m.neg(m.mul(y, inv)))});
  } else if (isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
                 arith::MinNumFOp>(op)) {
    // The operand the result came from, the first on ties.
    Value fromA = m.cmp(P::OEQ, y, x(0));
    out.assign({where(fromA), whereNot(fromA)});
  } else if (isa<arith::SelectOp>(op)) {
    out.assign({none(), where(x(0)), whereNot(x(0))});
  } else if (isa<math::SqrtOp>(op)) {
    // ½/y, and 0 where y = 0 (see the header).
    Value d = m.div(m.c(y, 0.5), y);
    out.assign(
        {unbounded(m.select(m.cmp(P::OGT, y, m.c(y, 0.0)), d, m.c(y, 0.0)))});
  } else if (isa<math::RsqrtOp>(op)) {
    // d a^{-1/2} = −½ a^{-3/2} = −½ y³.
    out.assign({scaled(m.mul(m.c(y, -0.5), m.mul(y, m.mul(y, y))), y)});
  } else if (isa<math::AbsFOp>(op)) {
    out.assign({scaled(m.sign(x(0)))});
  } else if (isa<math::CopySignOp>(op)) {
    // |x| with the sign of s: ∂x = sign(x)·sign(s), nothing for s.
    out.assign({scaled(m.mul(m.sign(x(0)), m.sign(x(1)))), none()});
  } else if (isa<math::SinOp>(op)) {
    out.assign({scaled(m.cos(x(0)), x(0))});
  } else if (isa<math::CosOp>(op)) {
    out.assign({scaled(m.neg(m.sin(x(0))), x(0))});
  } else if (isa<math::ExpOp>(op)) {
    out.assign({scaled(y, y)});
  } else if (isa<math::ExpM1Op>(op)) {
    out.assign({scaled(m.add(y, m.c(y, 1.0)), y)});
  } else if (isa<math::LogOp>(op)) {
    out.assign({unbounded(m.div(m.c(y, 1.0), x(0)))});
  } else if (isa<math::Log1pOp>(op)) {
    out.assign({unbounded(m.div(m.c(y, 1.0), m.add(m.c(y, 1.0), x(0))))});
  } else if (isa<math::TanhOp>(op)) {
    out.assign({scaled(m.sub(m.c(y, 1.0), m.mul(y, y)), y)});
  } else if (isa<math::AtanhOp>(op)) {
    Value a = x(0);
    out.assign(
        {unbounded(m.div(m.c(y, 1.0), m.sub(m.c(y, 1.0), m.mul(a, a))))});
  } else if (isa<math::ErfOp>(op)) {
    // erf' = 2/√π·exp(−a²).
    Value a = x(0);
    out.assign(
        {scaled(m.mul(m.c(y, 1.1283791670955126), m.exp(m.neg(m.mul(a, a)))))});
  } else if (isa<math::AtanOp>(op)) {
    Value a = x(0);
    out.assign(
        {scaled(m.div(m.c(y, 1.0), m.add(m.c(y, 1.0), m.mul(a, a))), a)});
  } else if (isa<math::AsinOp, math::AcosOp>(op)) {
    // asin' = 1/√(1 − a²); acos' = −asin'.
    Value a = x(0);
    Value d = m.div(m.c(y, 1.0), m.sqrt(m.sub(m.c(y, 1.0), m.mul(a, a))));
    out.assign({unbounded(isa<math::AcosOp>(op) ? m.neg(d) : d)});
  } else if (isa<math::Atan2Op>(op)) {
    // y = atan2(s, c): ∂s = c/(s² + c²), ∂c = −s/(s² + c²).
    Value s = x(0), c = x(1);
    Value r2 = m.fma(s, s, m.mul(c, c));
    out.assign({unbounded(m.div(c, r2)), unbounded(m.neg(m.div(s, r2)))});
  } else if (isa<math::PowFOp>(op)) {
    // x^z: ∂x = z·y/x (x ≠ 0), ∂z = y·log x.
    Value a = x(0), z = x(1);
    out.assign(
        {unbounded(m.div(m.mul(z, y), a)), unbounded(m.mul(y, m.log(a)))});
  } else if (isa<math::FloorOp, math::CeilOp, math::RoundOp, math::RoundEvenOp,
                 math::TruncOp>(op)) {
    // Piecewise constant: zero almost everywhere.
    out.assign({none()});
  } else {
    return false;
  }
  return true;
}
