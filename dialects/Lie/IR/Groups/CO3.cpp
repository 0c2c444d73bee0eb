//===- CO3.cpp - Closed forms of rotations times scale of ℝ³ --------------===//
//
// CO(3)⁺ = SO(3) × ℝ⁺ as 3×3 matrices g = s·R. Not a built-in keyword: it
// hosts declared groups whose algebra is so(3) ⊕ ℝ·I in any basis
// (GroupStructure.h), e.g. "rotations × isotropic scaling of ℝ³", which
// would otherwise run on Sim(3)'s 4×4 forms. Coordinates (ω, σ) in the
// basis hat(e₁), hat(e₂), hat(e₃), I; blocks "rot" [0, 3) and "scale" [3, 4).
//
// The two factors are a direct product, so every builder is SO(3)'s on
// R = g·e^{−σ} plus a scalar:
//   log  σ = ln(det g)/3, ω = log_SO3(g·e^{−σ});
//   exp  g = e^σ·exp_SO3(ω);
//   inverse  g⁻¹ = gᵀ·e^{−2σ};
//   pair form  SO(3)'s on the unit-scale R per token (its θ_ij comes from
//        tr(R_iᵀR_j), which is not scale-invariant), and N_scale =
//        (σ_j − σ_i)²: features R (9) and σ per token.
// The SO(3) model's thresholds and near-π axis carry over unchanged (f32
// dist2 next to a half turn as accurate as the built-in's).
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Groups.h"

#include <cmath>

using namespace mlir;
using namespace torsor::lie;

namespace {

class CO3Model final : public GroupModel {
public:
  StringRef getName() const override { return "co3"; }
  StringRef getDisplayName() const override { return "CO3"; }
  unsigned getMatrixSize() const override { return 3; }
  unsigned getAlgebraDim() const override { return 4; }
  unsigned getPointDim() const override { return 3; }
  ArrayRef<AlgebraBlock> getBlocks() const override {
    static const AlgebraBlock blocks[] = {{"rot", 0, 3}, {"scale", 3, 1}};
    return blocks;
  }
  bool isInsideChart(ArrayRef<double> v) const override {
    return getSO3Model().isInsideChart(v.take_front(3));
  }

  Scalars buildInverse(ScalarBuilder &m, ValueRange g) const override {
    Value k = m.exp(m.mul(m.c(-2.0), logScale(m, g)));
    Scalars t = getSO3Model().buildInverse(m, g);
    for (Value &x : t)
      x = m.mul(x, k);
    return t;
  }

  Scalars buildLog(ScalarBuilder &m, ValueRange g) const override {
    Value sigma = logScale(m, g);
    Scalars w = getSO3Model().buildLog(m, unitScale(m, g, sigma));
    w.push_back(sigma);
    return w;
  }

  Scalars buildExp(ScalarBuilder &m, ValueRange v) const override {
    Scalars r = getSO3Model().buildExp(m, v.take_front(3));
    Value s = m.exp(v[3]);
    for (Value &x : r)
      x = m.mul(x, s);
    return r;
  }

  unsigned getQueryFeatureCount() const override { return 10; }
  unsigned getKeyFeatureCount() const override { return 10; }
  Scalars buildQueryFeatures(ScalarBuilder &m, ValueRange g) const override {
    Value sigma = logScale(m, g);
    Scalars f = unitScale(m, g, sigma);
    f.push_back(sigma);
    return f;
  }
  Scalars buildKeyFeatures(ScalarBuilder &m, ValueRange g) const override {
    return buildQueryFeatures(m, g);
  }
  Scalars buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                              ValueRange k) const override {
    Scalars n =
        getSO3Model().buildPairBlockNorms(m, q.take_front(9), k.take_front(9));
    n.push_back(m.sqr(m.sub(k[9], q[9])));
    return n;
  }

private:
  /// σ = ln(det g)/3.
  static Value logScale(ScalarBuilder &m, ValueRange g) {
    auto e = [&](unsigned i, unsigned j) { return g[3 * i + j]; };
    Value c0 = m.fma(e(1, 1), e(2, 2), m.neg(m.mul(e(1, 2), e(2, 1))));
    Value c1 = m.fma(e(1, 2), e(2, 0), m.neg(m.mul(e(1, 0), e(2, 2))));
    Value c2 = m.fma(e(1, 0), e(2, 1), m.neg(m.mul(e(1, 1), e(2, 0))));
    Value det = m.fma(e(0, 0), c0, m.fma(e(0, 1), c1, m.mul(e(0, 2), c2)));
    return m.mul(m.c(1.0 / 3.0), m.log(det));
  }

  /// g·e^{−σ}.
  static Scalars unitScale(ScalarBuilder &m, ValueRange g, Value sigma) {
    Value k = m.exp(m.neg(sigma));
    Scalars r(9);
    for (unsigned i = 0; i < 9; ++i)
      r[i] = m.mul(g[i], k);
    return r;
  }
};

} // namespace

const GroupModel &torsor::lie::getCO3ClosedFormModel() {
  static const CO3Model model;
  return model;
}
