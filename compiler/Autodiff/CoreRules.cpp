//===- CoreRules.cpp - Registration of the core VJP rules -----------------===//
//
// arith/math (ScalarRules.cpp) and linalg/tensor (StructuredRules.cpp).
// The dense geo ops (relational_attention, relational_norm, plucker) have
// no hand-written rule: torsor-differentiate decomposes them to linalg with
// their -O0 lowering first, and these rules differentiate the result.
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/VJP.h"

using namespace torsor::autodiff;

void torsor::autodiff::registerCoreVJPRules(VJPRegistry &registry) {
  registerScalarVJPRules(registry);
  registerStructuredVJPRules(registry);
}
