//===- Series.h - Taylor coefficients shared by group models ----*- C++ -*-===//
//
// The series several closed forms share (Aff(2)'s and Sim(3)'s translation
// factors), kept in one place so each coefficient is written and reviewed
// once. Each table is Horner-ready for ScalarBuilder::poly.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_SERIES_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_SERIES_H

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

} // namespace torsor::lie::series

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_SERIES_H
