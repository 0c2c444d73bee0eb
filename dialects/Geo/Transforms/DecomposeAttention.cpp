//===- DecomposeAttention.cpp - Flash attention tiles to vector loops -----===//
//
// geo-decompose-attention: the last step of the fused attention pipeline.
// One tiled geo.flash_lie_attention (R static query rows, all keys) becomes
//
//   state: per row r and head h, the running max m (scalar), the running
//          sum l (a vector: one partial sum per lane, reduced once at the
//          end) and the accumulators of h's value columns (vectors);
//          no max when every score is ≤ 0 (see below);
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
// When every coefficient c_hb ≤ 0 (ScoreCoefficients::allNonPositive, as
// in the backward), every score is ≤ 0, and in the self form (no key
// offset: one token set) a row's self pair scores 0, so
// the row max is 0: p = exp(s) needs no running max, no horizontal max
// and no rescale, and heads with equal coefficients share one exp. Each
// key vector's probabilities are then final as soon as its scores are: a
// loop over the tile's key vectors stores them into the P·V buffer at
// once, which keeps the tile's scores out of the registers and the pair
// form's code to one copy per row (the loop body fits the decoded-uop
// cache).
//
// Key tiles that every row sees in full run unmasked; the causal diagonal
// and the end of the sequence run in a second loop with lane masks, so the
// common case has no selects. Keys beyond the tile's last row are never
// visited when causal.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/AttentionKernel.h"
#include "dialects/Geo/Transforms/KernelMath.h"
#include "dialects/Geo/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace torsor::geo {
#define GEN_PASS_DEF_GEODECOMPOSEATTENTION
#include "dialects/Geo/Transforms/Passes.h.inc"
} // namespace torsor::geo

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using torsor::lie::ScalarBuilder;
using torsor::lie::Scalars;

namespace {

/// The schedule's one read of the target strategy: lanes per vector for
/// elements of `bits` width.
int64_t strategyLanes(FlashLieAttentionOp op, unsigned bits) {
  auto values = cast<RankedTensorType>(op.getValues().getType());
  return strategy::vectorAttentionOf(op, bits, values.getShape().back())
      .getLanes();
}

/// The CPU forward schedule of one tiled op (AttentionKernel.h builds
/// the math): key tiles of `keyTile` keys in vectors of `lanes`, R query
/// rows sharing every key load, the state in registers.
class ForwardSchedule {
public:
  ForwardSchedule(FlashLieAttentionOp op, int64_t strategyLanes)
      : op(op), coefs(ScoreCoefficients::of(op)),
        elt(cast<FloatType>(
            cast<RankedTensorType>(op.getValues().getType()).getElementType())),
        pairs(op.getGroup().getModel(), op.getGroup(), elt,
              op->getParentOfType<ModuleOp>(), op.getLoc()) {
    auto vType = cast<RankedTensorType>(op.getValues().getType());
    rows = cast<RankedTensorType>(op.getQueries().getType()).getDimSize(0);
    heads = op.getHeads();
    keyTile = *op.getKeyTile();
    lanes = std::min<int64_t>(strategyLanes, keyTile);
    if (keyTile % lanes != 0)
      lanes = keyTile;
    keyVectors = keyTile / lanes;
    chunks = splitValueColumns(heads, vType.getDimSize(1), lanes);
    // The self pair (j = i, score 0) bounds the row max only when queries
    // and keys are one token set; the cross form (a key offset) keeps the
    // running max.
    knownMax = coefs.allNonPositive() && !op.getKeyOffset();
  }

  /// Builds the kernel before `op` and returns the output tensor and,
  /// when the op has one, the lse tensor.
  std::pair<Value, Value> build(ImplicitLocOpBuilder &b);
  /// The pair-form functions the kernel outlined.
  ArrayRef<func::FuncOp> getOutlined() const { return pairs.getOutlined(); }

private:
  VectorType vectorType(int64_t width) const {
    return VectorType::get({width}, elt);
  }
  SoftmaxState unpack(ValueRange values) const {
    return SoftmaxState::unpack(values, knownMax ? 0 : rows * heads,
                                rows * heads);
  }
  /// Row r's accumulators in `acc`.
  MutableArrayRef<Value> rowOf(SmallVectorImpl<Value> &acc, int64_t r) const {
    return MutableArrayRef<Value>(acc).slice(r * chunks.size(), chunks.size());
  }
  /// One key tile starting at `first`: the body of both key loops.
  SoftmaxState step(ImplicitLocOpBuilder &b, Value first,
                    const SoftmaxState &in, bool masked);

  FlashLieAttentionOp op;
  ScoreCoefficients coefs;
  FloatType elt;
  PairFormEvaluator pairs;
  int64_t rows, heads, keyTile, lanes, keyVectors;
  SmallVector<ValueChunk> chunks;
  /// Every score ≤ 0 and the row max 0: the state holds no max.
  bool knownMax;
  // Per-kernel values built in build().
  Value len, offset, probBuffer;
  SmallVector<Scalars> querySplats; // [r][feature]
};

SoftmaxState ForwardSchedule::step(ImplicitLocOpBuilder &b, Value first,
                                   const SoftmaxState &in, bool masked) {
  ScalarBuilder vm(b, elt, lanes), sm(b, elt);
  Value keys = op.getKeys(), values = op.getValues();
  Value zero = sm.c(0.0);
  unsigned numKeyFeatures =
      cast<RankedTensorType>(keys.getType()).getDimSize(0);

  // The probabilities go through a stack buffer, [r][h][kv][lane], so
  // that each P·V FMA reads its p_j as a broadcast memory operand instead
  // of a lane shuffle: key vector `at` (its first key's offset in the
  // tile) of row and head `rh` at rh · keyTile + at.
  SoftmaxState out = in;
  auto storeProb = [&](ImplicitLocOpBuilder &kb, int64_t rh, Value at,
                       Value p) {
    vector::StoreOp::create(
        kb, p, probBuffer,
        ValueRange{arith::AddIOp::create(
            kb, at, arith::ConstantIndexOp::create(kb, rh * keyTile))});
  };
  // The key vector at `at`: its features loaded once, then per row r its
  // lane mask (masked tiles) and its scores s[h], passed to `use`.
  auto scoreKeys =
      [&](ImplicitLocOpBuilder &kb, Value at,
          function_ref<void(int64_t, ArrayRef<Value>, Value)> use) {
        ScalarBuilder kvm(kb, elt, lanes);
        Value start = arith::AddIOp::create(kb, first, at);
        Scalars keyFeatures;
        for (unsigned f = 0; f < numKeyFeatures; ++f) {
          Value fIdx = arith::ConstantIndexOp::create(kb, f);
          keyFeatures.push_back(vector::TransferReadOp::create(
              kb, vectorType(lanes), keys, ValueRange{fIdx, start}, zero,
              ArrayRef<bool>{!masked}));
        }
        for (int64_t r = 0; r < rows; ++r) {
          Value mask;
          if (masked)
            mask = buildKeyMask(
                kb, lanes, start, len,
                op.getCausal()
                    ? arith::AddIOp::create(
                          kb, offset, arith::ConstantIndexOp::create(kb, r))
                          .getResult()
                    : Value());
          use(r,
              coefs.buildScores(
                  kvm, pairs.evaluate(kvm, querySplats[r], keyFeatures).norms),
              mask);
        }
      };

  // With the known max, each key vector's probabilities are final as soon
  // as it is scored: a loop over the tile's key vectors (one copy of the
  // pair form per row, not per row and key vector) carries the sums and
  // stores the probabilities.
  if (knownMax) {
    auto vectors = scf::ForOp::create(
        b, arith::ConstantIndexOp::create(b, 0),
        arith::ConstantIndexOp::create(b, keyTile),
        arith::ConstantIndexOp::create(b, lanes), out.sum,
        [&](OpBuilder &nested, Location loc, Value at, ValueRange sums) {
          ImplicitLocOpBuilder kb(loc, nested);
          ScalarBuilder ksm(kb, elt), kvm(kb, elt, lanes);
          SmallVector<Value> next(sums);
          scoreKeys(kb, at, [&](int64_t r, ArrayRef<Value> s, Value mask) {
            for (int64_t h = 0; h < heads; ++h) {
              size_t rh = r * heads + h;
              SmallVector<Value> masks;
              if (mask)
                masks.push_back(mask);
              SoftmaxStep step =
                  buildSoftmaxStep(ksm, kvm, Value(), next[rh], {s[h]}, masks);
              next[rh] = step.sum;
              storeProb(kb, rh, at, step.probs.front());
            }
          });
          scf::YieldOp::create(kb, next);
        });
    out.sum.assign(vectors.getResults().begin(), vectors.getResults().end());
  }

  // Otherwise scores [r][h][kv] and (masked) lane masks [r][kv] of the
  // whole tile, for one horizontal max per tile, row and head.
  SmallVector<Value> scores(knownMax ? 0 : rows * heads * keyVectors);
  SmallVector<Value> valid(masked ? rows * keyVectors : 0);
  for (int64_t kv = 0; kv < (knownMax ? 0 : keyVectors); ++kv)
    scoreKeys(b, arith::ConstantIndexOp::create(b, kv * lanes),
              [&](int64_t r, ArrayRef<Value> s, Value mask) {
                if (mask)
                  valid[r * keyVectors + kv] = mask;
                for (int64_t h = 0; h < heads; ++h)
                  scores[(r * heads + h) * keyVectors + kv] = s[h];
              });

  // Online softmax, one horizontal max per tile, row and head.
  if (!knownMax)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < heads; ++h) {
        size_t rh = r * heads + h, base = rh * keyVectors;
        ArrayRef<Value> masks;
        if (masked)
          masks = ArrayRef<Value>(valid).slice(r * keyVectors, keyVectors);
        SoftmaxStep next = buildSoftmaxStep(
            sm, vm, in.max[rh], in.sum[rh],
            ArrayRef<Value>(scores).slice(base, keyVectors), masks);
        out.max[rh] = next.max;
        out.sum[rh] = next.sum;
        for (auto [kv, p] : llvm::enumerate(next.probs))
          storeProb(b, rh, arith::ConstantIndexOp::create(b, kv * lanes), p);
        buildRescale(b, elt, chunks, rowOf(out.acc, r), h, next.alpha);
      }

  // A GEMM micro-kernel over the tile's keys (rows × D accumulators, one
  // value row and one broadcast probability per row per key), kept as a
  // loop so that the accumulators stay in registers.
  Value lastKey =
      arith::SubIOp::create(b, len, arith::ConstantIndexOp::create(b, 1));
  auto pv = scf::ForOp::create(
      b, arith::ConstantIndexOp::create(b, 0),
      arith::ConstantIndexOp::create(b, keyTile),
      arith::ConstantIndexOp::create(b, 1), out.acc,
      [&](OpBuilder &nested, Location loc, Value k, ValueRange accs) {
        ImplicitLocOpBuilder lb(loc, nested);
        Value key = arith::AddIOp::create(lb, first, k);
        // A masked lane has p = 0; any row in bounds will do for it.
        if (masked)
          key = arith::MinUIOp::create(lb, key, lastKey);
        SmallVector<Value> row;
        for (const ValueChunk &chunk : chunks)
          row.push_back(vector::TransferReadOp::create(
              lb, vectorType(chunk.width), values,
              ValueRange{key, arith::ConstantIndexOp::create(lb, chunk.col)},
              zero, ArrayRef<bool>{true}));
        SmallVector<Value> next(accs);
        for (int64_t r = 0; r < rows; ++r)
          buildPVUpdate(
              lb, elt, chunks, rowOf(next, r),
              [&](int64_t h) -> Value {
                Value at =
                    arith::AddIOp::create(lb, k,
                                          arith::ConstantIndexOp::create(
                                              lb, (r * heads + h) * keyTile));
                return memref::LoadOp::create(lb, probBuffer, ValueRange{at});
              },
              row);
        scf::YieldOp::create(lb, next);
      });
  out.acc.assign(pv.getResults().begin(), pv.getResults().end());
  return out;
}

std::pair<Value, Value> ForwardSchedule::build(ImplicitLocOpBuilder &b) {
  ScalarBuilder sm(b, elt), vm(b, elt, lanes);
  len = tensor::DimOp::create(b, op.getKeys(), 1);
  offset = buildKeyPosition(b, op.getQueryOffset(), op.getKeyOffset());
  int64_t numQueryFeatures =
      cast<RankedTensorType>(op.getQueries().getType()).getDimSize(1);
  for (int64_t r = 0; r < rows; ++r) {
    Scalars splats;
    for (int64_t f = 0; f < numQueryFeatures; ++f)
      splats.push_back(vm.splat(tensor::ExtractOp::create(
          b, op.getQueries(),
          ValueRange{arith::ConstantIndexOp::create(b, r),
                     arith::ConstantIndexOp::create(b, f)})));
    querySplats.push_back(splats);
  }
  probBuffer = memref::AllocaOp::create(
      b, MemRefType::get({rows * heads * keyVectors * lanes}, elt));

  // Whole tiles every row sees run unmasked, the rest (causal diagonal,
  // sequence end) masked; keys no row sees are never visited.
  KeyRange range =
      buildKeyRange(b, len, offset, rows, keyTile, op.getCausal(),
                    /*cross=*/static_cast<bool>(op.getKeyOffset()));
  auto keyLoop = [&](Value lb, Value ub, const SoftmaxState &state,
                     bool masked) {
    auto loop = scf::ForOp::create(
        b, lb, ub, arith::ConstantIndexOp::create(b, keyTile), state.pack(),
        [&](OpBuilder &nested, Location loc, Value first, ValueRange args) {
          ImplicitLocOpBuilder ib(loc, nested);
          SoftmaxState next = step(ib, first, unpack(args), masked);
          scf::YieldOp::create(ib, next.pack());
        });
    return unpack(loop.getResults());
  };
  SoftmaxState state = SoftmaxState::initial(sm, vm, rows, heads, chunks,
                                             /*withMax=*/!knownMax);
  state = keyLoop(arith::ConstantIndexOp::create(b, 0), range.unmaskedEnd,
                  state, /*masked=*/false);
  state = keyLoop(range.unmaskedEnd, range.end, state, /*masked=*/true);

  // out = acc / Σ l, written into the destination; lse = m + log Σ l.
  Value out = op.getInit(), lse = op.getLseInit();
  for (int64_t r = 0; r < rows; ++r) {
    SmallVector<Value> totals;
    for (int64_t h = 0; h < heads; ++h) {
      size_t rh = r * heads + h;
      totals.push_back(buildLaneSum(b, state.sum[rh]));
      if (lse)
        lse = tensor::InsertOp::create(
            b,
            buildLogSumExp(sm, knownMax ? Value() : state.max[rh],
                           totals.back()),
            lse,
            ValueRange{arith::ConstantIndexOp::create(b, r),
                       arith::ConstantIndexOp::create(b, h)});
    }
    SmallVector<Value> result =
        buildNormalized(b, elt, chunks, rowOf(state.acc, r), totals);
    for (auto [chunk, value] : llvm::zip_equal(chunks, result))
      out = vector::TransferWriteOp::create(
                b, value, out,
                ValueRange{arith::ConstantIndexOp::create(b, r),
                           arith::ConstantIndexOp::create(b, chunk.col)},
                ArrayRef<bool>{true})
                .getResult();
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
      OpBuilder builder(op);
      // Mark where the kernel starts, to find its math ops afterwards.
      Operation *before = op->getPrevNode();
      ImplicitLocOpBuilder b(op.getLoc(), builder);
      ForwardSchedule kernel(
          op, strategyLanes(op, rowsType.getElementTypeBitWidth()));
      auto [out, lse] = kernel.build(b);
      // f32 kernels: vectorizable polynomial atan2/exp instead of per-lane
      // libm calls (KernelMath.h; accuracy in docs/geo.md). f64 keeps libm.
      if (rowsType.getElementType().isF32()) {
        collectKernelMath(before, op, approximate);
        for (func::FuncOp fn : kernel.getOutlined())
          collectKernelMath(fn, approximate);
      }
      op.getResult().replaceAllUsesWith(out);
      if (lse)
        op.getLse().replaceAllUsesWith(lse);
      op.erase();
    }
    if (failed(approximateKernelMath(&getContext(), approximate)))
      signalPassFailure();
  }
};

} // namespace
