//===- Sim3.cpp - The Sim(3) group model ----------------------------------===//
//
// Similarities [[sR, t], [0, 1]] (4×4, s > 0, R ∈ SO(3)). Algebra
// coordinates (ω₁, ω₂, ω₃, ρ₁, ρ₂, ρ₃, σ) of log g = [[σI + Ω, ρ], [0, 0]]
// with Ω = [ω]× (the usual hat maps); blocks "rot" [0, 3), "trans" [3, 6),
// "scale" [6, 7); points are 3-vectors acted on homogeneously.
//
// exp: sR = e^σ·Rodrigues(ω), t = Wρ with W = φ(X) = C·I + A·Ω + B·Ω²,
// X = σI + Ω, φ(z) = (eᶻ − 1)/z. log: σ = ln s, ω from R, ρ = W⁻¹t with
// W⁻¹ = ψ(X) = C'·I + A'·Ω + B'·Ω², ψ = 1/φ, solved with the structure (X
// acts as the scalar σ on the axis and as the complex number σ + iθ on the
// plane ⊥ ω), not with a 3×3 solve:
//   C' = 1/C, A' = −A/|φ|², B' = (A² − B·P₀)/(C·|φ|²),
//   P₀ = C − θ²B = Re φ(σ+iθ), |φ|² = P₀² + θ²A² = |φ(σ+iθ)|² > 0 in chart.
// These are Sophus' calcW/calcWInv quantities (a = e^σ sin θ, b = e^σ cos θ,
// c = θ² + σ²), written so that no ratio divides by θ or σ where it is 0:
//   Taylor  |σ| + θ ≤ ½ (both small): Horner in X on (I, Ω, Ω²) with
//           Ω³ = −θ²Ω; φ to degree 14 (f32: 8), ψ = Σ B_k Xᵏ/k! to degree
//           14 (f32: 6); truncation < 2e-18 (f32 < 4e-9).
//   else    C = (e^σ − 1)/σ (series |σ| < 1e-3, f32 1e-2, only for 0/0);
//           A = (σe^σ S − (e^σ cos θ − 1))/c, S = sin θ/θ;
//           B = (C − P₀)/θ²                         when θ ≥ |σ| (θ ≥ ¼),
//           B = (σ²e^σ G + expm1 σ − σe^σ + σe^σθ²H)/(σc)  when |σ| > θ
//           (|σ| > ¼), G = (1 − cos θ)/θ², H = (θ − sin θ)/θ³: free of 1/θ
//           so θ → 0 (σ → 0 is the Taylor region's job).
// Inside each form nothing cancels by more than the factor 1/r ≤ 4 at the
// Taylor boundary, and errors in B, B' enter W only through θ²B, so the
// switches are continuous to a few ulps. Series for S, G, θ/sin θ below
// θ = 1e-2 (f32 0.1); H below θ = 1 (to θ¹⁸, f32 θ¹⁰).
//
// log's rotation: θ = atan2(‖v‖, tr M − s) with v = vee(M − Mᵀ), M = sR
// (both arguments carry the factor 2s). For θ < π/2, ω = θ·v/‖v‖; for
// θ ≥ π/2 the axis comes from the symmetric part (M + Mᵀ)/2 − s cos θ·I =
// s(1 − cos θ)nnᵀ (largest diagonal column, sign from v), which stays
// accurate as sin θ → 0. s² = ‖M‖²_F/3, with s² − 1 summed from
// (m_ii − 1)(m_ii + 1) and m_ij² so that σ = ½ log1p(s² − 1) keeps its
// relative accuracy next to the identity (ln(s²)/2 when |s² − 1| ≥ ½).
//
// dist2 is overridden: the relative element is formed both as M_a⁻¹M_b and
// as the deviation X = M_a⁻¹(M_b − M_a) (t = M_a⁻¹(t_b − t_a)), with
// M_a⁻¹ = M_aᵀ/s_a²; log takes off-diagonals and s² − 1 from X next to the
// identity (Σ|X_ij| < 1, where rounding I + X would lose ε/‖X‖) and from
// M_a⁻¹M_b far from it (where X would lose small entries).
//
// Chart: θ ∈ [0, π) (σ unrestricted). At θ = π exactly (sin θ = 0) both ±π·n
// are logarithms; the sign of n follows the rounding of v and ρ follows ω,
// with the same ‖ω‖, ‖ρ‖ and σ either way.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/BuiltinFacts.h"
#include "dialects/Lie/IR/Groups/Groups.h"
#include "dialects/Lie/IR/Groups/Series.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace torsor::lie;

namespace {

using series::kPhi;
using series::kPsi;

/// Series in θ²: sin θ/θ, θ/sin θ, (θ − sin θ)/θ³.
constexpr double kSinc[] = {1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040,
                            1.0 / 362880};
constexpr double kInvSinc[] = {1.0, 1.0 / 6, 7.0 / 360, 31.0 / 15120};
constexpr double kH[] = {1.0 / 6,
                         -1.0 / 120,
                         1.0 / 5040,
                         -1.0 / 362880,
                         1.0 / 39916800,
                         -1.0 / 6227020800,
                         1.0 / 1307674368000,
                         -1.0 / 355687428096000,
                         1.0 / 121645100408832000,
                         -1.0 / 51090942171709440000.0};

/// F(X) = c·I + a·Ω + b·Ω² for X = σI + Ω.
struct Coeffs {
  Value c, a, b;
};

/// θ below which sin θ/θ-type quotients use their series.
double smallAngle(ScalarBuilder &m) { return m.isF32() ? 0.1 : 1e-2; }

/// sin θ/θ from θ and θ².
Value sinc(ScalarBuilder &m, Value theta, Value theta2) {
  return m.select(m.lt(theta, m.c(smallAngle(m))), m.poly(theta2, kSinc),
                  m.div(m.sin(theta), theta));
}

/// Horner evaluation of Σ coeffs[j]·Xʲ in the (I, Ω, Ω²) basis.
Coeffs matrixPoly(ScalarBuilder &m, Value sigma, Value theta2,
                  ArrayRef<double> coeffs) {
  Value q0 = m.c(coeffs.back()), q1 = m.c(0.0), q2 = m.c(0.0);
  for (double cj : llvm::reverse(coeffs.drop_back())) {
    Value n0 = m.fma(sigma, q0, m.c(cj));
    Value n1 = m.fma(sigma, q1, m.fma(m.neg(theta2), q2, q0));
    Value n2 = m.fma(sigma, q2, q1);
    q0 = n0;
    q1 = n1;
    q2 = n2;
  }
  return {q0, q1, q2};
}

/// φ(X) (inverse = false) or ψ(X) = φ(X)⁻¹ (inverse = true); see the file
/// comment for the forms and their regions.
Coeffs phiOrPsi(ScalarBuilder &m, Value sigma, Value theta, Value theta2,
                bool inverse) {
  Value half = m.c(0.5), one = m.c(1.0);
  bool f32 = m.isF32();

  ArrayRef<double> series = inverse ? ArrayRef<double>(kPsi) : kPhi;
  series = series.take_front(inverse ? (f32 ? 7 : 15) : (f32 ? 9 : 15));
  Coeffs taylor = matrixPoly(m, sigma, theta2, series);

  // Closed forms.
  Value es = m.exp(sigma), em1 = m.expm1(sigma);
  Value cPhi = m.select(m.lt(m.abs(sigma), m.c(f32 ? 1e-2 : 1e-3)),
                        m.poly(sigma, ArrayRef<double>(kPhi).take_front(7)),
                        m.div(em1, sigma));
  Value s = sinc(m, theta, theta2);
  Value sHalf = sinc(m, m.mul(half, theta), m.mul(m.c(0.25), theta2));
  Value g = m.mul(half, m.sqr(sHalf)); // (1 − cos θ)/θ²
  Value h =
      m.select(m.lt(theta, one),
               m.poly(theta2, ArrayRef<double>(kH).take_front(f32 ? 6 : 10)),
               m.div(m.sub(theta, m.sin(theta)), m.mul(theta2, theta)));
  Value cosT = m.fma(m.neg(theta2), g, one);
  Value e0m1 = m.fma(em1, cosT, m.neg(m.mul(theta2, g))); // e^σ cos θ − 1
  Value ess = m.mul(es, s);
  Value cc = m.fma(sigma, sigma, theta2);
  Value aPhi = m.div(m.fma(sigma, ess, m.neg(e0m1)), cc);
  Value p0 = m.div(m.fma(sigma, e0m1, m.mul(theta2, ess)), cc);
  Value bTheta = m.div(m.sub(cPhi, p0), theta2);
  Value esSigma = m.mul(es, sigma);
  Value bNum = m.fma(m.mul(esSigma, sigma), g,
                     m.fma(m.mul(esSigma, theta2), h, m.sub(em1, esSigma)));
  Value bSigma = m.div(bNum, m.mul(sigma, cc));
  Value bPhi = m.select(m.lt(m.abs(sigma), theta), bTheta, bSigma);

  Coeffs closed;
  if (inverse) {
    Value re = m.fma(m.neg(theta2), bPhi, cPhi);
    Value mod2 = m.fma(re, re, m.mul(theta2, m.sqr(aPhi)));
    closed = {
        m.div(one, cPhi), m.neg(m.div(aPhi, mod2)),
        m.div(m.fma(aPhi, aPhi, m.neg(m.mul(bPhi, re))), m.mul(cPhi, mod2))};
  } else {
    closed = {cPhi, aPhi, bPhi};
  }

  Value useTaylor = m.lt(m.add(m.abs(sigma), theta), half);
  return {m.select(useTaylor, taylor.c, closed.c),
          m.select(useTaylor, taylor.a, closed.a),
          m.select(useTaylor, taylor.b, closed.b)};
}

/// ω × p.
std::array<Value, 3> cross(ScalarBuilder &m, ArrayRef<Value> w,
                           ArrayRef<Value> p) {
  return {m.fma(w[1], p[2], m.neg(m.mul(w[2], p[1]))),
          m.fma(w[2], p[0], m.neg(m.mul(w[0], p[2]))),
          m.fma(w[0], p[1], m.neg(m.mul(w[1], p[0])))};
}

/// F(X)·p = c·p + a·ω×p + b·ω×(ω×p).
std::array<Value, 3> apply(ScalarBuilder &m, Coeffs f, ArrayRef<Value> w,
                           ArrayRef<Value> p) {
  std::array<Value, 3> wp = cross(m, w, p);
  std::array<Value, 3> wwp = cross(m, w, wp);
  std::array<Value, 3> r;
  for (unsigned i = 0; i < 3; ++i)
    r[i] = m.fma(f.c, p[i], m.fma(f.a, wp[i], m.mul(f.b, wwp[i])));
  return r;
}

class Sim3Model final : public GroupModel {
public:
  StringRef getName() const override { return "sim3"; }
  StringRef getDisplayName() const override {
    return toRef(builtinFacts("sim3").name);
  }
  unsigned getMatrixSize() const override { return builtinFacts("sim3").n; }
  unsigned getAlgebraDim() const override { return builtinFacts("sim3").k; }
  unsigned getPointDim() const override {
    return builtinFacts("sim3").pointDim;
  }
  ArrayRef<AlgebraBlock> getBlocks() const override {
    return builtinBlocks("sim3");
  }
  bool isInsideChart(ArrayRef<double> v) const override {
    return v[0] * v[0] + v[1] * v[1] + v[2] * v[2] < M_PI * M_PI;
  }

  /// Top three rows of a·b; the fixed row [0, 0, 0, 1] is constant.
  Scalars buildCompose(ScalarBuilder &m, ValueRange a,
                       ValueRange b) const override {
    Scalars c(16);
    for (unsigned i = 0; i < 3; ++i)
      for (unsigned j = 0; j < 4; ++j) {
        Value acc = j == 3 ? a[i * 4 + 3] : Value();
        for (unsigned k = 0; k < 3; ++k)
          acc = acc ? m.fma(a[i * 4 + k], b[k * 4 + j], acc)
                    : m.mul(a[i * 4 + k], b[k * 4 + j]);
        c[i * 4 + j] = acc;
      }
    for (unsigned j = 0; j < 4; ++j)
      c[12 + j] = m.c(j == 3 ? 1.0 : 0.0);
    return c;
  }

  /// [s⁻¹Rᵀ, −s⁻¹Rᵀt] = [Mᵀ/s², −Mᵀt/s²] with s² = ‖M‖²_F/3.
  Scalars buildInverse(ScalarBuilder &m, ValueRange g) const override {
    Value r = m.div(m.c(3.0), frobenius2(m, g));
    Scalars inv(16);
    for (unsigned i = 0; i < 3; ++i) {
      for (unsigned j = 0; j < 3; ++j)
        inv[i * 4 + j] = m.mul(g[j * 4 + i], r);
      Value mt =
          m.fma(g[i], g[3], m.fma(g[4 + i], g[7], m.mul(g[8 + i], g[11])));
      inv[i * 4 + 3] = m.neg(m.mul(mt, r));
    }
    for (unsigned j = 0; j < 4; ++j)
      inv[12 + j] = g[12 + j];
    return inv;
  }

  Scalars buildLog(ScalarBuilder &m, ValueRange g) const override {
    // m_ii − 1 is exact next to the identity (Sterbenz).
    Value one = m.c(1.0);
    std::array<Value, 9> mat, dev;
    for (unsigned i = 0; i < 3; ++i)
      for (unsigned j = 0; j < 3; ++j) {
        mat[i * 3 + j] = g[i * 4 + j];
        dev[i * 3 + j] = i == j ? m.sub(g[i * 4 + i], one) : g[i * 4 + j];
      }
    return logOfDeviation(m, mat, dev, {g[3], g[7], g[11]});
  }

  /// ‖log(a⁻¹b)‖²_λ with the relative element formed as a deviation from
  /// the identity, X = M_a⁻¹(M_b − M_a), t = M_a⁻¹(t_b − t_a) with
  /// M_a⁻¹ = M_aᵀ/s_a²: the differences are exact for close elements, so
  /// dist2 keeps its relative accuracy as a → b.
  Value buildDist2(ScalarBuilder &m, ValueRange a, ValueRange b,
                   ValueRange lambda) const override {
    Value r = m.div(m.c(3.0), frobenius2(m, a));
    std::array<Value, 9> mat, dev;
    std::array<Value, 3> t;
    // (M_aᵀ Y)_ij / s_a² = Σ_k a_ki Y_kj / s_a².
    auto leftInv = [&](unsigned i, auto &&y) {
      Value acc = m.mul(a[i], y(0));
      for (unsigned k = 1; k < 3; ++k)
        acc = m.fma(a[k * 4 + i], y(k), acc);
      return m.mul(acc, r);
    };
    for (unsigned i = 0; i < 3; ++i) {
      for (unsigned j = 0; j < 3; ++j) {
        mat[i * 3 + j] = leftInv(i, [&](unsigned k) { return b[k * 4 + j]; });
        dev[i * 3 + j] = leftInv(
            i, [&](unsigned k) { return m.sub(b[k * 4 + j], a[k * 4 + j]); });
      }
      t[i] = leftInv(
          i, [&](unsigned k) { return m.sub(b[k * 4 + 3], a[k * 4 + 3]); });
    }
    Scalars w = logOfDeviation(m, mat, dev, t);
    return buildWeightedNorm2(m, w, lambda);
  }

  Scalars buildExp(ScalarBuilder &m, ValueRange v) const override {
    Value half = m.c(0.5);
    std::array<Value, 3> w = {v[0], v[1], v[2]};
    std::array<Value, 3> rho = {v[3], v[4], v[5]};
    Value sigma = v[6];
    Value theta2 = m.dot(w, w);
    Value theta = m.sqrt(theta2);
    Value es = m.exp(sigma);
    // e^σ·(cos θ·I + S·Ω + G·ωωᵀ).
    Value sHalf = sinc(m, m.mul(half, theta), m.mul(m.c(0.25), theta2));
    Value g = m.mul(es, m.mul(half, m.sqr(sHalf)));
    Value s = m.mul(es, sinc(m, theta, theta2));
    Value cosT = m.mul(es, m.cos(theta));
    Scalars out(16);
    for (unsigned i = 0; i < 3; ++i)
      for (unsigned j = 0; j < 3; ++j) {
        Value ww = m.mul(g, m.mul(w[i], w[j]));
        if (i == j) {
          out[i * 4 + j] = m.add(cosT, ww);
          continue;
        }
        // Ω_ij = −ε_ijk ω_k.
        unsigned k = 3 - i - j;
        bool positive = (j + 1) % 3 == i;
        Value sw = m.mul(s, w[k]);
        out[i * 4 + j] = positive ? m.add(ww, sw) : m.sub(ww, sw);
      }
    Coeffs phi = phiOrPsi(m, sigma, theta, theta2, /*inverse=*/false);
    std::array<Value, 3> t = apply(m, phi, w, rho);
    for (unsigned i = 0; i < 3; ++i)
      out[i * 4 + 3] = t[i];
    for (unsigned j = 0; j < 4; ++j)
      out[12 + j] = m.c(j == 3 ? 1.0 : 0.0);
    return out;
  }

private:
  /// log of [[M, t], [0, 1]] given M (row-major 3×3) and its deviation
  /// X = M − I, each computed directly; see the file comment. Next to the
  /// identity (Σ|X_ij| < 1) X keeps σ and ω relatively accurate; far from
  /// it M's own entries do (small entries would lose ε/|entry| through X).
  static Scalars logOfDeviation(ScalarBuilder &m, ArrayRef<Value> mat,
                                ArrayRef<Value> dev, std::array<Value, 3> t) {
    Value half = m.c(0.5), one = m.c(1.0), zero = m.c(0.0);
    Value devSum = m.abs(dev[0]);
    for (unsigned k = 1; k < 9; ++k)
      devSum = m.add(devSum, m.abs(dev[k]));
    Value near = m.lt(devSum, one);
    auto at = [&](unsigned i, unsigned j) {
      return i == j ? mat[i * 3 + j]
                    : m.select(near, dev[i * 3 + j], mat[i * 3 + j]);
    };

    // Scale.
    Value f2 = zero, s2m1 = zero;
    for (unsigned i = 0; i < 3; ++i)
      for (unsigned j = 0; j < 3; ++j) {
        f2 = m.fma(at(i, j), at(i, j), f2);
        // s² − 1 = (2 tr X + ‖X‖²)/3, summed as X_ii(X_ii + 2) + X_ij².
        Value xij = dev[i * 3 + j];
        s2m1 = m.fma(xij, i == j ? m.add(xij, m.c(2.0)) : xij, s2m1);
      }
    Value s2 = m.div(f2, m.c(3.0));
    s2m1 = m.select(near, m.div(s2m1, m.c(3.0)), m.sub(s2, one));
    Value sigma = m.mul(
        half, m.select(m.lt(m.abs(s2m1), half), m.log1p(s2m1), m.log(s2)));
    Value s = m.sqrt(s2);

    // Rotation angle and axis.
    std::array<Value, 3> v = {m.sub(at(2, 1), at(1, 2)),
                              m.sub(at(0, 2), at(2, 0)),
                              m.sub(at(1, 0), at(0, 1))};
    Value vn = m.sqrt(m.dot(v, v));
    Value x = m.sub(m.add(m.add(at(0, 0), at(1, 1)), at(2, 2)), s);
    Value theta = m.atan2(vn, x);
    Value theta2 = m.sqr(theta);
    Value kSmall = m.select(m.lt(theta, m.c(smallAngle(m))),
                            m.div(m.poly(theta2, kInvSinc), m.add(s, s)),
                            m.div(theta, vn));
    // θ ≥ π/2: axis from the symmetric part, sign from v.
    Value hx = m.mul(half, x);
    Value sym[3][3];
    for (unsigned i = 0; i < 3; ++i)
      for (unsigned j = 0; j < 3; ++j)
        sym[i][j] = i == j ? m.sub(at(i, i), hx)
                           : m.mul(half, m.add(at(i, j), at(j, i)));
    Value pick1 = m.gt(sym[1][1], sym[0][0]);
    Value best = m.max(sym[0][0], sym[1][1]);
    Value pick2 = m.gt(sym[2][2], best);
    std::array<Value, 3> col;
    for (unsigned i = 0; i < 3; ++i)
      col[i] =
          m.select(pick2, sym[i][2], m.select(pick1, sym[i][1], sym[i][0]));
    Value colNorm = m.sqrt(m.dot(col, col));
    Value scale = m.div(theta, colNorm);
    scale = m.select(m.lt(m.dot(col, v), zero), m.neg(scale), scale);
    Value large = m.lt(x, zero);
    std::array<Value, 3> w;
    for (unsigned i = 0; i < 3; ++i)
      w[i] = m.select(large, m.mul(scale, col[i]), m.mul(kSmall, v[i]));

    // Translation.
    Coeffs psi = phiOrPsi(m, sigma, theta, theta2, /*inverse=*/true);
    std::array<Value, 3> rho = apply(m, psi, w, t);
    return {w[0], w[1], w[2], rho[0], rho[1], rho[2], sigma};
  }

  /// ‖M‖²_F of the 3×3 block.
  static Value frobenius2(ScalarBuilder &m, ValueRange g) {
    Value acc = m.mul(g[0], g[0]);
    for (unsigned i = 0; i < 3; ++i)
      for (unsigned j = 0; j < 3; ++j)
        if (i || j)
          acc = m.fma(g[i * 4 + j], g[i * 4 + j], acc);
    return acc;
  }
};

} // namespace

const GroupModel &torsor::lie::getSim3Model() {
  static const Sim3Model model;
  return model;
}
