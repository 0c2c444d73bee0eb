//===- SelectStrategy.cpp - Record the target's tiling strategy -----------===//
//
// torsor-select-strategy: the pass form of TargetStrategy::forCPU. torsorc
// runs it with the vector width of the CPU it targets (--mcpu); torsor-opt
// users pass vector-bits by hand.
//
//===----------------------------------------------------------------------===//

#include "compiler/Strategy/TargetStrategy.h"
#include "compiler/Transforms/Passes.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORSELECTSTRATEGY
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

struct SelectStrategy : torsor::impl::TorsorSelectStrategyBase<SelectStrategy> {
  using TorsorSelectStrategyBase::TorsorSelectStrategyBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (vectorBits == 0 && module->hasAttr(kStrategyAttrName))
      return;
    TargetStrategy strategy =
        TargetStrategy::forCPU(vectorBits == 0 ? 128 : vectorBits);
    module->setAttr(kStrategyAttrName, strategy.toAttr(&getContext()));
  }
};

} // namespace
