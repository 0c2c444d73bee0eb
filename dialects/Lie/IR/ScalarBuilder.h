//===- ScalarBuilder.h - Terse scalar arithmetic for group models -*- C++
//-*-===//
//
// Group models write closed-form formulas (Rodrigues, V⁻¹, series branches)
// as straight-line scalar IR. ScalarBuilder keeps those formulas readable:
// `m.mul(m.c(0.5), m.sub(a, b))` instead of five builder calls, with one
// float type for the whole formula.
//
// The same formula builds SIMD code unchanged: a builder made with `lanes`
// > 0 works on `vector<lanes x f32/f64>` values, one pair or element per
// lane. Only constants differ (splats); every arith/math op, compare and
// select is element-wise on vectors, so straight-line model code needs no
// change. Formulas that build regions (loops) stay scalar.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_SCALARBUILDER_H
#define TORSOR_DIALECTS_LIE_IR_SCALARBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace torsor::lie {

/// Builds scalar arith/math ops of one float type at one location.
class ScalarBuilder {
public:
  /// Scalars of `type`, or with `lanes` > 0 vectors of that many `type`s.
  ScalarBuilder(mlir::ImplicitLocOpBuilder &b, mlir::FloatType type,
                unsigned lanes = 0)
      : b(b), type(type), lanes(lanes) {}

  mlir::ImplicitLocOpBuilder &builder() { return b; }
  /// The element type (the scalar type even when building vectors).
  mlir::FloatType getType() const { return type; }
  /// The type of every value the formulas see: the scalar or its vector.
  mlir::Type getValueType() const {
    if (lanes == 0)
      return type;
    return mlir::VectorType::get({static_cast<int64_t>(lanes)}, type);
  }
  /// Lanes per value; 0 when building scalars.
  unsigned getLanes() const { return lanes; }
  /// True when the formulas are built in float32 (series cut-offs differ).
  bool isF32() { return type.getWidth() == 32; }

  /// A constant of the formula's type (a splat when building vectors).
  mlir::Value c(double v) {
    mlir::FloatAttr scalar = b.getFloatAttr(type, v);
    if (lanes == 0)
      return mlir::arith::ConstantOp::create(b, scalar);
    auto vectorType = mlir::cast<mlir::VectorType>(getValueType());
    return mlir::arith::ConstantOp::create(
        b, mlir::DenseElementsAttr::get(vectorType, scalar.getValue()));
  }
  /// `x` (a scalar of the element type) in every lane; `x` itself when
  /// building scalars.
  mlir::Value splat(mlir::Value x) {
    if (lanes == 0)
      return x;
    return mlir::vector::BroadcastOp::create(b, getValueType(), x);
  }
  mlir::Value add(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddFOp::create(b, x, y);
  }
  mlir::Value sub(mlir::Value x, mlir::Value y) {
    return mlir::arith::SubFOp::create(b, x, y);
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) {
    return mlir::arith::MulFOp::create(b, x, y);
  }
  mlir::Value div(mlir::Value x, mlir::Value y) {
    return mlir::arith::DivFOp::create(b, x, y);
  }
  mlir::Value neg(mlir::Value x) { return mlir::arith::NegFOp::create(b, x); }
  /// x·y + z, fused.
  mlir::Value fma(mlir::Value x, mlir::Value y, mlir::Value z) {
    return mlir::math::FmaOp::create(b, x, y, z);
  }
  mlir::Value sqr(mlir::Value x) { return mul(x, x); }
  mlir::Value sqrt(mlir::Value x) { return mlir::math::SqrtOp::create(b, x); }
  mlir::Value abs(mlir::Value x) { return mlir::math::AbsFOp::create(b, x); }
  mlir::Value sin(mlir::Value x) { return mlir::math::SinOp::create(b, x); }
  mlir::Value cos(mlir::Value x) { return mlir::math::CosOp::create(b, x); }
  mlir::Value exp(mlir::Value x) { return mlir::math::ExpOp::create(b, x); }
  mlir::Value expm1(mlir::Value x) { return mlir::math::ExpM1Op::create(b, x); }
  mlir::Value log(mlir::Value x) { return mlir::math::LogOp::create(b, x); }
  mlir::Value log1p(mlir::Value x) { return mlir::math::Log1pOp::create(b, x); }
  mlir::Value atan2(mlir::Value y, mlir::Value x) {
    return mlir::math::Atan2Op::create(b, y, x);
  }
  mlir::Value atanh(mlir::Value x) { return mlir::math::AtanhOp::create(b, x); }
  mlir::Value copysign(mlir::Value mag, mlir::Value sign) {
    return mlir::math::CopySignOp::create(b, mag, sign);
  }
  mlir::Value max(mlir::Value x, mlir::Value y) {
    return mlir::arith::MaximumFOp::create(b, x, y);
  }
  mlir::Value min(mlir::Value x, mlir::Value y) {
    return mlir::arith::MinimumFOp::create(b, x, y);
  }
  /// min(max(x, lo), hi) for an x that is never NaN (a quantity of finite
  /// inputs): `nnan nsz` lets x86 use one maxps and one minps, where the
  /// IEEE maximum/minimum also test for NaN and for the sign of zero.
  mlir::Value clampFinite(mlir::Value x, mlir::Value lo, mlir::Value hi) {
    auto flags =
        mlir::arith::FastMathFlags::nnan | mlir::arith::FastMathFlags::nsz;
    mlir::Value low = mlir::arith::MaximumFOp::create(b, x, lo, flags);
    return mlir::arith::MinimumFOp::create(b, low, hi, flags);
  }
  /// Ordered x < y (false on NaN).
  mlir::Value lt(mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpFOp::create(b, mlir::arith::CmpFPredicate::OLT, x,
                                       y);
  }
  mlir::Value gt(mlir::Value x, mlir::Value y) { return lt(y, x); }
  mlir::Value select(mlir::Value cond, mlir::Value x, mlir::Value y) {
    return mlir::arith::SelectOp::create(b, cond, x, y);
  }
  mlir::Value andI(mlir::Value x, mlir::Value y) {
    return mlir::arith::AndIOp::create(b, x, y);
  }
  /// Horner evaluation of Σ coeffs[k] xᵏ.
  mlir::Value poly(mlir::Value x, llvm::ArrayRef<double> coeffs) {
    mlir::Value acc = c(coeffs.back());
    for (double k : llvm::reverse(coeffs.drop_back()))
      acc = fma(acc, x, c(k));
    return acc;
  }
  /// Σ xs[i]·ys[i].
  mlir::Value dot(mlir::ValueRange xs, mlir::ValueRange ys) {
    mlir::Value acc = mul(xs[0], ys[0]);
    for (size_t i = 1; i < xs.size(); ++i)
      acc = fma(xs[i], ys[i], acc);
    return acc;
  }

private:
  mlir::ImplicitLocOpBuilder &b;
  mlir::FloatType type;
  unsigned lanes;
};

} // namespace torsor::lie

#endif // TORSOR_DIALECTS_LIE_IR_SCALARBUILDER_H
