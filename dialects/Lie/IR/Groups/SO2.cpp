//===- SO2.cpp - The SO(2) group model ------------------------------------===//
//
// Planar rotations [[c, −s], [s, c]]; algebra coordinate θ; one block "rot".
// Chart: θ ∈ (−π, π]. log uses atan2 of the antisymmetric and symmetric
// parts, which is exact at θ = 0 and at θ = π returns ±π depending on the
// sign of the (zero) sine: both are valid logarithms and give the same
// dist2.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/BuiltinFacts.h"
#include "dialects/Lie/IR/Groups/Groups.h"
#include "dialects/Lie/IR/Groups/PairForms.h"

#include <cmath>

using namespace mlir;
using namespace torsor::lie;

namespace {
class SO2Model final : public GroupModel {
public:
  StringRef getName() const override { return "so2"; }
  StringRef getDisplayName() const override {
    return toRef(builtinFacts("so2").name);
  }
  unsigned getMatrixSize() const override { return builtinFacts("so2").n; }
  unsigned getAlgebraDim() const override { return builtinFacts("so2").k; }
  unsigned getPointDim() const override { return builtinFacts("so2").pointDim; }
  ArrayRef<AlgebraBlock> getBlocks() const override {
    return builtinBlocks("so2");
  }
  bool isInsideChart(ArrayRef<double> v) const override {
    return std::abs(v[0]) < M_PI;
  }

  // Pairwise form: (c, s) per token; θ_ij from two 2-dot products.
  unsigned getQueryFeatureCount() const override { return 2; }
  unsigned getKeyFeatureCount() const override { return 2; }
  Scalars buildQueryFeatures(ScalarBuilder &m, ValueRange g) const override {
    return buildPlanarFeatures(m, g[0], g[1], g[2], g[3]);
  }
  Scalars buildKeyFeatures(ScalarBuilder &m, ValueRange g) const override {
    return buildQueryFeatures(m, g);
  }
  Scalars buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                              ValueRange k) const override {
    return {m.sqr(buildPlanarPairAngle(m, q, k).theta)};
  }

  /// Rᵀ.
  Scalars buildInverse(ScalarBuilder &, ValueRange g) const override {
    return {g[0], g[2], g[1], g[3]};
  }

  /// θ = atan2(R₁₀ − R₀₁, R₀₀ + R₁₁): uses all four entries, so it is the
  /// angle of the nearest rotation when the input is slightly off SO(2).
  Scalars buildLog(ScalarBuilder &m, ValueRange g) const override {
    return {m.atan2(m.sub(g[2], g[1]), m.add(g[0], g[3]))};
  }

  Scalars buildExp(ScalarBuilder &m, ValueRange v) const override {
    Value c = m.cos(v[0]), s = m.sin(v[0]);
    return {c, m.neg(s), s, c};
  }
};
} // namespace

const GroupModel &torsor::lie::getSO2Model() {
  static const SO2Model model;
  return model;
}
