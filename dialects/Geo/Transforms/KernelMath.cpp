//===- KernelMath.cpp - Vectorizable f32 math for fused kernels -----------===//
//
// atan2 by octant reduction: t = min(|x|, |y|) / max(|x|, |y|) ∈ [0, 1],
// atan t = t·P(t²) with P a degree-7 polynomial fitted for relative error
// on [0, 1] (iteratively reweighted least squares, max relative error
// 9.9e-8 in exact arithmetic, 1.5e-7 rad absolute when evaluated in f32),
// then the octant and the sign of y restore the angle. One division, no
// branches, every step element-wise: the same IR serves scalars and every
// vector width. The max and min of |x| and |y| are nnan nsz (a NaN comes
// back through the last select), one vmaxps/vminps each on x86.
//
// exp by e^x = 2^k e^r, k = round(x / ln 2), r = x − k ln 2 (Cody–Waite)
// and a degree-6 polynomial for e^r fitted for relative error (1.9e-9 in
// exact arithmetic, 8.5e-8 ≈ 1.4 ulp evaluated in f32 over the whole
// range), 2^k added to the exponent bits; subnormal results (x below
// ln(FLT_MIN) = −87.34, down to −103.97) through 2^(k+64)·2⁻⁶⁴, rounded
// once to the subnormal grid; 0 below −104, +∞ above ln(FLT_MAX), NaN in →
// NaN out.
//
// log, log1p and expm1 serve the pair forms of the groups whose closed
// forms need them (Aff(2) and GL⁺(2) logs, Sim(2)'s |φ(w)|², Sim(3)): a
// libm call there is made once per SIMD lane, in scalar code. log by
// fdlibm's logf reduction, log1p as that log of fl(1 + x) plus the
// rounding correction, expm1 by its Taylor polynomial on |x| ≤ 1 and
// e^x − 1 (the exp above) beyond. Max errors over the f32 range
// (test/Numerics/kernel-math.py): log 0.85 ulp, log1p 1.44 ulp, expm1
// 1.6 ulp; expm1 and log1p return tiny x bit for bit.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/Transforms/KernelMath.h"
#include "dialects/Lie/IR/ScalarBuilder.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <limits>

using namespace mlir;
using torsor::lie::ScalarBuilder;

namespace {

/// atan(t)/t ≈ Σ_k kAtanCoeffs[k] (t²)ᵏ on t ∈ [0, 1].
constexpr double kAtanCoeffs[] = {0.9999999010931311,   -0.33331991127656846,
                                  0.1996972796645299,   -0.14019499976387192,
                                  0.09914338556762493,  -0.059486979053691894,
                                  0.024252784623308613, -0.004693375203889061};

/// The lanes of an f32 scalar (0) or 1-D vector type, the only shapes the
/// polynomial patterns rewrite; failure for anything else.
FailureOr<int64_t> f32Lanes(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  auto elt = dyn_cast<FloatType>(getElementTypeOrSelf(type));
  if (!elt || !elt.isF32() || (vector && vector.getRank() != 1))
    return failure();
  return vector ? vector.getDimSize(0) : 0;
}

struct PolynomialAtan2 : OpRewritePattern<math::Atan2Op> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::Atan2Op op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    FailureOr<int64_t> lanes = f32Lanes(type);
    if (failed(lanes))
      return rewriter.notifyMatchFailure(op,
                                         "only f32 scalars and 1-D vectors");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ScalarBuilder m(b, b.getF32Type(), *lanes);
    Value y = op.getLhs(), x = op.getRhs();
    Value ax = m.abs(x), ay = m.abs(y);
    // |x| and |y| have no signed zero, and a NaN in either is restored by
    // the last select below: nnan nsz lets the max and min be one
    // vmaxps/vminps each, where IEEE maximum/minimum take a NaN compare,
    // a sign test and blends (a sixth of the f32 atan2's instructions).
    auto fast = arith::FastMathFlags::nnan | arith::FastMathFlags::nsz;
    Value big = arith::MaximumFOp::create(b, ax, ay, fast);
    Value small = arith::MinimumFOp::create(b, ax, ay, fast);
    Value zero = m.c(0.0);
    // 0/0 at the origin: atan2(±0, ±0) has t = 0.
    Value t = m.select(m.gt(big, zero), m.div(small, big), zero);
    Value a = m.mul(t, m.poly(m.sqr(t), kAtanCoeffs));
    a = m.select(m.gt(ay, ax), m.sub(m.c(M_PI_2), a), a);
    // x < 0, including −0: the angle is measured from the negative axis.
    Value negative = arith::CmpFOp::create(b, arith::CmpFPredicate::OLT,
                                           m.copysign(m.c(1.0), x), zero);
    a = m.select(negative, m.sub(m.c(M_PI), a), a);
    // NaN in, NaN out (the selects above would hide a NaN x or y).
    Value unordered = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, x, y);
    a = m.select(unordered, m.add(x, y), a);
    rewriter.replaceOp(op, m.copysign(a, y));
    return success();
  }
};

/// e^r/… ≈ Σ_k kExpCoeffs[k] rᵏ on r ∈ [−ln 2/2, ln 2/2] (degree 6,
/// fitted for relative error: 1.9e-9 in exact arithmetic).
constexpr double kExpCoeffs[] = {1.0000000005542096,   1.000000036323745,
                                 0.4999999207920389,   0.1666642016718447,
                                 0.04166822569120988,  0.008374816038301347,
                                 0.0013836840078167935};

struct PolynomialExp : OpRewritePattern<math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    FailureOr<int64_t> lanes = f32Lanes(type);
    if (failed(lanes))
      return rewriter.notifyMatchFailure(op,
                                         "only f32 scalars and 1-D vectors");
    auto vector = dyn_cast<VectorType>(type);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ScalarBuilder m(b, b.getF32Type(), *lanes);
    Type intType = b.getI32Type();
    if (vector)
      intType = VectorType::get(vector.getShape(), intType);
    auto bits = [&](Value x) {
      return arith::BitcastOp::create(b, intType, x).getResult();
    };
    auto intConst = [&](int32_t v) -> Value {
      TypedAttr value = b.getI32IntegerAttr(v);
      if (vector)
        value = DenseElementsAttr::get(cast<VectorType>(intType), value);
      return arith::ConstantOp::create(b, intType, value);
    };
    Value x = op.getOperand();
    // k = round(x / ln 2) by the shifter 1.5·2²³: t = x log₂e + shifter
    // rounds to an integer, and the low bits of t's pattern hold k.
    Value shifter = m.c(12582912.0);
    Value t = m.fma(x, m.c(M_LOG2E), shifter);
    Value k = m.sub(t, shifter);
    // r = x − k ln 2 in two steps (Cody–Waite: k·ln2Hi is exact).
    Value r = m.fma(k, m.c(-0.693145751953125), x);
    r = m.fma(k, m.c(-1.428606820309417e-06), r);
    Value p = m.poly(r, kExpCoeffs);
    // 2^k: k << 23 added to p's exponent (the shifter's pattern shifts
    // out; p ∈ [0.7, 1.42] keeps the sum a normal number for k ≥ −125).
    Value scaled = arith::AddIOp::create(
        b, bits(p), arith::ShLIOp::create(b, bits(t), intConst(23)));
    Value y = arith::BitcastOp::create(b, type, scaled);
    arith::FastMathFlags flags = op.getFastmath();
    if (arith::bitEnumContainsAll(flags, arith::FastMathFlags::afn)) {
      // afn: results below 2⁻¹²⁵ flush to 0 (from x < −86.9, where k ≥
      // −125 ends): one select for the subnormal and underflow tests
      // below. What a probability e^{s − m} ≤ 1 next to a row sum ≥ 1
      // needs; the results from −86.9 up are the same bits.
      y = m.select(m.lt(x, m.c(-86.9)), m.c(0.0), y);
    } else {
      // Subnormal results (k ≤ −126): p·2^(k+64), a normal number for
      // k ≥ −190, times 2⁻⁶⁴, so that the one rounding to the subnormal
      // grid is the multiply's (gradual underflow, as libm). Taken below
      // x = −80, where both ways are exact.
      Value lifted = arith::BitcastOp::create(
          b, type, arith::AddIOp::create(b, scaled, intConst(64 << 23)));
      Value tiny = m.mul(lifted, m.c(0x1p-64));
      y = m.select(m.lt(x, m.c(-80.0)), tiny, y);
      // Out of range: 0 below −104 (e^x < 2⁻¹⁵⁰, half the smallest
      // subnormal, from −103.972). False on NaN, which the polynomial
      // carries through.
      y = m.select(m.lt(x, m.c(-104.0)), m.c(0.0), y);
    }
    // +∞ above ln(FLT_MAX), unless ninf says no result is infinite (as
    // for e^s with s ≤ 0). False on NaN.
    if (!arith::bitEnumContainsAll(flags, arith::FastMathFlags::ninf))
      y = m.select(m.gt(x, m.c(88.72283905)),
                   m.c(std::numeric_limits<double>::infinity()), y);
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// Integer helpers for the bit-level steps of the log pattern: i32 values
/// of the same shape (scalar or vector) as the f32 operand.
struct IntBits {
  ImplicitLocOpBuilder &b;
  Type floatType, intType;

  IntBits(ImplicitLocOpBuilder &b, Type floatType)
      : b(b), floatType(floatType) {
    intType = b.getI32Type();
    if (auto vector = dyn_cast<VectorType>(floatType))
      intType = VectorType::get(vector.getShape(), intType);
  }
  Value c(int32_t v) {
    TypedAttr value = b.getI32IntegerAttr(v);
    if (auto vector = dyn_cast<VectorType>(intType))
      value = DenseElementsAttr::get(vector, value);
    return arith::ConstantOp::create(b, intType, value);
  }
  Value bits(Value x) { return arith::BitcastOp::create(b, intType, x); }
  Value fromBits(Value i) { return arith::BitcastOp::create(b, floatType, i); }
};

/// ln x for f32 x (a scalar or 1-D vector value) by fdlibm's logf reduction:
/// x = 2^k·u with u ∈ [√½, √2) read off the bits (subnormal x first scaled
/// by 2²³), f = u − 1 (exact), s = f/(2 + f) and
///   ln u = f − (f²/2 − s·(f²/2 + R(s²))),
/// R a degree-4 polynomial in s² (fdlibm's minimax Lg1…Lg4, error below
/// 2⁻³⁴ on |s| ≤ 0.1716), then + k·ln 2 in two parts. f is exact and the
/// correction is at most f/5, so ln u keeps its relative accuracy next to
/// x = 1 (ln 1 = 0 exactly). 0 → −∞, negative → NaN, +∞ → +∞, NaN → NaN.
Value buildPolynomialLog(ImplicitLocOpBuilder &b, ScalarBuilder &m, Value x) {
  Type type = x.getType();
  IntBits ints(b, type);
  // Subnormals: scale by 2²³ so that the exponent bits hold the binade.
  Value sub = m.lt(x, m.c(1.1754943508222875e-38));
  Value xs = m.select(sub, m.mul(x, m.c(8388608.0)), x);
  // ix = bits(xs) − bits(√½): its exponent field is k and its mantissa,
  // re-based at √½, gives u ∈ [√½, √2).
  Value ix = arith::SubIOp::create(b, ints.bits(xs), ints.c(0x3f3504f3));
  Value k = arith::ShRSIOp::create(b, ix, ints.c(23));
  Value ubits = arith::AddIOp::create(
      b, arith::AndIOp::create(b, ix, ints.c(0x007fffff)), ints.c(0x3f3504f3));
  Value u = ints.fromBits(ubits);
  Value dk = arith::SIToFPOp::create(b, type, k);
  dk = m.select(sub, m.sub(dk, m.c(23.0)), dk);
  Value f = m.sub(u, m.c(1.0));
  Value s = m.div(f, m.add(m.c(2.0), f));
  Value z = m.sqr(s);
  // fdlibm's Lg1…Lg4 (0xaaaaaa.0p-24, 0xccce13.0p-25, 0x91e9ee.0p-25,
  // 0xf89e26.0p-26).
  Value r = m.mul(z, m.poly(z, {0.66666662693, 0.40000972152, 0.28498786688,
                                0.24279078841}));
  Value hfsq = m.mul(m.c(0.5), m.sqr(f));
  Value lnU = m.sub(f, m.sub(hfsq, m.mul(s, m.add(hfsq, r))));
  // k·ln 2 = k·ln2Hi (exact: ln2Hi has 16 significant bits) + k·ln2Lo.
  Value y = m.add(m.fma(dk, m.c(9.0580006145e-06), lnU),
                  m.mul(dk, m.c(6.9313812256e-01)));
  double inf = std::numeric_limits<double>::infinity();
  y = m.select(m.lt(x, m.c(0.0)), m.c(std::numeric_limits<double>::quiet_NaN()),
               y);
  y = m.select(arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x, m.c(0.0)),
               m.c(-inf), y);
  y = m.select(arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x, m.c(inf)),
               m.c(inf), y);
  // NaN in, NaN out (the bit steps would make a number of it).
  Value unordered = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, x, x);
  return m.select(unordered, x, y);
}

/// The lanes of an f32 1-D vector type; failure for scalars and anything
/// else. log, log1p and expm1 are rewritten on vectors only: a libm call
/// per SIMD lane is what they cost there, while a scalar op (the lse's log
/// per row and head, the GPU's per-thread code) keeps the correctly
/// rounded libm or libdevice function.
FailureOr<int64_t> f32VectorLanes(Type type) {
  FailureOr<int64_t> lanes = f32Lanes(type);
  if (failed(lanes) || *lanes == 0)
    return failure();
  return lanes;
}

/// log1p x = ln u + c with u = fl(1 + x) and c = (1 + x − u)/u the first-
/// order correction for the rounding of u; 1 + x − u is exact (Fast2Sum,
/// ordered by |x| ≶ 1). Tiny x: u = 1, ln u = 0 and the result is x
/// itself. −1 → −∞, below −1 → NaN, +∞ → +∞, NaN → NaN.
Value buildPolynomialLog1p(ImplicitLocOpBuilder &b, ScalarBuilder &m, Value x) {
  Value one = m.c(1.0);
  Value u = m.add(one, x);
  Value err =
      m.select(m.gt(x, one), m.sub(one, m.sub(u, x)), m.sub(x, m.sub(u, one)));
  Value lnU = buildPolynomialLog(b, m, u);
  Value y = m.add(lnU, m.div(err, u));
  // u = 0 (x = −1) and u = +∞ make c 0/0 or ∞ − ∞: ln u alone is right.
  double inf = std::numeric_limits<double>::infinity();
  Value edge = arith::OrIOp::create(
      b, arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, u, m.c(0.0)),
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, u, m.c(inf)));
  y = m.select(edge, lnU, y);
  // u = 1: |x| ≤ 2⁻²⁴ and log1p x = x to within x²/2 (this keeps −0).
  return m.select(arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, u, one),
                  x, y);
}

/// expm1(x)/x ≈ Σ_k 1/(k+1)! xᵏ to degree 10 on |x| ≤ 1: truncation below
/// 1/12!·e < 6e-9 relative (expm1(x)/x ≥ 0.63 there).
constexpr double kExpm1Coeffs[] = {1.0,           1.0 / 2,       1.0 / 6,
                                   1.0 / 24,      1.0 / 120,     1.0 / 720,
                                   1.0 / 5040,    1.0 / 40320,   1.0 / 362880,
                                   1.0 / 3628800, 1.0 / 39916800};

/// expm1 x = x·P(x) for |x| ≤ 1 (relative accuracy down to the smallest
/// subnormal: tiny x gives x·1 exactly), e^x − 1 beyond, where the
/// subtraction does not cancel (e^x/|e^x − 1| ≤ 1.6 for |x| ≥ 1) and e^x
/// is the polynomial exp above. +∞ → +∞, −∞ → −1, NaN → NaN.
Value buildPolynomialExpm1(ImplicitLocOpBuilder &b, ScalarBuilder &m, Value x) {
  Value series = m.mul(x, m.poly(x, kExpm1Coeffs));
  // The math.exp is rewritten by PolynomialExp in the same greedy run.
  Value direct = m.sub(m.exp(x), m.c(1.0));
  Value small =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, m.abs(x), m.c(1.0));
  return m.select(small, series, direct);
}

/// Rewrites an f32 1-D vector `OpT` (one operand) with `build`; scalars and
/// other types keep their libm lowering (see f32VectorLanes).
template <typename OpT,
          Value (*build)(ImplicitLocOpBuilder &, ScalarBuilder &, Value)>
struct F32VectorPolynomial : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    FailureOr<int64_t> lanes = f32VectorLanes(op.getType());
    if (failed(lanes))
      return rewriter.notifyMatchFailure(op, "only f32 1-D vectors");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ScalarBuilder m(b, b.getF32Type(), *lanes);
    rewriter.replaceOp(op, build(b, m, op.getOperand()));
    return success();
  }
};

using PolynomialLog = F32VectorPolynomial<math::LogOp, buildPolynomialLog>;
using PolynomialLog1p =
    F32VectorPolynomial<math::Log1pOp, buildPolynomialLog1p>;
using PolynomialExpm1 =
    F32VectorPolynomial<math::ExpM1Op, buildPolynomialExpm1>;

} // namespace

void torsor::geo::populateKernelMathPatterns(RewritePatternSet &patterns) {
  patterns.add<PolynomialAtan2>(patterns.getContext());
  patterns.add<PolynomialLog, PolynomialLog1p, PolynomialExpm1>(
      patterns.getContext());
  // f32 exp: PolynomialExp (16 vector ops, no rounding instruction and no
  // integer conversion); MLIR's polynomial for anything else.
  patterns.add<PolynomialExp>(patterns.getContext(), /*benefit=*/2);
  auto exp = [](StringRef name) { return name == "math.exp" || name == "exp"; };
  populateMathPolynomialApproximationPatterns(patterns, exp);
}

void torsor::geo::collectKernelMath(Operation *root,
                                    SmallVectorImpl<Operation *> &ops) {
  root->walk([&](Operation *inner) {
    if (isa<math::MathDialect>(inner->getDialect()))
      ops.push_back(inner);
  });
}

void torsor::geo::collectKernelMath(Operation *prev, Operation *op,
                                    SmallVectorImpl<Operation *> &ops) {
  for (Operation *it = prev ? prev->getNextNode() : &op->getBlock()->front();
       it != op; it = it->getNextNode())
    collectKernelMath(it, ops);
}

LogicalResult torsor::geo::approximateKernelMath(MLIRContext *context,
                                                 ArrayRef<Operation *> ops) {
  if (ops.empty())
    return success();
  RewritePatternSet patterns(context);
  populateKernelMathPatterns(patterns);
  return applyOpPatternsGreedily(ops, std::move(patterns));
}
