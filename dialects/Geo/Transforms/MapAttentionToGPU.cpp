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
//     pair block norms from the group model (scalar ScalarBuilder, so the
//       formulas are the ones the CPU kernel builds on vectors),
//     s = Σ_b c_hb N_b,  m' = max(m, max s),  α = e^{m − m'},
//     p = e^{s − m'},  l = α l + Σ p,  acc = α acc + Σ p v;
//   out = acc / l.
//
// The same builder also emits the block/thread structure as host loops
// (`cpu-emulation`): the per-thread code is identical, only the barriers
// become loop boundaries and the registers that live across them a stack
// array. That form runs through the CPU pipeline, so the kernel's math,
// tiling and masks are tested against -O0 without a GPU.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/KernelMath.h"
#include "dialects/Geo/Transforms/Passes.h"
#include "dialects/Lie/IR/GroupModel.h"
#include "dialects/Strategy/IR/Strategy.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace torsor::geo {
#define GEN_PASS_DEF_GEOMAPATTENTIONTOGPU
#include "dialects/Geo/Transforms/Passes.h.inc"
} // namespace torsor::geo

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using torsor::lie::GroupModel;
using torsor::lie::ScalarBuilder;
using torsor::lie::Scalars;

namespace {

/// What one thread carries from key step to key step: per row r and head h
/// the running max and sum, per row and value column the accumulator.
struct State {
  SmallVector<Value> max, sum, acc; // [r][h], [r][h], [r][d]

  SmallVector<Value> flat() const {
    SmallVector<Value> all(max);
    all.append(sum);
    all.append(acc);
    return all;
  }
};

/// Values one block computes once: where its rows and keys are.
struct BlockContext {
  SmallVector<Value> batch; // indices of the batch element
  Value firstRow;           // x · BQ
  Value unmaskedEnd;        // keys [0, unmaskedEnd): whole tiles all rows see
  Value end;                // keys [unmaskedEnd, end): tiles with masks
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

/// Builds the kernel of one untiled flash_lie_attention.
class KernelBuilder {
public:
  KernelBuilder(FlashLieAttentionOp op, const KernelTiles &strategy)
      : op(op), model(op.getGroup().getModel()) {
    auto vType = cast<RankedTensorType>(op.getValues().getType());
    elt = cast<FloatType>(vType.getElementType());
    rank = vType.getRank();
    heads = op.getHeads();
    dim = vType.getDimSize(rank - 1);
    headDim = dim / heads;
    queryFeatures =
        cast<RankedTensorType>(op.getQueries().getType()).getDimSize(rank - 1);
    keyFeatures =
        cast<RankedTensorType>(op.getKeys().getType()).getDimSize(rank - 2);
    threads = strategy.threads;
    rowsPerThread = strategy.rowsPerThread;
    keyTile = strategy.keyTile;
    chunk = strategy.chunk;
    sharedBytes = strategy.sharedBytes;
    unsigned blocks = model.getBlocks().size();
    for (int64_t h = 0; h < heads; ++h)
      for (unsigned b = 0; b < blocks; ++b)
        coef.push_back(-op.getLambda()[h * blocks + b] / op.getTau()[h]);
    // 16-byte loads of value rows from shared memory where rows allow.
    int64_t perLoad = 16 / (elt.getWidth() / 8);
    valueLoad = dim % perLoad == 0 ? perLoad : 1;
  }

  /// Checks the strategy fits this op (shared memory, divisibility).
  LogicalResult verifyStrategy();
  /// Builds the kernel before `op`; returns the output tensor.
  Value build(ImplicitLocOpBuilder &b, bool emulate);
  /// The kernel as one gpu.launch of the grid (gridX, gridY).
  void buildLaunch(ImplicitLocOpBuilder &b, Value gridX, Value gridY);
  /// The same per-thread code with blocks and threads as host loops.
  void buildEmulated(ImplicitLocOpBuilder &b, Value gridX, Value gridY);

private:
  /// Elements of the shared tile: values [BK][D], then features [Fk][BK].
  int64_t tileElements() const { return keyTile * (dim + keyFeatures); }
  int64_t stateSize() const { return rowsPerThread * (2 * heads + dim); }
  Value idx(ImplicitLocOpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, v);
  }

  BlockContext blockContext(ImplicitLocOpBuilder &b, Value blockX,
                            Value blockY);
  ThreadContext threadContext(ImplicitLocOpBuilder &b, const BlockContext &bc,
                              Value tid);
  State initialState(ImplicitLocOpBuilder &b);
  State unflatten(ValueRange values) const;
  /// The block's cooperative copy of key tile `first` into `tile`.
  void stage(ImplicitLocOpBuilder &b, const BlockContext &bc, Value tid,
             Value first, Value tile, bool masked);
  /// One thread's pass over key tile `first` (in `tile`).
  State compute(ImplicitLocOpBuilder &b, const ThreadContext &tc, Value first,
                Value tile, const State &in, bool masked);
  /// One step of S keys at `first + offset`.
  State step(ImplicitLocOpBuilder &b, const ThreadContext &tc, Value first,
             Value offset, Value tile, const State &in, bool masked);
  /// out = acc / l for the thread's rows inside the sequence.
  void finish(ImplicitLocOpBuilder &b, const BlockContext &bc,
              const ThreadContext &tc, const State &state);

  FlashLieAttentionOp op;
  const GroupModel &model;
  FloatType elt;
  int64_t rank, heads, dim, headDim, queryFeatures, keyFeatures;
  int64_t threads, rowsPerThread, keyTile, chunk, sharedBytes, valueLoad;
  SmallVector<double> coef; // [h][block]
  // Host values built in build().
  Value queries, keys, values, out, queryLen, keyLen, offset;
  SmallVector<Value> batchExtents;
};

LogicalResult KernelBuilder::verifyStrategy() {
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

BlockContext KernelBuilder::blockContext(ImplicitLocOpBuilder &b, Value blockX,
                                         Value blockY) {
  BlockContext bc;
  // Row-major delinearization of the batch dims.
  Value rest = blockY;
  bc.batch.resize(batchExtents.size());
  for (int d = batchExtents.size() - 1; d >= 0; --d) {
    bc.batch[d] = arith::RemUIOp::create(b, rest, batchExtents[d]);
    rest = arith::DivUIOp::create(b, rest, batchExtents[d]);
  }
  int64_t blockRows = threads * rowsPerThread;
  bc.firstRow = arith::MulIOp::create(b, blockX, idx(b, blockRows));
  // Keys every row of the block sees (causal: up to its first row) run in
  // whole unmasked tiles; the rest up to the last row's keys with masks.
  Value seenByAll = keyLen;
  bc.end = keyLen;
  if (op.getCausal()) {
    Value first = arith::AddIOp::create(b, offset, bc.firstRow);
    seenByAll = arith::MinUIOp::create(
        b, keyLen, arith::AddIOp::create(b, first, idx(b, 1)));
    bc.end = arith::MinUIOp::create(
        b, keyLen, arith::AddIOp::create(b, first, idx(b, blockRows)));
  }
  Value tile = idx(b, keyTile);
  bc.unmaskedEnd = arith::MulIOp::create(
      b, arith::DivUIOp::create(b, seenByAll, tile), tile);
  return bc;
}

ThreadContext KernelBuilder::threadContext(ImplicitLocOpBuilder &b,
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
    for (int64_t f = 0; f < queryFeatures; ++f) {
      SmallVector<Value> indices(bc.batch);
      indices.append({at, idx(b, f)});
      features.push_back(memref::LoadOp::create(b, queries, indices));
    }
    tc.query.push_back(features);
  }
  return tc;
}

State KernelBuilder::initialState(ImplicitLocOpBuilder &b) {
  ScalarBuilder sm(b, elt);
  State s;
  for (int64_t i = 0; i < rowsPerThread * heads; ++i) {
    s.max.push_back(sm.c(-std::numeric_limits<double>::infinity()));
    s.sum.push_back(sm.c(0.0));
  }
  for (int64_t i = 0; i < rowsPerThread * dim; ++i)
    s.acc.push_back(sm.c(0.0));
  return s;
}

State KernelBuilder::unflatten(ValueRange values) const {
  size_t rh = rowsPerThread * heads;
  State s;
  s.max.assign(values.begin(), values.begin() + rh);
  s.sum.assign(values.begin() + rh, values.begin() + 2 * rh);
  s.acc.assign(values.begin() + 2 * rh, values.end());
  return s;
}

void KernelBuilder::stage(ImplicitLocOpBuilder &b, const BlockContext &bc,
                          Value tid, Value first, Value tile, bool masked) {
  // Consecutive threads copy consecutive addresses of both the source (keys
  // are feature-major, values row-major) and the tile: coalesced loads,
  // conflict-free stores. Keys past the end (masked tiles only) copy the
  // last key: their probability is 0.
  Value lastKey = arith::SubIOp::create(b, keyLen, idx(b, 1));
  Value step = idx(b, threads);
  auto copy = [&](int64_t count, int64_t inner, bool featureMajor) {
    scf::ForOp::create(
        b, tid, idx(b, count), step, ValueRange{},
        [&](OpBuilder &nested, Location loc, Value i, ValueRange) {
          ImplicitLocOpBuilder lb(loc, nested);
          Value outer = arith::DivUIOp::create(lb, i, idx(lb, inner));
          Value in = arith::RemUIOp::create(lb, i, idx(lb, inner));
          // feature-major: (feature, key); else (key, column).
          Value key =
              arith::AddIOp::create(lb, first, featureMajor ? in : outer);
          if (masked)
            key = arith::MinUIOp::create(lb, key, lastKey);
          SmallVector<Value> indices(bc.batch);
          if (featureMajor)
            indices.append({outer, key});
          else
            indices.append({key, in});
          Value x =
              memref::LoadOp::create(lb, featureMajor ? keys : values, indices);
          Value at = featureMajor
                         ? arith::AddIOp::create(lb, i, idx(lb, keyTile * dim))
                         : i;
          memref::StoreOp::create(lb, x, tile, ValueRange{at});
          scf::YieldOp::create(lb);
        });
  };
  copy(keyTile * dim, dim, /*featureMajor=*/false);
  copy(keyFeatures * keyTile, keyTile, /*featureMajor=*/true);
}

State KernelBuilder::step(ImplicitLocOpBuilder &b, const ThreadContext &tc,
                          Value first, Value offsetInTile, Value tile,
                          const State &in, bool masked) {
  ScalarBuilder sm(b, elt);
  Value negInf = sm.c(-std::numeric_limits<double>::infinity());
  unsigned blocks = model.getBlocks().size();
  // Scores [r][h][j] and, masked, validity [r][j].
  SmallVector<Value> scores(rowsPerThread * heads * chunk);
  SmallVector<Value> valid(rowsPerThread * chunk);
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
      if (masked) {
        Value ok =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, keyIdx, keyLen);
        if (op.getCausal())
          ok = arith::AndIOp::create(
              b, ok,
              arith::CmpIOp::create(b, arith::CmpIPredicate::ule, keyIdx,
                                    tc.last[r]));
        valid[r * chunk + j] = ok;
      }
      // The group model's pairwise form, one pair per thread.
      Scalars norms = model.buildPairBlockNorms(sm, tc.query[r], key);
      for (int64_t h = 0; h < heads; ++h) {
        Value s = sm.mul(sm.c(coef[h * blocks]), norms[0]);
        for (unsigned bl = 1; bl < blocks; ++bl)
          s = sm.fma(sm.c(coef[h * blocks + bl]), norms[bl], s);
        if (masked)
          s = sm.select(valid[r * chunk + j], s, negInf);
        scores[(r * heads + h) * chunk + j] = s;
      }
    }
  }

  // Online softmax: one max, one rescale per S keys and head.
  State out = in;
  SmallVector<Value> probs(scores.size());
  for (int64_t r = 0; r < rowsPerThread; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      size_t rh = r * heads + h, base = rh * chunk;
      Value stepMax = scores[base];
      for (int64_t j = 1; j < chunk; ++j)
        stepMax = sm.max(stepMax, scores[base + j]);
      Value newMax = sm.max(in.max[rh], stepMax);
      Value alpha = sm.exp(sm.sub(in.max[rh], newMax));
      Value sum = sm.mul(in.sum[rh], alpha);
      for (int64_t j = 0; j < chunk; ++j) {
        Value p = sm.exp(sm.sub(scores[base + j], newMax));
        if (masked)
          p = sm.select(valid[r * chunk + j], p, sm.c(0.0));
        probs[base + j] = p;
        sum = sm.add(sum, p);
      }
      out.max[rh] = newMax;
      out.sum[rh] = sum;
      for (int64_t d = h * headDim; d < (h + 1) * headDim; ++d) {
        Value &acc = out.acc[r * dim + d];
        acc = sm.mul(acc, alpha);
      }
    }

  // P·V: each value of the tile loaded once (16 bytes at a time), into
  // every row's accumulator.
  VectorType loadType = VectorType::get({valueLoad}, elt);
  for (int64_t j = 0; j < chunk; ++j) {
    Value local = arith::AddIOp::create(b, offsetInTile, idx(b, j));
    Value rowStart = arith::MulIOp::create(b, local, idx(b, dim));
    for (int64_t d0 = 0; d0 < dim; d0 += valueLoad) {
      Value at = arith::AddIOp::create(b, rowStart, idx(b, d0));
      SmallVector<Value> v;
      if (valueLoad == 1) {
        v.push_back(memref::LoadOp::create(b, tile, ValueRange{at}));
      } else {
        auto load = vector::LoadOp::create(b, loadType, tile, ValueRange{at});
        load.setAlignment(16);
        for (int64_t e = 0; e < valueLoad; ++e)
          v.push_back(vector::ExtractOp::create(b, load, e));
      }
      for (int64_t r = 0; r < rowsPerThread; ++r)
        for (int64_t e = 0; e < valueLoad; ++e) {
          int64_t d = d0 + e, h = d / headDim;
          Value &acc = out.acc[r * dim + d];
          acc = sm.fma(probs[(r * heads + h) * chunk + j], v[e], acc);
        }
    }
  }
  return out;
}

State KernelBuilder::compute(ImplicitLocOpBuilder &b, const ThreadContext &tc,
                             Value first, Value tile, const State &in,
                             bool masked) {
  auto loop = scf::ForOp::create(
      b, idx(b, 0), idx(b, keyTile), idx(b, chunk), in.flat(),
      [&](OpBuilder &nested, Location loc, Value offsetInTile,
          ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        State next =
            step(lb, tc, first, offsetInTile, tile, unflatten(args), masked);
        scf::YieldOp::create(lb, next.flat());
      });
  return unflatten(loop.getResults());
}

void KernelBuilder::finish(ImplicitLocOpBuilder &b, const BlockContext &bc,
                           const ThreadContext &tc, const State &state) {
  for (int64_t r = 0; r < rowsPerThread; ++r) {
    auto inside = scf::IfOp::create(b, tc.inside[r], /*withElse=*/false);
    ImplicitLocOpBuilder ib(b.getLoc(), inside.getThenBodyBuilder());
    ScalarBuilder sm(ib, elt);
    for (int64_t h = 0; h < heads; ++h) {
      Value inv = sm.div(sm.c(1.0), state.sum[r * heads + h]);
      for (int64_t d = h * headDim; d < (h + 1) * headDim; ++d) {
        SmallVector<Value> indices(bc.batch);
        indices.append({tc.row[r], idx(ib, d)});
        memref::StoreOp::create(ib, sm.mul(state.acc[r * dim + d], inv), out,
                                indices);
      }
    }
  }
}

void KernelBuilder::buildLaunch(ImplicitLocOpBuilder &gb, Value gridX,
                                Value gridY) {
  MLIRContext *ctx = gb.getContext();
  // The shared tile is a module-level workgroup global rather than a
  // launch attribution: only a global carries an alignment, and the
  // 16-byte value loads need one (kernel outlining clones it into the
  // kernel's module).
  auto shared = MemRefType::get(
      {tileElements()}, elt, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  auto module = op->getParentOfType<ModuleOp>();
  OpBuilder mb(ctx); // detached: the symbol table inserts (and renames)
  auto global = memref::GlobalOp::create(
      mb, gb.getLoc(), "__torsor_attention_tile", mb.getStringAttr("private"),
      shared, /*initial_value=*/Attribute(),
      /*constant=*/false, mb.getI64IntegerAttr(16));
  SymbolTable(module).insert(global, module.getBody()->begin());
  Value one = idx(gb, 1);
  auto launch =
      gpu::LaunchOp::create(gb, gridX, gridY, one, idx(gb, threads), one, one);
  ImplicitLocOpBuilder kb = ImplicitLocOpBuilder::atBlockBegin(
      gb.getLoc(), &launch.getBody().front());
  Value tile = memref::GetGlobalOp::create(kb, shared, global.getSymName());
  Value tid = launch.getThreadIds().x;
  BlockContext bc =
      blockContext(kb, launch.getBlockIds().x, launch.getBlockIds().y);
  ThreadContext tc = threadContext(kb, bc, tid);
  auto keyLoop = [&](Value lb, Value ub, const State &state, bool masked) {
    auto loop = scf::ForOp::create(
        kb, lb, ub, idx(kb, keyTile), state.flat(),
        [&](OpBuilder &nested, Location loc, Value first, ValueRange args) {
          ImplicitLocOpBuilder ib(loc, nested);
          // The previous tile is consumed before it is overwritten.
          gpu::BarrierOp::create(ib);
          stage(ib, bc, tid, first, tile, masked);
          gpu::BarrierOp::create(ib);
          State next = compute(ib, tc, first, tile, unflatten(args), masked);
          scf::YieldOp::create(ib, next.flat());
        });
    return unflatten(loop.getResults());
  };
  State state = keyLoop(idx(kb, 0), bc.unmaskedEnd, initialState(kb),
                        /*masked=*/false);
  state = keyLoop(bc.unmaskedEnd, bc.end, state, /*masked=*/true);
  finish(kb, bc, tc, state);
  gpu::TerminatorOp::create(kb);
}

void KernelBuilder::buildEmulated(ImplicitLocOpBuilder &gb, Value gridX,
                                  Value gridY) {
  Value zero = idx(gb, 0);
  // Host loops: blocks in parallel, threads one phase at a time.
  scf::ParallelOp::create(
      gb, ValueRange{zero, zero}, ValueRange{gridX, gridY},
      ValueRange{idx(gb, 1), idx(gb, 1)},
      [&](OpBuilder &nested, Location loc, ValueRange ivs) {
        ImplicitLocOpBuilder pb(loc, nested);
        Value tile =
            memref::AllocaOp::create(pb, MemRefType::get({tileElements()}, elt),
                                     pb.getI64IntegerAttr(16));
        int64_t size = stateSize();
        Value spill = memref::AllocaOp::create(
            pb, MemRefType::get({threads * size}, elt));
        BlockContext bc = blockContext(pb, ivs[0], ivs[1]);
        // One loop over the threads at `ob`'s insertion point.
        auto forThreads =
            [&](ImplicitLocOpBuilder &ob,
                function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
              scf::ForOp::create(
                  ob, idx(ob, 0), idx(ob, threads), idx(ob, 1), ValueRange{},
                  [&](OpBuilder &tb, Location tloc, Value tid, ValueRange) {
                    ImplicitLocOpBuilder ib(tloc, tb);
                    body(ib, tid);
                    scf::YieldOp::create(ib);
                  });
            };
        auto at = [&](ImplicitLocOpBuilder &ib, Value tid, int64_t i) {
          return arith::AddIOp::create(
              ib, arith::MulIOp::create(ib, tid, idx(ib, size)), idx(ib, i));
        };
        auto save = [&](ImplicitLocOpBuilder &ib, Value tid, const State &s) {
          for (auto [i, v] : llvm::enumerate(s.flat()))
            memref::StoreOp::create(ib, v, spill, ValueRange{at(ib, tid, i)});
        };
        auto restore = [&](ImplicitLocOpBuilder &ib, Value tid) {
          SmallVector<Value> all;
          for (int64_t i = 0; i < size; ++i)
            all.push_back(
                memref::LoadOp::create(ib, spill, ValueRange{at(ib, tid, i)}));
          return unflatten(all);
        };
        forThreads(pb, [&](ImplicitLocOpBuilder &ib, Value tid) {
          save(ib, tid, initialState(ib));
        });
        auto keyLoop = [&](Value lb, Value ub, bool masked) {
          scf::ForOp::create(
              pb, lb, ub, idx(pb, keyTile), ValueRange{},
              [&](OpBuilder &kb, Location kloc, Value first, ValueRange) {
                ImplicitLocOpBuilder ib(kloc, kb);
                // Barrier, stage, barrier, compute: one loop per phase.
                forThreads(ib, [&](ImplicitLocOpBuilder &tb, Value tid) {
                  stage(tb, bc, tid, first, tile, masked);
                });
                forThreads(ib, [&](ImplicitLocOpBuilder &tb, Value tid) {
                  ThreadContext tc = threadContext(tb, bc, tid);
                  State s =
                      compute(tb, tc, first, tile, restore(tb, tid), masked);
                  save(tb, tid, s);
                });
                scf::YieldOp::create(ib);
              });
        };
        keyLoop(idx(pb, 0), bc.unmaskedEnd, /*masked=*/false);
        keyLoop(bc.unmaskedEnd, bc.end, /*masked=*/true);
        forThreads(pb, [&](ImplicitLocOpBuilder &tb, Value tid) {
          ThreadContext tc = threadContext(tb, bc, tid);
          finish(tb, bc, tc, restore(tb, tid));
        });
        scf::ReduceOp::create(pb);
      });
}

Value KernelBuilder::build(ImplicitLocOpBuilder &b, bool emulate) {
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
  offset = op.getQueryOffset();
  int64_t nb = rank - 2;
  batchExtents.clear();
  SmallVector<Value> outSizes;
  Value gridY = idx(b, 1);
  for (int64_t d = 0; d < nb; ++d) {
    Value extent = memref::DimOp::create(b, queries, d);
    batchExtents.push_back(extent);
    gridY = arith::MulIOp::create(b, gridY, extent);
  }
  queryLen = memref::DimOp::create(b, queries, nb);
  keyLen = memref::DimOp::create(b, keys, nb + 1);
  // The output has the queries' rows and the values' columns.
  auto outType = MemRefType::get(
      cast<RankedTensorType>(op.getInit().getType()).getShape(), elt);
  for (int64_t d = 0; d < rank; ++d)
    if (outType.isDynamicDim(d))
      outSizes.push_back(d < nb ? batchExtents[d]
                         : d == nb
                             ? queryLen
                             : memref::DimOp::create(b, values, d).getResult());
  out = memref::AllocOp::create(b, outType, outSizes);

  int64_t blockRows = threads * rowsPerThread;
  Value gridX =
      arith::CeilDivUIOp::create(b, queryLen, idx(b, blockRows)).getResult();
  // No launch for empty sequences or batches (a 0-block grid is a CUDA
  // error).
  Value zero = idx(b, 0);
  Value any = arith::AndIOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, gridX, zero),
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, gridY, zero));
  auto guard = scf::IfOp::create(b, any, /*withElse=*/false);
  ImplicitLocOpBuilder gb(b.getLoc(), guard.getThenBodyBuilder());

  if (emulate)
    buildEmulated(gb, gridX, gridY);
  else
    buildLaunch(gb, gridX, gridY);

  return bufferization::ToTensorOp::create(
      b, op.getInit().getType(), out, /*restrict=*/true, /*writable=*/true);
}

struct GeoMapAttentionToGPU
    : torsor::geo::impl::GeoMapAttentionToGPUBase<GeoMapAttentionToGPU> {
  using Base::Base;

  /// The tiles of `op`: its #strategy.gpu_attention (the default when it
  /// has none, as in torsor-opt tests), each field overridable by a pass
  /// option. A rows-per-thread option keeps the block's BQ query rows.
  KernelTiles tilesOf(FlashLieAttentionOp op) const {
    strategy::GPUAttentionAttr stamped = strategy::gpuAttentionOf(op);
    auto pick = [](unsigned option, unsigned field) -> int64_t {
      return option ? option : field;
    };
    KernelTiles tiles;
    tiles.rowsPerThread = pick(rowsPerThread, stamped.getRowsPerThread());
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
      if (op.getLse()) {
        op.emitOpError() << "with a log-sum-exp result (for the flash "
                            "backward) has no GPU kernel; gradients are "
                            "compiled for the CPU";
        return signalPassFailure();
      }
      KernelBuilder kernel(op, tilesOf(op));
      if (failed(kernel.verifyStrategy()))
        return signalPassFailure();
      OpBuilder builder(op);
      Operation *before = op->getPrevNode();
      ImplicitLocOpBuilder b(op.getLoc(), builder);
      Value result = kernel.build(b, cpuEmulation);
      // f32: the CPU kernel's polynomial atan2 and exp (KernelMath.h), so
      // both targets (and the emulation) evaluate the same formulas.
      if (cast<RankedTensorType>(op.getResult().getType())
              .getElementType()
              .isF32())
        for (Operation *it = before ? before->getNextNode()
                                    : &op->getBlock()->front();
             it != op.getOperation(); it = it->getNextNode())
          it->walk([&](Operation *inner) {
            if (isa<math::MathDialect>(inner->getDialect()))
              approximate.push_back(inner);
          });
      op.getResult().replaceAllUsesWith(result);
      op.erase();
    }
    if (approximate.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateKernelMathPatterns(patterns);
    if (failed(applyOpPatternsGreedily(approximate, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
