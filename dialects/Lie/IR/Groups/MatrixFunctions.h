//===- MatrixFunctions.h - exp and log of small matrices ------*- C++ -*-===//
//
// Generic (user-declared) groups have no closed-form exp or log, so their
// model falls back on the matrix exponential and principal logarithm of an
// n×n matrix (n = 2..6) written as scalar IR: scaling and squaring with a
// Taylor polynomial for exp, inverse scaling and squaring with Denman–Beavers
// square roots and a Gauss–Legendre Padé approximant for log. The loops
// whose trip count depends on the data (squarings, square roots,
// Denman–Beavers steps, Padé terms) are scf.for/scf.while, so the IR size is
// independent of the iteration counts. docs/groups/matrix-functions.md has
// the algorithms, degrees, thresholds and the NaN policy.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_MATRIXFUNCTIONS_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_MATRIXFUNCTIONS_H

#include "dialects/Lie/IR/GroupModel.h"

namespace torsor::lie {

/// exp of an n×n matrix given as n·n row-major scalars. If `nilpotentIndex`
/// > 0, A^nilpotentIndex = 0 is known and the exact finite series
/// Σ_{k<index} A^k/k! is used; otherwise scaling and squaring with a Taylor
/// approximant (degree 20 in f64, 12 in f32; m.isF32()).
Scalars buildMatrixExp(ScalarBuilder &m, unsigned n, mlir::ValueRange a,
                       unsigned nilpotentIndex);

/// Principal log of an n×n matrix. If `unipotentIndex` > 0,
/// (A−I)^unipotentIndex = 0 is known: exact finite series
/// Σ (−1)^{k+1} N^k / k. Otherwise inverse scaling and squaring:
/// Denman–Beavers square roots until ‖A − I‖₁ ≤ θ, then a
/// Gauss–Legendre (Padé) approximant of log(I + X), times 2^s. Elements with
/// no real principal log (an eigenvalue on the closed negative real axis,
/// detected as a Denman–Beavers iteration that does not converge) give NaN
/// in every entry.
Scalars buildMatrixLog(ScalarBuilder &m, unsigned n, mlir::ValueRange a,
                       unsigned unipotentIndex);

} // namespace torsor::lie

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_MATRIXFUNCTIONS_H
