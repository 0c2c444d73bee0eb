//===- GPUAttentionStrategy.h - GPU tiles of the fused attention -*- C++
//-*-===//
//
// The GPU half of the target strategy for the fused Lie attention
// (geo-map-attention-to-gpu): how many query rows a block and a thread own,
// how many keys a block stages into shared memory per step, how many
// scores a thread keeps in registers per online-softmax step, and the
// shared-memory budget. It is kept apart from TargetStrategy's CPU fields
// (and from the NVPTX pipeline's own GPU fields) on purpose: one struct,
// one sub-dictionary `gpu_attention` of the module's `torsor.strategy`,
// read by one pass. Like TargetStrategy, these numbers are the only tile
// sizes the GPU attention kernel has.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_STRATEGY_GPUATTENTIONSTRATEGY_H
#define TORSOR_COMPILER_STRATEGY_GPUATTENTIONSTRATEGY_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace torsor {

/// Name of the sub-dictionary of `torsor.strategy` holding these fields.
constexpr llvm::StringLiteral kGPUAttentionStrategyAttrName = "gpu_attention";

/// Block and thread tiling of geo.flash_lie_attention on an NVIDIA GPU.
/// A block owns queryRowsPerBlock() consecutive query rows of one batch
/// element; thread t owns rows t, t + T, …, t + (R − 1)·T of them.
struct GPUAttentionStrategy {
  /// Threads per block, T (a multiple of the 32-lane warp).
  unsigned threadsPerBlock = 64;
  /// Query rows per thread, R: their accumulators share every key feature
  /// and value loaded from shared memory, at R·D registers.
  unsigned rowsPerThread = 1;
  /// Keys per shared-memory tile, BK: one pair of barriers per BK keys.
  unsigned keyTile = 64;
  /// Keys per online-softmax step (scores held in registers), S; divides
  /// keyTile. The running max and the rescale are paid once per S keys.
  unsigned scoreChunk = 16;
  /// Bytes of shared memory one block may use (the 48 KiB every chip
  /// grants a kernel without an opt-in).
  unsigned sharedMemoryBytes = 48 * 1024;

  /// BQ = T · R.
  unsigned queryRowsPerBlock() const { return threadsPerBlock * rowsPerThread; }

  /// The default for NVIDIA GPUs from sm_75 on (sm_90 is the reference).
  static GPUAttentionStrategy forNVPTX();
  /// The attribute form (the `gpu_attention` sub-dictionary).
  mlir::DictionaryAttr toAttr(mlir::MLIRContext *context) const;
  /// Reads `torsor.strategy`'s `gpu_attention` entry of the module
  /// enclosing `op`; fields left out (or no entry) keep forNVPTX()'s.
  static GPUAttentionStrategy get(mlir::Operation *op);
};

} // namespace torsor

#endif // TORSOR_COMPILER_STRATEGY_GPUATTENTIONSTRATEGY_H
