//===- TargetStrategy.h - Tile sizes and vector widths per target -*- C++
//-*-===//
//
// The one place that decides how Torsor's kernels are tiled for a target:
// vector width, register budget, and the tile sizes of the fused attention
// and dense kernels. `torsor-select-strategy` writes it on the module as the
// `torsor.strategy` dictionary attribute; the tiling and vectorization passes
// (CPU and GPU alike) read it back with TargetStrategy::get. No pass keeps
// tile-size constants of its own. Keeping *how* (this file) apart from *what*
// (the ops) is Halide's split of algorithm and schedule.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_STRATEGY_TARGETSTRATEGY_H
#define TORSOR_COMPILER_STRATEGY_TARGETSTRATEGY_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <string>

namespace torsor {

/// Name of the module attribute holding the strategy.
constexpr llvm::StringLiteral kStrategyAttrName = "torsor.strategy";

/// Tiling and vectorization choices for one target.
struct TargetStrategy {
  /// "cpu" or "nvptx".
  std::string target = "cpu";
  /// Width of one SIMD register in bits (128 SSE/NEON, 256 AVX2, 512
  /// AVX-512).
  unsigned vectorBits = 128;
  /// Architectural vector registers (16 below AVX-512, 32 with it).
  unsigned vectorRegisters = 16;

  // Fused Lie attention (geo-tile-attention, geo-decompose-attention).
  /// Most query rows one micro-kernel handles; they share every key
  /// feature and value load. Fewer when the accumulators would not fit in
  /// registers (attentionQueryRows()).
  unsigned attentionMaxQueryRows = 4;
  /// Keys per key tile, in vectors: the online softmax rescales once per
  /// tile, so wider tiles amortise its horizontal max.
  unsigned attentionKeyVectors = 4;

  // Dense contractions (torsor-tile-dense): a BLIS-style nest of loops,
  // tasks over row blocks, then cache blocks, then a register micro-kernel.
  /// Rows of the output one thread task computes (a multiple of
  /// matmulRegisterRows, so no task has a ragged register tile inside).
  unsigned matmulTaskRows = 32;
  /// Columns of the output per cache block: the kc × nc block of the
  /// right operand stays in L2 while every register tile of a task uses it.
  unsigned matmulCacheCols = 256;
  /// Depth (reduction) per cache block, kc.
  unsigned matmulCacheDepth = 256;
  /// Rows one task of a row kernel (LayerNorm, RMS norm, softmax: row
  /// reductions and their elementwise consumers, torsor-fuse-rows) keeps in
  /// cache while every pass over them runs.
  unsigned rowTaskRows = 16;
  /// Rows of the register tile, mr: each one broadcasts a left-operand
  /// element into matmulRegisterVectors FMAs.
  unsigned matmulRegisterRows = 4;
  /// Columns of the register tile in vectors, so nr = this × lanes.
  unsigned matmulRegisterVectors = 2;
  /// 1: a right operand stored transposed ([n, k], the `x Wᵀ` of linear
  /// layers) is transposed once into [k, n] before the product, so the
  /// micro-kernel loads contiguous vectors of it; 0: read it strided.
  unsigned matmulPackTransposed = 1;

  // Compute precision of the matrix products (torsorc --compute,
  // docs/precision.md). Written on the module only when not "f32", so
  // f32 strategies stay as they were.
  /// "f32" (the reference) or "bf16": products take operands rounded to
  /// bf16 and accumulate in f32.
  std::string compute = "f32";
  /// Which unit runs the bf16 products: "amx" (tile registers,
  /// tdpbf16ps), "avx512bf16" (vdpbf16ps on vectors) or "fma" (operands
  /// rounded to bf16, then the f32 kernel). Chosen from --mcpu's
  /// features (TargetStrategy::forCPU's caller).
  std::string matmulUnit = "fma";
  /// AMX tile shape: rows of the A and C tiles (at most 16).
  unsigned amxTileRows = 16;
  /// Columns of a C tile in f32 elements (at most 16: 64 bytes).
  unsigned amxTileCols = 16;
  /// Depth of one tile product in bf16 elements (at most 32: 64 bytes of
  /// an A row; B tiles hold depth / 2 rows of VNNI pairs).
  unsigned amxTileDepth = 32;
  /// C tiles per register block, down and across: 2 × 2 accumulators plus
  /// two A and two B tiles use the eight tile registers.
  unsigned amxBlockRows = 2;
  unsigned amxBlockCols = 2;

  // NVPTX (TargetStrategy::forNVPTX); written on the module only for it.
  /// The chip, e.g. "sm_90".
  std::string gpuArch = "sm_90";
  /// Threads of one block: torsor-map-parallel-loops-to-gpu cuts a
  /// parallel loop's iterations into tiles of this many (one per thread).
  unsigned gpuThreadsPerBlock = 256;
  /// Threads that run in lock step (a warp).
  unsigned gpuWarpSize = 32;
  /// Static shared memory one block may use, in bytes: the budget the
  /// fused attention kernel's key/value tiles must fit.
  unsigned gpuSharedMemoryBytes = 48 * 1024;
  // The fused Lie attention kernel (geo-map-attention-to-gpu): the GPU
  // side of the same query-tile / key-tile / online-softmax schedule the
  // CPU fields above choose for geo-tile-attention.
  /// Query rows of one attention block, BQ (a grid block per BQ rows of
  /// one batch element).
  unsigned gpuAttentionQueryRows = 64;
  /// Keys per key tile staged in shared memory, BK (one barrier pair per
  /// tile).
  unsigned gpuAttentionKeyTile = 64;
  /// Query rows per thread, R: their accumulators share every key feature
  /// and value read from shared memory. Threads per block = BQ / R.
  unsigned gpuAttentionRowsPerThread = 1;
  /// Keys per online-softmax step, S (scores held in registers; divides
  /// BK): the running max and rescale are paid once per S keys.
  unsigned gpuAttentionScoreChunk = 16;
  // Dense contractions (torsor-map-dense-to-gpu): the GPU side of the
  // matmul_* fields, shared-memory block tiles and register thread tiles.
  /// Output rows of one block, BM.
  unsigned gpuMatmulBlockRows = 64;
  /// Output columns of one block, BN.
  unsigned gpuMatmulBlockCols = 64;
  /// Depth per shared-memory tile, BK (one barrier pair per BK).
  unsigned gpuMatmulBlockDepth = 16;
  /// Output rows of one thread's register tile, TM (divides BM).
  unsigned gpuMatmulThreadRows = 4;
  /// Output columns of one thread's register tile, TN (divides BN).
  unsigned gpuMatmulThreadCols = 4;

  /// SIMD lanes for elements of `bits` width.
  unsigned lanes(unsigned bits) const {
    return vectorBits >= bits ? vectorBits / bits : 1;
  }
  /// Query rows per attention micro-kernel for `valueDim` value features
  /// of `bits` width: as many as keep the accumulators within half the
  /// vector registers (the other half holds key features and scores).
  unsigned attentionQueryRows(int64_t valueDim, unsigned bits) const;
  /// Threads of one attention block, T = BQ / R (at least one).
  unsigned gpuAttentionThreads() const {
    return std::max(1u, gpuAttentionQueryRows /
                            std::max(1u, gpuAttentionRowsPerThread));
  }
  /// Columns of the dense register tile for elements of `bits` width.
  unsigned matmulRegisterCols(unsigned bits) const {
    return matmulRegisterVectors * lanes(bits);
  }

  /// Whether bf16 products run on packed bf16 operands (AMX or
  /// AVX512-BF16), i.e. torsor-tile-dense packs them and
  /// torsor-lower-dense-bf16 lowers the packed product.
  bool packsBF16() const {
    return compute == "bf16" &&
           (matmulUnit == "amx" || matmulUnit == "avx512bf16");
  }
  /// Rows, columns and depth the packed bf16 operands are padded to a
  /// multiple of: one AMX register block (the AVX512-BF16 kernel uses the
  /// same packing).
  unsigned bf16BlockRows() const { return amxTileRows * amxBlockRows; }
  unsigned bf16BlockCols() const { return amxTileCols * amxBlockCols; }
  unsigned bf16BlockDepth() const { return amxTileDepth; }

  /// The strategy for a CPU with `vectorBits`-wide SIMD registers.
  static TargetStrategy forCPU(unsigned vectorBits);
  /// Sets the compute precision ("f32" or "bf16") and, for bf16, the unit
  /// from the CPU's features: AMX when it has amx-bf16, else
  /// AVX512-BF16, else f32 FMAs on rounded operands.
  void setCompute(llvm::StringRef precision, bool hasAMX, bool hasAVX512BF16);
  /// The strategy for an NVIDIA GPU (`arch` as "sm_90").
  static TargetStrategy forNVPTX(llvm::StringRef arch);
  /// The attribute form written on the module.
  mlir::DictionaryAttr toAttr(mlir::MLIRContext *context) const;
  /// Reads the strategy of the module enclosing `op` (or `op` itself);
  /// the portable CPU default (128-bit vectors) when none was selected.
  static TargetStrategy get(mlir::Operation *op);
};

} // namespace torsor

#endif // TORSOR_COMPILER_STRATEGY_TARGETSTRATEGY_H
