//===- KernelMath.cpp - Vectorizable f32 math for fused kernels -----------===//
//
// atan2 by octant reduction: t = min(|x|, |y|) / max(|x|, |y|) ∈ [0, 1],
// atan t = t·P(t²) with P a degree-7 polynomial fitted for relative error
// on [0, 1] (iteratively reweighted least squares, max relative error
// 9.9e-8 in exact arithmetic, 1.5e-7 rad absolute when evaluated in f32),
// then the octant and the sign of y restore the angle. One division, no
// branches, every step element-wise: the same IR serves scalars and every
// vector width.
//
// exp by e^x = 2^k e^r, k = round(x / ln 2), r = x − k ln 2 (Cody–Waite)
// and a degree-6 polynomial for e^r fitted for relative error (1.9e-9 in
// exact arithmetic, 8.5e-8 ≈ 1.4 ulp evaluated in f32 over the whole
// range), 2^k added to the exponent bits; 0 below ln(FLT_MIN), +∞ above
// ln(FLT_MAX), NaN in → NaN out.
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
    Value big = m.max(ax, ay), small = m.min(ax, ay);
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
    // out; p ∈ [0.7, 1.42] keeps the sum a normal number for x in range).
    Value scaled = arith::AddIOp::create(
        b, bits(p), arith::ShLIOp::create(b, bits(t), intConst(23)));
    Value y = arith::BitcastOp::create(b, type, scaled);
    // Out of range: 0 below ln(FLT_MIN), +∞ above ln(FLT_MAX). Both tests
    // are false on NaN, which the polynomial carries through.
    y = m.select(m.lt(x, m.c(-87.33654475)), m.c(0.0), y);
    y = m.select(m.gt(x, m.c(88.72283905)),
                 m.c(std::numeric_limits<double>::infinity()), y);
    rewriter.replaceOp(op, y);
    return success();
  }
};

} // namespace

void torsor::geo::populateKernelMathPatterns(RewritePatternSet &patterns) {
  patterns.add<PolynomialAtan2>(patterns.getContext());
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
