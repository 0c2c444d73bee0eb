//===- GroupStructure.cpp - Built-in closed forms for declared groups -----===//
//
// Recognition of a declared algebra as a basis change of a built-in
// algebra or of a subalgebra of one (GroupStructure.h): containment by
// least squares in the built-in's basis, the coordinate maps T and T⁺, the
// block-norm mix, and a numerical verification of all three.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/GroupStructure.h"

#include "torsor/GroupFacts.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

using namespace torsor::lie::algebra;

namespace {

/// Relative error allowed by the numerical verification: rounding of a
/// few small solves in double precision, with room for ill-conditioned
/// (but valid) bases.
constexpr double kVerifyTolerance = 1e-9;

/// The unit matrix E_ij of size n, times v.
Matrix unit(unsigned n, unsigned i, unsigned j, double v = 1) {
  Matrix e(n * n, 0.0);
  e[i * n + j] = v;
  return e;
}

/// hat(e_axis) of so(3) in the top-left corner of an n×n matrix.
Matrix so3Hat(unsigned n, unsigned axis) {
  unsigned i = (axis + 1) % 3, j = (axis + 2) % 3;
  Matrix e = unit(n, j, i, 1);
  e[i * n + j] = -1;
  return e;
}

Matrix plus(Matrix a, const Matrix &b) {
  for (size_t i = 0; i < a.size(); ++i)
    a[i] += b[i];
  return a;
}

/// `m` (n×n) in the top-left corner of an N×N zero matrix.
Matrix embed(const Matrix &m, unsigned n, unsigned bigN) {
  Matrix e(bigN * bigN, 0.0);
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j)
      e[i * bigN + j] = m[i * n + j];
  return e;
}

/// Least-squares coordinates of `x` in `basis` (through the inverse Gram
/// matrix `gramInv`), and the relative norm of the remainder.
std::vector<double> coordinates(const std::vector<Matrix> &basis,
                                const Matrix &gramInv, const Matrix &x,
                                double *relResidual) {
  unsigned k = basis.size();
  std::vector<double> rhs(k), c(k, 0.0);
  for (unsigned i = 0; i < k; ++i)
    rhs[i] = frobeniusDot(basis[i], x);
  for (unsigned i = 0; i < k; ++i)
    for (unsigned j = 0; j < k; ++j)
      c[i] += gramInv[i * k + j] * rhs[j];
  if (relResidual) {
    Matrix r = x;
    for (unsigned i = 0; i < k; ++i)
      for (size_t e = 0; e < r.size(); ++e)
        r[e] -= c[i] * basis[i][e];
    double nx = frobeniusNorm(x);
    *relResidual = frobeniusNorm(r) / (nx > 0 ? nx : 1);
  }
  return c;
}

/// Deterministic pseudo-random numbers in [-1, 1) (a 64-bit LCG), so that
/// the verification is the same on every run and machine.
struct Lcg {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  double next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) * 0x1.0p-52 - 1.0;
  }
};

/// `v` as "%.4g".
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

/// The block-norm mix c (declared blocks × built-in blocks) with
/// P_b = Σ_β c_bβ T_βᵀT_β for every declared block b, or empty when some
/// P_b is no such combination. `t` is T (dim B × k, rows in the built-in's
/// block order).
std::vector<double> solveBlockMix(const Matrix &t, unsigned k,
                                  const std::vector<unsigned> &declSizes,
                                  const std::vector<unsigned> &builtinSizes) {
  // M_β = T_βᵀ T_β, k×k each.
  std::vector<Matrix> grams;
  unsigned row = 0;
  for (unsigned size : builtinSizes) {
    Matrix g(k * k, 0.0);
    for (unsigned r = row; r < row + size; ++r)
      for (unsigned a = 0; a < k; ++a)
        for (unsigned b = 0; b < k; ++b)
          g[a * k + b] += t[r * k + a] * t[r * k + b];
    grams.push_back(std::move(g));
    row += size;
  }
  unsigned nb = grams.size();
  std::vector<double> mix;
  unsigned offset = 0;
  for (unsigned size : declSizes) {
    Matrix p(k * k, 0.0);
    for (unsigned a = offset; a < offset + size; ++a)
      p[a * k + a] = 1;
    offset += size;
    // The built-in blocks' Grams have disjoint row supports in T but may
    // overlap as k×k matrices; solve the small normal equations with the
    // zero Grams (blocks the subalgebra does not touch) left out.
    std::vector<unsigned> used;
    for (unsigned beta = 0; beta < nb; ++beta)
      if (frobeniusNorm(grams[beta]) > 0)
        used.push_back(beta);
    unsigned u = used.size();
    Matrix a(u * u), rhs(u);
    for (unsigned i = 0; i < u; ++i) {
      rhs[i] = frobeniusDot(grams[used[i]], p);
      for (unsigned j = 0; j < u; ++j)
        a[i * u + j] = frobeniusDot(grams[used[i]], grams[used[j]]);
    }
    std::vector<double> c(nb, 0.0);
    if (u > 0) {
      Matrix inv = invertSymmetric(u, a);
      for (unsigned i = 0; i < u; ++i)
        for (unsigned j = 0; j < u; ++j)
          c[used[i]] += inv[i * u + j] * rhs[j];
    }
    Matrix r = p;
    for (unsigned beta = 0; beta < nb; ++beta)
      for (size_t e = 0; e < r.size(); ++e)
        r[e] -= c[beta] * grams[beta][e];
    if (!(frobeniusNorm(r) <= kSpanTolerance * frobeniusNorm(p)))
      return {};
    for (double &x : c)
      if (std::abs(x) < 1e-14)
        x = 0;
    mix.insert(mix.end(), c.begin(), c.end());
  }
  return mix;
}

/// Tries one built-in; fills `r` and returns true when it contains the
/// declared algebra. `nearest` keeps the smallest containment residual.
bool tryBuiltin(const Facts &facts, const std::vector<unsigned> &declSizes,
                const BuiltinAlgebra &b, Recognition &r, double &nearest,
                std::string &nearestName) {
  unsigned n = facts.n, k = facts.generators.size(), kB = b.basis.size();
  if (b.n < n || kB < k)
    return false;
  Matrix gram(kB * kB);
  for (unsigned i = 0; i < kB; ++i)
    for (unsigned j = 0; j < kB; ++j)
      gram[i * kB + j] = frobeniusDot(b.basis[i], b.basis[j]);
  Matrix gramInv = invertSymmetric(kB, gram);

  // T: each generator's coordinates in the built-in basis.
  Matrix t(kB * k, 0.0);
  double worst = 0;
  for (unsigned a = 0; a < k; ++a) {
    double res = 0;
    std::vector<double> c =
        coordinates(b.basis, gramInv, embed(facts.generators[a], n, b.n), &res);
    worst = std::max(worst, res);
    for (unsigned i = 0; i < kB; ++i)
      t[i * k + a] = c[i];
  }
  if (worst < nearest) {
    nearest = worst;
    nearestName = b.name;
  }
  if (!(worst <= kSpanTolerance))
    return false;

  // T⁺ = (TᵀT)⁻¹Tᵀ.
  Matrix tt(k * k, 0.0);
  for (unsigned a = 0; a < k; ++a)
    for (unsigned c = 0; c < k; ++c)
      for (unsigned i = 0; i < kB; ++i)
        tt[a * k + c] += t[i * k + a] * t[i * k + c];
  Matrix ttInv = invertSymmetric(k, tt);
  Matrix pinv(k * kB, 0.0);
  for (unsigned a = 0; a < k; ++a)
    for (unsigned i = 0; i < kB; ++i)
      for (unsigned c = 0; c < k; ++c)
        pinv[a * kB + i] += ttInv[a * k + c] * t[i * k + c];

  r = Recognition();
  r.kind = Recognition::Embedded;
  r.builtin = b.name;
  r.builtinN = b.n;
  r.builtinDim = kB;
  r.toBuiltin = t;
  r.fromBuiltin = pinv;
  r.blockMix = solveBlockMix(t, k, declSizes, b.blockSizes);

  // Exact: the built-in's own basis with its block sizes.
  bool exact = !b.hostOnly && b.n == n && kB == k && declSizes == b.blockSizes;
  for (unsigned a = 0; a < k && exact; ++a)
    exact = facts.generators[a] == b.basis[a];
  if (exact)
    r.kind = Recognition::Exact;

  // Verification on pseudo-random elements: X = Σ v_a E_a embedded, its
  // built-in coordinates w_B (least squares), back through T⁺ to v; and
  // the block norms for random λ.
  Lcg rng;
  double err = 0;
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<double> v(k);
    for (double &x : v)
      x = rng.next() * (trial < 4 ? 1.0 : 1e-3);
    Matrix x(n * n, 0.0);
    for (unsigned a = 0; a < k; ++a)
      for (unsigned e = 0; e < n * n; ++e)
        x[e] += v[a] * facts.generators[a][e];
    double res = 0;
    std::vector<double> wB =
        coordinates(b.basis, gramInv, embed(x, n, b.n), &res);
    err = std::max(err, res);
    double vn = 0, dv = 0;
    for (unsigned a = 0; a < k; ++a) {
      double back = 0;
      for (unsigned i = 0; i < kB; ++i)
        back += pinv[a * kB + i] * wB[i];
      dv += (back - v[a]) * (back - v[a]);
      vn += v[a] * v[a];
    }
    err = std::max(err, std::sqrt(dv / vn));
    if (!r.isBlockIsotropic())
      continue;
    // Σ_b λ_b ‖v_b‖² against Σ_b λ_b Σ_β c_bβ ‖w_B,β‖².
    std::vector<double> nB;
    unsigned off = 0;
    for (unsigned size : b.blockSizes) {
      double s = 0;
      for (unsigned i = off; i < off + size; ++i)
        s += wB[i] * wB[i];
      nB.push_back(s);
      off += size;
    }
    double lhs = 0, rhs = 0;
    off = 0;
    for (unsigned bi = 0; bi < declSizes.size(); ++bi) {
      double lambda = 1.5 + rng.next();
      for (unsigned a = off; a < off + declSizes[bi]; ++a)
        lhs += lambda * v[a] * v[a];
      off += declSizes[bi];
      for (unsigned beta = 0; beta < nB.size(); ++beta)
        rhs += lambda * r.blockMix[bi * nB.size() + beta] * nB[beta];
    }
    err = std::max(err, std::abs(lhs - rhs) / lhs);
  }
  r.verifyError = err;
  if (!(err <= kVerifyTolerance)) {
    r = Recognition();
    r.reason = "contained in " + b.name +
               "'s algebra, but the numerical verification failed "
               "(relative error " +
               num(err) + " > " + num(kVerifyTolerance) + ")";
    return false;
  }
  return true;
}

} // namespace

const std::vector<BuiltinAlgebra> &torsor::lie::algebra::getBuiltinAlgebras() {
  static const std::vector<BuiltinAlgebra> all = [] {
    auto sizes = [](const char *name) {
      std::vector<unsigned> s;
      const torsor::facts::Group *g = torsor::facts::findGroup(name);
      for (size_t i = 0; i < g->numBlocks; ++i)
        s.push_back(g->blocks[i].size);
      return s;
    };
    Matrix scale(16, 0.0);
    scale[0] = scale[5] = scale[10] = 1;
    std::vector<BuiltinAlgebra> result;
    result.push_back({"so2", 2, {so3Hat(2, 2)}, sizes("so2")});
    result.push_back(
        {"se2", 3, {so3Hat(3, 2), unit(3, 0, 2), unit(3, 1, 2)}, sizes("se2")});
    result.push_back(
        {"so3", 3, {so3Hat(3, 0), so3Hat(3, 1), so3Hat(3, 2)}, sizes("so3")});
    result.push_back({"co3",
                      3,
                      {so3Hat(3, 0), so3Hat(3, 1), so3Hat(3, 2),
                       plus(plus(unit(3, 0, 0), unit(3, 1, 1)), unit(3, 2, 2))},
                      {3, 1},
                      /*hostOnly=*/true});
    result.push_back({"sim2",
                      3,
                      {so3Hat(3, 2), plus(unit(3, 0, 0), unit(3, 1, 1)),
                       unit(3, 0, 2), unit(3, 1, 2)},
                      {2, 2},
                      /*hostOnly=*/true});
    result.push_back(
        {"gl2",
         2,
         {unit(2, 0, 0), unit(2, 0, 1), unit(2, 1, 0), unit(2, 1, 1)},
         {4},
         /*hostOnly=*/true});
    result.push_back({"aff2",
                      3,
                      {unit(3, 0, 0), unit(3, 0, 1), unit(3, 1, 0),
                       unit(3, 1, 1), unit(3, 0, 2), unit(3, 1, 2)},
                      sizes("aff2")});
    result.push_back({"se3",
                      4,
                      {so3Hat(4, 0), so3Hat(4, 1), so3Hat(4, 2), unit(4, 0, 3),
                       unit(4, 1, 3), unit(4, 2, 3)},
                      sizes("se3")});
    result.push_back({"sim3",
                      4,
                      {so3Hat(4, 0), so3Hat(4, 1), so3Hat(4, 2), unit(4, 0, 3),
                       unit(4, 1, 3), unit(4, 2, 3), scale},
                      sizes("sim3")});
    // SE(2) as 3×3 linear maps, with translations of ℝ³ (AffineExtension.cpp).
    result.push_back({"se2x",
                      4,
                      {so3Hat(4, 2), unit(4, 0, 2), unit(4, 1, 2),
                       unit(4, 0, 3), unit(4, 1, 3), unit(4, 2, 3)},
                      {1, 2, 3},
                      /*hostOnly=*/true});
    return result;
  }();
  return all;
}

Recognition torsor::lie::algebra::recognize(
    const Facts &facts, const std::vector<unsigned> &blockSizes, bool allowed) {
  Recognition none;
  if (!allowed) {
    none.reason = "recognition disabled by the 'generic' keyword";
    return none;
  }
  if (facts.nilpotencyIndex) {
    none.reason = "nilpotent (index " + std::to_string(facts.nilpotencyIndex) +
                  "): exp and log are exact finite series already";
    return none;
  }
  // The first block-isotropic match wins; otherwise the first match.
  double nearest = INFINITY;
  std::string nearestName;
  Recognition first;
  bool haveFirst = false;
  std::string failure;
  for (const BuiltinAlgebra &b : getBuiltinAlgebras()) {
    Recognition r;
    if (!tryBuiltin(facts, blockSizes, b, r, nearest, nearestName)) {
      if (!r.reason.empty() && failure.empty())
        failure = r.reason;
      continue;
    }
    if (r.kind == Recognition::Exact || r.isBlockIsotropic())
      return r;
    if (!haveFirst) {
      first = std::move(r);
      haveFirst = true;
    }
  }
  if (haveFirst) {
    first.reason = "the λ blocks are not combinations of " + first.builtin +
                   "'s blocks in this basis: the pair form evaluates " +
                   first.builtin + "'s closed-form log per pair";
    return first;
  }
  if (!failure.empty())
    none.reason = failure;
  else if (nearestName.empty())
    none.reason = "no built-in group has matrices of this size or larger";
  else
    none.reason = "not a basis change of a built-in algebra or of a "
                  "subalgebra of one (nearest: " +
                  nearestName + ", relative residual " + num(nearest) + " > " +
                  num(kSpanTolerance) + ")";
  return none;
}

std::string
torsor::lie::algebra::describe(const Recognition &r, const Facts &facts,
                               const std::vector<std::string> &names) {
  std::ostringstream os;
  unsigned k = facts.generators.size();
  auto genName = [&](unsigned a) {
    return a < names.size() ? names[a] : "E" + std::to_string(a);
  };
  switch (r.kind) {
  case Recognition::None:
    os << "generic model: " << r.reason;
    return os.str();
  case Recognition::Exact:
    os << "exactly " << r.builtin << "'s basis: every builder is " << r.builtin
       << "'s";
    return os.str();
  case Recognition::Embedded:
    break;
  }
  os << (r.builtinDim == k ? "a basis change of " : "a subalgebra of ")
     << r.builtin;
  if (r.builtinN != facts.n)
    os << " (elements embedded as diag(g, I) in " << r.builtinN << "x"
       << r.builtinN << ")";
  os << "; generators in " << r.builtin << "'s basis:";
  for (unsigned a = 0; a < k; ++a) {
    os << ' ' << genName(a) << " = [";
    for (unsigned i = 0; i < r.builtinDim; ++i)
      os << (i ? ", " : "") << num(r.toBuiltin[i * k + a]);
    os << ']';
  }
  os << "; verified to " << num(r.verifyError);
  if (!r.reason.empty())
    os << "; " << r.reason;
  return os.str();
}
