//===- PackBF16Rows.h - A's bf16 packing inside the product's tasks -*- C++
//-*-===//
//
// Part of torsor-lower-dense-bf16 (LowerDenseBF16.cpp). Bufferized, a
// packed bf16 product's left operand A is a buffer of tiles [Mp/T, Kp/D, T,
// D] one linalg.generic fills from the f32 rows of A (rounding each value
// to bf16) in a pass over the whole matrix before the product. The AVX512-
// BF16 kernel instead packs, in each task and depth block, just the rows
// and depth it multiplies next, into a small per-task buffer: A is read
// from memory once, the packed tiles are still in L1/L2 when the kernel
// reads them, and the whole-matrix buffer and its pass go.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TRANSFORMS_PACKBF16ROWS_H
#define TORSOR_COMPILER_TRANSFORMS_PACKBF16ROWS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace torsor {

/// The buffer `value` views, through view-like ops whose source is their
/// first operand. When `whole` is given, it is set to whether every op on
/// the way is a full reshape (memref.expand_shape or collapse_shape), so
/// that `value` covers every element of the buffer.
mlir::Value viewedBuffer(mlir::Value value, bool *whole = nullptr);

/// `root` and every view of it (transitively), views after what they view.
llvm::SmallVector<mlir::Value> viewsOf(mlir::Value root);

/// The pass that packs a product's A, found by findRowPacking.
struct RowPacking {
  /// The generic that writes A's tiles [Mp/T, Kp/D, T, D] from A's rows,
  /// and the zero fill of the depth padding before it (null when K is a
  /// multiple of D).
  mlir::linalg::GenericOp pack;
  mlir::linalg::FillOp fill;
  /// The tiles' buffer (a memref.alloc).
  mlir::Value buffer;
  /// The generic's loop dims: the row m, and either the depth tile ko and
  /// the place e in it (k = ko·D + e, `split`) or the depth k itself.
  unsigned m = 0, k = 0, e = 0;
  bool split = false;
  /// Rows M of A and its depth K (in elements), at the product.
  mlir::Value rows, depth;
  explicit operator bool() const { return bool(pack); }
};

/// The packing pass of `product`'s A, when it is one linalg.generic (and
/// perhaps a zero fill) writing all of A's buffer and nothing else uses
/// the buffer, its output map is (m floordiv T, ko, m mod T, e) or (m
/// floordiv T, k floordiv D, m mod T, k mod D), its inputs read m and k
/// only as whole indices (or k as ko·D + e), its body is pure and does not
/// read linalg.index, and nothing writes its inputs between it and the
/// product; a null RowPacking otherwise. Only 2-d products (no batch dims).
/// Creates the dims of `rows` and `depth` before `product`.
RowPacking findRowPacking(mlir::OpBuilder &b, mlir::linalg::GenericOp product,
                          int64_t tileRows, int64_t tileDepth);

/// Packs rows [row, rowEnd) ∩ [0, M) of A and its depth tiles [k0, kEnd)
/// into the corner of `tiles` ([taskRows/T, depthTiles, T, D], a per-task
/// buffer): a copy of the packing generic on subviews of its inputs, so
/// each tile holds the same bf16 values as in the whole-matrix buffer.
void packRowsInto(mlir::OpBuilder &b, mlir::Location loc,
                  const RowPacking &packing, mlir::Value tiles, mlir::Value row,
                  mlir::Value rowEnd, mlir::Value k0, mlir::Value kEnd,
                  int64_t tileRows, int64_t tileDepth);

/// Erases the packing pass and, where nothing else reads it, its buffer
/// (with its views and deallocations).
void eraseRowPacking(RowPacking &packing);

} // namespace torsor

#endif // TORSOR_COMPILER_TRANSFORMS_PACKBF16ROWS_H
