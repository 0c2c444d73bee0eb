//===- SelectStrategy.cpp - Record the target's tiling strategy -----------===//
//
// torsor-select-strategy: the pass form of TargetStrategy::forCPU and
// forNVPTX. torsorc runs it with the vector width of the CPU it targets
// (--mcpu) or with the GPU chip (--gpu-arch); torsor-opt users pass
// vector-bits or target=nvptx by hand.
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
    if (target != "cpu" && target != "nvptx") {
      module.emitError() << "torsor-select-strategy: unknown target '" << target
                         << "' (expected cpu or nvptx)";
      return signalPassFailure();
    }
    if (target == "nvptx") {
      module->setAttr(kStrategyAttrName,
                      TargetStrategy::forNVPTX(gpuArch).toAttr(&getContext()));
      return;
    }
    if (vectorBits == 0 && module->hasAttr(kStrategyAttrName))
      return;
    if (compute != "f32" && compute != "bf16") {
      module.emitError() << "torsor-select-strategy: unknown compute '"
                         << compute << "' (expected f32 or bf16)";
      return signalPassFailure();
    }
    TargetStrategy strategy =
        TargetStrategy::forCPU(vectorBits == 0 ? 128 : vectorBits);
    strategy.setCompute(compute, amx, avx512bf16);
    module->setAttr(kStrategyAttrName, strategy.toAttr(&getContext()));
  }
};

} // namespace
