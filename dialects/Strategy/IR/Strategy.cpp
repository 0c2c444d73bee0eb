//===- Strategy.cpp - Typed tiling strategies per op ----------------------===//
//
// The dialect's registration and verifiers, and the choices with their
// reasons. Numbers here are the only tile-size constants in the compiler.
//
//===----------------------------------------------------------------------===//

#include "dialects/Strategy/IR/Strategy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace torsor::strategy;

#include "dialects/Strategy/IR/StrategyEnums.cpp.inc"
#include "dialects/Strategy/IR/StrategyOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Strategy/IR/StrategyAttrs.cpp.inc"

void StrategyDialect::initialize() { registerAttributes(); }

void StrategyDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Strategy/IR/StrategyAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

/// Fails unless every named field is at least 1.
static LogicalResult
verifyPositive(function_ref<InFlightDiagnostic()> emitError,
               std::initializer_list<std::pair<StringRef, unsigned>> fields) {
  for (auto [name, value] : fields)
    if (value == 0)
      return emitError() << "needs " << name
                         << " ≥ 1 (a tile of zero iterations does no work)";
  return success();
}

LogicalResult
VectorAttentionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            unsigned lanes, unsigned queryRows,
                            unsigned keyTile, GradSchedule,
                            AttentionProducts products, unsigned scoreVectors,
                            unsigned queryBlock, unsigned keyBlock) {
  if (failed(verifyPositive(emitError, {{"lanes", lanes},
                                        {"query_rows", queryRows},
                                        {"key_tile", keyTile},
                                        {"score_vectors", scoreVectors}})))
    return failure();
  if (keyTile % lanes != 0)
    return emitError() << "needs key_tile (" << keyTile
                       << ") to be a multiple of lanes (" << lanes << ")";
  if (keyTile % (lanes * scoreVectors) != 0)
    return emitError() << "needs key_tile (" << keyTile
                       << ") to be a multiple of lanes × score_vectors ("
                       << lanes * scoreVectors << ")";
  // vdpbf16ps sums pairs of keys: a key tile holds whole pairs.
  if (products == AttentionProducts::BF16Dot && keyTile % 2 != 0)
    return emitError() << "needs an even key_tile for products = bf16_dot "
                          "(pairs of keys), got "
                       << keyTile;
  if (queryBlock % queryRows != 0)
    return emitError() << "needs query_block (" << queryBlock
                       << ") to be a multiple of query_rows (" << queryRows
                       << ")";
  if (keyBlock % keyTile != 0)
    return emitError() << "needs key_block (" << keyBlock
                       << ") to be a multiple of key_tile (" << keyTile << ")";
  return success();
}

LogicalResult
GPUAttentionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         unsigned threads, unsigned rowsPerThread,
                         unsigned keyTile, unsigned scoreChunk,
                         unsigned sharedMemoryBytes) {
  return verifyPositive(emitError,
                        {{"threads", threads},
                         {"rows_per_thread", rowsPerThread},
                         {"key_tile", keyTile},
                         {"score_chunk", scoreChunk},
                         {"shared_memory_bytes", sharedMemoryBytes}});
}

LogicalResult DenseAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                unsigned vectorBits, unsigned taskRows,
                                unsigned cacheCols, unsigned cacheDepth,
                                unsigned registerRows, unsigned registerVectors,
                                bool packTransposed, unsigned rowTaskRows,
                                BF16ProductsAttr bf16, bool packPanels) {
  if (failed(verifyPositive(emitError, {{"vector_bits", vectorBits},
                                        {"task_rows", taskRows},
                                        {"cache_cols", cacheCols},
                                        {"cache_depth", cacheDepth},
                                        {"register_rows", registerRows},
                                        {"register_vectors", registerVectors},
                                        {"row_task_rows", rowTaskRows}})))
    return failure();
  if (vectorBits % 32)
    return emitError() << "vector_bits must be a multiple of 32, got "
                       << vectorBits;
  // The packed right operand is read one register tile of columns at a
  // time inside each cache block of columns: a block that ends inside a
  // panel would read the next block's columns (wrong results, no error).
  unsigned widest = registerVectors * (vectorBits / 32);
  if (packPanels && cacheCols % widest)
    return emitError() << "cache_cols (" << cacheCols
                       << ") must be a multiple of the register tile's width "
                          "with pack_panels: register_vectors x vector_bits "
                          "/ 32 = "
                       << widest << " columns";
  return success();
}

LogicalResult
BF16ProductsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         MatmulUnit unit, unsigned tileRows, unsigned tileCols,
                         unsigned tileDepth, unsigned blockRows,
                         unsigned blockCols, unsigned taskRows,
                         unsigned cacheDepth) {
  if (failed(verifyPositive(emitError, {{"tile_rows", tileRows},
                                        {"tile_cols", tileCols},
                                        {"tile_depth", tileDepth},
                                        {"block_rows", blockRows},
                                        {"block_cols", blockCols},
                                        {"task_rows", taskRows},
                                        {"cache_depth", cacheDepth}})))
    return failure();
  if (taskRows % (tileRows * blockRows) || cacheDepth % tileDepth)
    return emitError() << "needs task_rows a multiple of tile_rows · "
                          "block_rows and cache_depth a multiple of "
                          "tile_depth, got "
                       << taskRows << " and " << cacheDepth;
  // An AMX tile register is 16 rows of 64 bytes: a C tile of f32 and an A
  // tile of bf16 pairs must fit one, and the block's accumulators with one
  // A tile per row and one B tile per column must fit the eight registers.
  if (tileRows > 16 || tileCols > 16 || tileDepth > 32 || tileDepth % 2)
    return emitError() << "needs tile_rows ≤ 16, tile_cols ≤ 16 and an even "
                          "tile_depth ≤ 32 (an AMX tile is 16 rows of 64 "
                          "bytes), got "
                       << tileRows << " × " << tileCols << " × " << tileDepth;
  if (blockRows * blockCols + blockRows + blockCols > 8)
    return emitError() << "needs block_rows · block_cols accumulators plus "
                          "block_rows A and block_cols B tiles within the 8 "
                          "tile registers, got "
                       << blockRows << " × " << blockCols;
  return success();
}

LogicalResult GPUDenseAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   unsigned threadsPerBlock, unsigned blockRows,
                                   unsigned blockCols, unsigned blockDepth,
                                   unsigned threadRows, unsigned threadCols) {
  if (failed(verifyPositive(emitError, {{"threads_per_block", threadsPerBlock},
                                        {"block_rows", blockRows},
                                        {"block_cols", blockCols},
                                        {"block_depth", blockDepth},
                                        {"thread_rows", threadRows},
                                        {"thread_cols", threadCols}})))
    return failure();
  if (blockRows % threadRows || blockCols % threadCols)
    return emitError() << "needs thread_rows | block_rows and thread_cols | "
                          "block_cols, got block_rows = "
                       << blockRows << ", thread_rows = " << threadRows
                       << ", block_cols = " << blockCols
                       << ", thread_cols = " << threadCols;
  return success();
}

//===----------------------------------------------------------------------===//
// Choices
//===----------------------------------------------------------------------===//

Target Target::cpu(unsigned vectorBits) {
  Target t;
  t.vectorBits = std::max(vectorBits, 128u);
  // AVX-512 doubles the register file as well as its width.
  t.vectorRegisters = t.vectorBits >= 512 ? 32 : 16;
  return t;
}

Target Target::gpuThread() {
  // What one GPU thread does is scalar code (32-bit registers, no SIMD):
  // vector kernels (the flash backward) degrade to one lane. The register
  // budget is the CPU's portable one, which keeps a thread's accumulators
  // within the ~128 registers that leave several warps resident.
  Target t = cpu(128);
  t.vectorBits = 32;
  t.isGPUThread = true;
  return t;
}

VectorAttentionAttr
torsor::strategy::selectVectorAttention(MLIRContext *context,
                                        const Target &target, unsigned bits,
                                        int64_t valueDim, bool bf16) {
  unsigned lanes = target.lanes(bits);
  // Rows of one micro-kernel share every key feature and value load; the
  // forward keeps R × ceil(D / lanes) accumulators within half the vector
  // registers (the other half holds key features and scores), and at most
  // 4 rows: beyond that the query features alone fill the registers (the
  // CPU backward's rows: selectVectorAttentionGrad).
  constexpr int64_t maxRows = 4;
  int64_t perRow = (valueDim + lanes - 1) / lanes;
  int64_t budget = target.vectorRegisters / 2;
  int64_t rows =
      perRow > 0 ? std::clamp<int64_t>(budget / perRow, 1, maxRows) : maxRows;
  // Four vectors of keys per online-softmax step: the running max and the
  // rescale are paid once per tile, so wider tiles amortise the horizontal
  // max.
  constexpr unsigned keyVectors = 4;
  // The backward: SIMD lanes take one pass over key blocks, which
  // evaluates each pair's form once and keeps dq in one partial per key
  // chunk (eight chunks: enough for a CPU's threads). A GPU thread's
  // scalar code takes two passes instead, a thread per query row for dq
  // and per key for dk and dv: eight chunks would be eight threads.
  GradSchedule backward =
      target.isGPUThread ? GradSchedule::TwoPass : GradSchedule::OnePass;
  // --compute=bf16: P·V on vdpbf16ps, two keys per f32 lane, where the
  // CPU has AVX512-BF16 on 512-bit vectors (every AMX CPU has it too).
  // Not on AMX tiles: a micro-kernel's R ≤ 4 query rows would fill 4 of a
  // tile's 16 rows, and its accumulators would go through memory at every
  // key tile (the online softmax rescales them), where vdpbf16ps keeps
  // them in registers. f64 and CPUs without AVX512-BF16 keep f32 FMAs.
  AttentionProducts products = AttentionProducts::F32;
  if (bf16 && bits == 32 && target.hasAVX512BF16 && target.vectorBits >= 512)
    products = AttentionProducts::BF16Dot;
  // One query row per micro-kernel (AVX2 at D = 64: its 8 accumulators
  // take half the 16 registers) leaves the forward's score loop one
  // dependency chain per key vector (the pair form's division and
  // polynomials, then the exps), longer than the out-of-order window
  // overlaps: two key vectors per operation interleave two chains (30%
  // fewer cycles per key in llvm-mca's Zen 4 model for SE(2) at 4 heads;
  // 0.75-0.85x the CPU time on an AVX2 Zen 4). R > 1 rows already give R
  // chains; a GPU thread has no such window to fill.
  unsigned scoreVectors = rows == 1 && !target.isGPUThread ? 2 : 1;
  return VectorAttentionAttr::get(context, lanes, static_cast<unsigned>(rows),
                                  keyVectors * lanes, backward, products,
                                  scoreVectors, /*queryBlock=*/0,
                                  /*keyBlock=*/0);
}

VectorAttentionAttr
torsor::strategy::withForwardCacheBlocks(VectorAttentionAttr tiles,
                                         const Target &target, unsigned bits,
                                         int64_t valueDim) {
  if (target.isGPUThread || valueDim <= 0)
    return tiles;
  // Blocks of keys whose values and features (about 16 per key for the
  // built-in groups) take 256 KiB: a quarter of the 1 MiB L2 of an AVX2
  // Zen 4 or a Skylake-SP core (half of Zen 3's 512 KiB), so that the
  // probabilities, the state and the next block's first lines stay in it
  // too. 16 rows per tiled op read a block from memory once for 16 rows
  // (in 16 / query_rows micro-kernels) and keep L / 16 parallel tasks.
  constexpr int64_t blockBytes = 256 * 1024, keyFeatures = 16, rows = 16;
  int64_t perKey = (valueDim + keyFeatures) * (bits / 8);
  int64_t keyTile = tiles.getKeyTile();
  int64_t keyBlock =
      std::max<int64_t>(1, blockBytes / (perKey * keyTile)) * keyTile;
  int64_t queryRows = tiles.getQueryRows();
  int64_t queryBlock = std::max<int64_t>(rows / queryRows, 1) * queryRows;
  return VectorAttentionAttr::get(
      tiles.getContext(), tiles.getLanes(), tiles.getQueryRows(),
      tiles.getKeyTile(), tiles.getBackward(), tiles.getProducts(),
      tiles.getScoreVectors(), static_cast<unsigned>(queryBlock),
      static_cast<unsigned>(keyBlock));
}

VectorAttentionAttr
torsor::strategy::selectVectorAttentionGrad(MLIRContext *context,
                                            const Target &target, unsigned bits,
                                            int64_t valueDim) {
  VectorAttentionAttr forward =
      selectVectorAttention(context, target, bits, valueDim);
  // A GPU thread's two passes keep the forward's rule.
  if (target.isGPUThread)
    return forward;
  // The one-pass backward holds no value accumulators in registers across
  // its key loop: a key vector's dv lives in the block's scratch, loaded
  // and stored once per row block, and dP = dO·v takes R · heads chains
  // that live only through the dP loop; one row's pair form is live at a
  // time. So its rows are not bound by D / lanes as the forward's are,
  // and with fewer rows every row pays dv's loads and stores and the
  // value loads alone. AVX2 at D = 64, where the forward takes 1 row,
  // llvm-mca (znver4) cycles per row and key vector, 1 → 4 rows: SO(3)
  // 422 → 341 (1 head) and 436 → 339 (4 heads), SE(3) 556 → 504 and
  // 575 → 464, SE(2) 361 → 296 and 385 → 291; SE(3) 1 head at 2 rows
  // 462. When the rows were unrolled, the SE(3) backward kernel's LLVM IR
  // grew 2.9k → 10k lines at 4 rows, and se3_pose_attention --grad
  // compiled in 3.9 → 7.0 s; 2 rows measured the same backward/forward
  // ratios as 4 in one quiet run (2.5–2.9 for SO(3), SE(3), SE(2) at 1
  // and 4 heads) at 5.1 s, so the backward takes at least 2. The rows are
  // now a rolled loop (the kernel's code no longer grows with them); 4
  // rows on AVX2 have not been measured since. AVX-512 at D = 64 takes
  // the forward's 4.
  constexpr unsigned backwardRows = 2;
  unsigned rows = std::max(forward.getQueryRows(), backwardRows);
  // The backward ignores score_vectors (the forward's score loop).
  return VectorAttentionAttr::get(context, forward.getLanes(), rows,
                                  forward.getKeyTile(), forward.getBackward(),
                                  AttentionProducts::F32,
                                  /*scoreVectors=*/1, /*queryBlock=*/0,
                                  /*keyBlock=*/0);
}

GPUAttentionAttr torsor::strategy::selectGPUAttention(MLIRContext *context) {
  // In the fused Lie attention one thread owns one query row (R = 1): the
  // whole sequence is L threads, and more rows per thread would cut the
  // resident warps (L = 16384 is only 512 warps on 132 SMs). BQ = 64 rows
  // is two warps per block, so many blocks stay resident per SM.
  // FlashAttention-2's key tile on sm_80/sm_90 for d = 64 is 64 keys per
  // step. The tile holds keys and values, (Fk + D) · BK · 4 B = 22.5 KiB
  // for SE(3) features and D = 64 in f32, within the 48 KiB of static
  // shared memory every chip grants without opting in (sm_90 allows up to
  // 227 KiB dynamically; a kernel that wants it asks). 16 scores per head
  // in registers next to D = 64 accumulators keep a thread under ~128
  // registers. None of these has been tuned on hardware yet.
  constexpr unsigned queryRows = 64, rowsPerThread = 1;
  return GPUAttentionAttr::get(context, queryRows / rowsPerThread,
                               rowsPerThread, /*keyTile=*/64,
                               /*scoreChunk=*/16,
                               /*sharedMemoryBytes=*/48 * 1024);
}

MatmulUnit torsor::strategy::selectMatmulUnit(const Target &target) {
  // AMX's tile unit does a 16 × 16 × 32 bf16 product per instruction, 16
  // times the work of a 512-bit FMA; vdpbf16ps does twice an FMA's. The
  // fallback keeps the bf16 semantics (rounded operands, f32 sums) on
  // every CPU, so results agree across paths up to summation order.
  if (target.hasAMX)
    return MatmulUnit::AMX;
  if (target.hasAVX512BF16 && target.vectorBits >= 512)
    return MatmulUnit::AVX512BF16;
  return MatmulUnit::FMA;
}

DenseAttr torsor::strategy::selectDense(MLIRContext *context,
                                        const Target &target, bool bf16) {
  // Register tile: mr × 2 accumulators take half the register file; the
  // rest holds the right operand's row vectors and the broadcast
  // left-operand element (8 × 2 of 32 with AVX-512, 4 × 2 of 16 below it).
  constexpr unsigned registerVectors = 2;
  unsigned registerRows = target.vectorRegisters / 2 / registerVectors;
  // A task of 32 rows keeps L = 64 on two threads; 256 × 256 f32 blocks of
  // the right operand (256 KiB) fit the L2 of every x86 core of the last
  // decade. The right operand is packed into panels of nr columns
  // (pack_panels), so a register tile's k loop streams one contiguous
  // panel: read in place, its rows are N floats apart, a 4 KiB stride at
  // N = 1024 that defeats the L1's sets and the prefetcher, and the
  // micro-kernel ran at 0.7 of the packed one (1024³, 2 threads). Params
  // are packed once per load (torsor-hoist-packed-params). (Packing the
  // left operand's rows per task as well was slower: the copy cost more
  // than the strided broadcasts.) 16 rows of d = 256 f32 are 16 KiB: with the
  // row statistics they stay in L1 between the passes of a norm or softmax.
  // bf16 products: a tile is 16 rows of 64 bytes, 16 × 32 bf16 operands
  // and 16 × 16 f32 accumulators. 2 × 2 accumulator tiles, two A and two
  // B tiles fill the eight tile registers, so each loaded tile feeds two
  // products. A task of 128 rows with depth blocks of 256: its A block
  // (128 × 256 bf16, 64 KiB) stays in L2 and one block column of B (32
  // columns × 256, 16 KiB) in L1 while the task's four row blocks read
  // it; each byte of B streamed from L3 feeds 128 multiply-adds.
  BF16ProductsAttr products;
  if (bf16)
    products = BF16ProductsAttr::get(context, selectMatmulUnit(target),
                                     /*tileRows=*/16, /*tileCols=*/16,
                                     /*tileDepth=*/32, /*blockRows=*/2,
                                     /*blockCols=*/2, /*taskRows=*/128,
                                     /*cacheDepth=*/256);
  return DenseAttr::get(context, target.vectorBits, /*taskRows=*/32,
                        /*cacheCols=*/256, /*cacheDepth=*/256, registerRows,
                        registerVectors, /*packTransposed=*/true,
                        /*rowTaskRows=*/16, products, /*packPanels=*/true);
}

GPUDenseAttr torsor::strategy::selectGPUDense(MLIRContext *context) {
  // 256 threads (8 warps) per block: enough warps to hide memory latency
  // on every SM since sm_75 while 8 blocks still fit one SM, and a
  // multiple of the warp so no warp is partly idle inside a tile.
  // Dense layers: 64 × 64 output tiles, 16 deep, 4 × 4 outputs per thread
  // (256 threads): A and B tiles take 2 · 64 · 16 · 4 B = 8 KiB in f32, and
  // each thread does 16 FMAs per 8 shared loads. Not tuned on hardware yet.
  return GPUDenseAttr::get(context, /*threadsPerBlock=*/256, /*blockRows=*/64,
                           /*blockCols=*/64, /*blockDepth=*/16,
                           /*threadRows=*/4, /*threadCols=*/4);
}

//===----------------------------------------------------------------------===//
// Lookup
//===----------------------------------------------------------------------===//

VectorAttentionAttr torsor::strategy::vectorAttentionOf(Operation *op,
                                                        unsigned bits,
                                                        int64_t valueDim) {
  if (auto stamped = stampedAbove<VectorAttentionAttr>(op))
    return stamped;
  return selectVectorAttention(op->getContext(), Target::cpu(128), bits,
                               valueDim);
}

GPUAttentionAttr torsor::strategy::gpuAttentionOf(Operation *op) {
  if (auto stamped = stampedAbove<GPUAttentionAttr>(op))
    return stamped;
  return selectGPUAttention(op->getContext());
}

DenseAttr torsor::strategy::denseOf(Operation *op) {
  if (auto stamped = stampedAbove<DenseAttr>(op))
    return stamped;
  return selectDense(op->getContext(), Target::cpu(128));
}

GPUDenseAttr torsor::strategy::gpuDenseOf(Operation *op) {
  if (auto stamped = stampedAbove<GPUDenseAttr>(op))
    return stamped;
  return selectGPUDense(op->getContext());
}
