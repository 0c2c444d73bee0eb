//===- SO3.cpp - The SO(3) group model ------------------------------------===//
//
// Rotations of ℝ³ as 3×3 row-major matrices; algebra coordinates ω ∈ ℝ³ in
// the orthonormal basis hat(ω) = [[0, −ω₃, ω₂], [ω₃, 0, −ω₁], [−ω₂, ω₁, 0]];
// one block "rot". Chart: ‖ω‖ < π (exp is injective there); log returns
// ‖ω‖ = θ ∈ [0, π].
//
// log: θ = atan2(½‖a‖, (tr R − 1)/2) with a = vee(R − Rᵀ) = 2 sin θ · n,
// never acos (which loses half the digits near θ = 0 and θ = π). Three
// regimes, all evaluated and picked with selects:
//   - θ < θ₀ (small angle): ω = ½(1 + θ²/6 + 7θ⁴/360) · a. Only needed to
//     avoid 0/0 at the identity; θ₀ = 1e-3 (f64) and 2e-2 (f32) put the
//     first dropped term (31θ⁶/15120) below 1e-20 (f64) and 1.4e-13 (f32)
//     relative, far under half an ulp, while the exact ratio θ/(2 sin θ) is
//     ulp-accurate on the other side: the switch is continuous to rounding.
//   - cos θ ≥ −½ (generic): ω = θ/(2 sin θ) · a, sin θ = ½‖a‖.
//   - cos θ < −½ (near π): a = 2 sin θ n shrinks to rounding noise, so the
//     axis comes from the symmetric part (R + Rᵀ)/2 − cos θ I =
//     (1 − cos θ) n nᵀ: take the column with the largest diagonal
//     (≥ (1 − cos θ)/3, so no cancellation), normalise it, and orient it so
//     that it has a non-negative dot product with a. The direction error of
//     the generic branch is ~u/sin θ and of this one ~u/(1 − cos θ); at the
//     switch (θ = 2π/3) both are ≤ 1.2u, so the threshold is the same for
//     both dtypes and the branches agree to rounding.
// At exactly θ = π, a = 0 and both ±πn are valid logs (they give the same
// dist2). We return the one whose component of largest magnitude (the
// largest diagonal of the symmetric part; ties go to the lower index) is
// positive, e.g. log diag(1, −1, −1) = (π, 0, 0).
//
// exp: Rodrigues R = I + A hat(ω) + B hat(ω)², A = sin θ/θ,
// B = (1 − cos θ)/θ² written as ½(sin(θ/2)/(θ/2))² (no cancellation).
// Below θ₀ (same values as log): A = 1 − θ²/6 + θ⁴/120,
// B = ½ − θ²/24 + θ⁴/720; the dropped terms are ≤ θ₀⁶/5040 relative.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/BuiltinFacts.h"
#include "dialects/Lie/IR/Groups/Groups.h"
#include "dialects/Lie/IR/Groups/PairForms.h"

#include <cmath>

using namespace mlir;
using namespace torsor::lie;

namespace {
/// Below this angle log and exp use their Taylor series (see file comment).
double smallAngle(ScalarBuilder &m) { return m.isF32() ? 2e-2 : 1e-3; }

/// log switches to the symmetric-part axis when cos θ drops below this.
constexpr double kNearPiCos = -0.5;

class SO3Model final : public GroupModel {
public:
  StringRef getName() const override { return "so3"; }
  StringRef getDisplayName() const override {
    return toRef(builtinFacts("so3").name);
  }
  unsigned getMatrixSize() const override { return builtinFacts("so3").n; }
  unsigned getAlgebraDim() const override { return builtinFacts("so3").k; }
  unsigned getPointDim() const override { return builtinFacts("so3").pointDim; }
  ArrayRef<AlgebraBlock> getBlocks() const override {
    return builtinBlocks("so3");
  }
  bool isInsideChart(ArrayRef<double> v) const override {
    return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) < M_PI;
  }

  // Pairwise form: the 9 entries of R per token; θ_ij from tr(R_iᵀR_j)
  // and vee(R_iᵀR_j − R_jᵀR_i), both bilinear (PairForms.h).
  unsigned getQueryFeatureCount() const override { return 9; }
  unsigned getKeyFeatureCount() const override { return 9; }
  Scalars buildQueryFeatures(ScalarBuilder &, ValueRange g) const override {
    return Scalars(g.begin(), g.end());
  }
  Scalars buildKeyFeatures(ScalarBuilder &m, ValueRange g) const override {
    return buildQueryFeatures(m, g);
  }
  Scalars buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                              ValueRange k) const override {
    Value axis[3];
    return {m.sqr(buildSpatialPairAngle(m, q, k, axis).theta)};
  }
  /// N = θ²: θ̄ = 2θ n̄ into the angle's hand-written VJP.
  std::optional<std::pair<Scalars, Scalars>>
  buildPairBlockNormsAdjoint(ScalarBuilder &m, ValueRange q, ValueRange k,
                             ValueRange normBars) const override {
    Value axis[3];
    PairAngle angle = buildSpatialPairAngle(m, q, k, axis);
    Value half = m.mul(normBars[0], angle.theta);
    return buildSpatialPairAngleVJP(m, q, k, angle, axis, m.add(half, half));
  }

  /// Rᵀ.
  Scalars buildInverse(ScalarBuilder &, ValueRange g) const override {
    return {g[0], g[3], g[6], g[1], g[4], g[7], g[2], g[5], g[8]};
  }

  Scalars buildLog(ScalarBuilder &m, ValueRange g) const override {
    auto r = [&](unsigned i, unsigned j) { return g[3 * i + j]; };
    // a = vee(R − Rᵀ) = 2 sin θ · n.
    Value a[3] = {m.sub(r(2, 1), r(1, 2)), m.sub(r(0, 2), r(2, 0)),
                  m.sub(r(1, 0), r(0, 1))};
    Value sinT = m.mul(m.c(0.5), m.sqrt(m.dot(a, a)));
    Value trace = m.add(m.add(r(0, 0), r(1, 1)), r(2, 2));
    Value cosT = m.mul(m.c(0.5), m.sub(trace, m.c(1.0)));
    Value theta = m.atan2(sinT, cosT);

    // Small and generic: ω = θ/(2 sin θ) · a.
    Value exact = m.div(m.mul(m.c(0.5), theta), sinT);
    Value series = m.poly(m.sqr(theta), {0.5, 0.5 / 6.0, 0.5 * 7.0 / 360.0});
    Value ratio = m.select(m.lt(theta, m.c(smallAngle(m))), series, exact);

    // Near π: the column of (R + Rᵀ)/2 − cos θ I with the largest diagonal,
    // which is (1 − cos θ) n_k · n.
    auto sym = [&](unsigned i, unsigned j) {
      if (i == j)
        return m.sub(r(i, i), cosT);
      return m.mul(m.c(0.5), m.add(r(i, j), r(j, i)));
    };
    Value d0 = sym(0, 0), d1 = sym(1, 1), d2 = sym(2, 2);
    auto ge = [&](Value x, Value y) -> Value {
      return arith::CmpFOp::create(m.builder(), arith::CmpFPredicate::OGE, x,
                                   y);
    };
    Value pick0 = m.andI(ge(d0, d1), ge(d0, d2));
    Value pick1 = ge(d1, d2);
    Value col[3];
    for (unsigned i = 0; i < 3; ++i)
      col[i] = m.select(
          pick0, i == 0 ? d0 : sym(i, 0),
          m.select(pick1, i == 1 ? d1 : sym(i, 1), i == 2 ? d2 : sym(i, 2)));
    // Orient along a (at θ = π exactly, a = 0 and the sign stays +).
    Value scale = m.div(theta, m.sqrt(m.dot(col, col)));
    scale = m.select(m.lt(m.dot(col, a), m.c(0.0)), m.neg(scale), scale);

    Value nearPi = m.lt(cosT, m.c(kNearPiCos));
    Scalars w(3);
    for (unsigned i = 0; i < 3; ++i)
      w[i] = m.select(nearPi, m.mul(scale, col[i]), m.mul(ratio, a[i]));
    return w;
  }

  Scalars buildExp(ScalarBuilder &m, ValueRange v) const override {
    Value sq[3] = {m.sqr(v[0]), m.sqr(v[1]), m.sqr(v[2])};
    Value theta2 = m.add(m.add(sq[0], sq[1]), sq[2]);
    Value theta = m.sqrt(theta2);
    Value half = m.mul(m.c(0.5), theta);
    Value sinHalfRatio = m.div(m.sin(half), half);
    Value small = m.lt(theta, m.c(smallAngle(m)));
    Value a = m.select(small, m.poly(theta2, {1.0, -1.0 / 6.0, 1.0 / 120.0}),
                       m.div(m.sin(theta), theta));
    Value b = m.select(small, m.poly(theta2, {0.5, -1.0 / 24.0, 1.0 / 720.0}),
                       m.mul(m.c(0.5), m.sqr(sinHalfRatio)));

    // R = I + A hat(ω) + B hat(ω)², hat(ω)² = ωωᵀ − θ² I. The diagonal is
    // written 1 − B(ω_j² + ω_k²) so it does not cancel θ² against ω_i².
    Scalars r(9);
    for (unsigned i = 0; i < 3; ++i) {
      unsigned j = (i + 1) % 3, k = (i + 2) % 3;
      r[4 * i] = m.sub(m.c(1.0), m.mul(b, m.add(sq[j], sq[k])));
      // Entries (j, k) and (k, j): B ω_j ω_k ∓ A ω_i.
      Value sym = m.mul(b, m.mul(v[j], v[k]));
      Value skew = m.mul(a, v[i]);
      r[3 * j + k] = m.sub(sym, skew);
      r[3 * k + j] = m.add(sym, skew);
    }
    return r;
  }
};
} // namespace

const GroupModel &torsor::lie::getSO3Model() {
  static const SO3Model model;
  return model;
}
