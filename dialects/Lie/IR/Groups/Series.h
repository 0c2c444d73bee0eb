//===- Series.h - Taylor coefficients shared by group models ----*- C++ -*-===//
//
// The series several closed forms share (Aff(2)'s and Sim(3)'s translation
// factors), kept in one place so each coefficient is written and reviewed
// once. Each table is Horner-ready for ScalarBuilder::poly.
//
// Also the coefficients of V = Σ Lᵏ/(k+1)! and V⁻¹ for a rotation generator
// L with L³ = −θ²L (SE(3)'s ω^, and the rotation part of AffineExtension's
// SE(2) ⋉ ℝᵐ): each is a closed form with its Taylor series below a small
// angle, built once here for both.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_SERIES_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_SERIES_H

#include "dialects/Lie/IR/ScalarBuilder.h"

namespace torsor::lie::series {

/// Taylor coefficients of φ(z) = (eᶻ − 1)/z: 1/(k+1)!.
inline constexpr double kPhi[] = {1.0,
                                  1.0 / 2,
                                  1.0 / 6,
                                  1.0 / 24,
                                  1.0 / 120,
                                  1.0 / 720,
                                  1.0 / 5040,
                                  1.0 / 40320,
                                  1.0 / 362880,
                                  1.0 / 3628800,
                                  1.0 / 39916800,
                                  1.0 / 479001600,
                                  1.0 / 6227020800,
                                  1.0 / 87178291200,
                                  1.0 / 1307674368000};

/// Taylor coefficients of ψ(z) = z/(eᶻ − 1): B_k/k! (B₁ = −½).
inline constexpr double kPsi[] = {1.0,
                                  -1.0 / 2,
                                  1.0 / 12,
                                  0.0,
                                  -1.0 / 720,
                                  0.0,
                                  1.0 / 30240,
                                  0.0,
                                  -1.0 / 1209600,
                                  0.0,
                                  1.0 / 47900160,
                                  0.0,
                                  -691.0 / 1307674368000,
                                  0.0,
                                  1.0 / 74724249600};

/// Below this |θ| the rotation coefficients below use their Taylor series
/// (three terms: the truncation error is under the dtype's rounding there).
inline double rotationSmallAngle(ScalarBuilder &m) {
  return m.isF32() ? 2e-2 : 1e-3;
}

/// V⁻¹'s coefficient for L³ = −θ²L: V⁻¹ = I − ½L + c·L² with
/// c(θ) = θ⁻²(1 − (θ/2)cot(θ/2)), and its series 1/12 + θ²/720 + θ⁴/30240
/// where `small` holds. Even in θ, so a signed θ (SO(2)'s) works too; at
/// θ = π, c = 1/π² stays smooth.
inline mlir::Value inverseVCoefficient(ScalarBuilder &m, mlir::Value theta,
                                       mlir::Value theta2, mlir::Value small) {
  mlir::Value half = m.mul(m.c(0.5), theta);
  mlir::Value halfCot = m.div(m.mul(half, m.cos(half)), m.sin(half));
  return m.select(small,
                  m.poly(theta2, {1.0 / 12.0, 1.0 / 720.0, 1.0 / 30240.0}),
                  m.div(m.sub(m.c(1.0), halfCot), theta2));
}

/// V's coefficients for L³ = −θ²L: V = I + a·L + b·L² with
/// a(θ) = (1 − cos θ)/θ², in the half-angle form ½(sin(θ/2)/(θ/2))² that
/// has no cancellation in float32, and b(θ) = (θ − sin θ)/θ³; their series
/// ½ − θ²/24 + θ⁴/720 and 1/6 − θ²/120 + θ⁴/5040 where `small` holds.
inline std::pair<mlir::Value, mlir::Value> expVCoefficients(ScalarBuilder &m,
                                                            mlir::Value theta,
                                                            mlir::Value theta2,
                                                            mlir::Value small) {
  mlir::Value half = m.mul(m.c(0.5), theta);
  mlir::Value a =
      m.select(small, m.poly(theta2, {0.5, -1.0 / 24.0, 1.0 / 720.0}),
               m.mul(m.c(0.5), m.sqr(m.div(m.sin(half), half))));
  mlir::Value b =
      m.select(small, m.poly(theta2, {1.0 / 6.0, -1.0 / 120.0, 1.0 / 5040.0}),
               m.div(m.sub(theta, m.sin(theta)), m.mul(theta2, theta)));
  return {a, b};
}

} // namespace torsor::lie::series

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_SERIES_H
