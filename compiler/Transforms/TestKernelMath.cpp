//===- TestKernelMath.cpp - Apply the kernels' polynomial math everywhere -===//
//
// Test-only pass behind test/Numerics/kernel-math.py: the fused attention
// kernels rewrite their own f32 math ops with the branch-free polynomial
// forms of dialects/Geo/Transforms/KernelMath.h, which the numerics test
// measures on plain tensors over the whole f32 range. This pass applies the
// same patterns to every math op of the module, so the test runs exactly
// the IR the kernels get.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Geo/Transforms/KernelMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORTESTKERNELMATH
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;

namespace {
/// Collects every math op of the module and rewrites it as the kernels do.
struct TorsorTestKernelMath
    : torsor::impl::TorsorTestKernelMathBase<TorsorTestKernelMath> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    torsor::geo::collectKernelMath(getOperation(), ops);
    if (failed(torsor::geo::approximateKernelMath(&getContext(), ops)))
      signalPassFailure();
  }
};
} // namespace
