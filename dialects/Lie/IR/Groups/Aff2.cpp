//===- Aff2.cpp - The Aff(2) = GL⁺(2) ⋉ ℝ² group model --------------------===//
//
// Orientation-preserving planar affine maps [[A, b], [0, 1]] (3×3). Algebra
// coordinates (L₀₀, L₀₁, L₁₀, L₁₁, u₁, u₂) of log g = [[L, u], [0, 0]]: the
// entries of L = log A row-major (an orthonormal basis E_ij for the Frobenius
// product), then u. Blocks "lin" [0, 4) and "trans" [4, 6); points are
// 2-vectors acted on homogeneously.
//
// Every 2×2 matrix is M = αI + K with α = tr M/2 and K traceless, K² = κI,
// so every analytic F has F(M) = F₀(α, κ)·I + F₁(α, κ)·K with
// F₀ = ½(F(α+√κ) + F(α−√κ)) and F₁ the divided difference F[α+√κ, α−√κ]
// (κ < 0: complex-conjugate eigenvalues, real and imaginary part / √−κ).
//
// log: with t = tr A/2, δ = det A, s = t² − δ and N = A − tI (N² = sI),
// log A = ½ ln δ·I + f·N with
//   f = atanh(√s/t)/√s = ½ log1p(2√s(t+√s)/δ)/√s   (s > 0; the second form
//       stays accurate as the small eigenvalue t − √s = δ/(t+√s) → 0),
//   f = atan2(√−s, t)/√−s                           (s < 0),
//   f = t⁻¹ Σ_k (s/t²)ᵏ/(2k+1)                      (|s| < η t², t > 0).
// s is formed as ((a−d)/2)² + bc (no t² − δ cancellation), δ with Kahan's
// fma determinant, and δ − 1 with compensated products so that ½ ln δ keeps
// its relative accuracy next to the identity (log1p for |δ − 1| < ½; Kahan's
// δ − 1 replaces the compensated sum once ‖X‖₁ ≥ 1).
// u = ψ(L)·b, ψ(z) = z/(eᶻ − 1); exp: A = e^α(C(κ)I + S(κ)K) with
// C = cosh √κ, S = sinh √κ/√κ (cos, sin/· for κ < 0) and t = φ(L)·u,
// φ(z) = (eᶻ − 1)/z. φ(L)·u and ψ(L)·b come from one of three exact forms,
// chosen by where they are well conditioned (r = |α| + √|κ| bounds the
// eigenvalues of L):
//   Taylor  r ≤ ½: Horner in L, φ to degree 14 (f32: 8), ψ (Bernoulli) to
//           degree 14 (f32: 6); truncation < 2e-18 (f32 < 4e-9).
//   split   κ > 0 and √κ > min(1, |α|/2): real eigenvalues μ± = α ± √κ far
//           enough apart to apply F per eigenvector, F(μ+)P+v + F(μ−)P−v
//           with the projectors P± = ½(I ± K/√κ). (The coefficient form
//           F₀v + F₁Kv would cancel along the eigenvector whose F is
//           small, with an error growing like ψ(μ−)/ψ(μ+) ≈ the
//           eigenvalue spread of A.) The diagonals √κ ± K₀₀ of 2√κP± are
//           formed without cancellation (the smaller is K₀₁K₁₀ over the
//           larger), and each 2-term product with an fma-compensated sum.
//   merged  otherwise: φ(L) = (e^L − I)L⁻¹, ψ(L) = L(e^L − I)⁻¹ through
//           E₀ − 1 = expm1(α)C + κ(C−1)/κ and E₁ = e^α S; here det L =
//           α² − κ ≥ ¾α² and det(e^L − I) ≥ c·r² do not cancel.
// Each form is exact; the switches sit where both neighbours are accurate to
// a few ulps, so the result is continuous to rounding.
// Other thresholds: f series |s| < η t² with η = 1e-2 (f64, 8 terms, error
// < 6e-18) or 0.1 (f32, 7 terms); C, S series for |κ| < 1 (to κ⁹);
// (eᶻ − 1)/z series for |z| < 1e-3 (f64) / 1e-2 (f32), only to avoid 0/0.
//
// dist2 and the pairwise form (fused attention) share relativeLog: the
// relative element is formed both as A⁻¹B and as the deviation
// X = A⁻¹(B − A) (u = A⁻¹(b_B − b_A)), every entry as adj(A)·column / det A
// with compensated products, and det(A⁻¹B) as det B / det A; log uses X next
// to the identity (‖X‖₁ < 1, where rounding I + X would lose ε/‖X‖) and A⁻¹B
// far from it (where X would lose the small entries). Same for buildLog with
// X = A − I, whose diagonal is exact next to the identity. Measured against
// 50-digit references (f64): log, u and dist2 within 1.4e-15 relative for
// eigenvalue spreads of A up to 1e±6 (test/Numerics/lie-aff2-spread.py).
//
// Chart: eigenvalues of L with imaginary parts in (−π, π), i.e. κ > −π².
// Out of chart: A with a real eigenvalue ≤ 0 (det A ≤ 0, or s ≥ 0 with
// tr A ≤ 0, e.g. −I) has no real principal logarithm; log returns NaN in
// all six coordinates (so dist2 is NaN too) rather than a clamped value
// that would silently give a wrong, discontinuous distance.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/BuiltinFacts.h"
#include "dialects/Lie/IR/Groups/Groups.h"
#include "dialects/Lie/IR/Groups/Series.h"

#include <array>
#include <cmath>
#include <limits>
#include <tuple>

using namespace mlir;
using namespace torsor::lie;

namespace {

using series::kPhi;
using series::kPsi;

/// cosh √κ = Σ κᵏ/(2k)! and sinh √κ/√κ = Σ κᵏ/(2k+1)!.
constexpr double kCosh[] = {1.0,
                            1.0 / 2,
                            1.0 / 24,
                            1.0 / 720,
                            1.0 / 40320,
                            1.0 / 3628800,
                            1.0 / 479001600,
                            1.0 / 87178291200,
                            1.0 / 20922789888000,
                            1.0 / 6402373705728000};
constexpr double kSinhc[] = {1.0,
                             1.0 / 6,
                             1.0 / 120,
                             1.0 / 5040,
                             1.0 / 362880,
                             1.0 / 39916800,
                             1.0 / 6227020800,
                             1.0 / 1307674368000,
                             1.0 / 355687428096000,
                             1.0 / 121645100408832000};
/// atanh(y)/y in y² (and atan(y)/y in −y²): 1/(2k+1).
constexpr double kAtanhc[] = {1.0,     1.0 / 3,  1.0 / 5,  1.0 / 7,
                              1.0 / 9, 1.0 / 11, 1.0 / 13, 1.0 / 15};

/// Coefficients of F(M) = f0·I + f1·K for M = αI + K, K² = κI.
struct Coeffs {
  Value f0, f1;
};

/// (eᶻ − 1)/z, with its series only where the quotient would be 0/0.
Value phiScalar(ScalarBuilder &m, Value z) {
  double bound = m.isF32() ? 1e-2 : 1e-3;
  return m.select(m.lt(m.abs(z), m.c(bound)),
                  m.poly(z, ArrayRef<double>(kPhi).take_front(7)),
                  m.div(m.expm1(z), z));
}

/// (cosh √κ, sinh √κ/√κ), analytic in κ of either sign.
Coeffs coshSinhc(ScalarBuilder &m, Value kappa) {
  unsigned terms = m.isF32() ? 6 : 10;
  Value cSeries = m.poly(kappa, ArrayRef<double>(kCosh).take_front(terms));
  Value sSeries = m.poly(kappa, ArrayRef<double>(kSinhc).take_front(terms));
  // κ ≥ 1: cosh/sinh through exp (no cancellation for √κ ≥ 1).
  Value r = m.sqrt(m.abs(kappa));
  Value e = m.exp(r), ei = m.div(m.c(1.0), e);
  Value cPos = m.mul(m.c(0.5), m.add(e, ei));
  Value sPos = m.div(m.mul(m.c(0.5), m.sub(e, ei)), r);
  Value cNeg = m.cos(r), sNeg = m.div(m.sin(r), r);
  Value small = m.lt(m.abs(kappa), m.c(1.0));
  Value pos = m.gt(kappa, m.c(0.0));
  return {m.select(small, cSeries, m.select(pos, cPos, cNeg)),
          m.select(small, sSeries, m.select(pos, sPos, sNeg))};
}

/// Horner evaluation of Σ coeffs[j]·Mʲ in the (I, K) basis.
Coeffs matrixPoly(ScalarBuilder &m, Value alpha, Value kappa,
                  ArrayRef<double> coeffs) {
  Value q0 = m.c(coeffs.back()), q1 = m.c(0.0);
  for (double cj : llvm::reverse(coeffs.drop_back())) {
    Value n0 = m.fma(alpha, q0, m.fma(kappa, q1, m.c(cj)));
    Value n1 = m.fma(alpha, q1, q0);
    q0 = n0;
    q1 = n1;
  }
  return {q0, q1};
}

/// x·y + z·w to within ~2 ulps of the result for exact operands: the
/// product z·w is split into its rounded value and its exact error (fma).
Value dot2(ScalarBuilder &m, Value x, Value y, Value z, Value w) {
  Value zw = m.mul(z, w);
  Value err = m.fma(z, w, m.neg(zw));
  return m.add(m.fma(x, y, zw), err);
}

/// F(M)·v for F = φ (inverse = false) or ψ = 1/φ (inverse = true), where
/// M = αI + K, K = [[k00, k01], [k10, −k00]], K² = κI and v = (v0, v1). See
/// the file comment for the three forms. The Taylor and merged forms give
/// F(M) = f0·I + f1·K; the split form applies F per eigenvector,
/// F(μ+)·P+v + F(μ−)·P−v with the spectral projectors P± = ½(I ± K/√κ),
/// because f0·v + f1·Kv cancels along the eigenvector whose F is small
/// (ψ(μ+) ≪ ψ(μ−) for μ+ ≫ 0): the error would grow with ψ(μ−)/ψ(μ+),
/// i.e. with the eigenvalue spread of e^M.
std::array<Value, 2> applyPhiOrPsi(ScalarBuilder &m, Value alpha, Value k00,
                                   Value k01, Value k10, Value kappa, Value v0,
                                   Value v1, bool inverse) {
  Value zero = m.c(0.0), one = m.c(1.0), half = m.c(0.5);
  Value absA = m.abs(alpha);
  Value root = m.sqrt(m.abs(kappa));
  Value radius = m.add(absA, root);

  // Taylor in M.
  ArrayRef<double> series = inverse ? ArrayRef<double>(kPsi) : kPhi;
  series =
      series.take_front(inverse ? (m.isF32() ? 7 : 15) : (m.isF32() ? 9 : 15));
  Coeffs taylor = matrixPoly(m, alpha, kappa, series);

  // Merged or complex eigenvalues: through e^M − I = (E₀−1)I + E₁K.
  Coeffs cs = coshSinhc(m, kappa);
  Coeffs csQuarter = coshSinhc(m, m.mul(m.c(0.25), kappa));
  Value cm1 = m.mul(m.mul(half, kappa), m.sqr(csQuarter.f1)); // cosh √κ − 1
  Value e0m1 = m.fma(m.expm1(alpha), cs.f0, cm1);
  Value e1 = m.mul(m.exp(alpha), cs.f1);
  // α(E₀−1) − κE₁ and the K part; divided by det L (φ) or det(e^L − I)
  // (ψ), with the K part's sign flipped between the two.
  Value num0 = m.fma(alpha, e0m1, m.neg(m.mul(kappa, e1)));
  Value num1 = m.fma(alpha, e1, m.neg(e0m1));
  Coeffs merged;
  if (inverse) {
    Value det = m.fma(e0m1, e0m1, m.neg(m.mul(kappa, m.sqr(e1))));
    merged = {m.div(num0, det), m.div(m.neg(num1), det)};
  } else {
    Value det = m.fma(alpha, alpha, m.neg(kappa));
    merged = {m.div(num0, det), m.div(num1, det)};
  }

  Value useTaylor = m.lt(radius, half);
  Value f0 = m.select(useTaylor, taylor.f0, merged.f0);
  Value f1 = m.select(useTaylor, taylor.f1, merged.f1);
  Value kv0 = dot2(m, k00, v0, k01, v1);
  Value kv1 = dot2(m, k10, v0, m.neg(k00), v1);
  std::array<Value, 2> byCoeffs = {m.fma(f1, kv0, m.mul(f0, v0)),
                                   m.fma(f1, kv1, m.mul(f0, v1))};

  // Split real eigenvalues μ± = α ± √κ. 2√κ·P±v = (√κ·I ± K)v, whose
  // diagonal entries √κ ± k00 are formed without cancellation: the larger
  // is √κ + |k00|, the smaller k01·k10 / (√κ + |k00|) (their product is
  // κ − k00² = k01·k10).
  Value big = m.add(root, m.abs(k00));
  Value small = m.div(m.mul(k01, k10), big);
  Value negative = m.lt(k00, zero);
  Value rPlus = m.select(negative, small, big);  // √κ + k00
  Value rMinus = m.select(negative, big, small); // √κ − k00
  Value inv2r = m.div(half, root);
  Value fPlus = phiScalar(m, m.add(alpha, root));
  Value fMinus = phiScalar(m, m.sub(alpha, root));
  if (inverse) {
    fPlus = m.div(one, fPlus);
    fMinus = m.div(one, fMinus);
  }
  Value wPlus = m.mul(fPlus, inv2r), wMinus = m.mul(fMinus, inv2r);
  Value p0 = dot2(m, rPlus, v0, k01, v1), p1 = dot2(m, k10, v0, rMinus, v1);
  Value q0 = dot2(m, rMinus, v0, m.neg(k01), v1);
  Value q1 = dot2(m, m.neg(k10), v0, rPlus, v1);
  std::array<Value, 2> bySplit = {m.fma(wPlus, p0, m.mul(wMinus, q0)),
                                  m.fma(wPlus, p1, m.mul(wMinus, q1))};

  Value useSplit =
      m.andI(m.gt(kappa, zero), m.gt(root, m.min(one, m.mul(half, absA))));
  auto pick = [&](unsigned i) {
    return m.select(useTaylor, byCoeffs[i],
                    m.select(useSplit, bySplit[i], byCoeffs[i]));
  };
  return {pick(0), pick(1)};
}

/// Top two rows of a·b for 3×3 affine matrices; the fixed row is constant.
Scalars composeAffine2(ScalarBuilder &m, ValueRange a, ValueRange b) {
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

/// e^L for L = αI + K (the first four coordinates, row-major): e^L =
/// ec·I + es·K with ec = e^α C(κ), es = e^α S(κ) (file comment); α, K's
/// first entry k00 and κ (K² = κI) come along for the translation part.
struct LinearExp {
  Value alpha, k00, kappa, ec, es;
};

LinearExp linearExp(ScalarBuilder &m, ValueRange v) {
  Value half = m.c(0.5);
  Value alpha = m.mul(half, m.add(v[0], v[3]));
  Value k00 = m.mul(half, m.sub(v[0], v[3]));
  Value kappa = m.fma(k00, k00, m.mul(v[1], v[2]));
  Coeffs cs = coshSinhc(m, kappa);
  Value ea = m.exp(alpha);
  Value ec = m.mul(ea, cs.f0), es = m.mul(ea, cs.f1);
  return {alpha, k00, kappa, ec, es};
}

/// Where A's entries (row-major 2×2) sit in Aff(2)'s and GL⁺(2)'s
/// features and elements.
constexpr unsigned kAffineEntries[] = {0, 1, 3, 4};
constexpr unsigned kLinearEntries[] = {0, 1, 2, 3};

/// log of [[A, v], [0, 1]] given A (row-major), its deviation from the
/// identity X = A − I and δ = det A, each computed directly (δ from the
/// entries' products would cancel for a large eigenvalue spread); see the
/// file comment. Without v (null values) the translation part is skipped
/// and the result is L alone (GL⁺(2)).
/// Next to the identity (‖X‖₁ < 1) X keeps ½ ln δ and L relatively
/// accurate; far from it A's own entries do (its small entries and
/// eigenvalue would lose ε/|entry| through X).
Scalars logOfDeviation(ScalarBuilder &m, std::array<Value, 4> mat,
                       std::array<Value, 4> dev, Value v0, Value v1,
                       Value delta, bool traceless = false) {
  Value zero = m.c(0.0), half = m.c(0.5), one = m.c(1.0);
  Value a = mat[0], d = mat[3], p = dev[0], q = dev[3];
  Value near = m.lt(
      m.add(m.add(m.abs(p), m.abs(q)), m.add(m.abs(dev[1]), m.abs(dev[2]))),
      one);
  Value b = m.select(near, dev[1], mat[1]);
  Value c = m.select(near, dev[2], mat[2]);
  Value t = m.mul(half, m.add(a, d));
  Value n = m.mul(half, m.select(near, m.sub(p, q), m.sub(a, d)));
  Value bc = m.mul(b, c);
  Value s = m.fma(n, n, bc); // t² − δ without the cancellation.
  // `traceless`: the caller's coordinates do not read the trace part
  // h = ½ ln δ (a subalgebra of sl(2): T⁺ annihilates I), so it is 0
  // and neither log below is evaluated.
  Value h = m.c(0.0);
  if (!traceless) {
    // δ − 1 = (p + q) + (pq − bc), both products compensated: error
    // ε(|p + q| + |δ − 1|), relative to ‖A − I‖ next to the identity. Far
    // from it the Kahan δ − 1 (error ε·δ) is the better one.
    Value pq = m.add(p, q);
    Value prod = m.mul(p, q);
    Value prodErr = m.fma(p, q, m.neg(prod));
    Value bcErr = m.fma(b, c, m.neg(bc));
    Value deltaM1 =
        m.select(near, m.add(m.add(m.sub(prod, bc), pq), m.sub(prodErr, bcErr)),
                 m.sub(delta, one));
    Value logDelta =
        m.select(m.lt(m.abs(deltaM1), half), m.log1p(deltaM1), m.log(delta));
    h = m.mul(half, logDelta);
  }

  // f with log A = h·I + f·N.
  double eta = m.isF32() ? 0.1 : 1e-2;
  unsigned terms = m.isF32() ? 7 : 8;
  Value tt = m.sqr(t);
  Value fSeries = m.div(
      m.poly(m.div(s, tt), ArrayRef<double>(kAtanhc).take_front(terms)), t);
  Value rs = m.sqrt(m.abs(s));
  Value fPos = m.div(
      m.mul(half, m.log1p(m.div(m.mul(m.add(rs, rs), m.add(t, rs)), delta))),
      rs);
  Value fNeg = m.div(m.atan2(rs, t), rs);
  Value useSeries = m.andI(m.lt(m.abs(s), m.mul(m.c(eta), tt)), m.gt(t, zero));
  Value f = m.select(useSeries, fSeries, m.select(m.gt(s, zero), fPos, fNeg));

  Value k00 = m.mul(f, n), k01 = m.mul(f, b), k10 = m.mul(f, c);
  Scalars w = {m.add(h, k00), k01, k10, m.sub(h, k00)};
  if (v0) {
    Value kappa = m.mul(m.sqr(f), s);
    auto [u0, u1] =
        applyPhiOrPsi(m, h, k00, k01, k10, kappa, v0, v1, /*inverse=*/true);
    w.append({u0, u1});
  }

  // Outside the chart (a real eigenvalue ≤ 0): NaN everywhere.
  Value inChart =
      m.andI(m.gt(delta, zero),
             arith::OrIOp::create(m.builder(), m.lt(s, zero), m.gt(t, zero)));
  Value nan = m.c(std::numeric_limits<double>::quiet_NaN());
  for (Value &x : w)
    x = m.select(inChart, x, nan);
  return w;
}

/// log(a⁻¹b) from the features of buildQueryFeatures(a) and
/// buildKeyFeatures(b). The relative element is formed as a deviation
/// from the identity too, X = A⁻¹(B − A), u = A⁻¹(b_b − b_a): the
/// differences are exact for close elements, so dist2 keeps its relative
/// accuracy as a → b, where rounding I + X would lose ε/‖X‖. Every entry
/// is adj(A)·(column)/det A with compensated two-term products, so each
/// is accurate to a few ulps of itself rather than of ‖A⁻¹‖‖B‖, and
/// det(A⁻¹B) is det B / det A rather than a difference of the entries'
/// products: the small eigenvalue of a relative element with a large
/// eigenvalue spread (1e±6) would otherwise be lost.
/// `affine`: the features are Aff(2)'s (top two rows, then 1/det A or
/// det B); otherwise GL⁺(2)'s (the four entries, then the same scalar),
/// and the result is L alone.
Scalars relativeLog(ScalarBuilder &m, ValueRange a, ValueRange b,
                    bool affine = true) {
  // Positions of A's entries (row-major 2×2) in the features.
  const unsigned *e = affine ? kAffineEntries : kLinearEntries;
  unsigned last = affine ? 6 : 4;
  Value r = a[last];
  // (adj A)·(x, y) / det A, adj A = [[a11, −a01], [−a10, a00]].
  auto solve = [&](Value x, Value y) -> std::array<Value, 2> {
    return {m.mul(dot2(m, a[e[3]], x, m.neg(a[e[1]]), y), r),
            m.mul(dot2(m, m.neg(a[e[2]]), x, a[e[0]], y), r)};
  };
  auto [r00, r10] = solve(b[e[0]], b[e[2]]);
  auto [r01, r11] = solve(b[e[1]], b[e[3]]);
  auto [x00, x10] = solve(m.sub(b[e[0]], a[e[0]]), m.sub(b[e[2]], a[e[2]]));
  auto [x01, x11] = solve(m.sub(b[e[1]], a[e[1]]), m.sub(b[e[3]], a[e[3]]));
  Value u0, u1;
  if (affine) {
    std::array<Value, 2> u = solve(m.sub(b[2], a[2]), m.sub(b[5], a[5]));
    u0 = u[0];
    u1 = u[1];
  }
  return logOfDeviation(m, {r00, r01, r10, r11}, {x00, x01, x10, x11}, u0, u1,
                        m.mul(b[last], r));
}

/// ad − bc to within ~1 ulp (Kahan's fma determinant).
Value kahanDet(ScalarBuilder &m, Value a, Value b, Value c, Value d) {
  Value bc = m.mul(b, c);
  Value err = m.fma(m.neg(b), c, bc);
  return m.add(m.fma(a, d, m.neg(bc)), err);
}

class Aff2Model final : public GroupModel {
public:
  StringRef getName() const override { return "aff2"; }
  StringRef getDisplayName() const override {
    return toRef(builtinFacts("aff2").name);
  }
  unsigned getMatrixSize() const override { return builtinFacts("aff2").n; }
  unsigned getAlgebraDim() const override { return builtinFacts("aff2").k; }
  unsigned getPointDim() const override {
    return builtinFacts("aff2").pointDim;
  }
  ArrayRef<AlgebraBlock> getBlocks() const override {
    return builtinBlocks("aff2");
  }
  bool isInsideChart(ArrayRef<double> v) const override {
    double k = 0.5 * (v[0] - v[3]);
    return k * k + v[1] * v[2] > -M_PI * M_PI;
  }

  Scalars buildCompose(ScalarBuilder &m, ValueRange a,
                       ValueRange b) const override {
    return composeAffine2(m, a, b);
  }

  /// [A⁻¹, −A⁻¹b] with A⁻¹ = adj A / det A.
  Scalars buildInverse(ScalarBuilder &m, ValueRange g) const override {
    Value r = m.div(m.c(1.0), kahanDet(m, g[0], g[1], g[3], g[4]));
    Value i00 = m.mul(g[4], r), i01 = m.neg(m.mul(g[1], r));
    Value i10 = m.neg(m.mul(g[3], r)), i11 = m.mul(g[0], r);
    Value x = m.neg(m.fma(i00, g[2], m.mul(i01, g[5])));
    Value y = m.neg(m.fma(i10, g[2], m.mul(i11, g[5])));
    return {i00, i01, x, i10, i11, y, g[6], g[7], g[8]};
  }

  Scalars buildLog(ScalarBuilder &m, ValueRange g) const override {
    // a − 1 and d − 1 are exact next to the identity (Sterbenz).
    Value one = m.c(1.0);
    return logOfDeviation(m, {g[0], g[1], g[3], g[4]},
                          {m.sub(g[0], one), g[1], g[3], m.sub(g[4], one)},
                          g[2], g[5], kahanDet(m, g[0], g[1], g[3], g[4]));
  }

  Value buildDist2(ScalarBuilder &m, ValueRange a, ValueRange b,
                   ValueRange lambda) const override {
    return buildWeightedNorm2(
        m, relativeLog(m, buildQueryFeatures(m, a), buildKeyFeatures(m, b)),
        lambda);
  }

  // The pairwise form (fused attention) is dist2's own: the query features
  // are a's top two rows and 1/det A, the key features b's top two rows and
  // det B, and each pair runs relativeLog.
  unsigned getQueryFeatureCount() const override { return 7; }
  unsigned getKeyFeatureCount() const override { return 7; }
  Scalars buildQueryFeatures(ScalarBuilder &m, ValueRange a) const override {
    return {a[0],
            a[1],
            a[2],
            a[3],
            a[4],
            a[5],
            m.div(m.c(1.0), kahanDet(m, a[0], a[1], a[3], a[4]))};
  }
  Scalars buildKeyFeatures(ScalarBuilder &m, ValueRange b) const override {
    return {b[0],
            b[1],
            b[2],
            b[3],
            b[4],
            b[5],
            kahanDet(m, b[0], b[1], b[3], b[4])};
  }
  Scalars buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                              ValueRange k) const override {
    return buildBlockNorms(m, relativeLog(m, q, k));
  }

  Scalars buildExp(ScalarBuilder &m, ValueRange v) const override {
    LinearExp e = linearExp(m, v);
    Value ec = e.ec, es = e.es, k00 = e.k00;
    auto [t0, t1] = applyPhiOrPsi(m, e.alpha, k00, v[1], v[2], e.kappa, v[4],
                                  v[5], /*inverse=*/false);
    return {m.fma(es, k00, ec),
            m.mul(es, v[1]),
            t0,
            m.mul(es, v[2]),
            m.fma(es, m.neg(k00), ec),
            t1,
            m.c(0.0),
            m.c(0.0),
            m.c(1.0)};
  }
};

/// GL⁺(2), 2×2: not a keyword, the host of declared linear groups of the
/// plane (SL(2, ℝ) in any basis, say; GroupStructure.h). Coordinates the
/// entries of L = log A row-major, one block "lin"; log, exp and the pair
/// form are Aff(2)'s without the translation part (no ψ(L)·b, no φ(L)·ρ).
class GL2Model final : public GroupModel {
public:
  StringRef getName() const override { return "gl2"; }
  StringRef getDisplayName() const override { return "GL2"; }
  unsigned getMatrixSize() const override { return 2; }
  unsigned getAlgebraDim() const override { return 4; }
  unsigned getPointDim() const override { return 2; }
  ArrayRef<AlgebraBlock> getBlocks() const override {
    static const AlgebraBlock blocks[] = {{"lin", 0, 4}};
    return blocks;
  }
  bool isInsideChart(ArrayRef<double> v) const override {
    double k = 0.5 * (v[0] - v[3]);
    return k * k + v[1] * v[2] > -M_PI * M_PI;
  }

  Scalars buildInverse(ScalarBuilder &m, ValueRange g) const override {
    Value r = m.div(m.c(1.0), kahanDet(m, g[0], g[1], g[2], g[3]));
    return {m.mul(g[3], r), m.neg(m.mul(g[1], r)), m.neg(m.mul(g[2], r)),
            m.mul(g[0], r)};
  }

  Scalars buildLog(ScalarBuilder &m, ValueRange g) const override {
    return buildGL2Log(m, g, /*traceless=*/false);
  }

  unsigned getQueryFeatureCount() const override { return 5; }
  unsigned getKeyFeatureCount() const override { return 5; }
  Scalars buildQueryFeatures(ScalarBuilder &m, ValueRange a) const override {
    return {a[0], a[1], a[2], a[3],
            m.div(m.c(1.0), kahanDet(m, a[0], a[1], a[2], a[3]))};
  }
  Scalars buildKeyFeatures(ScalarBuilder &m, ValueRange b) const override {
    return {b[0], b[1], b[2], b[3], kahanDet(m, b[0], b[1], b[2], b[3])};
  }
  Scalars buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                              ValueRange k) const override {
    return buildBlockNorms(m, relativeLog(m, q, k, /*affine=*/false));
  }

  Scalars buildExp(ScalarBuilder &m, ValueRange v) const override {
    LinearExp e = linearExp(m, v);
    return {m.fma(e.es, e.k00, e.ec), m.mul(e.es, v[1]), m.mul(e.es, v[2]),
            m.fma(e.es, m.neg(e.k00), e.ec)};
  }
};

} // namespace

Scalars torsor::lie::buildGL2Log(ScalarBuilder &m, ValueRange g,
                                 bool traceless) {
  Value one = m.c(1.0);
  return logOfDeviation(m, {g[0], g[1], g[2], g[3]},
                        {m.sub(g[0], one), g[1], g[2], m.sub(g[3], one)},
                        Value(), Value(), kahanDet(m, g[0], g[1], g[2], g[3]),
                        traceless);
}

const GroupModel &torsor::lie::getGL2ClosedFormModel() {
  static const GL2Model model;
  return model;
}

const GroupModel &torsor::lie::getAff2Model() {
  static const Aff2Model model;
  return model;
}
