//===- TargetStrategy.cpp - Tile sizes and vector widths per target -------===//
//
// The choices and their reasons. Numbers here are the only tile-size
// constants in the compiler.
//
//===----------------------------------------------------------------------===//

#include "compiler/Strategy/TargetStrategy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <algorithm>

using namespace mlir;
using namespace torsor;

unsigned TargetStrategy::attentionQueryRows(int64_t valueDim,
                                            unsigned bits) const {
  // Accumulators per row: ceil(D / lanes) vectors.
  int64_t perRow = (valueDim + lanes(bits) - 1) / lanes(bits);
  int64_t budget = vectorRegisters / 2;
  int64_t rows = perRow > 0 ? budget / perRow : attentionMaxQueryRows;
  return static_cast<unsigned>(
      std::clamp<int64_t>(rows, 1, attentionMaxQueryRows));
}

TargetStrategy TargetStrategy::forCPU(unsigned vectorBits) {
  TargetStrategy s;
  s.target = "cpu";
  s.vectorBits = std::max(vectorBits, 128u);
  // AVX-512 doubles the register file as well as its width.
  s.vectorRegisters = s.vectorBits >= 512 ? 32 : 16;
  s.attentionMaxQueryRows = 4;
  s.attentionKeyVectors = 4;
  // Register tile: mr × matmulRegisterVectors accumulators take half the
  // register file; the rest holds the right operand's row vectors and the
  // broadcast left-operand element (8 × 2 of 32 with AVX-512, 4 × 2 of 16
  // below it).
  s.matmulRegisterVectors = 2;
  s.matmulRegisterRows = s.vectorRegisters / 2 / s.matmulRegisterVectors;
  // A task of 32 rows keeps L = 64 on two threads; 256 × 256 f32 blocks of
  // the right operand (256 KiB) fit the L2 of every x86 core of the last
  // decade.
  s.matmulTaskRows = 32;
  s.matmulCacheCols = 256;
  s.matmulCacheDepth = 256;
  s.matmulPackTransposed = 1;
  // 16 rows of d = 256 f32 are 16 KiB: with the row statistics they stay
  // in L1 between the passes of a norm or softmax.
  s.rowTaskRows = 16;
  return s;
}

void TargetStrategy::setCompute(StringRef precision, bool hasAMX,
                                bool hasAVX512BF16) {
  compute = precision.str();
  matmulUnit = "fma";
  if (compute != "bf16")
    return;
  // AMX's tile unit does a 16 × 16 × 32 bf16 product per instruction, 16
  // times the work of a 512-bit FMA; vdpbf16ps does twice an FMA's. The
  // fallback keeps the bf16 semantics (rounded operands, f32 sums) on
  // every CPU, so results agree across paths up to summation order.
  if (hasAMX)
    matmulUnit = "amx";
  else if (hasAVX512BF16 && vectorBits >= 512)
    matmulUnit = "avx512bf16";
  // A tile is 16 rows of 64 bytes: 16 × 32 bf16 operands and 16 × 16 f32
  // accumulators. 2 × 2 accumulator tiles, two A and two B tiles fill
  // the eight tile registers, so each loaded tile feeds two products.
  amxTileRows = 16;
  amxTileCols = 16;
  amxTileDepth = 32;
  amxBlockRows = 2;
  amxBlockCols = 2;
}

TargetStrategy TargetStrategy::forNVPTX(StringRef arch) {
  // The CPU fields describe what one GPU thread does: scalar code (32-bit
  // registers, no SIMD), so vector kernels degrade to one lane.
  TargetStrategy s = forCPU(128);
  s.target = "nvptx";
  s.vectorBits = 32;
  s.gpuArch = arch.str();
  // 256 threads (8 warps) per block: enough warps to hide memory latency
  // on every SM since sm_75 while 8 blocks still fit one SM, and a
  // multiple of the warp so no warp is partly idle inside a tile.
  s.gpuThreadsPerBlock = 256;
  s.gpuWarpSize = 32;
  // 48 KiB is the static shared memory every chip grants without opting in
  // (sm_90 allows up to 227 KiB dynamically; a kernel that wants it asks).
  s.gpuSharedMemoryBytes = 48 * 1024;
  // FlashAttention-2's tile on sm_80/sm_90 for d = 64: 64 query rows per
  // block and 64 keys per step, so K and V tiles take 2 × 64 × 64 × 4 B =
  // 32 KiB of the 48 KiB in f32.
  // In the fused Lie attention one thread owns one query row (R = 1): the
  // whole sequence is L threads, and more rows per thread would cut the
  // resident warps (L = 16384 is only 512 warps on 132 SMs). BQ = 64 is two
  // warps per block, so many blocks stay resident per SM. The tile holds
  // keys and values, (Fk + D) · BK · 4 B = 22.5 KiB for SE(3) features and
  // D = 64 in f32, within the 48 KiB. 16 scores per head in registers next
  // to D = 64 accumulators keep a thread under ~128 registers. None of
  // these has been tuned on hardware yet.
  s.gpuAttentionQueryRows = 64;
  s.gpuAttentionKeyTile = 64;
  s.gpuAttentionRowsPerThread = 1;
  s.gpuAttentionScoreChunk = 16;
  // Dense layers: 64 × 64 output tiles, 16 deep, 4 × 4 outputs per thread
  // (256 threads, the block size above): A and B tiles take
  // 2 · 64 · 16 · 4 B = 8 KiB in f32, and each thread does 16 FMAs per 8
  // shared loads. Not tuned on hardware yet.
  s.gpuMatmulBlockRows = 64;
  s.gpuMatmulBlockCols = 64;
  s.gpuMatmulBlockDepth = 16;
  s.gpuMatmulThreadRows = 4;
  s.gpuMatmulThreadCols = 4;
  return s;
}

DictionaryAttr TargetStrategy::toAttr(MLIRContext *context) const {
  Builder b(context);
  auto i64 = [&](unsigned v) { return b.getI64IntegerAttr(v); };
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("target", b.getStringAttr(target)),
      b.getNamedAttr("vector_bits", i64(vectorBits)),
      b.getNamedAttr("vector_registers", i64(vectorRegisters)),
      b.getNamedAttr("attention_max_query_rows", i64(attentionMaxQueryRows)),
      b.getNamedAttr("attention_key_vectors", i64(attentionKeyVectors)),
      b.getNamedAttr("matmul_task_rows", i64(matmulTaskRows)),
      b.getNamedAttr("matmul_cache_cols", i64(matmulCacheCols)),
      b.getNamedAttr("matmul_cache_depth", i64(matmulCacheDepth)),
      b.getNamedAttr("matmul_register_rows", i64(matmulRegisterRows)),
      b.getNamedAttr("matmul_register_vectors", i64(matmulRegisterVectors)),
      b.getNamedAttr("matmul_pack_transposed", i64(matmulPackTransposed)),
      b.getNamedAttr("row_task_rows", i64(rowTaskRows)),
  };
  // f32 strategies stay as they were before there was a precision choice.
  if (compute != "f32") {
    entries.push_back(b.getNamedAttr("compute", b.getStringAttr(compute)));
    entries.push_back(
        b.getNamedAttr("matmul_unit", b.getStringAttr(matmulUnit)));
    entries.push_back(b.getNamedAttr("amx_tile_rows", i64(amxTileRows)));
    entries.push_back(b.getNamedAttr("amx_tile_cols", i64(amxTileCols)));
    entries.push_back(b.getNamedAttr("amx_tile_depth", i64(amxTileDepth)));
    entries.push_back(b.getNamedAttr("amx_block_rows", i64(amxBlockRows)));
    entries.push_back(b.getNamedAttr("amx_block_cols", i64(amxBlockCols)));
  }
  // CPU strategies stay as they were before there was a GPU target.
  if (target == "nvptx") {
    entries.push_back(b.getNamedAttr("gpu_arch", b.getStringAttr(gpuArch)));
    entries.push_back(
        b.getNamedAttr("gpu_threads_per_block", i64(gpuThreadsPerBlock)));
    entries.push_back(b.getNamedAttr("gpu_warp_size", i64(gpuWarpSize)));
    entries.push_back(
        b.getNamedAttr("gpu_shared_memory_bytes", i64(gpuSharedMemoryBytes)));
    entries.push_back(
        b.getNamedAttr("gpu_attention_query_rows", i64(gpuAttentionQueryRows)));
    entries.push_back(
        b.getNamedAttr("gpu_attention_key_tile", i64(gpuAttentionKeyTile)));
    entries.push_back(b.getNamedAttr("gpu_attention_rows_per_thread",
                                     i64(gpuAttentionRowsPerThread)));
    entries.push_back(b.getNamedAttr("gpu_attention_score_chunk",
                                     i64(gpuAttentionScoreChunk)));
    entries.push_back(
        b.getNamedAttr("gpu_matmul_block_rows", i64(gpuMatmulBlockRows)));
    entries.push_back(
        b.getNamedAttr("gpu_matmul_block_cols", i64(gpuMatmulBlockCols)));
    entries.push_back(
        b.getNamedAttr("gpu_matmul_block_depth", i64(gpuMatmulBlockDepth)));
    entries.push_back(
        b.getNamedAttr("gpu_matmul_thread_rows", i64(gpuMatmulThreadRows)));
    entries.push_back(
        b.getNamedAttr("gpu_matmul_thread_cols", i64(gpuMatmulThreadCols)));
  }
  return b.getDictionaryAttr(entries);
}

TargetStrategy TargetStrategy::get(Operation *op) {
  TargetStrategy s = forCPU(128);
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  if (!module)
    return s;
  auto dict = module->getAttrOfType<DictionaryAttr>(kStrategyAttrName);
  if (!dict)
    return s;
  // Fields left out follow from the vector width, as forCPU chooses them.
  if (auto bits = dict.getAs<IntegerAttr>("vector_bits"))
    s = forCPU(static_cast<unsigned>(std::max<int64_t>(bits.getInt(), 1)));
  auto read = [&](StringRef name, unsigned &field) {
    if (auto attr = dict.getAs<IntegerAttr>(name))
      field = static_cast<unsigned>(std::max<int64_t>(attr.getInt(), 1));
  };
  if (auto target = dict.getAs<StringAttr>("target"))
    s.target = target.str();
  if (s.target == "nvptx") {
    auto arch = dict.getAs<StringAttr>("gpu_arch");
    s = forNVPTX(arch ? arch.getValue() : StringRef("sm_90"));
  }
  read("vector_bits", s.vectorBits);
  read("vector_registers", s.vectorRegisters);
  read("attention_max_query_rows", s.attentionMaxQueryRows);
  read("attention_key_vectors", s.attentionKeyVectors);
  read("matmul_task_rows", s.matmulTaskRows);
  read("matmul_cache_cols", s.matmulCacheCols);
  read("matmul_cache_depth", s.matmulCacheDepth);
  read("matmul_register_rows", s.matmulRegisterRows);
  read("matmul_register_vectors", s.matmulRegisterVectors);
  read("gpu_threads_per_block", s.gpuThreadsPerBlock);
  read("gpu_warp_size", s.gpuWarpSize);
  read("gpu_shared_memory_bytes", s.gpuSharedMemoryBytes);
  read("gpu_attention_query_rows", s.gpuAttentionQueryRows);
  read("gpu_attention_key_tile", s.gpuAttentionKeyTile);
  read("row_task_rows", s.rowTaskRows);
  read("gpu_attention_rows_per_thread", s.gpuAttentionRowsPerThread);
  read("gpu_attention_score_chunk", s.gpuAttentionScoreChunk);
  read("gpu_matmul_block_rows", s.gpuMatmulBlockRows);
  read("gpu_matmul_block_cols", s.gpuMatmulBlockCols);
  read("gpu_matmul_block_depth", s.gpuMatmulBlockDepth);
  read("gpu_matmul_thread_rows", s.gpuMatmulThreadRows);
  read("gpu_matmul_thread_cols", s.gpuMatmulThreadCols);
  if (auto compute = dict.getAs<StringAttr>("compute"))
    s.compute = compute.str();
  if (auto unit = dict.getAs<StringAttr>("matmul_unit"))
    s.matmulUnit = unit.str();
  read("amx_tile_rows", s.amxTileRows);
  read("amx_tile_cols", s.amxTileCols);
  read("amx_tile_depth", s.amxTileDepth);
  read("amx_block_rows", s.amxBlockRows);
  read("amx_block_cols", s.amxBlockCols);
  if (auto attr = dict.getAs<IntegerAttr>("matmul_pack_transposed"))
    s.matmulPackTransposed = attr.getInt() != 0;
  return s;
}
