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
// Specialisation: when the declared generators are, entry for entry, the
// basis of a built-in model (so2, se2, so3, se3, aff2, sim3) and the blocks
// have that model's sizes, every builder delegates to the built-in closed
// forms. The attribute keyword `generic` turns this off.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Generic.h"
#include "dialects/Lie/IR/Groups/GroupAlgebra.h"
#include "dialects/Lie/IR/Groups/Groups.h"

#include "dialects/Lie/IR/Groups/MatrixFunctions.h"

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

/// A built-in model with the generator basis it uses for its coordinates.
struct BuiltinBasis {
  const GroupModel *model;
  unsigned n;
  std::vector<Matrix> gens;
};

/// The unit matrix E_ij of size n.
Matrix unit(unsigned n, unsigned i, unsigned j, double v = 1) {
  Matrix e(n * n, 0.0);
  e[i * n + j] = v;
  return e;
}

Matrix plus(Matrix a, const Matrix &b) {
  for (size_t i = 0; i < a.size(); ++i)
    a[i] += b[i];
  return a;
}

/// hat(e_axis) of so(3), embedded in the top-left of an n×n matrix:
/// hat(ω) = [[0, −ω₃, ω₂], [ω₃, 0, −ω₁], [−ω₂, ω₁, 0]].
Matrix so3Hat(unsigned n, unsigned axis) {
  unsigned i = (axis + 1) % 3, j = (axis + 2) % 3;
  return plus(unit(n, j, i, 1), unit(n, i, j, -1));
}

/// The bases of the built-in models, as their files document them.
const std::vector<BuiltinBasis> &getBuiltinBases() {
  static const std::vector<BuiltinBasis> bases = [] {
    std::vector<BuiltinBasis> result;
    result.push_back({&getSO2Model(), 2, {so3Hat(2, 2)}});
    result.push_back(
        {&getSE2Model(), 3, {so3Hat(3, 2), unit(3, 0, 2), unit(3, 1, 2)}});
    result.push_back(
        {&getSO3Model(), 3, {so3Hat(3, 0), so3Hat(3, 1), so3Hat(3, 2)}});
    result.push_back({&getSE3Model(),
                      4,
                      {so3Hat(4, 0), so3Hat(4, 1), so3Hat(4, 2), unit(4, 0, 3),
                       unit(4, 1, 3), unit(4, 2, 3)}});
    result.push_back({&getAff2Model(),
                      3,
                      {unit(3, 0, 0), unit(3, 0, 1), unit(3, 1, 0),
                       unit(3, 1, 1), unit(3, 0, 2), unit(3, 1, 2)}});
    Matrix scale(16, 0.0);
    scale[0] = scale[5] = scale[10] = 1;
    result.push_back({&getSim3Model(),
                      4,
                      {so3Hat(4, 0), so3Hat(4, 1), so3Hat(4, 2), unit(4, 0, 3),
                       unit(4, 1, 3), unit(4, 2, 3), scale}});
    return result;
  }();
  return bases;
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

  // Specialisation: exact basis match with a built-in model.
  if (!generic)
    for (const BuiltinBasis &basis : getBuiltinBases()) {
      if (basis.n != n || basis.gens.size() != k ||
          basis.model->getBlocks().size() != model->blocks.size())
        continue;
      bool same = true;
      for (unsigned a = 0; a < k && same; ++a)
        same = basis.gens[a] == gens[a];
      for (auto [ours, theirs] :
           llvm::zip_equal(model->blocks, basis.model->getBlocks()))
        same = same && ours.size == theirs.size;
      if (same) {
        model->special = basis.model;
        break;
      }
    }

  const GenericGroupModel *result = model.get();
  registry.emplace(std::move(key), std::move(model));
  return result;
}

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

bool GenericGroupModel::isInsideChart(ArrayRef<double> v) const {
  if (special)
    return special->isInsideChart(v);
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
  Scalars e = buildMatrixExp(m, n, buildHat(m, v), nilIndex);
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
  return GroupModel::buildDist2(m, a, b, lambda);
}

unsigned GenericGroupModel::getQueryFeatureCount() const {
  return special ? special->getQueryFeatureCount()
                 : GroupModel::getQueryFeatureCount();
}

unsigned GenericGroupModel::getKeyFeatureCount() const {
  return special ? special->getKeyFeatureCount()
                 : GroupModel::getKeyFeatureCount();
}

Scalars GenericGroupModel::buildQueryFeatures(ScalarBuilder &m,
                                              ValueRange a) const {
  return special ? special->buildQueryFeatures(m, a)
                 : GroupModel::buildQueryFeatures(m, a);
}

Scalars GenericGroupModel::buildKeyFeatures(ScalarBuilder &m,
                                            ValueRange b) const {
  return special ? special->buildKeyFeatures(m, b)
                 : GroupModel::buildKeyFeatures(m, b);
}

Scalars GenericGroupModel::buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                                               ValueRange k) const {
  return special ? special->buildPairBlockNorms(m, q, k)
                 : GroupModel::buildPairBlockNorms(m, q, k);
}
