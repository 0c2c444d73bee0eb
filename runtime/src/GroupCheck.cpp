//===- GroupCheck.cpp - Membership checks for built-in groups -------------===//
//
// The tests, by group (k = size of the linear block):
//   SO2, SO3        RᵀR = I and det R = +1
//   SE2, SE3        last row [0 .. 0 1], rotation block as above
//   Aff2            last row [0 0 1], det of the 2x2 linear part > 0
//   Sim3            last row [0 0 0 1], linear part s·R: s = cbrt(det) > 0
//                   and (M/s)ᵀ(M/s) = I
// and, for Aff2 and Sim3, whose linear parts scale, the representable
// range per dtype: the singular values of the linear part must lie within
// [1/R, R] (scaleRange: 2^31 for f32, 2^255 for f64), so that the relative
// element of two inputs (scales up to R^2) and the squares the log and
// distance take of it (R^4) neither overflow nor leave the normal range.
// 1e30·R or 1e-40·I in f32 is refused; the kernels are not rescaled.
// Errors are maximum absolute entry deviations, compared with `!(e <= tol)`
// so that NaN fails.
//
// Declared groups are checked by the model's own membership residual
// (Module.cpp); declaredResidualTolerance scales their tolerance with the
// dtype and the conditioning of the log at the element, since the
// residual of a valid element near a rotation by π is the log's rounding
// error amplified by that conditioning.
//
//===----------------------------------------------------------------------===//

#include "GroupCheck.h"
#include "torsor/GroupFacts.h"

#include <cmath>
#include <limits>
#include <vector>

namespace torsor::rt {

int builtinGroupMatrixSize(const std::string &name) {
  // Built-in groups only (by their NAME, as manifests spell them).
  const facts::Group *g = facts::findGroup(name);
  return g && g->name == name ? static_cast<int>(g->n) : 0;
}

namespace {

/// Formats a tolerance compactly: 1e-04 rather than 1.0e-04.
std::string tolString(double tol) {
  std::string s = format("%.1e", tol);
  size_t dot = s.find(".0e");
  if (dot != std::string::npos)
    s.erase(dot, 2);
  return s;
}

/// "(error E > tol T)".
std::string excess(double err, double tol) {
  return format("(error %.1e > tol ", err) + tolString(tol) + ")";
}

/// Determinant of the k x k top-left block of an n x n matrix (k <= 3).
double det(const double *m, int n, int k) {
  auto a = [&](int i, int j) { return m[i * n + j]; };
  if (k == 2)
    return a(0, 0) * a(1, 1) - a(0, 1) * a(1, 0);
  return a(0, 0) * (a(1, 1) * a(2, 2) - a(1, 2) * a(2, 1)) -
         a(0, 1) * (a(1, 0) * a(2, 2) - a(1, 2) * a(2, 0)) +
         a(0, 2) * (a(1, 0) * a(2, 1) - a(1, 1) * a(2, 0));
}

/// max |(sR)ᵀ(sR)/s² − I| over the k x k top-left block of `m`.
double orthoError(const double *m, int n, int k, double scale) {
  double err = 0;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) {
      double dot = 0;
      for (int r = 0; r < k; ++r)
        dot += m[r * n + i] * m[r * n + j];
      dot /= scale * scale;
      err = std::fmax(err, std::fabs(dot - (i == j ? 1.0 : 0.0)));
      if (std::isnan(dot))
        return dot;
    }
  return err;
}

/// Checks the last row is [0 .. 0 1].
std::string lastRow(const double *m, int n, double tol) {
  double err = 0;
  for (int j = 0; j < n; ++j)
    err = std::fmax(err, std::fabs(m[(n - 1) * n + j] - (j == n - 1)));
  if (err <= tol)
    return "";
  std::string row = "[";
  for (int j = 0; j < n; ++j)
    row += j == n - 1 ? "1]" : "0 ";
  return "last row is not " + row + " " + excess(err, tol);
}

/// Checks the k x k block is a rotation.
std::string rotation(const double *m, int n, int k, double tol) {
  double err = orthoError(m, n, k, 1.0);
  if (!(err <= tol))
    return "rotation block not orthonormal " + excess(err, tol);
  double d = det(m, n, k);
  if (!(std::fabs(d - 1.0) <= tol))
    return format("rotation block has determinant %.2f, expected +1 (a "
                  "reflection)",
                  d);
  return "";
}

/// Checks that the k x k linear part of an Aff2 or Sim3 element has its
/// singular values within [1/R, R], R = rangeOf(dtype): bounds from above
/// by k·max|a_ij| and from below by det / (k·max|a_ij|)^(k-1), both
/// computed in double.
std::string linearRange(const double *m, int n, int k, int32_t dtype) {
  double largest = 0;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j)
      largest = std::fmax(largest, std::fabs(m[i * n + j]));
  double high = k * largest;
  double low = std::fabs(det(m, n, k)) / std::pow(high, k - 1);
  double range = scaleRange(dtype);
  if (high <= range && low >= 1 / range)
    return "";
  std::string fix = dtype == TORSOR_DTYPE_F32
                        ? format("; compile with --dtype=f64 for [%.1e, %.1e]",
                                 1 / scaleRange(TORSOR_DTYPE_F64),
                                 scaleRange(TORSOR_DTYPE_F64))
                        : "";
  return format("linear part is outside the range %s code computes in: its "
                "scale (singular values) reaches [%.1e, %.1e], which must "
                "lie within [%.1e, %.1e] so that products of two elements "
                "and their squares stay normal %s numbers%s",
                dtypeName(dtype), low, high, 1 / range, range, dtypeName(dtype),
                fix.c_str());
}

} // namespace

double scaleRange(int32_t dtype) {
  // R^4 below the largest finite value and 1/R^4 above the smallest normal
  // one: f32 2^128 and 2^-126 give 2^31; f64 2^1024 and 2^-1022 give 2^255.
  return dtype == TORSOR_DTYPE_F32 ? std::ldexp(1.0, 31) : std::ldexp(1.0, 255);
}

std::string checkGroupMatrix(const std::string &group, const double *m,
                             double tol, int32_t dtype) {
  int n = builtinGroupMatrixSize(group);
  for (int i = 0; i < n * n; ++i)
    if (!std::isfinite(m[i]))
      return format("entry (%d, %d) is not finite", i / n, i % n);
  if (group == "SO2" || group == "SO3")
    return rotation(m, n, n, tol);
  std::string why = lastRow(m, n, tol);
  if (!why.empty())
    return why;
  if (group == "SE2" || group == "SE3")
    return rotation(m, n, n - 1, tol);
  if (group == "Aff2") {
    double d = det(m, n, 2);
    if (!(d > 0))
      return format("linear part has determinant %.1e, expected > 0", d);
    return linearRange(m, n, 2, dtype);
  }
  if (group == "Sim3") {
    double s = std::cbrt(det(m, n, 3));
    if (!(s > 0))
      return format("scale cbrt(det) = %.1e of the linear part is not "
                    "positive",
                    s);
    double err = orthoError(m, n, 3, s);
    if (!(err <= tol))
      return "linear part is not a scaled rotation " + excess(err, tol);
    return linearRange(m, n, 3, dtype);
  }
  return "";
}

void readGroupElement(const TorsorTensor &t, int n, int64_t e, double *m) {
  std::vector<int64_t> shape(t.shape, t.shape + t.rank);
  std::vector<int64_t> strides =
      t.strides ? std::vector<int64_t>(t.strides, t.strides + t.rank)
                : rowMajorStrides(shape);
  // Offset of element e: unflatten over the leading dims.
  int64_t offset = 0, rest = e;
  for (int d = t.rank - 3; d >= 0; --d) {
    offset += (rest % shape[d]) * strides[d];
    rest /= shape[d];
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      int64_t at = offset + i * strides[t.rank - 2] + j * strides[t.rank - 1];
      switch (t.dtype) {
      case TORSOR_DTYPE_F32:
        m[i * n + j] = static_cast<const float *>(t.data)[at];
        break;
      case TORSOR_DTYPE_F64:
        m[i * n + j] = static_cast<const double *>(t.data)[at];
        break;
      default:
        m[i * n + j] =
            static_cast<double>(static_cast<const int64_t *>(t.data)[at]);
      }
    }
}

namespace {

/// LU-factors the n x n row-major `a` in place with partial pivoting into
/// `perm`; returns det a (0 when a pivot vanishes).
double luFactor(std::vector<double> &a, int n, std::vector<int> &perm) {
  perm.resize(n);
  double det = 1;
  for (int i = 0; i < n; ++i)
    perm[i] = i;
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i)
      if (std::fabs(a[i * n + k]) > std::fabs(a[p * n + k]))
        p = i;
    if (!(a[p * n + k] != 0))
      return 0;
    if (p != k) {
      for (int j = 0; j < n; ++j)
        std::swap(a[k * n + j], a[p * n + j]);
      std::swap(perm[k], perm[p]);
      det = -det;
    }
    det *= a[k * n + k];
    for (int i = k + 1; i < n; ++i) {
      double f = a[i * n + k] /= a[k * n + k];
      for (int j = k + 1; j < n; ++j)
        a[i * n + j] -= f * a[k * n + j];
    }
  }
  return det;
}

/// ‖a⁻¹‖_F from its LU factors (column by column), +inf when singular.
double inverseNorm(const std::vector<double> &lu, const std::vector<int> &perm,
                   int n) {
  double sum = 0;
  std::vector<double> x(n);
  for (int c = 0; c < n; ++c) {
    for (int i = 0; i < n; ++i) {
      double v = perm[i] == c ? 1.0 : 0.0;
      for (int j = 0; j < i; ++j)
        v -= lu[i * n + j] * x[j];
      x[i] = v;
    }
    for (int i = n - 1; i >= 0; --i) {
      double v = x[i];
      for (int j = i + 1; j < n; ++j)
        v -= lu[i * n + j] * x[j];
      x[i] = v / lu[i * n + i];
    }
    for (double v : x)
      sum += v * v;
  }
  return std::sqrt(sum);
}

} // namespace

double declaredResidualTolerance(double tol, int32_t dtype, const double *g,
                                 int n) {
  double eps = dtype == TORSOR_DTYPE_F32 ? 0x1p-23 : 0x1p-52;
  std::vector<double> a(g, g + n * n);
  std::vector<int> perm;
  double det = luFactor(a, n, perm);
  if (!(det > 0))
    return -1; // det ≤ 0 or NaN: exp of an algebra element has det e^tr > 0
  double c = std::pow(det, 1.0 / n), norm = 0;
  a.assign(g, g + n * n);
  for (int i = 0; i < n; ++i) {
    a[i * n + i] += c;
    for (int j = 0; j < n; ++j)
      norm += g[i * n + j] * g[i * n + j];
  }
  double kappa = 1 / eps; // g + c·I singular: the log has no digits left
  if (luFactor(a, n, perm) != 0)
    kappa = std::fmin(kappa, std::sqrt(norm) * inverseNorm(a, perm, n));
  if (!(kappa < 1 / eps))
    return std::numeric_limits<double>::infinity();
  return std::fmax(tol, 8.0 * n * eps * kappa);
}

Status checkGroupTensor(const std::string &label, const std::string &group,
                        const TorsorTensor &t, double tol) {
  int n = builtinGroupMatrixSize(group);
  if (!n || t.rank < 2 || t.shape[t.rank - 1] != n || t.shape[t.rank - 2] != n)
    return Status();
  std::vector<int64_t> shape(t.shape, t.shape + t.rank);
  int64_t count = numElements(shape) / (n * n);
  std::vector<double> m(n * n);
  for (int64_t e = 0; e < count; ++e) {
    readGroupElement(t, n, e, m.data());
    std::string why = checkGroupMatrix(group, m.data(), tol, t.dtype);
    if (!why.empty())
      return invalidArg(format("%s element %lld is not in %s: %s",
                               label.c_str(), (long long)e, group.c_str(),
                               why.c_str()));
  }
  return Status();
}

} // namespace torsor::rt
