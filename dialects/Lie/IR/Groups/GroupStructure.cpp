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
#include <functional>
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

/// T⁺ = (TᵀT)⁻¹Tᵀ (k × kB) of T (kB × k, full column rank): exact on
/// T's image.
Matrix pseudoInverse(const Matrix &t, unsigned kB, unsigned k) {
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
  return pinv;
}

/// The host coordinates w_B of an algebra element X (n×n, row-major);
/// raises `err` to X's relative distance from the host's span (and, for a
/// direct sum, from the blocks).
using HostCoordinates =
    std::function<std::vector<double>(const Matrix &x, double &err)>;

/// The numerical verification both identifications share, on 8 fixed
/// pseudo-random elements X = Σ v_a E_a (four with |v_a| ≤ 1, four with
/// |v_a| ≤ 1e-3): X's host coordinates w_B (`hostCoords`, which also
/// measures the containment), the round trip T⁺w_B = v, and, when `r` is
/// block-isotropic, the block-norm identity Σ_b λ_b‖v_b‖² = Σ_b λ_b Σ_β
/// c_bβ‖w_B,β‖² for random λ. Returns the largest relative error.
double verifyIdentification(const std::vector<Matrix> &gens, unsigned n,
                            const Recognition &r,
                            const std::vector<unsigned> &declSizes,
                            const std::vector<unsigned> &hostSizes,
                            const HostCoordinates &hostCoords) {
  unsigned k = gens.size(), kB = r.builtinDim;
  Lcg rng;
  double err = 0;
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<double> v(k);
    for (double &x : v)
      x = rng.next() * (trial < 4 ? 1.0 : 1e-3);
    Matrix x(n * n, 0.0);
    for (unsigned a = 0; a < k; ++a)
      for (unsigned e = 0; e < n * n; ++e)
        x[e] += v[a] * gens[a][e];
    std::vector<double> wB = hostCoords(x, err);
    double vn = 0, dv = 0;
    for (unsigned a = 0; a < k; ++a) {
      double back = 0;
      for (unsigned i = 0; i < kB; ++i)
        back += r.fromBuiltin[a * kB + i] * wB[i];
      dv += (back - v[a]) * (back - v[a]);
      vn += v[a] * v[a];
    }
    err = std::max(err, std::sqrt(dv / vn));
    if (!r.isBlockIsotropic())
      continue;
    // Σ_b λ_b ‖v_b‖² against Σ_b λ_b Σ_β c_bβ ‖w_B,β‖².
    std::vector<double> nB;
    unsigned off = 0;
    for (unsigned size : hostSizes) {
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
  return err;
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

  Matrix pinv = pseudoInverse(t, kB, k);

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
  double err =
      verifyIdentification(facts.generators, n, r, declSizes, b.blockSizes,
                           [&](const Matrix &x, double &err) {
                             double res = 0;
                             std::vector<double> wB = coordinates(
                                 b.basis, gramInv, embed(x, n, b.n), &res);
                             err = std::max(err, res);
                             return wB;
                           });
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

namespace {

/// recognize() on one host built-in: the first block-isotropic (or exact)
/// match, else the first match (with the per-pair reason), else None with
/// the nearest built-in.
Recognition recognizeHost(const Facts &facts,
                          const std::vector<unsigned> &blockSizes) {
  Recognition none;
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

/// "{0, 1, 3}".
std::string indexList(const std::vector<unsigned> &indices) {
  std::string s = "{";
  for (size_t i = 0; i < indices.size(); ++i)
    s += (i ? ", " : "") + std::to_string(indices[i]);
  return s + "}";
}

/// The `indices` rows and columns of the n×n matrix `x`.
Matrix restrictTo(const Matrix &x, unsigned n,
                  const std::vector<unsigned> &indices) {
  unsigned m = indices.size();
  Matrix r(m * m);
  for (unsigned i = 0; i < m; ++i)
    for (unsigned j = 0; j < m; ++j)
      r[i * m + j] = x[indices[i] * n + indices[j]];
  return r;
}

/// Gram matrix inverse of `basis` (each of one size).
Matrix gramInverse(const std::vector<Matrix> &basis) {
  unsigned k = basis.size();
  Matrix gram(k * k);
  for (unsigned i = 0; i < k; ++i)
    for (unsigned j = 0; j < k; ++j)
      gram[i * k + j] = frobeniusDot(basis[i], basis[j]);
  return invertSymmetric(k, gram);
}

/// Recognition of a direct sum of ideals on disjoint coordinate blocks
/// (GroupStructure.h, "Direct sums"). None with an empty reason when the
/// generators are not block diagonal in two or more blocks; None with the
/// reason when they are but the algebra is not the sum, or a factor has no
/// closed form, or the verification fails.
Recognition recognizeProduct(const Facts &facts,
                             const std::vector<unsigned> &declSizes) {
  Recognition none;
  unsigned n = facts.n, k = facts.generators.size();
  const std::vector<Matrix> &gens = facts.generators;
  bool affine = true;
  for (const Matrix &g : gens)
    for (unsigned j = 0; j < n; ++j)
      affine = affine && g[(n - 1) * n + j] == 0;
  unsigned lin = affine ? n - 1 : n;

  // Connected components of the coordinates that some generator couples
  // (exact zeros only: a coupling of 1e-12 is a coupling).
  std::vector<unsigned> parent(lin);
  for (unsigned i = 0; i < lin; ++i)
    parent[i] = i;
  auto find = [&](unsigned i) {
    while (parent[i] != i)
      i = parent[i] = parent[parent[i]];
    return i;
  };
  std::vector<bool> touched(lin, false), translates(lin, false);
  for (const Matrix &g : gens)
    for (unsigned i = 0; i < lin; ++i) {
      for (unsigned j = 0; j < lin; ++j)
        if (g[i * n + j] != 0) {
          touched[i] = touched[j] = true;
          parent[find(i)] = find(j);
        }
      if (affine && g[i * n + n - 1] != 0)
        touched[i] = translates[i] = true;
    }
  std::vector<std::vector<unsigned>> blocks;
  std::vector<int> blockOf(lin, -1);
  for (unsigned i = 0; i < lin; ++i) {
    if (!touched[i])
      continue;
    unsigned root = find(i);
    if (blockOf[root] < 0) {
      blockOf[root] = blocks.size();
      blocks.emplace_back();
    }
    blocks[blockOf[root]].push_back(i);
  }
  if (blocks.size() < 2)
    return none;
  for (std::vector<unsigned> &blk : blocks) {
    bool any = false;
    for (unsigned i : blk)
      any = any || translates[i];
    if (any)
      blk.push_back(n - 1);
  }

  // Each block's restriction 𝔤_c = span{E_a|c}, and the coordinates S of
  // every E_a|c in a basis F_c of it.
  struct Part {
    std::vector<Matrix> basis;
    Matrix gramInv;
  };
  std::vector<Part> parts(blocks.size());
  unsigned sum = 0;
  for (unsigned c = 0; c < blocks.size(); ++c) {
    for (const Matrix &g : gens) {
      Matrix r = restrictTo(g, n, blocks[c]);
      double norm = frobeniusNorm(r);
      if (norm == 0)
        continue;
      double res = 1;
      if (!parts[c].basis.empty())
        coordinates(parts[c].basis, parts[c].gramInv, r, &res);
      if (res > kSpanTolerance) {
        parts[c].basis.push_back(r);
        parts[c].gramInv = gramInverse(parts[c].basis);
      }
    }
    sum += parts[c].basis.size();
  }
  std::string blockNames;
  for (unsigned c = 0; c < blocks.size(); ++c)
    blockNames += (c ? ", " : "") + indexList(blocks[c]);
  if (sum != k) {
    none.reason = "block diagonal on the coordinates " + blockNames +
                  ", but not the direct sum of its blocks: their parts span " +
                  std::to_string(sum) + " dimensions, more than the " +
                  std::to_string(k) +
                  " generators (a generator moves two blocks together)";
    return none;
  }

  // The factors and T = blockdiag(T_c)·S.
  Recognition r;
  r.kind = Recognition::Product;
  std::vector<Matrix> tc(blocks.size());
  std::vector<unsigned> hostSizes;
  unsigned offset = 0;
  for (unsigned c = 0; c < blocks.size(); ++c) {
    Factor f;
    f.indices = blocks[c];
    unsigned m = f.indices.size(), d = parts[c].basis.size();
    f.offset = offset;
    if (m == 1) {
      f.kind = Factor::Scalar;
      f.host = "gl1";
      f.hostN = f.hostDim = 1;
      f.hostBasis = {Matrix{1.0}};
      f.hostBlockSizes = {1};
      tc[c] = parts[c].basis[0];
    } else {
      Facts ff;
      if (Problem p = analyze(m, parts[c].basis, ff)) {
        none.reason = "the block " + indexList(f.indices) +
                      " is not a Lie algebra: " + describe(p, m);
        return none;
      }
      if (ff.nilpotencyIndex) {
        f.kind = Factor::Nilpotent;
        f.host = "nil";
        f.hostN = m;
        f.hostDim = d;
        f.hostBasis = parts[c].basis;
        f.hostBlockSizes.assign(d, 1);
        f.dual = ff.dual;
        f.nilpotencyIndex = ff.nilpotencyIndex;
        tc[c].assign(d * d, 0.0);
        for (unsigned i = 0; i < d; ++i)
          tc[c][i * d + i] = 1;
      } else {
        Recognition fr = recognizeHost(ff, {d});
        if (fr.kind == Recognition::None) {
          none.reason = "block diagonal on the coordinates " + blockNames +
                        ", but the block " + indexList(f.indices) +
                        " has no closed form: " + fr.reason;
          return none;
        }
        f.kind = Factor::Host;
        f.host = fr.builtin;
        f.hostN = fr.builtinN;
        f.hostDim = fr.builtinDim;
        for (const BuiltinAlgebra &b : getBuiltinAlgebras())
          if (b.name == fr.builtin) {
            f.hostBasis = b.basis;
            f.hostBlockSizes = b.blockSizes;
          }
        tc[c] = fr.toBuiltin;
      }
    }
    offset += f.hostDim;
    hostSizes.insert(hostSizes.end(), f.hostBlockSizes.begin(),
                     f.hostBlockSizes.end());
    r.builtin += (c ? " + " : "") + f.host;
    r.factors.push_back(std::move(f));
  }
  unsigned kB = offset;
  r.builtinDim = kB;
  Matrix t(kB * k, 0.0);
  for (unsigned c = 0; c < blocks.size(); ++c) {
    const Factor &f = r.factors[c];
    unsigned d = parts[c].basis.size();
    for (unsigned a = 0; a < k; ++a) {
      std::vector<double> s =
          coordinates(parts[c].basis, parts[c].gramInv,
                      restrictTo(gens[a], n, f.indices), nullptr);
      for (unsigned i = 0; i < f.hostDim; ++i) {
        double acc = 0;
        for (unsigned j = 0; j < d; ++j)
          acc += tc[c][i * d + j] * s[j];
        t[(f.offset + i) * k + a] = acc;
      }
    }
  }
  Matrix pinv = pseudoInverse(t, kB, k);
  r.toBuiltin = t;
  r.fromBuiltin = pinv;
  r.blockMix = solveBlockMix(t, k, declSizes, hostSizes);

  // Verification: X = Σ v_a E_a must be block diagonal (its entries
  // outside the blocks zero), each block in its host's span with the
  // coordinates T·v, back through T⁺ to v; and the block norms.
  std::vector<Matrix> hostGramInv;
  for (const Factor &f : r.factors)
    hostGramInv.push_back(gramInverse(f.hostBasis));
  std::vector<bool> inBlock(n * n, false);
  for (const Factor &f : r.factors)
    for (unsigned i : f.indices)
      for (unsigned j : f.indices)
        inBlock[i * n + j] = true;
  double err = verifyIdentification(
      gens, n, r, declSizes, hostSizes, [&](const Matrix &x, double &err) {
        double xn = frobeniusNorm(x), off = 0;
        for (unsigned e = 0; e < n * n; ++e)
          if (!inBlock[e])
            off += x[e] * x[e];
        err = std::max(err, std::sqrt(off) / (xn > 0 ? xn : 1));
        std::vector<double> wB;
        for (unsigned c = 0; c < r.factors.size(); ++c) {
          const Factor &f = r.factors[c];
          double res = 0;
          std::vector<double> w = coordinates(
              f.hostBasis, hostGramInv[c],
              embed(restrictTo(x, n, f.indices), f.indices.size(), f.hostN),
              &res);
          err = std::max(err, res);
          wB.insert(wB.end(), w.begin(), w.end());
        }
        return wB;
      });
  r.verifyError = err;
  if (!(err <= kVerifyTolerance)) {
    none.reason = "block diagonal on the coordinates " + blockNames +
                  ", but the numerical verification of the direct sum "
                  "failed (relative error " +
                  num(err) + " > " + num(kVerifyTolerance) + ")";
    return none;
  }
  if (!r.isBlockIsotropic())
    r.reason = "the λ blocks are not combinations of the factors' blocks in "
               "this basis: the pair form evaluates the factors' closed-form "
               "logs per pair";
  return r;
}

} // namespace

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
  // One host with the built-in's factored pair form, else a direct sum
  // with the factors' factored pair forms, else one host with its log per
  // pair, else a direct sum with the factors' logs per pair.
  Recognition single = recognizeHost(facts, blockSizes);
  if (single.kind == Recognition::Exact || single.isBlockIsotropic())
    return single;
  Recognition product = recognizeProduct(facts, blockSizes);
  if (product.kind == Recognition::Product && product.isBlockIsotropic())
    return product;
  if (single.kind != Recognition::None)
    return single;
  if (product.kind == Recognition::Product)
    return product;
  if (!product.reason.empty())
    single.reason += "; as a direct sum: " + product.reason;
  return single;
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
  case Recognition::Product:
    break;
  }
  if (r.kind == Recognition::Product) {
    os << "a direct sum of " << r.factors.size() << " ideals:";
    for (size_t c = 0; c < r.factors.size(); ++c) {
      const Factor &f = r.factors[c];
      os << (c ? "," : "") << ' '
         << (f.kind == Factor::Scalar ? std::string("scalings")
             : f.kind == Factor::Nilpotent
                 ? "nilpotent (index " + std::to_string(f.nilpotencyIndex) + ")"
                 : f.host)
         << " on " << indexList(f.indices);
    }
    os << "; generators in the factors' bases:";
  } else {
    os << (r.builtinDim == k ? "a basis change of " : "a subalgebra of ")
       << r.builtin;
    if (r.builtinN != facts.n)
      os << " (elements embedded as diag(g, I) in " << r.builtinN << "x"
         << r.builtinN << ")";
    os << "; generators in " << r.builtin << "'s basis:";
  }
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
