//===- GPUAttentionStrategy.cpp - GPU tiles of the fused attention --------===//
//
// The choices and their reasons (sm_90 is the reference chip; none of them
// has been tuned on hardware yet).
//
//===----------------------------------------------------------------------===//

#include "compiler/Strategy/GPUAttentionStrategy.h"
#include "compiler/Strategy/TargetStrategy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <algorithm>

using namespace mlir;
using namespace torsor;

GPUAttentionStrategy GPUAttentionStrategy::forNVPTX() {
  GPUAttentionStrategy s;
  // One thread per query row: the whole sequence is L threads, so more rows
  // per thread would cut the warps per SM (L = 16384 is only 512 warps on
  // 132 SMs). Two warps per block keep many blocks per SM resident.
  s.threadsPerBlock = 64;
  s.rowsPerThread = 1;
  // 64 keys per tile: (Fk + D) · 64 · 4 B = 22.5 KiB for SE(3) features
  // and D = 64 in f32, so two blocks' tiles fit even a 48 KiB SM partition
  // and a barrier pair is paid per 64 keys.
  s.keyTile = 64;
  // 16 scores per head in registers next to D = 64 accumulators and the
  // query features keep a thread under ~128 registers (16 warps per SM).
  s.scoreChunk = 16;
  s.sharedMemoryBytes = 48 * 1024;
  return s;
}

DictionaryAttr GPUAttentionStrategy::toAttr(MLIRContext *context) const {
  Builder b(context);
  auto i64 = [&](unsigned v) { return b.getI64IntegerAttr(v); };
  return b.getDictionaryAttr({
      b.getNamedAttr("threads_per_block", i64(threadsPerBlock)),
      b.getNamedAttr("rows_per_thread", i64(rowsPerThread)),
      b.getNamedAttr("key_tile", i64(keyTile)),
      b.getNamedAttr("score_chunk", i64(scoreChunk)),
      b.getNamedAttr("shared_memory_bytes", i64(sharedMemoryBytes)),
  });
}

GPUAttentionStrategy GPUAttentionStrategy::get(Operation *op) {
  GPUAttentionStrategy s = forNVPTX();
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  if (!module)
    return s;
  auto strategy = module->getAttrOfType<DictionaryAttr>(kStrategyAttrName);
  if (!strategy)
    return s;
  auto dict = strategy.getAs<DictionaryAttr>(kGPUAttentionStrategyAttrName);
  if (!dict)
    return s;
  auto read = [&](StringRef name, unsigned &field) {
    if (auto attr = dict.getAs<IntegerAttr>(name))
      field = static_cast<unsigned>(std::max<int64_t>(attr.getInt(), 1));
  };
  read("threads_per_block", s.threadsPerBlock);
  read("rows_per_thread", s.rowsPerThread);
  read("key_tile", s.keyTile);
  read("score_chunk", s.scoreChunk);
  read("shared_memory_bytes", s.sharedMemoryBytes);
  return s;
}
