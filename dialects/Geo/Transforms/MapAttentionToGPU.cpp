//===- MapAttentionToGPU.cpp - Fused Lie attention as a GPU kernel --------===//
//
// geo-map-attention-to-gpu: the GPU form of the fused attention. Where the
// CPU tiles geo.flash_lie_attention into query tiles on the thread pool and
// lanes of vectors (geo-tile-attention, geo-decompose-attention), the GPU
// makes the query tiles blocks and the query rows threads:
//
//   block (x, y): rows x·BQ … x·BQ + BQ − 1 of batch element y;
//   thread t:     rows x·BQ + t + i·T (i < R), with per row and head the
//                 running max m, running sum l and the D accumulators in
//                 registers;
//   per key tile of BK keys (barrier, cooperative copy of its key features
//   and values into shared memory, barrier), per step of S keys:
//     pair block norms, scores, online softmax and P·V from
//       AttentionKernel.h on scalars (one key per thread), the builders
//       the CPU kernel runs on vectors,
//     s = Σ_b c_hb N_b,  m' = max(m, max s),  α = e^{m − m'},
//     p = e^{s − m'},  l = α l + Σ p,  acc = α acc + Σ p v;
//   out = acc / l, and lse = m + log l when the op has an lse result
//   (the flash backward's statistics).
//
// The same builder also emits the block/thread structure as host loops
// (`cpu-emulation`): the per-thread code is identical, only the barriers
// become loop boundaries and the registers that live across them a stack
// array. Launch, shared tile, barriers and the host loops are the GPU
// kernel builder's (dialects/Support/GPUKernelBuilder.h), shared with
// torsor-map-dense-to-gpu. That form runs through the CPU pipeline, so the
// kernel's math, tiling and masks are tested against -O0 without a GPU.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/AttentionKernel.h"
#include "dialects/Geo/Transforms/KernelMath.h"
#include "dialects/Geo/Transforms/Passes.h"
#include "dialects/Support/GPUKernelBuilder.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace torsor::geo {
#define GEN_PASS_DEF_GEOMAPATTENTIONTOGPU
#include "dialects/Geo/Transforms/Passes.h.inc"
} // namespace torsor::geo

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using torsor::lie::ScalarBuilder;
using torsor::lie::Scalars;

namespace {

/// Values one block computes once: where its rows and keys are.
struct BlockContext {
  SmallVector<Value> batch; // indices of the batch element
  Value firstRow;           // x · BQ
  KeyRange keys;            // unmasked whole tiles, then masked ones
};

/// Values one thread computes once per phase (recomputing them is cheaper
/// than keeping them in registers across a barrier).
struct ThreadContext {
  SmallVector<Value> row, inside, last; // [r]: row, row < Lq, last key seen
  SmallVector<Scalars> query;           // [r][feature]
};

/// The kernel's tiles: the op's #strategy.gpu_attention, each field
/// overridable by a pass option.
struct KernelTiles {
  int64_t threads, rowsPerThread, keyTile, chunk, sharedBytes;
};

/// The GPU schedule of one untiled flash_lie_attention (AttentionKernel.h
/// builds the math): blocks of query rows, one thread per row, key tiles
/// in shared memory.
class GPUSchedule {
public:
  GPUSchedule(FlashLieAttentionOp op, const KernelTiles &tiles)
      : op(op), coefs(ScoreCoefficients::of(op)),
        elt(cast<FloatType>(
            cast<RankedTensorType>(op.getValues().getType()).getElementType())),
        pairs(op.getGroup().getModel(), op.getGroup(), elt,
              op->getParentOfType<ModuleOp>(), op.getLoc()) {
    auto vType = cast<RankedTensorType>(op.getValues().getType());
    rank = vType.getRank();
    heads = op.getHeads();
    dim = vType.getDimSize(rank - 1);
    queryFeatures =
        cast<RankedTensorType>(op.getQueries().getType()).getDimSize(rank - 1);
    keyFeatures =
        cast<RankedTensorType>(op.getKeys().getType()).getDimSize(rank - 2);
    threads = tiles.threads;
    rowsPerThread = tiles.rowsPerThread;
    keyTile = tiles.keyTile;
    chunk = tiles.chunk;
    sharedBytes = tiles.sharedBytes;
    // One scalar accumulator per value column: chunk d is column d.
    columns = splitValueColumns(heads, dim, /*width=*/0);
    // 16-byte loads of value rows from shared memory where rows allow.
    int64_t perLoad = 16 / (elt.getWidth() / 8);
    valueLoad = dim % perLoad == 0 ? perLoad : 1;
  }

  /// Checks the strategy fits this op (shared memory, divisibility).
  LogicalResult verifyStrategy();
  /// Builds the kernel before `op`; returns the output and (when the op
  /// has one) the lse tensor.
  std::pair<Value, Value> build(ImplicitLocOpBuilder &b, bool emulate);
  /// The pair-form functions the kernel outlined.
  ArrayRef<func::FuncOp> getOutlined() const { return pairs.getOutlined(); }

private:
  /// The kernel as one gpu.launch of the grid (gridX, gridY).
  void buildLaunch(ImplicitLocOpBuilder &b, Value gridX, Value gridY);
  /// The same per-thread code with blocks and threads as host loops.
  void buildEmulated(ImplicitLocOpBuilder &b, Value gridX, Value gridY);
  /// Elements of the shared tile: values [BK][D], then features [Fk][BK].
  int64_t tileElements() const { return keyTile * (dim + keyFeatures); }
  int64_t stateSize() const { return rowsPerThread * (2 * heads + dim); }
  Value idx(ImplicitLocOpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, v);
  }
  SoftmaxState unpack(ValueRange values) const {
    size_t rh = rowsPerThread * heads;
    return SoftmaxState::unpack(values, rh, rh);
  }
  SoftmaxState initialState(ImplicitLocOpBuilder &b) {
    ScalarBuilder sm(b, elt);
    return SoftmaxState::initial(sm, sm, rowsPerThread, heads, columns,
                                 /*withMax=*/true);
  }
  /// Row r's accumulators in `acc`.
  MutableArrayRef<Value> rowOf(SmallVectorImpl<Value> &acc, int64_t r) const {
    return MutableArrayRef<Value>(acc).slice(r * dim, dim);
  }

  BlockContext blockContext(ImplicitLocOpBuilder &b, Value blockX,
                            Value blockY);
  ThreadContext threadContext(ImplicitLocOpBuilder &b, const BlockContext &bc,
                              Value tid);
  /// The block's cooperative copy of key tile `first` into `tile`.
  void stage(ImplicitLocOpBuilder &b, const BlockContext &bc, Value tid,
             Value first, Value tile, bool masked);
  /// One thread's pass over key tile `first` (in `tile`).
  SoftmaxState compute(ImplicitLocOpBuilder &b, const ThreadContext &tc,
                       Value first, Value tile, const SoftmaxState &in,
                       bool masked);
  /// One step of S keys at `first + offset`.
  SoftmaxState step(ImplicitLocOpBuilder &b, const ThreadContext &tc,
                    Value first, Value offset, Value tile,
                    const SoftmaxState &in, bool masked);
  /// out = acc / l (and lse = m + log l) for the thread's rows inside the
  /// sequence.
  void finish(ImplicitLocOpBuilder &b, const BlockContext &bc,
              const ThreadContext &tc, const SoftmaxState &state);

  FlashLieAttentionOp op;
  ScoreCoefficients coefs;
  FloatType elt;
  PairFormEvaluator pairs;
  int64_t rank, heads, dim, queryFeatures, keyFeatures;
  int64_t threads, rowsPerThread, keyTile, chunk, sharedBytes, valueLoad;
  SmallVector<ValueChunk> columns;
  // Host values built in build().
  Value queries, keys, values, out, lse, queryLen, keyLen, offset;
  SmallVector<Value> batchExtents;
  /// Where the query and key offsets come from: a host value, or the
  /// buffer of a rank-0 tensor to load inside the kernel.
  struct OffsetSource {
    Value host, buffer;
  };
  OffsetSource offsetSources[2];
  /// The offset of `source` as an index inside the kernel (null: none).
  Value kernelOffset(ImplicitLocOpBuilder &b, const OffsetSource &source);
};

LogicalResult GPUSchedule::verifyStrategy() {
  if (threads < 1 || rowsPerThread < 1 || chunk < 1 || keyTile % chunk != 0)
    return op.emitOpError() << "GPU attention strategy needs T, R, S ≥ 1 and "
                               "S dividing BK, got T = "
                            << threads << ", R = " << rowsPerThread
                            << ", BK = " << keyTile << ", S = " << chunk;
  int64_t bytes = tileElements() * (elt.getWidth() / 8);
  if (bytes > sharedBytes)
    return op.emitOpError() << "GPU attention key tile needs " << bytes
                            << " bytes of shared memory (BK = " << keyTile
                            << " keys of " << keyFeatures << " features and "
                            << dim << " values), over the budget of "
                            << sharedBytes << "; use a smaller key tile";
  return success();
}

Value GPUSchedule::kernelOffset(ImplicitLocOpBuilder &b,
                                const OffsetSource &source) {
  if (!source.buffer)
    return source.host;
  Value scalar = memref::LoadOp::create(b, source.buffer, ValueRange{});
  return arith::IndexCastOp::create(b, b.getIndexType(), scalar);
}

BlockContext GPUSchedule::blockContext(ImplicitLocOpBuilder &b, Value blockX,
                                       Value blockY) {
  // The key position of query row 0, inside the kernel (threadContext,
  // built after this in the same region, uses it too).
  offset = buildKeyPosition(b, kernelOffset(b, offsetSources[0]),
                            kernelOffset(b, offsetSources[1]));
  BlockContext bc;
  bc.batch = buildDelinearized(b, blockY, batchExtents);
  int64_t blockRows = threads * rowsPerThread;
  bc.firstRow = arith::MulIOp::create(b, blockX, idx(b, blockRows));
  bc.keys =
      buildKeyRange(b, keyLen, arith::AddIOp::create(b, offset, bc.firstRow),
                    blockRows, keyTile, op.getCausal(),
                    /*cross=*/static_cast<bool>(op.getKeyOffset()));
  return bc;
}

ThreadContext GPUSchedule::threadContext(ImplicitLocOpBuilder &b,
                                         const BlockContext &bc, Value tid) {
  ThreadContext tc;
  Value lastRow = arith::SubIOp::create(b, queryLen, idx(b, 1));
  for (int64_t r = 0; r < rowsPerThread; ++r) {
    Value row = arith::AddIOp::create(
        b, bc.firstRow, arith::AddIOp::create(b, tid, idx(b, r * threads)));
    tc.row.push_back(row);
    tc.inside.push_back(
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, queryLen));
    tc.last.push_back(arith::AddIOp::create(b, offset, row));
    // Rows past the end compute on the last row and are not written.
    Value at = arith::MinUIOp::create(b, row, lastRow);
    Scalars features;
    for (int64_t f = 0; f < queryFeatures; ++f)
      features.push_back(memref::LoadOp::create(
          b, queries, withBatch(bc.batch, {at, idx(b, f)})));
    tc.query.push_back(features);
  }
  return tc;
}

void GPUSchedule::stage(ImplicitLocOpBuilder &b, const BlockContext &bc,
                        Value tid, Value first, Value tile, bool masked) {
  // Consecutive threads copy consecutive addresses of both the source (keys
  // are feature-major, values row-major) and the tile: coalesced loads,
  // conflict-free stores. Keys past the end (masked tiles only) copy the
  // last key: their probability is 0.
  Value lastKey = arith::SubIOp::create(b, keyLen, idx(b, 1));
  Value step = idx(b, threads);
  auto copy = [&](int64_t count, int64_t inner, bool featureMajor) {
    GPUKernelBuilder::buildStagingLoop(
        b, tid, idx(b, count), step, [&](ImplicitLocOpBuilder &lb, Value i) {
          Value outer = arith::DivUIOp::create(lb, i, idx(lb, inner));
          Value in = arith::RemUIOp::create(lb, i, idx(lb, inner));
          // feature-major: (feature, key); else (key, column).
          Value key =
              arith::AddIOp::create(lb, first, featureMajor ? in : outer);
          if (masked)
            key = arith::MinUIOp::create(lb, key, lastKey);
          SmallVector<Value> at = featureMajor ? SmallVector<Value>{outer, key}
                                               : SmallVector<Value>{key, in};
          Value x = memref::LoadOp::create(lb, featureMajor ? keys : values,
                                           withBatch(bc.batch, at));
          Value to = featureMajor
                         ? arith::AddIOp::create(lb, i, idx(lb, keyTile * dim))
                         : i;
          memref::StoreOp::create(lb, x, tile, ValueRange{to});
        });
  };
  copy(keyTile * dim, dim, /*featureMajor=*/false);
  copy(keyFeatures * keyTile, keyTile, /*featureMajor=*/true);
}

SoftmaxState GPUSchedule::step(ImplicitLocOpBuilder &b, const ThreadContext &tc,
                               Value first, Value offsetInTile, Value tile,
                               const SoftmaxState &in, bool masked) {
  ScalarBuilder sm(b, elt);
  // Scores [r][h][j] and, masked, validity [r][j].
  SmallVector<Value> scores(rowsPerThread * heads * chunk);
  SmallVector<Value> valid(masked ? rowsPerThread * chunk : 0);
  for (int64_t j = 0; j < chunk; ++j) {
    Value local = arith::AddIOp::create(b, offsetInTile, idx(b, j));
    Scalars key;
    for (int64_t f = 0; f < keyFeatures; ++f) {
      Value at =
          arith::AddIOp::create(b, local, idx(b, keyTile * dim + f * keyTile));
      key.push_back(memref::LoadOp::create(b, tile, ValueRange{at}));
    }
    Value keyIdx = arith::AddIOp::create(b, first, local);
    for (int64_t r = 0; r < rowsPerThread; ++r) {
      if (masked)
        valid[r * chunk + j] =
            buildKeyMask(b, /*lanes=*/0, keyIdx, keyLen,
                         op.getCausal() ? tc.last[r] : Value());
      // The group model's pairwise form, one pair per thread.
      SmallVector<Value> s =
          coefs.buildScores(sm, pairs.evaluate(sm, tc.query[r], key).norms);
      for (int64_t h = 0; h < heads; ++h)
        scores[(r * heads + h) * chunk + j] = s[h];
    }
  }

  // Online softmax: one max, one rescale per S keys and head.
  SoftmaxState out = in;
  SmallVector<Value> probs(scores.size());
  for (int64_t r = 0; r < rowsPerThread; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      size_t rh = r * heads + h, base = rh * chunk;
      ArrayRef<Value> masks;
      if (masked)
        masks = ArrayRef<Value>(valid).slice(r * chunk, chunk);
      SoftmaxStep next =
          buildSoftmaxStep(sm, sm, in.max[rh], in.sum[rh],
                           ArrayRef<Value>(scores).slice(base, chunk), masks);
      out.max[rh] = next.max;
      out.sum[rh] = next.sum;
      llvm::copy(next.probs, probs.begin() + base);
      buildRescale(b, elt, columns, rowOf(out.acc, r), h, next.alpha);
    }

  // P·V: each value of the tile loaded once (16 bytes at a time), into
  // every row's accumulator.
  VectorType loadType = VectorType::get({valueLoad}, elt);
  for (int64_t j = 0; j < chunk; ++j) {
    Value local = arith::AddIOp::create(b, offsetInTile, idx(b, j));
    Value rowStart = arith::MulIOp::create(b, local, idx(b, dim));
    SmallVector<Value> v;
    for (int64_t d0 = 0; d0 < dim; d0 += valueLoad) {
      Value at = arith::AddIOp::create(b, rowStart, idx(b, d0));
      if (valueLoad == 1) {
        v.push_back(memref::LoadOp::create(b, tile, ValueRange{at}));
        continue;
      }
      auto load = vector::LoadOp::create(b, loadType, tile, ValueRange{at});
      load.setAlignment(16);
      for (int64_t e = 0; e < valueLoad; ++e)
        v.push_back(vector::ExtractOp::create(b, load, e));
    }
    for (int64_t r = 0; r < rowsPerThread; ++r)
      buildPVUpdate(
          b, elt, columns, rowOf(out.acc, r),
          [&](int64_t h) { return probs[(r * heads + h) * chunk + j]; }, v);
  }
  return out;
}

SoftmaxState GPUSchedule::compute(ImplicitLocOpBuilder &b,
                                  const ThreadContext &tc, Value first,
                                  Value tile, const SoftmaxState &in,
                                  bool masked) {
  auto loop = scf::ForOp::create(
      b, idx(b, 0), idx(b, keyTile), idx(b, chunk), in.pack(),
      [&](OpBuilder &nested, Location loc, Value offsetInTile,
          ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        SoftmaxState next =
            step(lb, tc, first, offsetInTile, tile, unpack(args), masked);
        scf::YieldOp::create(lb, next.pack());
      });
  return unpack(loop.getResults());
}

void GPUSchedule::finish(ImplicitLocOpBuilder &b, const BlockContext &bc,
                         const ThreadContext &tc, const SoftmaxState &state) {
  for (int64_t r = 0; r < rowsPerThread; ++r) {
    auto inside = scf::IfOp::create(b, tc.inside[r], /*withElse=*/false);
    ImplicitLocOpBuilder ib(b.getLoc(), inside.getThenBodyBuilder());
    ScalarBuilder sm(ib, elt);
    ArrayRef<Value> sums = ArrayRef<Value>(state.sum).slice(r * heads, heads);
    if (lse)
      for (int64_t h = 0; h < heads; ++h)
        memref::StoreOp::create(
            ib, buildLogSumExp(sm, state.max[r * heads + h], sums[h]), lse,
            withBatch(bc.batch, {tc.row[r], idx(ib, h)}));
    SmallVector<Value> result = buildNormalized(
        ib, elt, columns, ArrayRef<Value>(state.acc).slice(r * dim, dim), sums);
    for (auto [d, value] : llvm::enumerate(result))
      memref::StoreOp::create(ib, value, out,
                              withBatch(bc.batch, {tc.row[r], idx(ib, d)}));
  }
}

void GPUSchedule::buildLaunch(ImplicitLocOpBuilder &gb, Value gridX,
                              Value gridY) {
  GPUKernelBuilder kernel(op, /*emulate=*/false);
  memref::GlobalOp global = kernel.declareSharedTile(
      gb.getLoc(), "__torsor_attention_tile", tileElements(), elt);
  Value one = idx(gb, 1);
  kernel.buildLaunch(
      gb, gridX, gridY, one, idx(gb, threads), one, {global},
      [&](ImplicitLocOpBuilder &kb, const KernelIds &ids, ValueRange tiles) {
        Value tile = tiles[0];
        Value tid = ids.thread;
        BlockContext bc = blockContext(kb, ids.blockX, ids.blockY);
        ThreadContext tc = threadContext(kb, bc, tid);
        auto keyLoop = [&](Value lb, Value ub, const SoftmaxState &state,
                           bool masked) {
          auto loop = scf::ForOp::create(
              kb, lb, ub, idx(kb, keyTile), state.pack(),
              [&](OpBuilder &nested, Location loc, Value first,
                  ValueRange args) {
                ImplicitLocOpBuilder ib(loc, nested);
                // The previous tile is consumed before it is overwritten.
                kernel.barrier(ib);
                stage(ib, bc, tid, first, tile, masked);
                kernel.barrier(ib);
                SoftmaxState next =
                    compute(ib, tc, first, tile, unpack(args), masked);
                scf::YieldOp::create(ib, next.pack());
              });
          return unpack(loop.getResults());
        };
        SoftmaxState state = keyLoop(idx(kb, 0), bc.keys.unmaskedEnd,
                                     initialState(kb), /*masked=*/false);
        state =
            keyLoop(bc.keys.unmaskedEnd, bc.keys.end, state, /*masked=*/true);
        finish(kb, bc, tc, state);
      });
}

void GPUSchedule::buildEmulated(ImplicitLocOpBuilder &gb, Value gridX,
                                Value gridY) {
  GPUKernelBuilder kernel(op, /*emulate=*/true);
  Value zero = idx(gb, 0);
  // Host loops: blocks in parallel, threads one phase at a time.
  Value stepX = idx(gb, 1), stepY = idx(gb, 1);
  kernel.buildHostParallel(
      gb, ValueRange{zero, zero}, ValueRange{gridX, gridY},
      ValueRange{stepX, stepY}, [&](ImplicitLocOpBuilder &pb, ValueRange ivs) {
        Value tile =
            memref::AllocaOp::create(pb, MemRefType::get({tileElements()}, elt),
                                     pb.getI64IntegerAttr(16));
        int64_t size = stateSize();
        Value spill = memref::AllocaOp::create(
            pb, MemRefType::get({threads * size}, elt));
        BlockContext bc = blockContext(pb, ivs[0], ivs[1]);
        auto at = [&](ImplicitLocOpBuilder &ib, Value tid, int64_t i) {
          return arith::AddIOp::create(
              ib, arith::MulIOp::create(ib, tid, idx(ib, size)), idx(ib, i));
        };
        auto save = [&](ImplicitLocOpBuilder &ib, Value tid,
                        const SoftmaxState &s) {
          for (auto [i, v] : llvm::enumerate(s.pack()))
            memref::StoreOp::create(ib, v, spill, ValueRange{at(ib, tid, i)});
        };
        auto restore = [&](ImplicitLocOpBuilder &ib, Value tid) {
          SmallVector<Value> all;
          for (int64_t i = 0; i < size; ++i)
            all.push_back(
                memref::LoadOp::create(ib, spill, ValueRange{at(ib, tid, i)}));
          return unpack(all);
        };
        kernel.buildThreadLoop(pb, threads,
                               [&](ImplicitLocOpBuilder &ib, Value tid) {
                                 save(ib, tid, initialState(ib));
                               });
        auto keyLoop = [&](Value lb, Value ub, bool masked) {
          scf::ForOp::create(
              pb, lb, ub, idx(pb, keyTile), ValueRange{},
              [&](OpBuilder &kb, Location kloc, Value first, ValueRange) {
                ImplicitLocOpBuilder ib(kloc, kb);
                // Barrier, stage, barrier, compute: one loop per phase.
                kernel.buildThreadLoop(
                    ib, threads, [&](ImplicitLocOpBuilder &tb, Value tid) {
                      stage(tb, bc, tid, first, tile, masked);
                    });
                kernel.buildThreadLoop(
                    ib, threads, [&](ImplicitLocOpBuilder &tb, Value tid) {
                      ThreadContext tc = threadContext(tb, bc, tid);
                      SoftmaxState s = compute(tb, tc, first, tile,
                                               restore(tb, tid), masked);
                      save(tb, tid, s);
                    });
                scf::YieldOp::create(ib);
              });
        };
        keyLoop(idx(pb, 0), bc.keys.unmaskedEnd, /*masked=*/false);
        keyLoop(bc.keys.unmaskedEnd, bc.keys.end, /*masked=*/true);
        kernel.buildThreadLoop(pb, threads,
                               [&](ImplicitLocOpBuilder &tb, Value tid) {
                                 ThreadContext tc = threadContext(tb, bc, tid);
                                 finish(tb, bc, tc, restore(tb, tid));
                               });
      });
}

std::pair<Value, Value> GPUSchedule::build(ImplicitLocOpBuilder &b,
                                           bool emulate) {
  MLIRContext *ctx = b.getContext();
  // Buffers of the operands, any layout (no copies for strided slices).
  auto bufferOf = [&](Value tensor) -> Value {
    auto type = cast<RankedTensorType>(tensor.getType());
    auto layout = StridedLayoutAttr::get(
        ctx, ShapedType::kDynamic,
        SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic));
    auto memrefType =
        MemRefType::get(type.getShape(), type.getElementType(), layout);
    return bufferization::ToBufferOp::create(b, memrefType, tensor,
                                             /*read_only=*/true);
  };
  queries = bufferOf(op.getQueries());
  keys = bufferOf(op.getKeys());
  values = bufferOf(op.getValues());
  // The offsets: host index values, or (a model's i64 scalar inputs, which
  // on the GPU are device memory) reloaded inside the kernel from their
  // buffers, so that the host reads no device data.
  Value offsetValues[2] = {op.getQueryOffset(), op.getKeyOffset()};
  for (int i = 0; i < 2; ++i) {
    Value value = offsetValues[i];
    OffsetSource &source = offsetSources[i];
    source = {value, Value()};
    auto cast = value ? value.getDefiningOp<arith::IndexCastOp>() : nullptr;
    auto extract =
        cast ? cast.getIn().getDefiningOp<tensor::ExtractOp>() : nullptr;
    if (extract && extract.getTensor().getType().getRank() == 0)
      source.buffer = bufferOf(extract.getTensor());
  }
  int64_t nb = rank - 2;
  batchExtents.clear();
  Value gridY = idx(b, 1);
  for (int64_t d = 0; d < nb; ++d) {
    Value extent = memref::DimOp::create(b, queries, d);
    batchExtents.push_back(extent);
    gridY = arith::MulIOp::create(b, gridY, extent);
  }
  queryLen = memref::DimOp::create(b, queries, nb);
  keyLen = memref::DimOp::create(b, keys, nb + 1);
  // The output has the queries' rows and the values' columns; the lse
  // the queries' rows and one column per head.
  auto allocate = [&](Value init) -> Value {
    auto type =
        MemRefType::get(cast<RankedTensorType>(init.getType()).getShape(), elt);
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < rank; ++d)
      if (type.isDynamicDim(d))
        sizes.push_back(d < nb ? batchExtents[d]
                        : d == nb
                            ? queryLen
                            : memref::DimOp::create(b, values, d).getResult());
    return memref::AllocOp::create(b, type, sizes);
  };
  out = allocate(op.getInit());
  lse = op.getLseInit() ? allocate(op.getLseInit()) : Value();

  int64_t blockRows = threads * rowsPerThread;
  Value gridX =
      arith::CeilDivUIOp::create(b, queryLen, idx(b, blockRows)).getResult();
  // No launch for empty sequences or batches.
  ImplicitLocOpBuilder gb =
      GPUKernelBuilder(op, emulate)
          .guardNonEmptyGrid(b, ValueRange{gridX, gridY}, idx(b, 0));

  if (emulate)
    buildEmulated(gb, gridX, gridY);
  else
    buildLaunch(gb, gridX, gridY);

  auto toTensor = [&](Value buffer, Value init) -> Value {
    if (!buffer)
      return Value();
    return bufferization::ToTensorOp::create(b, init.getType(), buffer,
                                             /*restrict=*/true,
                                             /*writable=*/true);
  };
  return {toTensor(out, op.getInit()), toTensor(lse, op.getLseInit())};
}

struct GeoMapAttentionToGPU
    : torsor::geo::impl::GeoMapAttentionToGPUBase<GeoMapAttentionToGPU> {
  using Base::Base;

  /// The pass's one read of the strategy: the op's #strategy.gpu_attention
  /// (the default schedule without one, as in torsor-opt tests), each
  /// field overridden by the pass option of the same tile.
  KernelTiles strategyTiles(FlashLieAttentionOp op) const {
    strategy::GPUAttentionAttr stamped = strategy::gpuAttentionOf(op);
    auto pick = [](unsigned option, unsigned field) -> int64_t {
      return option ? option : field;
    };
    KernelTiles tiles;
    tiles.rowsPerThread = pick(rowsPerThread, stamped.getRowsPerThread());
    // A rows-per-thread option keeps the block's BQ query rows.
    int64_t blockRows = stamped.getThreads() * stamped.getRowsPerThread();
    tiles.threads = pick(threadsPerBlock,
                         std::max<int64_t>(1, blockRows / tiles.rowsPerThread));
    tiles.keyTile = pick(keyTile, stamped.getKeyTile());
    tiles.chunk = pick(scoreChunk, stamped.getScoreChunk());
    tiles.sharedBytes = stamped.getSharedMemoryBytes();
    return tiles;
  }

  void runOnOperation() override {
    SmallVector<FlashLieAttentionOp> ops;
    getOperation()->walk([&](FlashLieAttentionOp op) { ops.push_back(op); });
    SmallVector<Operation *> approximate;
    for (FlashLieAttentionOp op : ops) {
      if (op.getKeyTile()) {
        op.emitOpError() << "is already tiled for the CPU "
                            "(geo-tile-attention); map the untiled op";
        return signalPassFailure();
      }
      GPUSchedule kernel(op, strategyTiles(op));
      if (failed(kernel.verifyStrategy()))
        return signalPassFailure();
      OpBuilder builder(op);
      Operation *before = op->getPrevNode();
      ImplicitLocOpBuilder b(op.getLoc(), builder);
      auto [result, lse] = kernel.build(b, cpuEmulation);
      // f32: the CPU kernel's polynomial atan2 and exp (KernelMath.h), so
      // both targets (and the emulation) evaluate the same formulas.
      if (cast<RankedTensorType>(op.getResult().getType())
              .getElementType()
              .isF32()) {
        collectKernelMath(before, op, approximate);
        for (func::FuncOp fn : kernel.getOutlined())
          collectKernelMath(fn, approximate);
      }
      op.getResult().replaceAllUsesWith(result);
      if (lse)
        op.getLse().replaceAllUsesWith(lse);
      op.erase();
    }
    if (failed(approximateKernelMath(&getContext(), approximate)))
      signalPassFailure();
  }
};

} // namespace
