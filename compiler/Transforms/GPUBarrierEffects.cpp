//===- GPUBarrierEffects.cpp - Memory effects of gpu.barrier --------------===//
//
// Upstream gpu.barrier declares no memory effects, so passes that must know
// every op's effects refuse it: the ownership-based buffer deallocation of
// the common bufferization pipeline fails with "ops with unknown memory side
// effects are not supported" on any function whose kernels (built on
// tensors, as geo-map-attention-to-gpu's) contain a barrier. A barrier
// orders the block's reads and writes of memory, so it is modelled as
// reading and writing memory (no particular value): what dealloc needs to
// know, and what keeps CSE and DCE from touching it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/GPUHostCode.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace {

/// gpu.barrier reads and writes memory.
struct BarrierEffects
    : public MemoryEffectOpInterface::ExternalModel<BarrierEffects,
                                                    gpu::BarrierOp> {
  void
  getEffects(Operation *,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    effects.emplace_back(MemoryEffects::Read::get());
    effects.emplace_back(MemoryEffects::Write::get());
  }
};

} // namespace

void torsor::registerGPUBarrierEffects(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, gpu::GPUDialect *) {
    gpu::BarrierOp::attachInterface<BarrierEffects>(*context);
  });
}
