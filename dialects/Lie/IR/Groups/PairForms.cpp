//===- PairForms.cpp - Shared pieces of the factored pairwise forms -------===//
//
// See PairForms.h. Accuracy: every quantity is a short dot product of
// per-token features (no relative element is formed), so its absolute error
// is a few ulps of the features' scale, as in the unfused compose; the
// angle comes from atan2, which is accurate at θ → 0 and θ → π alike.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/PairForms.h"

#include <limits>

using namespace mlir;
using namespace torsor::lie;

Scalars torsor::lie::buildPlanarFeatures(ScalarBuilder &m, Value r00, Value r01,
                                         Value r10, Value r11) {
  Value half = m.c(0.5);
  return {m.mul(half, m.add(r00, r11)), m.mul(half, m.sub(r10, r01))};
}

PairAngle torsor::lie::buildPlanarPairAngle(ScalarBuilder &m, ValueRange q,
                                            ValueRange k) {
  // R(θ_i)ᵀR(θ_j) = R(θ_j − θ_i): cos = c_i c_j + s_i s_j,
  // sin = c_i s_j − s_i c_j.
  Value cosT = m.fma(q[0], k[0], m.mul(q[1], k[1]));
  Value sinT = m.fma(q[0], k[1], m.neg(m.mul(q[1], k[0])));
  return {m.atan2(sinT, cosT), cosT, sinT};
}

PairAngle torsor::lie::buildSpatialPairAngle(ScalarBuilder &m, ValueRange ri,
                                             ValueRange rj, Value axis[3]) {
  // M = R_iᵀR_j, M_pq = Σ_k R_i[k][p] R_j[k][q]; each component of a is
  // M_pq − M_qp, built as one chain of six products.
  auto skew = [&](unsigned p, unsigned q) {
    Value acc = m.mul(ri[p], rj[q]);
    acc = m.fma(m.neg(ri[q]), rj[p], acc);
    for (unsigned k = 1; k < 3; ++k) {
      acc = m.fma(ri[3 * k + p], rj[3 * k + q], acc);
      acc = m.fma(m.neg(ri[3 * k + q]), rj[3 * k + p], acc);
    }
    return acc;
  };
  axis[0] = skew(2, 1);
  axis[1] = skew(0, 2);
  axis[2] = skew(1, 0);
  Value trace = m.dot(ri, rj); // tr(R_iᵀR_j) = ⟨vec R_i, vec R_j⟩
  Value sinT = m.mul(m.c(0.5), m.sqrt(m.dot({axis[0], axis[1], axis[2]},
                                            {axis[0], axis[1], axis[2]})));
  Value cosT = m.mul(m.c(0.5), m.sub(trace, m.c(1.0)));
  return {m.atan2(sinT, cosT), cosT, sinT};
}

std::pair<Scalars, Scalars>
torsor::lie::buildSpatialPairAngleVJP(ScalarBuilder &m, ValueRange ri,
                                      ValueRange rj, const PairAngle &angle,
                                      const Value axis[3], Value thetaBar) {
  Value s = angle.sinT, c = angle.cosT;
  Value s2 = m.sqr(s);
  // h = θ̄/(4 s r²), 0 where that is not finite (s = 0).
  Value inv = m.div(m.c(0.25), m.mul(s, m.fma(c, c, s2)));
  Value inf = m.c(std::numeric_limits<double>::infinity());
  inv = m.select(m.lt(m.abs(inv), inf), inv, m.c(0.0));
  Value h = m.mul(thetaBar, inv);
  Value sigma = m.mul(h, c);
  Value traceBar = m.neg(m.mul(h, m.add(s2, s2)));
  Value axisBar[3] = {m.mul(sigma, axis[0]), m.mul(sigma, axis[1]),
                      m.mul(sigma, axis[2])};
  // tr = ⟨ri, rj⟩; axis[i] = skew(p, q) = Σ_k ri[3k+p] rj[3k+q] −
  // ri[3k+q] rj[3k+p] for (p, q) = (2, 1), (0, 2), (1, 0).
  Scalars gi(9), gj(9);
  for (unsigned e = 0; e < 9; ++e) {
    gi[e] = m.mul(traceBar, rj[e]);
    gj[e] = m.mul(traceBar, ri[e]);
  }
  const unsigned pq[3][2] = {{2, 1}, {0, 2}, {1, 0}};
  for (unsigned i = 0; i < 3; ++i) {
    unsigned p = pq[i][0], q = pq[i][1];
    Value b = axisBar[i], nb = m.neg(axisBar[i]);
    for (unsigned k = 0; k < 3; ++k) {
      gi[3 * k + p] = m.fma(b, rj[3 * k + q], gi[3 * k + p]);
      gi[3 * k + q] = m.fma(nb, rj[3 * k + p], gi[3 * k + q]);
      gj[3 * k + q] = m.fma(b, ri[3 * k + p], gj[3 * k + q]);
      gj[3 * k + p] = m.fma(nb, ri[3 * k + q], gj[3 * k + p]);
    }
  }
  return {gi, gj};
}

Value torsor::lie::buildHalfAngleRatio2(ScalarBuilder &m,
                                        const PairAngle &angle) {
  Value cos2 = m.sqr(angle.cosT), sin2 = m.sqr(angle.sinT);
  Value r = m.sqrt(m.add(cos2, sin2));
  // 1 / sin²(θ/2) = 2r(r + cos)/sin² = 2r/(r − cos), written without
  // cancellation on either side, as one quotient: num/den.
  Value half = m.c(0.5);
  Value nearPi = m.lt(angle.cosT, m.c(0.0));
  Value num = m.select(nearPi, r, m.mul(r, m.add(r, angle.cosT)));
  Value den = m.select(nearPi, m.sub(r, angle.cosT), sin2);
  Value x = m.mul(half, angle.theta);
  Value x2 = m.sqr(x);
  // (x / sin x)² = 1 + x²/3 + x⁴/15 + 2x⁶/189 + x⁸/675 + …: the first
  // dropped term is below 2e-19 (f64, x < 1e-2) and 2e-12 (f32, x < 0.1)
  // relative, under half an ulp, so the switch is continuous to rounding.
  double bound = m.isF32() ? 0.1 : 1e-2;
  Value series = m.poly(x2, {1.0, 1.0 / 3, 1.0 / 15, 2.0 / 189});
  Value direct = m.div(m.mul(m.add(x2, x2), num), den);
  return m.select(m.lt(m.abs(x), m.c(bound)), series, direct);
}

Scalars torsor::lie::buildPlanarPairLog(ScalarBuilder &m, ValueRange q,
                                        ValueRange k) {
  PairAngle angle = buildPlanarPairAngle(m, q.take_front(2), k.take_front(2));
  // u = R_aᵀ(t_b − t_a), R_a = [[c, −s], [s, c]] up to its scale r_a ≈ 1.
  Value d1 = m.sub(k[2], q[2]), d2 = m.sub(k[3], q[3]);
  Value u1 = m.fma(q[0], d1, m.mul(q[1], d2));
  Value u2 = m.fma(q[0], d2, m.neg(m.mul(q[1], d1)));
  Value x = m.mul(m.c(0.5), angle.theta);
  Value r = m.sqrt(m.add(m.sqr(angle.cosT), m.sqr(angle.sinT)));
  // cot x = (1 + cos θ)/sin θ = sin θ/(1 − cos θ), unnormalised by r, as
  // one quotient: the side that does not cancel picks its num and den.
  Value nearPi = m.lt(angle.cosT, m.c(0.0));
  Value num = m.select(nearPi, angle.sinT, m.add(r, angle.cosT));
  Value den = m.select(nearPi, m.sub(r, angle.cosT), angle.sinT);
  Value direct = m.div(m.mul(x, num), den);
  // x cot x = 1 − x²/3 − x⁴/45 − 2x⁶/945 − x⁸/4725 − …: the first dropped
  // term is below 2.2e-20 (f64, |x| < 1e-2) and 2.2e-12 (f32, |x| < 0.1)
  // relative, under half an ulp, so the switch is continuous to rounding.
  double bound = m.isF32() ? 0.1 : 1e-2;
  Value series = m.poly(m.sqr(x), {1.0, -1.0 / 3, -1.0 / 45, -2.0 / 945});
  Value xcotx = m.select(m.lt(m.abs(x), m.c(bound)), series, direct);
  return {angle.theta, m.fma(xcotx, u1, m.mul(x, u2)),
          m.fma(xcotx, u2, m.neg(m.mul(x, u1)))};
}
