//===- Spectral.cpp - One-sided Jacobi SVD --------------------------------===//
//
// Hestenes' one-sided Jacobi: rotate pairs of columns until all columns are
// mutually orthogonal; the column norms are then the singular values. Each
// rotation is the exact 2×2 symmetric Schur rotation (Golub & Van Loan
// §8.6.3). The sweep stops when no pair has |cos angle| above a few ulps.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/Spectral.h"

#include <algorithm>
#include <cmath>
#include <limits>

std::vector<double> torsor::singularValues(const std::vector<double> &a,
                                           int64_t m, int64_t n) {
  // Work on the orientation with fewer columns: σ(A) = σ(Aᵀ).
  bool transpose = n > m;
  int64_t rows = transpose ? n : m, cols = transpose ? m : n;
  // Column-major copy: column j is u[j*rows .. j*rows + rows).
  std::vector<double> u(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double v = a[static_cast<size_t>(i * n + j)];
      if (transpose)
        u[static_cast<size_t>(i * rows + j)] = v;
      else
        u[static_cast<size_t>(j * rows + i)] = v;
    }
  const double eps = std::numeric_limits<double>::epsilon();
  for (int sweep = 0; sweep < 80; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p + 1 < cols; ++p)
      for (int64_t q = p + 1; q < cols; ++q) {
        double *up = &u[static_cast<size_t>(p * rows)];
        double *uq = &u[static_cast<size_t>(q * rows)];
        double alpha = 0, beta = 0, gamma = 0;
        for (int64_t i = 0; i < rows; ++i) {
          alpha += up[i] * up[i];
          beta += uq[i] * uq[i];
          gamma += up[i] * uq[i];
        }
        if (gamma == 0.0 || std::abs(gamma) <= eps * std::sqrt(alpha * beta))
          continue;
        rotated = true;
        double zeta = (beta - alpha) / (2.0 * gamma);
        double t = (zeta >= 0 ? 1.0 : -1.0) /
                   (std::abs(zeta) + std::sqrt(1.0 + zeta * zeta));
        double c = 1.0 / std::sqrt(1.0 + t * t), s = c * t;
        for (int64_t i = 0; i < rows; ++i) {
          double x = up[i], y = uq[i];
          up[i] = c * x - s * y;
          uq[i] = s * x + c * y;
        }
      }
    if (!rotated)
      break;
  }
  std::vector<double> sigma(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < rows; ++i)
      sum += u[static_cast<size_t>(j * rows + i)] *
             u[static_cast<size_t>(j * rows + i)];
    sigma[static_cast<size_t>(j)] = std::sqrt(sum);
  }
  std::sort(sigma.begin(), sigma.end(), std::greater<double>());
  return sigma;
}

int64_t torsor::numericalRank(const std::vector<double> &sigma, double relTol) {
  if (sigma.empty() || sigma.front() == 0.0)
    return 0;
  double cut = relTol * sigma.front();
  return std::count_if(sigma.begin(), sigma.end(),
                       [&](double s) { return s > cut; });
}
