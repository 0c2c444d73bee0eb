//===- Strategy.h - Typed tiling strategies per op --------------*- C++ -*-===//
//
// The `strategy` dialect's attributes (StrategyAttrs.td), the machine facts
// a strategy is chosen from (Target), and the one place that chooses it
// (select*). `torsor-select-strategy` stamps each op a tiling pass lowers
// with its attribute; the tiling passes read it with the *Of functions,
// which fall back to the portable CPU choice for an op without one. This
// keeps *how* (a schedule) apart from *what* (the ops): Halide's split of
// algorithm and schedule, and IREE's lowering configs.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_STRATEGY_IR_STRATEGY_H
#define TORSOR_DIALECTS_STRATEGY_IR_STRATEGY_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include "dialects/Strategy/IR/StrategyEnums.h.inc"
#include "dialects/Strategy/IR/StrategyOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Strategy/IR/StrategyAttrs.h.inc"

namespace torsor::strategy {

/// The discardable attribute that carries an op's strategy.
constexpr llvm::StringLiteral kStrategyAttrName = "torsor.strategy";

/// The facts about a machine that a strategy follows from.
struct Target {
  /// Width of one SIMD register in bits (128 SSE/NEON, 256 AVX2, 512
  /// AVX-512); 32 for a GPU thread, which runs scalar code.
  unsigned vectorBits = 128;
  /// Architectural vector registers (16 below AVX-512, 32 with it).
  unsigned vectorRegisters = 16;
  /// The CPU has AMX-BF16 tile registers.
  bool hasAMX = false;
  /// The CPU has AVX512-BF16 (vdpbf16ps).
  bool hasAVX512BF16 = false;
  /// One thread of a GPU (Target::gpuThread), not a CPU core.
  bool isGPUThread = false;

  /// A CPU with `vectorBits`-wide SIMD registers (at least 128).
  static Target cpu(unsigned vectorBits);
  /// One thread of an NVIDIA GPU.
  static Target gpuThread();
  /// SIMD lanes for elements of `bits` width.
  unsigned lanes(unsigned bits) const {
    return vectorBits >= bits ? vectorBits / bits : 1;
  }
};

/// The vector schedule of a fused attention op (forward or backward: one
/// rule) whose elements are `bits` wide with `valueDim` value features;
/// `bf16` for `--compute=bf16` products (`products = bf16_dot` where the
/// target has AVX512-BF16).
VectorAttentionAttr selectVectorAttention(mlir::MLIRContext *context,
                                          const Target &target, unsigned bits,
                                          int64_t valueDim, bool bf16 = false);
/// The vector schedule of a fused attention's backward
/// (geo.flash_lie_attention_grad, geo.lie_cross_attention_grad): the
/// forward's (selectVectorAttention, f32 products), with the query rows
/// the backward's registers allow on a CPU.
VectorAttentionAttr selectVectorAttentionGrad(mlir::MLIRContext *context,
                                              const Target &target,
                                              unsigned bits, int64_t valueDim);
/// `tiles` (a forward's selectVectorAttention) with the cache blocks of
/// the CPU forward (query_block, key_block) set for `target`; unchanged
/// for a GPU thread. The backward keeps none.
VectorAttentionAttr withForwardCacheBlocks(VectorAttentionAttr tiles,
                                           const Target &target, unsigned bits,
                                           int64_t valueDim);
/// The GPU kernel schedule of a fused attention op.
GPUAttentionAttr selectGPUAttention(mlir::MLIRContext *context);
/// The unit that runs bf16 products on `target`: AMX when it has it,
/// else AVX512-BF16 on 512-bit vectors, else f32 FMAs on rounded operands.
MatmulUnit selectMatmulUnit(const Target &target);
/// The CPU dense and row kernels of a function; `bf16` for
/// `--compute=bf16` products.
DenseAttr selectDense(mlir::MLIRContext *context, const Target &target,
                      bool bf16 = false);
/// The GPU dense and loop kernels of a function.
GPUDenseAttr selectGPUDense(mlir::MLIRContext *context);

/// The strategy stamped on `op` itself, or null.
template <typename AttrT> AttrT stampedOn(mlir::Operation *op) {
  return op->getAttrOfType<AttrT>(kStrategyAttrName);
}
/// The strategy stamped on `op` or its nearest ancestor that has one of
/// this kind, or null.
template <typename AttrT> AttrT stampedAbove(mlir::Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto attr = stampedOn<AttrT>(op))
      return attr;
  return nullptr;
}

/// The vector schedule of attention op `op` (stamped on it or an
/// ancestor, or the portable CPU choice).
VectorAttentionAttr vectorAttentionOf(mlir::Operation *op, unsigned bits,
                                      int64_t valueDim);
/// The GPU schedule of attention op `op` (stamped on it or an ancestor,
/// or the default).
GPUAttentionAttr gpuAttentionOf(mlir::Operation *op);
/// The dense schedule of the function enclosing `op` (stamped, or the
/// portable CPU choice).
DenseAttr denseOf(mlir::Operation *op);
/// The GPU dense schedule of the function enclosing `op` (stamped, or the
/// default).
GPUDenseAttr gpuDenseOf(mlir::Operation *op);

} // namespace torsor::strategy

#endif // TORSOR_DIALECTS_STRATEGY_IR_STRATEGY_H
