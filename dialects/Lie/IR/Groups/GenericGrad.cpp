//===- GenericGrad.cpp - Tangent spaces of declared groups ----------------===//
//
// The derivatives of a declared group need its tangent space at the
// identity only: the generators E_a (ξ ↦ hat(ξ)) and the dual basis D_a
// (coordinates of an algebra element). Both are constants of the model, so
// these builders are a few FMAs and need neither exp nor log, whose
// generic forms build loops. Specialised models delegate to the built-in.
//
// The log's derivative is not the adjoint of its loops: with w = log g,
// log(g·exp(εη)) = w + ε J_r(w)⁻¹η + O(ε²), so the left-trivialised
// gradient of a cotangent c on w is J_r(w)⁻ᵀc, a small linear solve with
// J_r built from the structure constants ⟨D_b, [E_c, E_a]⟩. Likewise
// exp(v + εδ) = exp(v)·exp(ε J_r(v)δ^) + O(ε²): exp's gradient of a
// left-trivialised cotangent η is J_r(v)ᵀη, with no solve.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Generic.h"
#include "dialects/Lie/IR/Groups/MatrixFunctions.h"

using namespace mlir;
using namespace torsor::lie;

Scalars GenericGroupModel::buildTangentPullback(ScalarBuilder &m,
                                                ValueRange entries) const {
  if (special)
    return special->buildTangentPullback(m, entries);
  // ⟨Ē, E_a⟩ for every generator.
  Scalars out;
  for (unsigned a = 0; a < dim; ++a) {
    Value acc = m.c(0.0);
    for (unsigned i = 0; i < n * n; ++i)
      if (gens[a][i] != 0)
        acc = m.fma(m.c(gens[a][i]), entries[i], acc);
    out.push_back(acc);
  }
  return out;
}

Scalars GenericGroupModel::buildAlgebraCotangent(ScalarBuilder &m,
                                                 ValueRange c) const {
  if (special)
    return special->buildAlgebraCotangent(m, c);
  // Σ_a c_a D_a: ⟨D_a, E_b⟩ = δ_ab, so it pairs with hat(ξ) as c·ξ.
  Scalars out;
  for (unsigned i = 0; i < n * n; ++i) {
    Value acc = m.c(0.0);
    for (unsigned a = 0; a < dim; ++a)
      if (dual[a][i] != 0)
        acc = m.fma(m.c(dual[a][i]), c[a], acc);
    out.push_back(acc);
  }
  return out;
}

/// Solves Aᵀ·y = c for a `k`×`k` row-major A: Gaussian elimination with
/// partial pivoting (row swaps as selects, so the IR is straight-line).
static Scalars solveTransposed(ScalarBuilder &m, unsigned k, ValueRange a,
                               ValueRange c) {
  // Rows of [Aᵀ | c].
  SmallVector<Scalars> rows(k);
  for (unsigned i = 0; i < k; ++i) {
    for (unsigned j = 0; j < k; ++j)
      rows[i].push_back(a[j * k + i]);
    rows[i].push_back(c[i]);
  }
  for (unsigned p = 0; p < k; ++p) {
    for (unsigned r = p + 1; r < k; ++r) {
      Value swap = m.gt(m.abs(rows[r][p]), m.abs(rows[p][p]));
      for (unsigned j = p; j <= k; ++j) {
        Value top = m.select(swap, rows[r][j], rows[p][j]);
        Value low = m.select(swap, rows[p][j], rows[r][j]);
        rows[p][j] = top;
        rows[r][j] = low;
      }
    }
    Value inv = m.div(m.c(1.0), rows[p][p]);
    for (unsigned r = p + 1; r < k; ++r) {
      Value f = m.mul(rows[r][p], inv);
      for (unsigned j = p + 1; j <= k; ++j)
        rows[r][j] = m.fma(m.neg(f), rows[p][j], rows[r][j]);
    }
  }
  Scalars y(k);
  for (unsigned i = k; i-- > 0;) {
    Value acc = rows[i][k];
    for (unsigned j = i + 1; j < k; ++j)
      acc = m.fma(m.neg(rows[i][j]), y[j], acc);
    y[i] = m.div(acc, rows[i][i]);
  }
  return y;
}

Scalars GenericGroupModel::buildRightJacobian(ScalarBuilder &m,
                                              ValueRange w) const {
  // Structure constants f[x][a][b] = ⟨D_b, [E_x, E_a]⟩ (compile time).
  auto bracketCoord = [&](unsigned x, unsigned a, unsigned b) {
    double acc = 0;
    for (unsigned i = 0; i < n; ++i)
      for (unsigned j = 0; j < n; ++j) {
        double e = 0;
        for (unsigned l = 0; l < n; ++l)
          e += gens[x][i * n + l] * gens[a][l * n + j] -
               gens[a][i * n + l] * gens[x][l * n + j];
        acc += dual[b][i * n + j] * e;
      }
    return acc;
  };
  // A = −ad_w: column a holds the coordinates of −[hat(w), E_a].
  Scalars negAd(dim * dim);
  for (unsigned b = 0; b < dim; ++b)
    for (unsigned a = 0; a < dim; ++a) {
      Value acc = m.c(0.0);
      for (unsigned x = 0; x < dim; ++x) {
        double f = bracketCoord(x, a, b);
        if (f != 0)
          acc = m.fma(m.c(-f), w[x], acc);
      }
      negAd[b * dim + a] = acc;
    }
  Scalars jr(dim * dim);
  if (nilIndex > 0) {
    // ad_w is nilpotent (ad^dim = 0): Σ_{k<dim} A^k/(k+1)! exactly.
    Scalars term(dim * dim);
    for (unsigned i = 0; i < dim * dim; ++i) {
      term[i] = m.c(i / dim == i % dim ? 1.0 : 0.0);
      jr[i] = term[i];
    }
    for (unsigned k = 1; k < dim; ++k) {
      Scalars next(dim * dim);
      for (unsigned i = 0; i < dim; ++i)
        for (unsigned j = 0; j < dim; ++j) {
          Value acc = m.c(0.0);
          for (unsigned l = 0; l < dim; ++l)
            acc = m.fma(term[i * dim + l], negAd[l * dim + j], acc);
          next[i * dim + j] = m.mul(acc, m.c(1.0 / (k + 1)));
        }
      term = next;
      for (unsigned i = 0; i < dim * dim; ++i)
        jr[i] = m.add(jr[i], term[i]);
    }
  } else {
    // exp([[A, I], [0, 0]]) = [[e^A, φ₁(A)], [0, I]], φ₁(A) = Σ A^k/(k+1)!.
    unsigned big = 2 * dim;
    Scalars block(big * big);
    for (unsigned i = 0; i < big; ++i)
      for (unsigned j = 0; j < big; ++j)
        block[i * big + j] = i < dim && j < dim        ? negAd[i * dim + j]
                             : i < dim && j == i + dim ? m.c(1.0)
                                                       : m.c(0.0);
    Scalars e = buildMatrixExp(m, big, block, /*nilpotentIndex=*/0);
    for (unsigned i = 0; i < dim; ++i)
      for (unsigned j = 0; j < dim; ++j)
        jr[i * dim + j] = e[i * big + dim + j];
  }
  return jr;
}

std::optional<Scalars>
GenericGroupModel::buildLogLeftGradient(ScalarBuilder &m, ValueRange w,
                                        ValueRange c) const {
  if (special)
    return special->buildLogLeftGradient(m, w, c);
  // The host's closed forms are straight-line: differentiated formula by
  // formula, like a built-in's.
  if (host || isProduct())
    return std::nullopt;
  return solveTransposed(m, dim, buildRightJacobian(m, w), c);
}

std::optional<Scalars>
GenericGroupModel::buildExpLeftGradient(ScalarBuilder &m, ValueRange v,
                                        ValueRange eta) const {
  if (special)
    return special->buildExpLeftGradient(m, v, eta);
  // The host's closed forms are straight-line: differentiated formula by
  // formula, like a built-in's.
  if (host || isProduct())
    return std::nullopt;
  // δ ↦ J_r(v)δ is exp's derivative in left-trivialised coordinates, so
  // its adjoint is J_r(v)ᵀ: v̄_a = Σ_b J_ba η_b.
  Scalars jr = buildRightJacobian(m, v);
  Scalars out(dim);
  for (unsigned a = 0; a < dim; ++a) {
    Value acc = m.mul(jr[a], eta[0]);
    for (unsigned b = 1; b < dim; ++b)
      acc = m.fma(jr[b * dim + a], eta[b], acc);
    out[a] = acc;
  }
  return out;
}
