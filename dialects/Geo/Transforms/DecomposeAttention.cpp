//===- DecomposeAttention.cpp - Flash attention tiles to vector loops -----===//
//
// geo-decompose-attention: the last step of the fused attention pipeline.
// One tiled geo.flash_lie_attention (R static query rows, all keys) becomes
//
//   state: per row r and head h, the running max m (scalar), the running
//          sum l (a vector: one partial sum per lane, reduced once at the
//          end) and the accumulators of h's value columns (vectors);
//   for each key tile of `key_tile` keys (`lanes` keys per vector):
//     key features: vector loads of the feature-major keys;
//     pair block norms: the group model's formula on vectors, one pair per
//       lane, shared by every head;
//     scores s = Σ_b c_hb N_b with c_hb = −λ_hb / τ_h;
//     online softmax: m' = max(m, max s), α = exp(m − m'), p = exp(s − m'),
//       l = α l + Σ p, acc = α acc;
//     P·V: every value row, loaded once, FMA'd into every row's accumulator;
//   out = acc / Σ_lanes l;
//   lse = m + log Σ_lanes l per row and head, when the op has an lse
//   result (a gradient takes it instead of recomputing it).
//
// Key tiles that every row sees in full run unmasked; the causal diagonal
// and the end of the sequence run in a second loop with lane masks, so the
// common case has no selects. Keys beyond the tile's last row are never
// visited when causal.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/KernelMath.h"
#include "dialects/Geo/Transforms/Passes.h"
#include "dialects/Lie/IR/GroupModel.h"
#include "dialects/Strategy/IR/Strategy.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace torsor::geo {
#define GEN_PASS_DEF_GEODECOMPOSEATTENTION
#include "dialects/Geo/Transforms/Passes.h.inc"
} // namespace torsor::geo

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using torsor::lie::GroupModel;
using torsor::lie::ScalarBuilder;
using torsor::lie::Scalars;

namespace {

/// A run of value columns [col, col + width) of one head, held in one
/// vector accumulator per row.
struct Chunk {
  int64_t head, col, width;
};

/// Everything the kernel builder needs about one tiled op.
class KernelBuilder {
public:
  KernelBuilder(FlashLieAttentionOp op, strategy::VectorAttentionAttr strategy)
      : op(op), model(op.getGroup().getModel()) {
    auto vType = cast<RankedTensorType>(op.getValues().getType());
    elt = cast<FloatType>(vType.getElementType());
    rows = cast<RankedTensorType>(op.getQueries().getType()).getDimSize(0);
    heads = op.getHeads();
    int64_t dim = vType.getDimSize(1), headDim = dim / heads;
    keyTile = *op.getKeyTile();
    lanes = std::min<int64_t>(strategy.getLanes(), keyTile);
    if (keyTile % lanes != 0)
      lanes = keyTile;
    keyVectors = keyTile / lanes;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = h * headDim; c < (h + 1) * headDim; c += lanes)
        chunks.push_back({h, c, std::min(lanes, (h + 1) * headDim - c)});
    unsigned blocks = model.getBlocks().size();
    for (int64_t h = 0; h < heads; ++h)
      for (unsigned b = 0; b < blocks; ++b)
        coef.push_back(-op.getLambda()[h * blocks + b] / op.getTau()[h]);
  }

  /// Builds the kernel before `op` and returns the output tensor and,
  /// when the op has one, the lse tensor.
  std::pair<Value, Value> build(ImplicitLocOpBuilder &b);

private:
  /// The loop state, flattened for scf.for: m, then l, then accumulators.
  struct State {
    SmallVector<Value> max, sum, acc; // [r][h], [r][h], [r][chunk]
    SmallVector<Value> flat() const {
      SmallVector<Value> all(max);
      all.append(sum);
      all.append(acc);
      return all;
    }
  };
  State unflatten(ValueRange values) const {
    size_t rh = rows * heads;
    State s;
    s.max.assign(values.begin(), values.begin() + rh);
    s.sum.assign(values.begin() + rh, values.begin() + 2 * rh);
    s.acc.assign(values.begin() + 2 * rh, values.end());
    return s;
  }
  VectorType vectorType(int64_t width) const {
    return VectorType::get({width}, elt);
  }
  /// One key tile starting at `first`: the body of both key loops.
  State step(ImplicitLocOpBuilder &b, Value first, const State &in,
             bool masked);
  /// The pairwise block norms of row `r` against the keys in `keys`.
  Scalars pairNorms(ImplicitLocOpBuilder &b, int64_t r, ValueRange keys);

  FlashLieAttentionOp op;
  const GroupModel &model;
  FloatType elt;
  int64_t rows, heads, keyTile, lanes, keyVectors;
  SmallVector<Chunk> chunks;
  SmallVector<double> coef; // [h][block]
  // Per-kernel values built in build().
  Value len, offset, probBuffer;
  SmallVector<Scalars> queryScalars, querySplats; // [r][feature]
};

Scalars KernelBuilder::pairNorms(ImplicitLocOpBuilder &b, int64_t r,
                                 ValueRange keys) {
  ScalarBuilder vm(b, elt, lanes);
  if (model.hasStraightLinePairForm())
    return model.buildPairBlockNorms(vm, querySplats[r], keys);
  // Per lane with scalar code: the model's formula builds loops.
  unsigned blocks = model.getBlocks().size();
  SmallVector<Value> init(blocks, vm.c(0.0));
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value count = arith::ConstantIndexOp::create(b, lanes);
  auto loop = scf::ForOp::create(
      b, zero, count, one, init,
      [&](OpBuilder &nested, Location loc, Value lane, ValueRange norms) {
        ImplicitLocOpBuilder lb(loc, nested);
        ScalarBuilder sm(lb, elt);
        Scalars key;
        for (Value feature : keys)
          key.push_back(vector::ExtractOp::create(
              lb, feature, ArrayRef<OpFoldResult>{lane}));
        Scalars pair = model.buildPairBlockNorms(sm, queryScalars[r], key);
        SmallVector<Value> next;
        for (auto [norm, vec] : llvm::zip_equal(pair, norms))
          next.push_back(vector::InsertOp::create(
              lb, norm, vec, ArrayRef<OpFoldResult>{lane}));
        scf::YieldOp::create(lb, next);
      });
  return Scalars(loop.getResults().begin(), loop.getResults().end());
}

KernelBuilder::State KernelBuilder::step(ImplicitLocOpBuilder &b, Value first,
                                         const State &in, bool masked) {
  ScalarBuilder vm(b, elt, lanes), sm(b, elt);
  Value keys = op.getKeys(), values = op.getValues();
  Value zero = sm.c(0.0);
  Value negInf = vm.c(-std::numeric_limits<double>::infinity());
  unsigned numKeyFeatures =
      cast<RankedTensorType>(keys.getType()).getDimSize(0);
  unsigned blocks = model.getBlocks().size();
  VectorType indexVector = VectorType::get({lanes}, b.getIndexType());

  // Scores [r][h][kv] and (masked) lane validity [r][kv].
  SmallVector<Value> scores(rows * heads * keyVectors);
  SmallVector<Value> valid(rows * keyVectors);
  SmallVector<Value> keyStart(keyVectors);
  for (int64_t kv = 0; kv < keyVectors; ++kv) {
    Value start = arith::AddIOp::create(
        b, first, arith::ConstantIndexOp::create(b, kv * lanes));
    keyStart[kv] = start;
    Scalars keyFeatures;
    for (unsigned f = 0; f < numKeyFeatures; ++f) {
      Value fIdx = arith::ConstantIndexOp::create(b, f);
      keyFeatures.push_back(vector::TransferReadOp::create(
          b, vectorType(lanes), keys, ValueRange{fIdx, start}, zero,
          ArrayRef<bool>{!masked}));
    }
    if (masked) {
      Value lane = arith::AddIOp::create(
          b, vector::StepOp::create(b, indexVector),
          vector::BroadcastOp::create(b, indexVector, start));
      Value inRange = arith::CmpIOp::create(
          b, arith::CmpIPredicate::ult, lane,
          vector::BroadcastOp::create(b, indexVector, len));
      for (int64_t r = 0; r < rows; ++r) {
        Value ok = inRange;
        if (op.getCausal()) {
          Value last = arith::AddIOp::create(
              b, offset, arith::ConstantIndexOp::create(b, r));
          ok = arith::AndIOp::create(
              b, ok,
              arith::CmpIOp::create(
                  b, arith::CmpIPredicate::ule, lane,
                  vector::BroadcastOp::create(b, indexVector, last)));
        }
        valid[r * keyVectors + kv] = ok;
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      Scalars norms = pairNorms(b, r, keyFeatures);
      for (int64_t h = 0; h < heads; ++h) {
        Value s = vm.mul(vm.c(coef[h * blocks]), norms[0]);
        for (unsigned bl = 1; bl < blocks; ++bl)
          s = vm.fma(vm.c(coef[h * blocks + bl]), norms[bl], s);
        if (masked)
          s = vm.select(valid[r * keyVectors + kv], s, negInf);
        scores[(r * heads + h) * keyVectors + kv] = s;
      }
    }
  }

  // Online softmax.
  State out = in;
  SmallVector<Value> probs(scores.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      size_t rh = r * heads + h, base = rh * keyVectors;
      Value tileMax = scores[base];
      for (int64_t kv = 1; kv < keyVectors; ++kv)
        tileMax = vm.max(tileMax, scores[base + kv]);
      Value newMax =
          sm.max(in.max[rh], vector::ReductionOp::create(
                                 b, vector::CombiningKind::MAXIMUMF, tileMax));
      Value alpha = sm.exp(sm.sub(in.max[rh], newMax));
      Value newMaxV = vm.splat(newMax);
      Value sum = vm.mul(in.sum[rh], vm.splat(alpha));
      for (int64_t kv = 0; kv < keyVectors; ++kv) {
        Value p = vm.exp(vm.sub(scores[base + kv], newMaxV));
        if (masked)
          p = vm.select(valid[r * keyVectors + kv], p, vm.c(0.0));
        probs[base + kv] = p;
        sum = vm.add(sum, p);
      }
      out.max[rh] = newMax;
      out.sum[rh] = sum;
      for (auto [c, chunk] : llvm::enumerate(chunks))
        if (chunk.head == h) {
          ScalarBuilder cm(b, elt, chunk.width);
          Value &acc = out.acc[r * chunks.size() + c];
          acc = cm.mul(acc, cm.splat(alpha));
        }
    }
  }

  // P·V: each value row once, into every row's accumulators. The
  // probabilities go through a stack buffer so that each FMA reads its
  // p_j as a broadcast memory operand instead of a lane shuffle.
  for (auto [i, p] : llvm::enumerate(probs))
    vector::StoreOp::create(
        b, p, probBuffer,
        ValueRange{arith::ConstantIndexOp::create(b, i * lanes)});
  // A GEMM micro-kernel over the tile's keys (rows × D accumulators, one
  // value row and one broadcast probability per row per key), kept as a
  // loop so that the accumulators stay in registers.
  Value lastKey =
      arith::SubIOp::create(b, len, arith::ConstantIndexOp::create(b, 1));
  Value zeroIdx = arith::ConstantIndexOp::create(b, 0);
  Value oneIdx = arith::ConstantIndexOp::create(b, 1);
  Value tileIdx = arith::ConstantIndexOp::create(b, keyTile);
  auto pv = scf::ForOp::create(
      b, zeroIdx, tileIdx, oneIdx, out.acc,
      [&](OpBuilder &nested, Location loc, Value k, ValueRange accs) {
        ImplicitLocOpBuilder lb(loc, nested);
        Value key = arith::AddIOp::create(lb, first, k);
        // A masked lane has p = 0; any row in bounds will do for it.
        if (masked)
          key = arith::MinUIOp::create(lb, key, lastKey);
        SmallVector<Value> row;
        for (const Chunk &chunk : chunks)
          row.push_back(vector::TransferReadOp::create(
              lb, vectorType(chunk.width), values,
              ValueRange{key, arith::ConstantIndexOp::create(lb, chunk.col)},
              zero, ArrayRef<bool>{true}));
        SmallVector<Value> next(accs);
        for (int64_t r = 0; r < rows; ++r)
          for (auto [c, chunk] : llvm::enumerate(chunks)) {
            Value at = arith::AddIOp::create(
                lb, k,
                arith::ConstantIndexOp::create(lb, (r * heads + chunk.head) *
                                                       keyTile));
            Value p = memref::LoadOp::create(lb, probBuffer, ValueRange{at});
            ScalarBuilder cm(lb, elt, chunk.width);
            Value &acc = next[r * chunks.size() + c];
            acc = cm.fma(cm.splat(p), row[c], acc);
          }
        scf::YieldOp::create(lb, next);
      });
  out.acc.assign(pv.getResults().begin(), pv.getResults().end());
  return out;
}

std::pair<Value, Value> KernelBuilder::build(ImplicitLocOpBuilder &b) {
  ScalarBuilder sm(b, elt), vm(b, elt, lanes);
  Value keys = op.getKeys();
  len = tensor::DimOp::create(b, keys, 1);
  offset = op.getQueryOffset();
  int64_t numQueryFeatures =
      cast<RankedTensorType>(op.getQueries().getType()).getDimSize(1);
  for (int64_t r = 0; r < rows; ++r) {
    Scalars scalars, splats;
    for (int64_t f = 0; f < numQueryFeatures; ++f) {
      Value x = tensor::ExtractOp::create(
          b, op.getQueries(),
          ValueRange{arith::ConstantIndexOp::create(b, r),
                     arith::ConstantIndexOp::create(b, f)});
      scalars.push_back(x);
      splats.push_back(vm.splat(x));
    }
    queryScalars.push_back(scalars);
    querySplats.push_back(splats);
  }

  probBuffer = memref::AllocaOp::create(
      b, MemRefType::get({rows * heads * keyVectors * lanes}, elt));

  State init;
  for (int64_t i = 0; i < rows * heads; ++i) {
    init.max.push_back(sm.c(-std::numeric_limits<double>::infinity()));
    init.sum.push_back(vm.c(0.0));
  }
  for (int64_t r = 0; r < rows; ++r)
    for (const Chunk &chunk : chunks)
      init.acc.push_back(ScalarBuilder(b, elt, chunk.width).c(0.0));

  // Keys every row of the tile sees: all of them, or (causal) those up to
  // the first row. Whole tiles of them run unmasked.
  Value tile = arith::ConstantIndexOp::create(b, keyTile);
  Value seenByAll = len;
  Value end = len;
  if (op.getCausal()) {
    Value one = arith::ConstantIndexOp::create(b, 1);
    seenByAll =
        arith::MinUIOp::create(b, len, arith::AddIOp::create(b, offset, one));
    end = arith::MinUIOp::create(
        b, len,
        arith::AddIOp::create(b, offset,
                              arith::ConstantIndexOp::create(b, rows)));
  }
  Value unmaskedEnd = arith::MulIOp::create(
      b, arith::DivUIOp::create(b, seenByAll, tile), tile);
  Value zero = arith::ConstantIndexOp::create(b, 0);

  auto keyLoop = [&](Value lb, Value ub, const State &state, bool masked) {
    auto loop = scf::ForOp::create(
        b, lb, ub, tile, state.flat(),
        [&](OpBuilder &nested, Location loc, Value first, ValueRange args) {
          ImplicitLocOpBuilder ib(loc, nested);
          State next = step(ib, first, unflatten(args), masked);
          scf::YieldOp::create(ib, next.flat());
        });
    return unflatten(loop.getResults());
  };
  State state = keyLoop(zero, unmaskedEnd, init, /*masked=*/false);
  state = keyLoop(unmaskedEnd, end, state, /*masked=*/true);

  // out = acc / Σ l, written into the destination; lse = m + log Σ l.
  Value out = op.getInit(), lse = op.getLseInit();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      size_t rh = r * heads + h;
      Value total = vector::ReductionOp::create(b, vector::CombiningKind::ADD,
                                                state.sum[rh]);
      if (lse)
        lse = tensor::InsertOp::create(
            b, sm.add(state.max[rh], sm.log(total)), lse,
            ValueRange{arith::ConstantIndexOp::create(b, r),
                       arith::ConstantIndexOp::create(b, h)});
      Value inv = sm.div(sm.c(1.0), total);
      for (auto [c, chunk] : llvm::enumerate(chunks)) {
        if (chunk.head != h)
          continue;
        ScalarBuilder cm(b, elt, chunk.width);
        Value result = cm.mul(state.acc[r * chunks.size() + c], cm.splat(inv));
        out = vector::TransferWriteOp::create(
                  b, result, out,
                  ValueRange{arith::ConstantIndexOp::create(b, r),
                             arith::ConstantIndexOp::create(b, chunk.col)},
                  ArrayRef<bool>{true})
                  .getResult();
      }
    }
  return {out, lse};
}

struct GeoDecomposeAttention
    : torsor::geo::impl::GeoDecomposeAttentionBase<GeoDecomposeAttention> {
  void runOnOperation() override {
    SmallVector<FlashLieAttentionOp> ops;
    getOperation()->walk([&](FlashLieAttentionOp op) { ops.push_back(op); });
    SmallVector<Operation *> approximate;
    for (FlashLieAttentionOp op : ops) {
      auto rowsType = cast<RankedTensorType>(op.getQueries().getType());
      if (!op.getKeyTile() || rowsType.getRank() != 2 ||
          rowsType.isDynamicDim(0)) {
        op.emitOpError() << "must be tiled (geo-tile-attention) before it is "
                            "decomposed";
        return signalPassFailure();
      }
      auto strategy = strategy::vectorAttentionOf(
          op, rowsType.getElementType().getIntOrFloatBitWidth(),
          cast<RankedTensorType>(op.getValues().getType()).getShape().back(),
          /*backward=*/false);
      OpBuilder builder(op);
      // Mark where the kernel starts, to find its math ops afterwards.
      Operation *before = op->getPrevNode();
      ImplicitLocOpBuilder b(op.getLoc(), builder);
      KernelBuilder kernel(op, strategy);
      auto [out, lse] = kernel.build(b);
      bool f32 = rowsType.getElementType().isF32();
      for (Operation *it = before ? before->getNextNode()
                                  : &op->getBlock()->front();
           it != op.getOperation(); it = it->getNextNode())
        if (f32)
          it->walk([&](Operation *inner) {
            if (isa<math::MathDialect>(inner->getDialect()))
              approximate.push_back(inner);
          });
      op.getResult().replaceAllUsesWith(out);
      if (lse)
        op.getLse().replaceAllUsesWith(lse);
      op.erase();
    }
    if (approximate.empty())
      return;
    // f32 kernels: vectorizable polynomial atan2/exp instead of per-lane
    // libm calls (KernelMath.h; accuracy in docs/geo.md). f64 keeps libm.
    RewritePatternSet patterns(&getContext());
    populateKernelMathPatterns(patterns);
    if (failed(applyOpPatternsGreedily(approximate, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
