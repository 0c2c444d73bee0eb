//===- LowerExactMath.cpp - Exact math ops to LLVM intrinsics -------------===//
//
// torsor-lower-exact-math: math ops that are exactly rounded single
// instructions (fma, sqrt, abs, copysign, floor, ceil, trunc, round) become
// LLVM intrinsics before convert-math-to-libm runs. Left to math-to-libm,
// math.fma becomes a call of libm's fmaf per element (per lane on
// vectors); left to math-to-llvm as a whole, expm1 and log1p would lose
// their accuracy (it writes them as exp(x) − 1 and log(1 + x)). So this pass
// takes only the ops whose intrinsic is exact.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORLOWEREXACTMATH
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;

namespace {

struct LowerExactMath : torsor::impl::TorsorLowerExactMathBase<LowerExactMath> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    LLVMTypeConverter converter(context);
    RewritePatternSet patterns(context);
    populateMathToLLVMConversionPatterns(converter, patterns);
    ConversionTarget target(*context);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalOp<math::FmaOp, math::SqrtOp, math::AbsFOp,
                        math::CopySignOp, math::FloorOp, math::CeilOp,
                        math::TruncOp, math::RoundEvenOp>();
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
