//===- SE3.cpp - The SE(3) group model ------------------------------------===//
//
// Rigid motions [[R, t], [0, 1]] as 4×4 row-major matrices; algebra
// coordinates (ω, ρ) ∈ ℝ⁶ in the orthonormal basis
// hat(ω, ρ) = [[hat ω, ρ], [0, 0]]; blocks "rot" [0, 3) and "trans" [3, 6);
// points are ℝ³ acted on through homogeneous coordinates. Chart: ‖ω‖ < π.
//
// The rotation block reuses the SO(3) model (log, exp and their thresholds:
// small-angle series below θ₀ = 1e-3 (f64) / 2e-2 (f32), symmetric-part axis
// for cos θ < −½; see SO3.cpp). On top of it:
//
// log: ρ = V⁻¹ t, V⁻¹ = I − ½ hat ω + c hat ω², with
//   c = θ⁻² (1 − θ sin θ / (2(1 − cos θ))) = θ⁻² (1 − (θ/2) cot(θ/2)).
// The textbook form divides by 1 − cos θ, which cancels catastrophically
// for small θ in float32; the half-angle form has no cancellation except
// the final 1 − (θ/2)cot(θ/2) ≈ θ²/12, whose absolute error u becomes
// u·|t| in ρ after multiplying by hat ω² (|hat ω²| = θ²): ulp-level at every
// angle. Near θ = π it is smooth (c → 1/π²) and (θ/2)cot(θ/2) → 0 is
// well-conditioned. Below θ₀, c = 1/12 + θ²/720 + θ⁴/30240 (dropped term
// θ⁶/1209600, < 1e-23 (f64) / 1e-15 (f32) relative at θ₀).
// hat ω² t is computed as ω × (ω × t), not ω(ω·t) − θ² t, which would
// cancel when t is nearly parallel to the axis.
// At exactly θ = π the sign of ω is the SO(3) model's choice (largest axis
// component positive) and ρ follows it; the other valid log, (−ω, ρ'), has
// ‖ρ'‖ = ‖ρ‖ (‖V⁻¹t‖² = (n·t)² + ((θ/2)/sin(θ/2))² ‖t − (n·t)n‖² depends
// on n only up to sign), so dist2 is the same either way.
//
// exp: R by Rodrigues (SO(3) model), t = V ρ with
//   V = I + ((1 − cos θ)/θ²) hat ω + ((θ − sin θ)/θ³) hat ω²,
// (1 − cos θ)/θ² written ½(sin(θ/2)/(θ/2))²; (θ − sin θ)/θ³ cancels like
// θ²/6 but, as above, its absolute error times |hat ω²| is u·|ρ|. Below θ₀
// the series ½ − θ²/24 + θ⁴/720 and 1/6 − θ²/120 + θ⁴/5040.
//
// compose, inverse ([Rᵀ, −Rᵀt]) and dist2 skip the constant last row (they
// still output [0 0 0 1]). dist2 forms the relative motion directly as
// (R_aᵀ R_b, R_aᵀ (t_b − t_a)): algebraically the default inverse-compose,
// but subtracting the translations first keeps nearby large translations
// accurate.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/BuiltinFacts.h"
#include "dialects/Lie/IR/Groups/Groups.h"
#include "dialects/Lie/IR/Groups/PairForms.h"
#include "dialects/Lie/IR/Groups/Series.h"

#include <cmath>

using namespace mlir;
using namespace torsor::lie;

namespace {
/// x × y.
Scalars cross(ScalarBuilder &m, ValueRange x, ValueRange y) {
  return {m.sub(m.mul(x[1], y[2]), m.mul(x[2], y[1])),
          m.sub(m.mul(x[2], y[0]), m.mul(x[0], y[2])),
          m.sub(m.mul(x[0], y[1]), m.mul(x[1], y[0]))};
}

/// The 4×4 homogeneous matrix of rotation `r` (9) and translation `t` (3).
Scalars homogeneous(ScalarBuilder &m, ValueRange r, ValueRange t) {
  Value zero = m.c(0.0);
  return {r[0], r[1], r[2], t[0], r[3], r[4], r[5], t[1],
          r[6], r[7], r[8], t[2], zero, zero, zero, m.c(1.0)};
}

/// The rotation block of a 4×4 matrix, row-major.
Scalars rotation(ValueRange g) {
  return {g[0], g[1], g[2], g[4], g[5], g[6], g[8], g[9], g[10]};
}

class SE3Model final : public GroupModel {
public:
  StringRef getName() const override { return "se3"; }
  StringRef getDisplayName() const override {
    return toRef(builtinFacts("se3").name);
  }
  unsigned getMatrixSize() const override { return builtinFacts("se3").n; }
  unsigned getAlgebraDim() const override { return builtinFacts("se3").k; }
  unsigned getPointDim() const override { return builtinFacts("se3").pointDim; }
  ArrayRef<AlgebraBlock> getBlocks() const override {
    return builtinBlocks("se3");
  }
  bool isInsideChart(ArrayRef<double> v) const override {
    return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) < M_PI;
  }

  // Pairwise form (MATH.md §1): R (9) and t (3) per token. With M =
  // R_iᵀR_j (angle θ, axis n) and u = R_iᵀ(t_j − t_i),
  //   ‖ρ‖² = ‖V⁻¹u‖² = (n·u)² + f(θ)(‖u‖² − (n·u)²),
  // f = ((θ/2)/sin(θ/2))². (n·u)² is (a·u)²/‖a‖² (a = 2 sin θ n) for
  // cos θ ≥ −½; nearer π, where a vanishes, it is
  // (uᵀMu − cos θ‖u‖²)/(1 − cos θ) from nnᵀ = (sym M − cos θ I)/(1 − cos θ),
  // with uᵀMu = (R_i u)·(R_j u) = (t_j − t_i)·(R_j u): no cancellation on
  // either side of the switch, which both dtypes share (SO3.cpp's reason).
  unsigned getQueryFeatureCount() const override { return 12; }
  unsigned getKeyFeatureCount() const override { return 12; }
  Scalars buildQueryFeatures(ScalarBuilder &, ValueRange g) const override {
    return {g[0], g[1], g[2],  g[4], g[5], g[6],
            g[8], g[9], g[10], g[3], g[7], g[11]};
  }
  Scalars buildKeyFeatures(ScalarBuilder &m, ValueRange g) const override {
    return buildQueryFeatures(m, g);
  }
  Scalars buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                              ValueRange k) const override {
    ValueRange ri = q.take_front(9), rj = k.take_front(9);
    Value a[3];
    PairAngle angle = buildSpatialPairAngle(m, ri, rj, a);
    Value d[3], u[3], w[3];
    for (unsigned i = 0; i < 3; ++i)
      d[i] = m.sub(k[9 + i], q[9 + i]);
    for (unsigned p = 0; p < 3; ++p) // u = R_iᵀd
      u[p] = m.fma(ri[6 + p], d[2], m.fma(ri[3 + p], d[1], m.mul(ri[p], d[0])));
    for (unsigned r = 0; r < 3; ++r) // w = R_j u
      w[r] = m.dot({rj[3 * r], rj[3 * r + 1], rj[3 * r + 2]}, u);
    Value uu = m.dot(u, u);
    Value aa = m.dot(a, a), au = m.dot(a, u);
    Value zero = m.c(0.0);
    // One division for both sides: (n·u)² = num/den, 0 where a = 0 away
    // from π (θ = 0, where den = ‖a‖² = 0; 1 − cos θ > 1.5 nearer π).
    Value nearPi = m.lt(angle.cosT, m.c(-0.5));
    Value num =
        m.select(nearPi, m.sub(m.dot(d, w), m.mul(angle.cosT, uu)), m.sqr(au));
    Value den = m.select(nearPi, m.sub(m.c(1.0), angle.cosT), aa);
    Value nu2 = m.select(m.gt(den, zero), m.div(num, den), zero);
    nu2 = m.clampFinite(nu2, zero, uu);
    Value trans = m.fma(buildHalfAngleRatio2(m, angle), m.sub(uu, nu2), nu2);
    return {m.sqr(angle.theta), trans};
  }

  Scalars buildCompose(ScalarBuilder &m, ValueRange a,
                       ValueRange b) const override {
    Scalars r(9), t(3);
    for (unsigned i = 0; i < 3; ++i) {
      for (unsigned j = 0; j < 3; ++j)
        r[3 * i + j] =
            m.fma(a[4 * i + 2], b[8 + j],
                  m.fma(a[4 * i + 1], b[4 + j], m.mul(a[4 * i], b[j])));
      t[i] =
          m.fma(a[4 * i + 2], b[11],
                m.fma(a[4 * i + 1], b[7], m.fma(a[4 * i], b[3], a[4 * i + 3])));
    }
    return homogeneous(m, r, t);
  }

  /// [Rᵀ, −Rᵀ t].
  Scalars buildInverse(ScalarBuilder &m, ValueRange g) const override {
    Scalars r = {g[0], g[4], g[8], g[1], g[5], g[9], g[2], g[6], g[10]};
    Scalars t(3);
    for (unsigned i = 0; i < 3; ++i)
      t[i] = m.neg(
          m.fma(g[8 + i], g[11], m.fma(g[4 + i], g[7], m.mul(g[i], g[3]))));
    return homogeneous(m, r, t);
  }

  Scalars buildLog(ScalarBuilder &m, ValueRange g) const override {
    Scalars w = getSO3Model().buildLog(m, rotation(g));
    Value t[3] = {g[3], g[7], g[11]};
    Value theta2 = m.dot(w, w);
    Value theta = m.sqrt(theta2);
    Value c = series::inverseVCoefficient(
        m, theta, theta2, m.lt(theta, m.c(series::rotationSmallAngle(m))));
    // ρ = t − ½ ω×t + c ω×(ω×t).
    Scalars wt = cross(m, w, t);
    Scalars wwt = cross(m, w, wt);
    Scalars v(w.begin(), w.end());
    for (unsigned i = 0; i < 3; ++i)
      v.push_back(m.fma(c, wwt[i], m.fma(m.c(-0.5), wt[i], t[i])));
    return v;
  }

  Scalars buildExp(ScalarBuilder &m, ValueRange v) const override {
    ValueRange w = v.take_front(3), rho = v.drop_front(3);
    Scalars r = getSO3Model().buildExp(m, w);
    Value theta2 = m.dot(w, w);
    Value theta = m.sqrt(theta2);
    auto [b, c] = series::expVCoefficients(
        m, theta, theta2, m.lt(theta, m.c(series::rotationSmallAngle(m))));
    // t = ρ + B ω×ρ + C ω×(ω×ρ).
    Scalars wr = cross(m, w, rho);
    Scalars wwr = cross(m, w, wr);
    Scalars t(3);
    for (unsigned i = 0; i < 3; ++i)
      t[i] = m.fma(c, wwr[i], m.fma(b, wr[i], rho[i]));
    return homogeneous(m, r, t);
  }

  /// Like the default, but forms the relative motion without the constant
  /// row and subtracts the translations before rotating them.
  Value buildDist2(ScalarBuilder &m, ValueRange a, ValueRange b,
                   ValueRange lambda) const override {
    Scalars r(9), t(3);
    Value d[3] = {m.sub(b[3], a[3]), m.sub(b[7], a[7]), m.sub(b[11], a[11])};
    for (unsigned i = 0; i < 3; ++i) {
      // Row i of R_aᵀ is column i of R_a.
      for (unsigned j = 0; j < 3; ++j)
        r[3 * i + j] = m.fma(a[8 + i], b[8 + j],
                             m.fma(a[4 + i], b[4 + j], m.mul(a[i], b[j])));
      t[i] = m.fma(a[8 + i], d[2], m.fma(a[4 + i], d[1], m.mul(a[i], d[0])));
    }
    return buildWeightedNorm2(m, buildLog(m, homogeneous(m, r, t)), lambda);
  }
};
} // namespace

const GroupModel &torsor::lie::getSE3Model() {
  static const SE3Model model;
  return model;
}
