//===- Generic.cpp - The model of a group declared by generators ----------===//
//
// GenericGroupModel derives a group model from k generators E_a (n×n):
//
//   coordinates  w = G⁻¹ [⟨E_a, X⟩]_a with the Gram matrix G_ab = ⟨E_a, E_b⟩
//                (Frobenius), precomputed as a dual basis D_a = Σ_b G⁻¹_ab E_b;
//                for orthonormal generators D_a = E_a.
//   validity     independence and closure under the bracket, checked by the
//                analysis Sema shares (GroupAlgebra.h), which also derives
//                the dual basis, nilpotency and the affine structure.
//   nilpotency   the spans W_j of all products of j generators; the first j
//                with W_j = 0 (j ≤ n when it exists) is the index: X^j = 0 for
//                every algebra element, and (g − I)^j = 0 for every element.
//   affine       every generator has a zero last row: elements are
//                [[A, t], [0, 1]], act is homogeneous on ℝ^{n−1}, compose
//                skips the fixed row.
//   exp          buildMatrixExp of hat(v) (exact finite series when nilpotent).
//   log          coordinates of buildMatrixLog(g) (exact finite series when
//                unipotent).
//   inverse      nilpotent: (I + N)⁻¹ = Σ_{k<j} (−N)^k exactly; orthogonal
//                linear part: transpose; otherwise Gauss–Jordan with partial
//                pivoting (row swaps as selects) on the linear block, and
//                −A⁻¹t for the translation of affine groups.
//   chart        nilpotent: everywhere (exp is a bijection); otherwise
//                ‖hat(v)‖_F < π, which bounds every eigenvalue's imaginary
//                part below π (conservative).
//
// Built-in closed forms (GroupStructure.h): when the declared algebra is a
// built-in's (so2, se2, so3, aff2, se3, sim3) in another basis, or a
// subalgebra of one, log/exp/inverse/dist2 and the pairwise form are the
// built-in's on diag(g, I), composed with the coordinate maps T and T⁺; the
// block norms mix the built-in's when the λ blocks allow it, else the pair
// form is the built-in's log per pair. When the generators are exactly a
// built-in's basis with its block sizes, every builder is the built-in's
// (bit for bit). The attribute keyword `generic` turns both off.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Generic.h"
#include "dialects/Lie/IR/Groups/GroupAlgebra.h"
#include "dialects/Lie/IR/Groups/Groups.h"

#include "dialects/Lie/IR/Groups/MatrixFunctions.h"
#include "dialects/Lie/IR/Groups/PairForms.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>
#include <memory>
#include <mutex>

using namespace mlir;
using namespace torsor::lie;

namespace {

using Matrix = std::vector<double>;

/// Inverse of the leading `size`×`size` block of a matrix with row stride
/// `stride`, as `size`·`size` scalars.
Scalars gaussJordanInverse(ScalarBuilder &m, ValueRange g, unsigned stride,
                           unsigned size) {
  // Gauss–Jordan on [A | I] with partial pivoting: before eliminating
  // column c, each lower row r swaps with row c (by selects) when
  // |a_rc| > |a_cc|, which leaves the largest pivot in row c.
  unsigned w = 2 * size;
  std::vector<Value> rows(size * w);
  for (unsigned i = 0; i < size; ++i)
    for (unsigned j = 0; j < size; ++j) {
      rows[i * w + j] = g[i * stride + j];
      rows[i * w + size + j] = m.c(i == j ? 1.0 : 0.0);
    }
  for (unsigned c = 0; c < size; ++c) {
    for (unsigned r = c + 1; r < size; ++r) {
      Value swap = m.gt(m.abs(rows[r * w + c]), m.abs(rows[c * w + c]));
      for (unsigned j = c; j < w; ++j) {
        Value x = rows[c * w + j], y = rows[r * w + j];
        rows[c * w + j] = m.select(swap, y, x);
        rows[r * w + j] = m.select(swap, x, y);
      }
    }
    Value pivotInv = m.div(m.c(1.0), rows[c * w + c]);
    for (unsigned j = c + 1; j < w; ++j)
      rows[c * w + j] = m.mul(rows[c * w + j], pivotInv);
    for (unsigned r = 0; r < size; ++r) {
      if (r == c)
        continue;
      Value f = m.neg(rows[r * w + c]);
      for (unsigned j = c + 1; j < w; ++j)
        rows[r * w + j] = m.fma(f, rows[c * w + j], rows[r * w + j]);
    }
  }
  Scalars inv(size * size);
  for (unsigned i = 0; i < size; ++i)
    for (unsigned j = 0; j < size; ++j)
      inv[i * size + j] = rows[i * w + size + j];
  return inv;
}

/// Content key of a declaration for the model registry.
std::string makeKey(StringRef name, unsigned n, ArrayRef<double> generators,
                    ArrayRef<DeclaredBlock> blocks, bool generic) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << name << '\0' << n << '\0' << generic << '\0';
  os.write(reinterpret_cast<const char *>(generators.data()),
           generators.size() * sizeof(double));
  for (const DeclaredBlock &b : blocks)
    os << '\0' << b.name << '\0' << b.size;
  return key;
}

} // namespace

//===----------------------------------------------------------------------===//
// Construction
//===----------------------------------------------------------------------===//

const GenericGroupModel *
GenericGroupModel::get(StringRef name, unsigned n, ArrayRef<double> generators,
                       ArrayRef<DeclaredBlock> declBlocks, bool generic,
                       std::string &error) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<GenericGroupModel>> registry;
  std::string key = makeKey(name, n, generators, declBlocks, generic);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = registry.find(key); it != registry.end())
    return it->second.get();

  llvm::raw_string_ostream err(error);
  unsigned nn = n * n;
  if (n < algebra::kMinMatrixSize || n > algebra::kMaxMatrixSize) {
    err << "expects a matrix size n between " << algebra::kMinMatrixSize
        << " and " << algebra::kMaxMatrixSize << ", found " << n;
    return nullptr;
  }
  if (generators.empty() || generators.size() % nn != 0) {
    err << "expects generators as k·" << nn << " entries (k ≥ 1 matrices of "
        << n << "x" << n << "), found " << generators.size() << " entries";
    return nullptr;
  }
  unsigned k = generators.size() / nn;
  std::vector<Matrix> gens;
  for (unsigned a = 0; a < k; ++a)
    gens.emplace_back(generators.begin() + a * nn,
                      generators.begin() + (a + 1) * nn);
  algebra::Facts facts;
  if (algebra::Problem problem = algebra::analyze(n, gens, facts)) {
    err << algebra::describe(problem, n);
    return nullptr;
  }

  auto model = std::make_unique<GenericGroupModel>();
  model->name = name.str();
  model->n = n;
  model->dim = k;
  model->gens = std::move(facts.generators);
  model->dual = std::move(facts.dual);
  model->nilIndex = facts.nilpotencyIndex;
  model->affine = facts.affine;
  model->orthogonal = facts.orthogonal;

  // Blocks.
  unsigned covered = 0;
  for (const DeclaredBlock &blk : declBlocks) {
    if (blk.size == 0) {
      err << "expects every block to hold at least one generator, found block '"
          << blk.name << "' empty";
      return nullptr;
    }
    covered += blk.size;
  }
  if (covered != k) {
    err << "expects blocks covering all " << k << " generators once, found "
        << covered;
    return nullptr;
  }
  unsigned offset = 0;
  for (const DeclaredBlock &blk : declBlocks)
    model->blockNames.push_back(blk.name);
  for (auto [i, blk] : llvm::enumerate(declBlocks)) {
    model->blocks.push_back({model->blockNames[i], offset, blk.size});
    offset += blk.size;
  }

  // The support of g − I for nilpotent groups: the generators' non-zero
  // pattern, closed under (boolean) products.
  if (model->nilIndex) {
    std::vector<bool> pattern(nn, false);
    for (const Matrix &g : model->gens)
      for (unsigned e = 0; e < nn; ++e)
        pattern[e] = pattern[e] || g[e] != 0;
    for (bool grew = true; grew;) {
      grew = false;
      std::vector<bool> next = pattern;
      for (unsigned i = 0; i < n; ++i)
        for (unsigned j = 0; j < n; ++j)
          for (unsigned l = 0; l < n && !next[i * n + j]; ++l)
            next[i * n + j] = pattern[i * n + l] && pattern[l * n + j];
      grew = next != pattern;
      pattern = std::move(next);
    }
    for (unsigned e = 0; e < nn; ++e)
      if (pattern[e])
        model->support.push_back(e);
  }

  // Built-in closed forms through a basis change, or exactly.
  std::vector<unsigned> sizes;
  for (const DeclaredBlock &blk : declBlocks)
    sizes.push_back(blk.size);
  algebra::Facts structureFacts;
  structureFacts.n = n;
  structureFacts.generators = model->gens;
  structureFacts.nilpotencyIndex = model->nilIndex;
  model->structure = algebra::recognize(structureFacts, sizes, !generic);
  if (model->structure.kind == algebra::Recognition::Product) {
    for (const algebra::Factor &f : model->structure.factors) {
      const GroupModel *factorHost = nullptr;
      if (f.kind == algebra::Factor::Host &&
          !(factorHost = lookupHostGroupModel(f.host))) {
        model->structure = algebra::Recognition();
        model->structure.reason =
            "no closed-form model for the factor host '" + f.host + "'";
        model->factorHosts.clear();
        break;
      }
      model->factorHosts.push_back(factorHost);
    }
  } else if (model->structure.kind != algebra::Recognition::None) {
    const GroupModel *builtin = lookupHostGroupModel(model->structure.builtin);
    if (!builtin) {
      // An algebra GroupStructure knows without a model here: keep the
      // generic model, and say so in the report.
      model->structure = algebra::Recognition();
      model->structure.reason = "no closed-form model for the recognised "
                                "host '" +
                                model->structure.builtin + "'";
    } else if (model->structure.kind == algebra::Recognition::Exact) {
      model->special = builtin;
    } else {
      model->host = builtin;
    }
  }

  const GenericGroupModel *result = model.get();
  registry.emplace(std::move(key), std::move(model));
  return result;
}

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// The host built-in (basis change or subalgebra)
//===----------------------------------------------------------------------===//

Scalars GenericGroupModel::embed(ScalarBuilder &m, ValueRange g) const {
  unsigned bigN = structure.builtinN;
  if (bigN == n)
    return Scalars(g.begin(), g.end());
  Scalars big(bigN * bigN);
  for (unsigned i = 0; i < bigN; ++i)
    for (unsigned j = 0; j < bigN; ++j)
      big[i * bigN + j] = i < n && j < n ? g[i * n + j] : m.c(i == j ? 1 : 0);
  return big;
}

Scalars GenericGroupModel::extract(ValueRange big) const {
  unsigned bigN = structure.builtinN;
  Scalars g(n * n);
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j)
      g[i * n + j] = big[i * bigN + j];
  return g;
}

Scalars torsor::lie::applyConstant(ScalarBuilder &m, ArrayRef<double> a,
                                   unsigned rows, ValueRange x) {
  unsigned cols = x.size();
  Scalars y(rows);
  for (unsigned i = 0; i < rows; ++i) {
    Value acc;
    for (unsigned j = 0; j < cols; ++j) {
      double c = a[i * cols + j];
      if (c == 0)
        continue;
      acc = !acc      ? (c == 1 ? x[j] : m.mul(m.c(c), x[j]))
            : c == 1  ? m.add(acc, x[j])
            : c == -1 ? m.sub(acc, x[j])
                      : m.fma(m.c(c), x[j], acc);
    }
    y[i] = acc ? acc : m.c(0.0);
  }
  return y;
}

Scalars GenericGroupModel::fromHost(ScalarBuilder &m, ValueRange wB) const {
  return applyConstant(m, structure.fromBuiltin, dim, wB);
}

Value GenericGroupModel::buildOutsideSpan(
    ScalarBuilder &m, ValueRange wB,
    ArrayRef<std::pair<const std::vector<algebra::Matrix> *, unsigned>> hosts)
    const {
  Scalars back = applyConstant(m, structure.toBuiltin, structure.builtinDim,
                               fromHost(m, wB));
  Value sum = m.c(0.0);
  for (auto [basis, offset] : hosts) {
    if (basis->empty())
      continue;
    unsigned entries = (*basis)[0].size();
    for (unsigned e = 0; e < entries; ++e) {
      Value x;
      for (unsigned i = 0; i < basis->size(); ++i) {
        double c = (*basis)[i][e];
        if (c == 0)
          continue;
        Value o = m.sub(wB[offset + i], back[offset + i]);
        x = x ? m.fma(m.c(c), o, x) : m.mul(m.c(c), o);
      }
      if (x)
        sum = m.fma(x, x, sum);
    }
  }
  return m.sqrt(sum);
}

Scalars GenericGroupModel::mixBlockNorms(ScalarBuilder &m,
                                         ValueRange hostNorms) const {
  return applyConstant(m, structure.blockMix, blocks.size(), hostNorms);
}

bool GenericGroupModel::isInsideChart(ArrayRef<double> v) const {
  if (special)
    return special->isInsideChart(v);
  if (isProduct())
    return isProductInsideChart(v);
  if (host) {
    unsigned kB = structure.builtinDim;
    SmallVector<double> wB(kB, 0.0);
    for (unsigned i = 0; i < kB; ++i)
      for (unsigned a = 0; a < dim; ++a)
        wB[i] += structure.toBuiltin[i * dim + a] * v[a];
    return host->isInsideChart(wB);
  }
  if (nilIndex)
    return true;
  double norm2 = 0;
  for (unsigned i = 0; i < n * n; ++i) {
    double x = 0;
    for (unsigned a = 0; a < dim; ++a)
      x += v[a] * gens[a][i];
    norm2 += x * x;
  }
  return std::sqrt(norm2) < M_PI;
}

Scalars GenericGroupModel::buildHat(ScalarBuilder &m, ValueRange v) const {
  Scalars x(n * n);
  for (unsigned i = 0; i < n * n; ++i) {
    Value acc;
    for (unsigned a = 0; a < dim; ++a) {
      double e = gens[a][i];
      if (e == 0)
        continue;
      Value term = e == 1 ? v[a] : e == -1 ? m.neg(v[a]) : Value();
      if (acc && term)
        acc = m.add(acc, term);
      else if (acc)
        acc = m.fma(m.c(e), v[a], acc);
      else
        acc = term ? term : m.mul(m.c(e), v[a]);
    }
    x[i] = acc ? acc : m.c(0.0);
  }
  return x;
}

Scalars GenericGroupModel::buildCompose(ScalarBuilder &m, ValueRange a,
                                        ValueRange b) const {
  if (special)
    return special->buildCompose(m, a, b);
  if (isProduct())
    return buildProductCompose(m, a, b);
  if (!affine)
    return GroupModel::buildCompose(m, a, b);
  // The fixed last row [0, …, 0, 1] is neither read nor computed.
  Scalars c(n * n);
  for (unsigned i = 0; i + 1 < n; ++i)
    for (unsigned j = 0; j < n; ++j) {
      Value acc = j + 1 == n ? a[i * n + j] : Value();
      for (unsigned k = 0; k + 1 < n; ++k)
        acc = acc ? m.fma(a[i * n + k], b[k * n + j], acc)
                  : m.mul(a[i * n + k], b[k * n + j]);
      c[i * n + j] = acc;
    }
  for (unsigned j = 0; j < n; ++j)
    c[(n - 1) * n + j] = m.c(j + 1 == n ? 1.0 : 0.0);
  return c;
}

Scalars GenericGroupModel::buildBlockInverse(ScalarBuilder &m, ValueRange g,
                                             unsigned size) const {
  if (orthogonal) {
    Scalars inv(size * size);
    for (unsigned i = 0; i < size; ++i)
      for (unsigned j = 0; j < size; ++j)
        inv[i * size + j] = g[j * n + i];
    return inv;
  }
  return gaussJordanInverse(m, g, n, size);
}

Scalars GenericGroupModel::buildInverse(ScalarBuilder &m, ValueRange g) const {
  if (special)
    return special->buildInverse(m, g);
  if (host)
    return extract(host->buildInverse(m, embed(m, g)));
  if (isProduct())
    return buildProductInverse(m, g);
  unsigned nn = n * n;
  if (nilIndex) {
    // g = I + N with N^j = 0: g⁻¹ = I − N + N² − … by Horner,
    // R ← I − N·R, j − 1 times.
    Scalars negN(nn), r(nn);
    for (unsigned i = 0; i < nn; ++i) {
      bool diag = i % (n + 1) == 0;
      negN[i] = diag ? m.sub(m.c(1.0), g[i]) : m.neg(g[i]);
      r[i] = m.c(diag ? 1.0 : 0.0);
    }
    for (unsigned step = 1; step < nilIndex; ++step) {
      Scalars p = GroupModel::buildCompose(m, negN, r);
      for (unsigned i = 0; i < nn; ++i)
        r[i] = i % (n + 1) == 0 ? m.add(p[i], m.c(1.0)) : p[i];
    }
    if (affine)
      for (unsigned j = 0; j < n; ++j)
        r[(n - 1) * n + j] = m.c(j + 1 == n ? 1.0 : 0.0);
    return r;
  }
  if (!affine) {
    Scalars inv = buildBlockInverse(m, g, n);
    return inv;
  }
  // [[A, t], [0, 1]]⁻¹ = [[A⁻¹, −A⁻¹t], [0, 1]].
  unsigned d = n - 1;
  Scalars a = buildBlockInverse(m, g, d);
  Scalars r(nn);
  for (unsigned i = 0; i < d; ++i) {
    Value acc = m.mul(a[i * d], g[n - 1]);
    for (unsigned k = 1; k < d; ++k)
      acc = m.fma(a[i * d + k], g[k * n + n - 1], acc);
    for (unsigned j = 0; j < d; ++j)
      r[i * n + j] = a[i * d + j];
    r[i * n + d] = m.neg(acc);
  }
  for (unsigned j = 0; j < n; ++j)
    r[d * n + j] = m.c(j == d ? 1.0 : 0.0);
  return r;
}

Scalars GenericGroupModel::buildLog(ScalarBuilder &m, ValueRange g) const {
  if (special)
    return special->buildLog(m, g);
  if (host)
    return fromHost(m, host->buildLog(m, embed(m, g)));
  if (isProduct())
    return buildProductLog(m, g);
  Scalars x = buildMatrixLog(m, n, g, nilIndex);
  Scalars w(dim);
  for (unsigned a = 0; a < dim; ++a) {
    Value acc;
    for (unsigned i = 0; i < n * n; ++i) {
      double d = dual[a][i];
      if (d == 0)
        continue;
      acc = !acc      ? (d == 1 ? x[i] : m.mul(m.c(d), x[i]))
            : d == 1  ? m.add(acc, x[i])
            : d == -1 ? m.sub(acc, x[i])
                      : m.fma(m.c(d), x[i], acc);
    }
    w[a] = acc;
  }
  return w;
}

Value GenericGroupModel::buildMembershipResidual(ScalarBuilder &m,
                                                 ValueRange g) const {
  if (special)
    return special->buildMembershipResidual(m, g);
  if (isProduct())
    return buildProductResidual(m, g);
  if (host) {
    // In the host group, and (for a subalgebra) with a log inside the
    // declared span: ‖Σ_i o_i B_i‖_F for o = w_B − T T⁺ w_B. Both parts
    // come from the host's closed forms, so f32 elements near θ = π pass
    // as the host's own do.
    Scalars big = embed(m, g);
    Value residual = host->buildMembershipResidual(m, big);
    unsigned kB = structure.builtinDim;
    if (kB == dim)
      return residual;
    const algebra::BuiltinAlgebra *basis = nullptr;
    for (const algebra::BuiltinAlgebra &b : algebra::getBuiltinAlgebras())
      if (b.name == structure.builtin)
        basis = &b;
    return m.max(residual, buildOutsideSpan(m, host->buildLog(m, big),
                                            {{&basis->basis, 0u}}));
  }
  // The general log, not the unipotent series: the input is exactly what
  // is in question, and the finite series is only the log of unipotent
  // matrices.
  Scalars x = buildMatrixLog(m, n, g, /*unipotentIndex=*/0);
  Scalars w(dim);
  for (unsigned a = 0; a < dim; ++a) {
    Value acc = m.c(0.0);
    for (unsigned i = 0; i < n * n; ++i)
      if (dual[a][i] != 0)
        acc = m.fma(m.c(dual[a][i]), x[i], acc);
    w[a] = acc;
  }
  Value sum = m.c(0.0);
  for (unsigned i = 0; i < n * n; ++i) {
    Value projected = m.c(0.0);
    for (unsigned a = 0; a < dim; ++a)
      if (gens[a][i] != 0)
        projected = m.fma(m.c(gens[a][i]), w[a], projected);
    Value d = m.sub(x[i], projected);
    sum = m.fma(d, d, sum);
  }
  return m.sqrt(sum);
}

Scalars GenericGroupModel::buildExp(ScalarBuilder &m, ValueRange v) const {
  if (special)
    return special->buildExp(m, v);
  if (isProduct())
    return buildProductExp(m, v);
  Scalars e =
      host ? extract(host->buildExp(m, applyConstant(m, structure.toBuiltin,
                                                     structure.builtinDim, v)))
           : buildMatrixExp(m, n, buildHat(m, v), nilIndex);
  if (affine) // Exactly [0, …, 0, 1], whatever the rounding of the series.
    for (unsigned j = 0; j < n; ++j)
      e[(n - 1) * n + j] = m.c(j + 1 == n ? 1.0 : 0.0);
  return e;
}

Scalars GenericGroupModel::buildAct(ScalarBuilder &m, ValueRange g,
                                    ValueRange p) const {
  if (special)
    return special->buildAct(m, g, p);
  return GroupModel::buildAct(m, g, p);
}

Value GenericGroupModel::buildDist2(ScalarBuilder &m, ValueRange a,
                                    ValueRange b, ValueRange lambda) const {
  if (special)
    return special->buildDist2(m, a, b, lambda);
  if (host && structure.isBlockIsotropic()) {
    // μ_β = Σ_b λ_b c_bβ: the host's dist2 with mixed weights.
    unsigned nb = host->getBlocks().size();
    SmallVector<double> mixT(nb * blocks.size());
    for (unsigned b = 0; b < blocks.size(); ++b)
      for (unsigned beta = 0; beta < nb; ++beta)
        mixT[beta * blocks.size() + b] = structure.blockMix[b * nb + beta];
    Scalars mu = applyConstant(m, mixT, nb, lambda);
    return host->buildDist2(m, embed(m, a), embed(m, b), mu);
  }
  if (isProduct()) {
    // Σ_b λ_b N_b from the factors' pair forms.
    Scalars norms = buildPairBlockNorms(m, buildQueryFeatures(m, a),
                                        buildKeyFeatures(m, b));
    Value acc = m.mul(lambda[0], norms[0]);
    for (unsigned i = 1; i < norms.size(); ++i)
      acc = m.fma(lambda[i], norms[i], acc);
    return acc;
  }
  return GroupModel::buildDist2(m, a, b, lambda);
}

// The pairwise form. Exact: the built-in's. Block-isotropic host: the
// host's features of diag(g, I) and its block norms, mixed. SE(2) host
// whose block norms are not a mix of its own (a sheared translation basis):
// SE(2)'s features, its log of a⁻¹b built from them per pair
// (buildPlanarPairLog: no product, no sin or cos), then T⁺ and the
// declared block norms. GL⁺(2) host of a subalgebra of sl(2): its log of
// the formed a⁻¹b without the ½ ln det part T⁺ does not read. Otherwise the
// default (a⁻¹ per query, compose and log per pair), whose inverse and log
// are the host's closed forms when there is a host and the generic loops
// when there is none.

/// The built-in whose pairwise form serves `model` as is, or null.
static const GroupModel *pairFormSource(const GroupModel *special,
                                        const GroupModel *host,
                                        const algebra::Recognition &r) {
  if (special)
    return special;
  return host && r.isBlockIsotropic() ? host : nullptr;
}

bool GenericGroupModel::usesPlanarPairLog() const {
  return !special && host == &getSE2Model() && !structure.isBlockIsotropic();
}

bool GenericGroupModel::usesTracelessLinearPairLog() const {
  if (special || host != &getGL2ClosedFormModel() ||
      structure.isBlockIsotropic() || n != 2)
    return false;
  // Every generator traceless (to rounding of its entries): T⁺ then
  // annihilates I, and GL⁺(2)'s ½ ln det part of the log never reaches
  // the declared coordinates.
  for (const std::vector<double> &e : gens) {
    double norm = 0;
    for (double x : e)
      norm += x * x;
    if (std::abs(e[0] + e[3]) > 1e-12 * std::sqrt(norm))
      return false;
  }
  return true;
}

unsigned GenericGroupModel::getQueryFeatureCount() const {
  if (usesNilpotentPairForm())
    return support.size();
  if (isProduct()) {
    unsigned count = 0;
    for (unsigned c = 0; c < structure.factors.size(); ++c)
      count += getFactorFeatureCount(c, /*query=*/true);
    return count;
  }
  if (usesPlanarPairLog())
    return host->getQueryFeatureCount();
  const GroupModel *src = pairFormSource(special, host, structure);
  return src ? src->getQueryFeatureCount() : GroupModel::getQueryFeatureCount();
}

unsigned GenericGroupModel::getKeyFeatureCount() const {
  if (usesNilpotentPairForm())
    return support.size();
  if (isProduct()) {
    unsigned count = 0;
    for (unsigned c = 0; c < structure.factors.size(); ++c)
      count += getFactorFeatureCount(c, /*query=*/false);
    return count;
  }
  if (usesPlanarPairLog())
    return host->getKeyFeatureCount();
  const GroupModel *src = pairFormSource(special, host, structure);
  return src ? src->getKeyFeatureCount() : GroupModel::getKeyFeatureCount();
}

Scalars GenericGroupModel::buildQueryFeatures(ScalarBuilder &m,
                                              ValueRange a) const {
  if (special)
    return special->buildQueryFeatures(m, a);
  if (isProduct())
    return buildProductFeatures(m, a, /*query=*/true);
  if (usesNilpotentPairForm()) {
    // a⁻¹ on the support (the exact Horner inverse).
    Scalars inv = buildInverse(m, a), q;
    for (unsigned e : support)
      q.push_back(inv[e]);
    return q;
  }
  if (pairFormSource(special, host, structure) || usesPlanarPairLog())
    return host->buildQueryFeatures(m, embed(m, a));
  return GroupModel::buildQueryFeatures(m, a);
}

Scalars GenericGroupModel::buildKeyFeatures(ScalarBuilder &m,
                                            ValueRange b) const {
  if (special)
    return special->buildKeyFeatures(m, b);
  if (isProduct())
    return buildProductFeatures(m, b, /*query=*/false);
  if (usesNilpotentPairForm()) {
    Scalars k;
    for (unsigned e : support)
      k.push_back(b[e]);
    return k;
  }
  if (pairFormSource(special, host, structure) || usesPlanarPairLog())
    return host->buildKeyFeatures(m, embed(m, b));
  return GroupModel::buildKeyFeatures(m, b);
}

Scalars GenericGroupModel::buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                                               ValueRange k) const {
  if (special)
    return special->buildPairBlockNorms(m, q, k);
  if (isProduct() && structure.isBlockIsotropic())
    return mixBlockNorms(m, buildProductPairBlockNorms(m, q, k));
  if (isProduct())
    return buildProductPairBlockNorms(m, q, k);
  if (usesNilpotentPairForm())
    return buildNilpotentPairBlockNorms(m, q, k);
  if (pairFormSource(special, host, structure))
    return mixBlockNorms(m, host->buildPairBlockNorms(m, q, k));
  if (usesPlanarPairLog())
    return buildBlockNorms(m, fromHost(m, buildPlanarPairLog(m, q, k)));
  if (usesTracelessLinearPairLog())
    return buildBlockNorms(
        m, fromHost(m, buildGL2Log(m, buildCompose(m, q, k), true)));
  return GroupModel::buildPairBlockNorms(m, q, k);
}

Scalars GenericGroupModel::buildNilpotentPairBlockNorms(ScalarBuilder &m,
                                                        ValueRange q,
                                                        ValueRange k) const {
  // Entries as n·n Values, null where structurally zero: a⁻¹ and b are the
  // identity off the support, N = a⁻¹b − I lives on it.
  unsigned nn = n * n;
  SmallVector<Value> a(nn), b(nn);
  SmallVector<bool> inSupport(nn, false);
  for (auto [i, e] : llvm::enumerate(support)) {
    a[e] = q[i];
    b[e] = k[i];
    inSupport[e] = true;
  }
  // x_il·y_lj with the identity's 1 where an entry is off the support.
  auto entry = [&](ArrayRef<Value> x, unsigned i, unsigned j) -> Value {
    return x[i * n + j];
  };
  auto isOne = [&](unsigned i, unsigned j) {
    return i == j && !inSupport[i * n + j];
  };
  SmallVector<Value> nMat(nn);
  for (unsigned e : support) {
    unsigned i = e / n, j = e % n;
    Value acc;
    for (unsigned l = 0; l < n; ++l) {
      Value x = entry(a, i, l), y = entry(b, l, j);
      Value term = x && y             ? m.mul(x, y)
                   : x && isOne(l, j) ? x
                   : y && isOne(i, l) ? y
                                      : Value();
      if (term)
        acc = acc ? m.add(acc, term) : term;
    }
    if (i == j)
      acc = m.sub(acc, m.c(1.0));
    nMat[e] = acc;
  }
  // log(I + N) = Σ_{k<index} (−1)^{k+1} N^k / k, products on the support.
  auto multiply = [&](ArrayRef<Value> x, ArrayRef<Value> y) {
    SmallVector<Value> z(nn);
    for (unsigned e : support) {
      unsigned i = e / n, j = e % n;
      Value acc;
      for (unsigned l = 0; l < n; ++l)
        if (x[i * n + l] && y[l * n + j])
          acc = acc ? m.fma(x[i * n + l], y[l * n + j], acc)
                    : m.mul(x[i * n + l], y[l * n + j]);
      z[e] = acc;
    }
    return z;
  };
  SmallVector<Value> x = nMat, power = nMat;
  for (unsigned p = 2; p < nilIndex; ++p) {
    power = multiply(power, nMat);
    Value c = m.c((p % 2 ? 1.0 : -1.0) / p);
    for (unsigned e : support)
      if (power[e])
        x[e] = x[e] ? m.fma(c, power[e], x[e]) : m.mul(c, power[e]);
  }
  Scalars w(dim);
  for (unsigned d = 0; d < dim; ++d) {
    Value acc;
    for (unsigned e : support) {
      double c = dual[d][e];
      if (c == 0 || !x[e])
        continue;
      acc = !acc      ? (c == 1 ? x[e] : m.mul(m.c(c), x[e]))
            : c == 1  ? m.add(acc, x[e])
            : c == -1 ? m.sub(acc, x[e])
                      : m.fma(m.c(c), x[e], acc);
    }
    w[d] = acc ? acc : m.c(0.0);
  }
  return buildBlockNorms(m, w);
}
