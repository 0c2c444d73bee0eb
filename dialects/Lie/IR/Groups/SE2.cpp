//===- SE2.cpp - The SE(2) group model ------------------------------------===//
//
// Planar rigid motions [[R(θ), t], [0, 1]] (3×3). Algebra coordinates
// (θ, ρ₁, ρ₂) with hat [[0, −θ, ρ₁], [θ, 0, ρ₂], [0, 0, 0]]; blocks "rot" [0,
// 1) and "trans" [1, 3); points are 2-vectors acted on homogeneously.
//
// Chart: θ ∈ (−π, π]. log takes θ = atan2(R₁₀ − R₀₁, R₀₀ + R₁₁) as SO(2)
// does, then ρ = (x / sin x)·R(−x)·t with x = θ/2. exp is the same map
// backwards: t = (sin x / x)·R(x)·ρ. Writing V and V⁻¹ through the half
// angle keeps both free of 1 − cos θ (which cancels for small θ) and of any
// singularity: |x| ≤ π/2, so x / sin x ∈ [1, π/2].
//
// Branches: x / sin x and sin x / x are 0/0 only at x = 0; elsewhere the
// direct quotient is correctly rounded to a few ulps. Below |x| = 1e-2 (f64)
// or 0.1 (f32) both use their Taylor polynomial through x⁶, whose truncation
// error there (≤ 2.1e-4·x⁸: 2e-20 and 2e-12) is far below half an ulp, so the
// two sides of each switch agree to rounding.
//
// θ = π: R = −I has two logarithms, θ = ±π; atan2 returns +π or −π depending
// on the sign of the (zero) sine, and ρ = ±(π/2)·R(∓π/2)t follows it. Both
// are valid logs of the same element with the same ‖θ‖ and ‖ρ‖, hence the
// same dist2.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/BuiltinFacts.h"
#include "dialects/Lie/IR/Groups/Groups.h"
#include "dialects/Lie/IR/Groups/PairForms.h"

#include <cmath>

using namespace mlir;
using namespace torsor::lie;

namespace {

/// Taylor coefficients in x² of x / sin x and of sin x / x.
constexpr double kXOverSinX[] = {1.0, 1.0 / 6, 7.0 / 360, 31.0 / 15120};
constexpr double kSinXOverX[] = {1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040};

class SE2Model final : public GroupModel {
public:
  StringRef getName() const override { return "se2"; }
  StringRef getDisplayName() const override {
    return toRef(builtinFacts("se2").name);
  }
  unsigned getMatrixSize() const override { return builtinFacts("se2").n; }
  unsigned getAlgebraDim() const override { return builtinFacts("se2").k; }
  unsigned getPointDim() const override { return builtinFacts("se2").pointDim; }
  ArrayRef<AlgebraBlock> getBlocks() const override {
    return builtinBlocks("se2");
  }
  bool isInsideChart(ArrayRef<double> v) const override {
    return std::abs(v[0]) < M_PI;
  }

  // Pairwise form: (c, s, t₁, t₂) per token. θ_ij as SO(2); the
  // translation block is f(θ)·‖t_j − t_i‖² (R(−x) and R_iᵀ preserve
  // norms), with the difference formed per pair: the expansion
  // ‖t_i‖² + ‖t_j‖² − 2⟨t_i, t_j⟩ would cancel when |t| ≫ |t_j − t_i|.
  unsigned getQueryFeatureCount() const override { return 4; }
  unsigned getKeyFeatureCount() const override { return 4; }
  Scalars buildQueryFeatures(ScalarBuilder &m, ValueRange g) const override {
    Scalars f = buildPlanarFeatures(m, g[0], g[1], g[3], g[4]);
    f.append({g[2], g[5]});
    return f;
  }
  Scalars buildKeyFeatures(ScalarBuilder &m, ValueRange g) const override {
    return buildQueryFeatures(m, g);
  }
  Scalars buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                              ValueRange k) const override {
    PairAngle angle = buildPlanarPairAngle(m, q.take_front(2), k.take_front(2));
    Value d1 = m.sub(k[2], q[2]), d2 = m.sub(k[3], q[3]);
    Value dist2 = m.fma(d1, d1, m.mul(d2, d2));
    return {m.sqr(angle.theta), m.mul(buildHalfAngleRatio2(m, angle), dist2)};
  }

  /// Top two rows of a·b; the fixed row [0, 0, 1] is not computed.
  Scalars buildCompose(ScalarBuilder &m, ValueRange a,
                       ValueRange b) const override {
    Scalars c(9);
    for (unsigned i = 0; i < 2; ++i) {
      for (unsigned j = 0; j < 2; ++j)
        c[i * 3 + j] = m.fma(a[i * 3], b[j], m.mul(a[i * 3 + 1], b[3 + j]));
      c[i * 3 + 2] =
          m.add(m.fma(a[i * 3], b[2], m.mul(a[i * 3 + 1], b[5])), a[i * 3 + 2]);
    }
    c[6] = m.c(0.0);
    c[7] = m.c(0.0);
    c[8] = m.c(1.0);
    return c;
  }

  /// [Rᵀ, −Rᵀt].
  Scalars buildInverse(ScalarBuilder &m, ValueRange g) const override {
    Value x = m.neg(m.fma(g[0], g[2], m.mul(g[3], g[5])));
    Value y = m.neg(m.fma(g[1], g[2], m.mul(g[4], g[5])));
    return {g[0], g[3], x, g[1], g[4], y, g[6], g[7], g[8]};
  }

  Scalars buildLog(ScalarBuilder &m, ValueRange g) const override {
    // Uses all four rotation entries, so θ is the angle of the nearest
    // rotation when R is slightly off SO(2) (as SO2.cpp).
    Value theta = m.atan2(m.sub(g[3], g[1]), m.add(g[0], g[4]));
    Value x = m.mul(m.c(0.5), theta);
    Value cx = m.cos(x), sx = m.sin(x);
    Value k = m.select(m.lt(m.abs(x), m.c(seriesBound(m))),
                       m.poly(m.sqr(x), kXOverSinX), m.div(x, sx));
    // R(−x)·t, then scale.
    Value r1 = m.fma(cx, g[2], m.mul(sx, g[5]));
    Value r2 = m.fma(cx, g[5], m.neg(m.mul(sx, g[2])));
    return {theta, m.mul(k, r1), m.mul(k, r2)};
  }

  Scalars buildExp(ScalarBuilder &m, ValueRange v) const override {
    Value theta = v[0];
    Value c = m.cos(theta), s = m.sin(theta);
    Value x = m.mul(m.c(0.5), theta);
    Value cx = m.cos(x), sx = m.sin(x);
    Value k = m.select(m.lt(m.abs(x), m.c(seriesBound(m))),
                       m.poly(m.sqr(x), kSinXOverX), m.div(sx, x));
    // (sin x / x)·R(x)·ρ.
    Value t1 = m.mul(k, m.fma(cx, v[1], m.neg(m.mul(sx, v[2]))));
    Value t2 = m.mul(k, m.fma(sx, v[1], m.mul(cx, v[2])));
    return {c, m.neg(s), t1, s, c, t2, m.c(0.0), m.c(0.0), m.c(1.0)};
  }

private:
  /// |x| below which the half-angle quotients use their series.
  static double seriesBound(ScalarBuilder &m) { return m.isF32() ? 0.1 : 1e-2; }
};

} // namespace

const GroupModel &torsor::lie::getSE2Model() {
  static const SE2Model model;
  return model;
}
