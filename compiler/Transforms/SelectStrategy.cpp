//===- SelectStrategy.cpp - Stamp each kernel with its tiling strategy ----===//
//
// torsor-select-strategy: finds the ops that a tiling pass lowers and
// stamps each with the typed strategy the target calls for (the choices
// themselves are in dialects/Strategy/IR/Strategy.cpp). torsorc runs it
// with the vector width of the CPU it targets (--mcpu) or for the GPU;
// ops already stamped keep their strategy.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Geo/IR/GeoOps.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORSELECTSTRATEGY
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;
using namespace torsor::strategy;

namespace {

/// Element width and value features of an attention op's values.
template <typename OpT> std::pair<unsigned, int64_t> valueShape(OpT op) {
  auto values = cast<ShapedType>(op.getValues().getType());
  return {values.getElementType().getIntOrFloatBitWidth(),
          values.getShape().back()};
}

struct SelectStrategy : torsor::impl::TorsorSelectStrategyBase<SelectStrategy> {
  using TorsorSelectStrategyBase::TorsorSelectStrategyBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    bool gpu = target == "nvptx";
    if (!gpu && target != "cpu") {
      module.emitError() << "torsor-select-strategy: unknown target '" << target
                         << "' (expected cpu or nvptx)";
      return signalPassFailure();
    }
    if (compute != "f32" && compute != "bf16") {
      module.emitError() << "torsor-select-strategy: unknown compute '"
                         << compute << "' (expected f32 or bf16)";
      return signalPassFailure();
    }
    Target machine = gpu ? Target::gpuThread() : Target::cpu(vectorBits);
    machine.hasAMX = !gpu && amx;
    machine.hasAVX512BF16 = !gpu && avx512bf16;
    auto stamp = [](Operation *op, Attribute strategy) {
      if (!op->hasAttr(kStrategyAttrName))
        op->setAttr(kStrategyAttrName, strategy);
    };
    module.walk([&](Operation *op) {
      if (auto fwd = dyn_cast<geo::FlashLieAttentionOp>(op)) {
        auto [bits, dim] = valueShape(fwd);
        // The forward's P·V takes bf16 products under --compute=bf16; the
        // backward's stamps below stay f32 products.
        stamp(op, gpu ? Attribute(selectGPUAttention(context))
                      : Attribute(withForwardCacheBlocks(
                            selectVectorAttention(context, machine, bits, dim,
                                                  compute == "bf16"),
                            machine, bits, dim)));
      } else if (auto grad = dyn_cast<geo::FlashLieAttentionGradOp>(op)) {
        auto [bits, dim] = valueShape(grad);
        stamp(op, selectVectorAttentionGrad(context, machine, bits, dim));
      } else if (auto cross = dyn_cast<geo::LieCrossAttentionGradOp>(op)) {
        // The block backward becomes a flash backward inside
        // geo-decompose-attention-grad, which hands it this stamp.
        auto [bits, dim] = valueShape(cross);
        stamp(op, selectVectorAttentionGrad(context, machine, bits, dim));
      } else if (isa<func::FuncOp>(op)) {
        stamp(op, gpu ? Attribute(selectGPUDense(context))
                      : Attribute(
                            selectDense(context, machine, compute == "bf16")));
      }
    });
  }
};

} // namespace
