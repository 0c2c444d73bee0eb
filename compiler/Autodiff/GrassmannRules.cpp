//===- GrassmannRules.cpp - The VJP of geo.grassmann_mix ------------------===//
//
// geo.grassmann_mix's backward on the bilinear form: the Plücker
// coordinates enter only through W_plu, so their cotangent contracts back
// into z_t and its partners as antisymmetric bilinear forms, and nothing
// of size L × |offsets| × C(r,2) is built (the -O0 lowering that
// torsor-differentiate used before builds one Plücker tensor per offset,
// and their cotangents). The math is GrassmannGrad.cpp's, next to the
// fused forward it recomputes (GrassmannEmitter), so one copy of the
// forward serves the lowering and the gradient.
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/VJP.h"
#include "compiler/Conversion/GeoToLinalg/GeoToLinalg.h"

using namespace mlir;
using namespace torsor;
using namespace torsor::autodiff;

namespace {

/// geo.grassmann_mix: every operand's cotangent from buildGrassmannMixVJP.
LogicalResult grassmannMixVJP(OpBuilder &b, Operation *op, ArrayRef<Value> cots,
                              SmallVectorImpl<Value> &grads) {
  FailureOr<SmallVector<Value>> built = buildGrassmannMixVJP(b, op, cots[0]);
  if (failed(built))
    return failure();
  for (auto [i, grad] : llvm::enumerate(*built))
    grads[i] = grad;
  return success();
}

} // namespace

void torsor::autodiff::registerGrassmannVJPRules(VJPRegistry &registry) {
  registry.add("geo.grassmann_mix", {grassmannMixVJP});
}
