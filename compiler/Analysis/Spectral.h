//===- Spectral.h - Singular values without a BLAS --------------*- C++ -*-===//
//
// The redundancy report needs the singular values of per-head G_QK and G_VO
// to state their numerical rank. Torsor never calls a BLAS or LAPACK, so
// this is a small one-sided Jacobi SVD in double precision: accurate to a
// few ulps of σ_max for every singular value (it never forms AᵀA), which
// is what a rank decision against a relative tolerance needs.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_ANALYSIS_SPECTRAL_H
#define TORSOR_COMPILER_ANALYSIS_SPECTRAL_H

#include <cstdint>
#include <vector>

namespace torsor {

/// Singular values of the row-major m×n matrix `a`, largest first
/// (min(m, n) of them).
std::vector<double> singularValues(const std::vector<double> &a, int64_t m,
                                   int64_t n);

/// How many singular values exceed `relTol · σ_max` (0 for a zero matrix).
int64_t numericalRank(const std::vector<double> &sigma, double relTol);

} // namespace torsor

#endif // TORSOR_COMPILER_ANALYSIS_SPECTRAL_H
