//===- Sim2.cpp - Closed forms of the planar similarity group -------------===//
//
// Sim(2): [[a, −b, t₁], [b, a, t₂], [0, 0, 1]], the linear part the complex
// number z = a + ib = e^{σ+iθ}. Not a built-in keyword: this model serves
// declared groups whose algebra is sim(2) or a subalgebra of it (in any
// basis, GroupStructure.h), e.g. the shipped examples/sim2_similarity.tsr
// and SO(2) × ℝ⁺ of the plane. Coordinates (θ, σ, ρ₁, ρ₂) in the basis
// J = [[0, −1], [1, 0]], S = diag(1, 1), T_x, T_y (3×3); blocks "rotscale"
// [0, 2) and "trans" [2, 4).
//
// With w = σ + iθ and complex arithmetic on the plane (ρ, t ∈ ℂ):
//   exp  z = e^w,  t = φ(w)·ρ,  φ(w) = (e^w − 1)/w;
//   log  θ = atan2(b, a), σ = ½ ln(a² + b²), ρ = t / φ(w).
// φ(w) = Σ_k w^k/(k+1)! by Horner for |w| < 0.1 (f64 to w¹⁰, truncation
// < 3e-20; f32 to w⁶, < 3e-12); elsewhere (e^w − 1)·w̄/|w|² with
// Re(e^w − 1) = expm1(σ) − 2e^σ sin²(θ/2), which does not cancel next to
// the identity, and Im = e^σ sin θ.
//
// Pairwise form (fused attention): with z_ij = z_i⁻¹z_j and
// u = z_i⁻¹(t_j − t_i) of g_i⁻¹g_j,
//   N_rotscale = θ_ij² + σ_ij²,  σ_ij = ln|z_j| − ln|z_i|,
//   N_trans   = ‖ρ‖² = ‖u‖²/|φ(w)|²,  ‖u‖² = ‖t_j − t_i‖²/|z_i|²,
//   |φ(w)|² = (σ²·(expm1(σ)/σ)² + θ²·e^σ sinc²(θ/2)) / (σ² + θ²),
// a weighted mean of two factors that tend to 1 (no 0/0 but at w = 0
// exactly, where it is 1). θ_ij is SO(2)'s pair angle of the (a, b)
// features (two dot products), sinc²(θ/2) the half-angle ratio SE(2) uses
// (PairForms.h), and the difference t_j − t_i is formed per pair (MATH.md:
// the expanded form cancels when |t| ≫ |t_j − t_i|). Features: query
// (a, b, ln|z|, t₁, t₂, 1/|z|²), key (a, b, ln|z|, t₁, t₂).
//
// Chart: |θ| < π. At θ = π (z real negative) both ±π are logs with the same
// dist2, as for SE(2).
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Groups.h"
#include "dialects/Lie/IR/Groups/PairForms.h"

#include <cmath>

using namespace mlir;
using namespace torsor::lie;

namespace {

/// A complex value as two scalars.
struct Complex {
  Value re, im;
};

Complex cmul(ScalarBuilder &m, Complex x, Complex y) {
  return {m.fma(x.re, y.re, m.neg(m.mul(x.im, y.im))),
          m.fma(x.re, y.im, m.mul(x.im, y.re))};
}

/// x / y.
Complex cdiv(ScalarBuilder &m, Complex x, Complex y) {
  Value inv = m.div(m.c(1.0), m.fma(y.re, y.re, m.mul(y.im, y.im)));
  Complex num = {m.fma(x.re, y.re, m.mul(x.im, y.im)),
                 m.fma(x.im, y.re, m.neg(m.mul(x.re, y.im)))};
  return {m.mul(num.re, inv), m.mul(num.im, inv)};
}

/// Taylor coefficients of expm1(x)/x.
constexpr double kPhi[] = {1.0,           1.0 / 2,       1.0 / 6,
                           1.0 / 24,      1.0 / 120,     1.0 / 720,
                           1.0 / 5040,    1.0 / 40320,   1.0 / 362880,
                           1.0 / 3628800, 1.0 / 39916800};

class Sim2Model final : public GroupModel {
public:
  StringRef getName() const override { return "sim2"; }
  StringRef getDisplayName() const override { return "Sim2"; }
  unsigned getMatrixSize() const override { return 3; }
  unsigned getAlgebraDim() const override { return 4; }
  unsigned getPointDim() const override { return 2; }
  ArrayRef<AlgebraBlock> getBlocks() const override {
    static const AlgebraBlock blocks[] = {{"rotscale", 0, 2}, {"trans", 2, 2}};
    return blocks;
  }
  bool isInsideChart(ArrayRef<double> v) const override {
    return std::abs(v[0]) < M_PI;
  }

  Scalars buildInverse(ScalarBuilder &m, ValueRange g) const override {
    // z⁻¹ = z̄/|z|², then −z⁻¹t.
    Complex z = linear(m, g);
    Value inv = m.div(m.c(1.0), m.fma(z.re, z.re, m.mul(z.im, z.im)));
    Complex zi = {m.mul(z.re, inv), m.neg(m.mul(z.im, inv))};
    Complex t = cmul(m, zi, {g[2], g[5]});
    return element(m, zi, {m.neg(t.re), m.neg(t.im)});
  }

  Scalars buildLog(ScalarBuilder &m, ValueRange g) const override {
    Complex z = linear(m, g);
    Value theta = m.atan2(z.im, z.re);
    Value sigma = m.mul(m.c(0.5), m.log(m.fma(z.re, z.re, m.mul(z.im, z.im))));
    Complex rho = cdiv(m, {g[2], g[5]}, phi(m, sigma, theta));
    return {theta, sigma, rho.re, rho.im};
  }

  Scalars buildExp(ScalarBuilder &m, ValueRange v) const override {
    Value es = m.exp(v[1]);
    Complex z = {m.mul(es, m.cos(v[0])), m.mul(es, m.sin(v[0]))};
    return element(m, z, cmul(m, phi(m, v[1], v[0]), {v[2], v[3]}));
  }

  unsigned getQueryFeatureCount() const override { return 6; }
  unsigned getKeyFeatureCount() const override { return 5; }
  Scalars buildQueryFeatures(ScalarBuilder &m, ValueRange g) const override {
    Scalars f = buildKeyFeatures(m, g);
    f.push_back(m.div(m.c(1.0), m.fma(f[0], f[0], m.mul(f[1], f[1]))));
    return f;
  }
  Scalars buildKeyFeatures(ScalarBuilder &m, ValueRange g) const override {
    Complex z = linear(m, g);
    Value lnr = m.mul(m.c(0.5), m.log(m.fma(z.re, z.re, m.mul(z.im, z.im))));
    return {z.re, z.im, lnr, g[2], g[5]};
  }
  Scalars buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                              ValueRange k) const override {
    PairAngle angle = buildPlanarPairAngle(m, q.take_front(2), k.take_front(2));
    Value sigma = m.sub(k[2], q[2]);
    Value theta2 = m.sqr(angle.theta), sigma2 = m.sqr(sigma);
    Value d1 = m.sub(k[3], q[3]), d2 = m.sub(k[4], q[4]);
    Value u2 = m.mul(q[5], m.fma(d1, d1, m.mul(d2, d2)));
    // |φ(w)|² as the weighted mean of (expm1(σ)/σ)² and e^σ sinc²(θ/2).
    Value a = m.sqr(expm1Ratio(m, sigma));
    Value b = m.div(m.exp(sigma), buildHalfAngleRatio2(m, angle));
    Value w2 = m.add(sigma2, theta2);
    Value mean = m.div(m.fma(sigma2, a, m.mul(theta2, b)), w2);
    Value phi2 = m.select(m.gt(w2, m.c(0.0)), mean, m.c(1.0));
    return {w2, m.div(u2, phi2)};
  }

private:
  /// The conformal part of the linear block: the nearest a + ib when the
  /// matrix is slightly off the group (as SO(2)'s log reads it).
  static Complex linear(ScalarBuilder &m, ValueRange g) {
    Scalars f = buildPlanarFeatures(m, g[0], g[1], g[3], g[4]);
    return {f[0], f[1]};
  }

  static Scalars element(ScalarBuilder &m, Complex z, Complex t) {
    return {z.re, m.neg(z.im), t.re,     z.im,    z.re,
            t.im, m.c(0.0),    m.c(0.0), m.c(1.0)};
  }

  /// |w| below which φ and expm1(x)/x use their series.
  static double seriesBound() { return 0.1; }

  static ArrayRef<double> phiSeries(ScalarBuilder &m) {
    return ArrayRef<double>(kPhi).take_front(m.isF32() ? 7 : 11);
  }

  /// expm1(x)/x (→ 1 at x = 0).
  static Value expm1Ratio(ScalarBuilder &m, Value x) {
    Value series = m.poly(x, phiSeries(m));
    return m.select(m.lt(m.abs(x), m.c(seriesBound())), series,
                    m.div(m.expm1(x), x));
  }

  /// φ(w) = (e^w − 1)/w for w = σ + iθ (see the file comment).
  static Complex phi(ScalarBuilder &m, Value sigma, Value theta) {
    // Series: Horner in complex w.
    ArrayRef<double> coeffs = phiSeries(m);
    Complex acc = {m.c(coeffs.back()), m.c(0.0)};
    for (double c : llvm::reverse(coeffs.drop_back())) {
      acc = cmul(m, acc, {sigma, theta});
      acc.re = m.add(acc.re, m.c(c));
    }
    // Direct: (e^w − 1)·w̄/|w|².
    Value es = m.exp(sigma);
    Value half = m.sin(m.mul(m.c(0.5), theta));
    Value re = m.fma(m.mul(m.c(-2.0), es), m.sqr(half), m.expm1(sigma));
    Value im = m.mul(es, m.sin(theta));
    Complex direct = cdiv(m, {re, im}, {sigma, theta});
    Value small = m.lt(m.fma(sigma, sigma, m.mul(theta, theta)),
                       m.c(seriesBound() * seriesBound()));
    return {m.select(small, acc.re, direct.re),
            m.select(small, acc.im, direct.im)};
  }
};

} // namespace

const GroupModel &torsor::lie::getSim2ClosedFormModel() {
  static const Sim2Model model;
  return model;
}
