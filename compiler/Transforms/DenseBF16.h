//===- DenseBF16.h - bf16 forms of dense contractions ----------*- C++ -*-===//
//
// What torsor-tile-dense does to a contraction under `--compute=bf16`
// (docs/precision.md). Either the operands are packed into the layout the
// bf16 units read (A and B as contiguous tiles of bf16, B in VNNI pairs
// of rows, both zero-padded to whole register blocks) and the product becomes
// one linalg.generic marked `torsor.bf16_product`, which
// torsor-lower-dense-bf16 turns into AMX or AVX512-BF16 kernels once it is
// on buffers; or, where no bf16 unit exists, the operands are rounded to
// bf16 and back, and the f32 kernel runs on them. Both keep the same
// semantics: bf16 operands, f32 sums.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TRANSFORMS_DENSEBF16_H
#define TORSOR_COMPILER_TRANSFORMS_DENSEBF16_H

#include "dialects/Strategy/IR/Strategy.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace torsor {

/// Marks the packed bf16 product torsor-lower-dense-bf16 lowers.
constexpr llvm::StringLiteral kBF16ProductAttr = "torsor.bf16_product";
/// Marks the op that writes a packed right operand (bf16 VNNI B here, f32
/// column panels in torsor-tile-dense): where it reads params only,
/// torsor-hoist-packed-params moves it (and what it reads) into the
/// per-model prepare function.
constexpr llvm::StringLiteral kPackedOperandAttr = "torsor.packed_operand";

/// Replaces the f32 contraction `op` (loop dims `batch`, `m`, `n`, `k`)
/// by: its operands rounded to bf16 and packed into tiles (A: [batch..,
/// Mp/T, Kp/D, T, D/2, 2], B: [batch'.., Np/T', Kp/D, D/2, T', 2], VNNI
/// pairs, where batch' are the batch dims B reads: none for `x @ W` with
/// batch dims in x, and T × T' × D the strategy's tile), the accumulator
/// padded to [batch.., Mp, Np] and viewed as [batch.., Mp/T, T, Np/T', T'],
/// the packed product (a generic marked kBF16ProductAttr), and the
/// [batch.., M, N] slice of it in the op's output layout. Mp, Np and Kp are M,
/// N and K rounded up to the strategy's bf16 block. Fails, changing nothing,
/// when `op` is not of that form.
mlir::LogicalResult packBF16Contraction(mlir::RewriterBase &rewriter,
                                        mlir::linalg::LinalgOp op,
                                        llvm::ArrayRef<unsigned> batch,
                                        unsigned m, unsigned n, unsigned k,
                                        strategy::BF16ProductsAttr products);

/// Rounds both inputs of the contraction `op` to bf16 and back to their
/// type (the bf16 semantics on a CPU without a bf16 unit); the f32 kernel
/// then multiplies them exactly and sums in f32.
void roundOperandsToBF16(mlir::RewriterBase &rewriter,
                         mlir::linalg::LinalgOp op);

} // namespace torsor

#endif // TORSOR_COMPILER_TRANSFORMS_DENSEBF16_H
