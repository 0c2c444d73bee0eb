//===- GroupAlgebra.cpp - The analysis of declared generators -------------===//
//
// Span tests use an orthonormal basis of the generators built by modified
// Gram–Schmidt, run twice per vector ("twice is enough"), so that the
// remainder of a vector in the span is at rounding level rather than at the
// level of the basis' loss of orthogonality. Independence is scale-free: a
// generator is dependent when its remainder is a kSpanTolerance fraction of
// its own norm. A bracket's computed value carries rounding error of order
// ε·‖X‖‖Y‖ (‖[X, Y]‖_F ≤ 2‖X‖_F‖Y‖_F), so closure compares its remainder
// against kSpanTolerance·‖X‖_F‖Y‖_F; that also accepts exactly commuting
// pairs, whose bracket is 0.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/GroupAlgebra.h"

#include <cmath>
#include <cstdio>

using namespace torsor::lie::algebra;

namespace {

/// Products of generators below this fraction of their own norm after
/// projection count as in the span when measuring nilpotency.
constexpr double kNilpotencyTolerance = 1e-12;

/// `a` / ‖a‖ (a zero matrix stays zero).
Matrix normalized(const Matrix &a) {
  double n = frobeniusNorm(a);
  Matrix out = a;
  if (n > 0)
    for (double &x : out)
      x /= n;
  return out;
}

/// `v` minus its projection on the orthonormal `basis`.
Matrix remainder(const std::vector<Matrix> &basis, Matrix v) {
  for (int pass = 0; pass < 2; ++pass)
    for (const Matrix &q : basis) {
      double d = frobeniusDot(q, v);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] -= d * q[i];
    }
  return v;
}

/// Appends `v`'s normalised remainder to `basis` unless the remainder is at
/// most `tol`·‖v‖; returns whether it was appended.
bool extend(std::vector<Matrix> &basis, const Matrix &v, double tol) {
  double n0 = frobeniusNorm(v);
  if (n0 == 0)
    return false;
  Matrix r = remainder(basis, v);
  double nr = frobeniusNorm(r);
  if (nr <= tol * n0)
    return false;
  for (double &x : r)
    x /= nr;
  basis.push_back(std::move(r));
  return true;
}

} // namespace

double torsor::lie::algebra::frobeniusDot(const Matrix &a, const Matrix &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// The Frobenius norm, scaled by the largest entry first so that entries
/// of 1e-300 or 1e300 neither underflow to 0 nor overflow to ∞ in the sum
/// of squares (independence is scale-free, and so must its arithmetic be).
double torsor::lie::algebra::frobeniusNorm(const Matrix &a) {
  double scale = 0;
  for (double x : a)
    scale = std::fmax(scale, std::fabs(x));
  if (scale == 0 || !std::isfinite(scale))
    return scale;
  double s = 0;
  for (double x : a)
    s += (x / scale) * (x / scale);
  return scale * std::sqrt(s);
}

Matrix torsor::lie::algebra::invertSymmetric(unsigned k, Matrix a) {
  Matrix inv(k * k, 0.0);
  for (unsigned i = 0; i < k; ++i)
    inv[i * k + i] = 1;
  for (unsigned c = 0; c < k; ++c) {
    unsigned p = c;
    for (unsigned r = c + 1; r < k; ++r)
      if (std::abs(a[r * k + c]) > std::abs(a[p * k + c]))
        p = r;
    for (unsigned j = 0; j < k; ++j) {
      std::swap(a[c * k + j], a[p * k + j]);
      std::swap(inv[c * k + j], inv[p * k + j]);
    }
    double d = a[c * k + c];
    for (unsigned j = 0; j < k; ++j) {
      a[c * k + j] /= d;
      inv[c * k + j] /= d;
    }
    for (unsigned r = 0; r < k; ++r) {
      if (r == c)
        continue;
      double f = a[r * k + c];
      for (unsigned j = 0; j < k; ++j) {
        a[r * k + j] -= f * a[c * k + j];
        inv[r * k + j] -= f * inv[c * k + j];
      }
    }
  }
  return inv;
}

Matrix torsor::lie::algebra::multiply(unsigned n, const Matrix &a,
                                      const Matrix &b) {
  Matrix c(n * n, 0.0);
  for (unsigned i = 0; i < n; ++i)
    for (unsigned k = 0; k < n; ++k)
      for (unsigned j = 0; j < n; ++j)
        c[i * n + j] += a[i * n + k] * b[k * n + j];
  return c;
}

Problem torsor::lie::algebra::analyze(unsigned n,
                                      const std::vector<Matrix> &generators,
                                      Facts &facts) {
  Problem p;
  if (n < kMinMatrixSize || n > kMaxMatrixSize) {
    p.kind = Problem::MatrixSize;
    return p;
  }
  unsigned nn = n * n, k = generators.size();
  if (k == 0 || k > nn) {
    p.kind = Problem::GeneratorCount;
    return p;
  }
  for (unsigned a = 0; a < k; ++a) {
    p.a = a;
    if (generators[a].size() != nn) {
      p.kind = Problem::MatrixSize;
      return p;
    }
    for (double x : generators[a])
      if (!std::isfinite(x)) {
        p.kind = Problem::NonFinite;
        return p;
      }
  }

  // Linear independence, in declaration order.
  std::vector<Matrix> basis;
  for (unsigned a = 0; a < k; ++a)
    if (!extend(basis, generators[a], kSpanTolerance)) {
      p.kind = Problem::Dependent;
      p.a = a;
      return p;
    }

  // Closure under the bracket.
  for (unsigned a = 0; a < k; ++a)
    for (unsigned b = a + 1; b < k; ++b) {
      // The bracket is bilinear and the span scale-free: test it on the
      // normalised generators, so that 1e±300 entries do not overflow.
      Matrix x = normalized(generators[a]), y = normalized(generators[b]);
      Matrix xy = multiply(n, x, y), yx = multiply(n, y, x);
      Matrix br(nn);
      for (unsigned i = 0; i < nn; ++i)
        br[i] = xy[i] - yx[i];
      if (frobeniusNorm(remainder(basis, br)) > kSpanTolerance) {
        p.kind = Problem::NotClosed;
        p.a = a;
        p.b = b;
        // Reported at the generators' own scale.
        const Matrix &gx = generators[a], &gy = generators[b];
        Matrix gxy = multiply(n, gx, gy), gyx = multiply(n, gy, gx);
        for (unsigned i = 0; i < nn; ++i)
          br[i] = gxy[i] - gyx[i];
        p.bracket = std::move(br);
        return p;
      }
    }

  facts = Facts();
  facts.n = n;
  facts.generators = generators;

  // Dual basis through the Gram matrix.
  Matrix gram(k * k);
  for (unsigned a = 0; a < k; ++a)
    for (unsigned b = 0; b < k; ++b)
      gram[a * k + b] = frobeniusDot(generators[a], generators[b]);
  Matrix gramInv = invertSymmetric(k, gram);
  facts.dual.assign(k, Matrix(nn, 0.0));
  for (unsigned a = 0; a < k; ++a)
    for (unsigned b = 0; b < k; ++b)
      for (unsigned i = 0; i < nn; ++i)
        facts.dual[a][i] += gramInv[a * k + b] * generators[b][i];

  // Nilpotency: W_1 = span of the generators, W_j = span of E_a W_{j−1};
  // the first j with W_j = 0 is the index (X^j = 0 on the whole algebra).
  std::vector<Matrix> level;
  for (const Matrix &g : generators)
    extend(level, g, kNilpotencyTolerance);
  for (unsigned j = 2; j <= n + 1 && !level.empty(); ++j) {
    std::vector<Matrix> next;
    for (const Matrix &g : generators)
      for (const Matrix &w : level)
        extend(next, multiply(n, g, w), kNilpotencyTolerance);
    level = std::move(next);
    if (level.empty())
      facts.nilpotencyIndex = j;
  }

  // Affine structure, and orthogonality of the linear part.
  facts.affine = true;
  for (const Matrix &g : generators)
    for (unsigned j = 0; j < n; ++j)
      facts.affine &= g[(n - 1) * n + j] == 0.0;
  unsigned lin = facts.affine ? n - 1 : n;
  facts.orthogonal = true;
  for (const Matrix &g : generators)
    for (unsigned i = 0; i < lin; ++i)
      for (unsigned j = 0; j < lin; ++j)
        facts.orthogonal &= g[i * n + j] == -g[j * n + i];
  return p;
}

std::string torsor::lie::algebra::formatMatrix(const Matrix &m, unsigned n) {
  std::string text = "[";
  for (unsigned i = 0; i < n; ++i) {
    text += i ? ", [" : "[";
    for (unsigned j = 0; j < n; ++j) {
      char buf[32];
      double v = m[i * n + j];
      std::snprintf(buf, sizeof(buf), "%.4g", std::abs(v) < 1e-12 ? 0.0 : v);
      text += (j ? ", " : "") + std::string(buf);
    }
    text += "]";
  }
  return text + "]";
}

std::string
torsor::lie::algebra::describe(const Problem &p, unsigned n,
                               const std::vector<std::string> &names) {
  auto name = [&](unsigned a) {
    return a < names.size() ? names[a] : "E" + std::to_string(a);
  };
  switch (p.kind) {
  case Problem::None:
    return "spans a Lie algebra";
  case Problem::MatrixSize:
    return "expects " + std::to_string(kMinMatrixSize) + " ≤ n ≤ " +
           std::to_string(kMaxMatrixSize) + " and generators of n·n entries";
  case Problem::GeneratorCount:
    return "expects between 1 and n² = " + std::to_string(n * n) +
           " generators";
  case Problem::NonFinite:
    return "expects finite generator entries, found a NaN or infinity in " +
           name(p.a);
  case Problem::Dependent:
    return "expects linearly independent generators, found " + name(p.a) +
           " in the span of the generators before it";
  case Problem::NotClosed:
    return "expects generators closed under the bracket, found [" + name(p.a) +
           ", " + name(p.b) + "] = " + formatMatrix(p.bracket, n) +
           " outside their span";
  }
  return "";
}
