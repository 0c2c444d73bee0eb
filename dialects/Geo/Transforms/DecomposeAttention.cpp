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
// Key tiles that every row sees in full run unmasked, all R rows at once;
// the causal diagonal and the end of the sequence run with lane masks, so
// the common case has no selects. The masked tiles (one or two per row
// block) and the outputs run one row at a time: the R rows' state goes
// into stack buffers, and a loop over the rows takes each row's state,
// runs the same key step for that row alone and writes the row's output.
// The masked step is thus one copy of the pair form, not a second copy of
// all R rows' unrolled code (a third of the forward kernel's instructions
// before), and it does the same arithmetic in the same order as an R-row
// step, so the results are the same bits. Keys beyond the block's last
// row are never visited when causal.
//
// The score loop's operations (the pair form, scores, exps, row sums)
// cover `score_vectors` machine vectors of keys each (the strategy's; 2
// with one query row, where a single key vector's dependency chain, from
// the pair form's division and polynomials through the exps, outlasts the
// out-of-order window), while P·V keeps machine vectors of columns. The
// exps' arguments are ≤ 0 (s − m', or s with the known max): they carry
// the fastmath flags that let the f32 polynomial drop its overflow test
// and flush below 2⁻¹²⁵ (KernelMath.h), since every p ≤ 1 sits next to a
// row sum ≥ 1.
//
// Cache blocks (the strategy's query_block and key_block, on ops of
// query_block rows): the op's rows run as micro-kernels of query_rows
// rows over one block of key_block keys after another, every
// micro-kernel over a block before the next block, with each row's state
// in the stack buffers of the masked row loop between blocks. A block's
// key features and values then come from memory once per op and from the
// cache for the other micro-kernels, where one micro-kernel per op
// streams all keys and values (more than an L2 at L = 4096, D = 64).
// Blocks are whole key tiles: every row does the same arithmetic in the
// same order as without blocks. A one-row op under cache blocks is a
// sequence shorter than a block (geo-tile-attention moves the last block
// back instead of cutting remainder ops): all its key tiles run masked,
// one copy of the key step.
//
// The rows' query features sit in the same stack buffer as the tile's
// probabilities, and the pair form broadcasts them from there (memory
// operands of its first FMAs) instead of holding R × features splats in
// registers through the key loop, where they took the registers of the
// P·V accumulators.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/AttentionKernel.h"
#include "dialects/Geo/Transforms/KernelMath.h"
#include "dialects/Geo/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

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
/// elements of `bits` width, and how P·V multiplies.
strategy::VectorAttentionAttr strategyOf(FlashLieAttentionOp op,
                                         unsigned bits) {
  auto values = cast<RankedTensorType>(op.getValues().getType());
  return strategy::vectorAttentionOf(op, bits, values.getShape().back());
}

/// The bf16 values a tile's P·V reads: V packed once per call
/// (buildPackedValuesBF16), and the tile's batch indices into it.
struct PackedValues {
  Value packed;
  SmallVector<Value> batch;
};

/// The CPU forward schedule of one tiled op (AttentionKernel.h builds
/// the math): key tiles of `keyTile` keys in vectors of `lanes`, R query
/// rows sharing every key load, the state in registers.
class ForwardSchedule {
public:
  ForwardSchedule(FlashLieAttentionOp op, strategy::VectorAttentionAttr tiles)
      : op(op), coefs(ScoreCoefficients::of(op)),
        elt(cast<FloatType>(
            cast<RankedTensorType>(op.getValues().getType()).getElementType())),
        pairs(op.getGroup().getModel(), op.getGroup(), elt,
              op->getParentOfType<ModuleOp>(), op.getLoc()) {
    auto vType = cast<RankedTensorType>(op.getValues().getType());
    rows = cast<RankedTensorType>(op.getQueries().getType()).getDimSize(0);
    heads = op.getHeads();
    keyTile = *op.getKeyTile();
    lanes = std::min<int64_t>(tiles.getLanes(), keyTile);
    if (keyTile % lanes != 0)
      lanes = keyTile;
    chunks = splitValueColumns(heads, vType.getDimSize(1), lanes);
    // P·V keeps machine vectors of columns; the score loop's operations
    // cover score_vectors machine vectors of keys each (a straight-line
    // pair form: per-lane calls gain nothing from wider vectors).
    int64_t wide = lanes * tiles.getScoreVectors();
    if (op.getGroup().getModel().hasStraightLinePairForm() &&
        keyTile % wide == 0)
      lanes = wide;
    keyVectors = keyTile / lanes;
    // Cache blocks (query_block, key_block): an op of query_block rows
    // (geo-tile-attention's blocks) runs as micro-kernels of the
    // strategy's rows over one block of keys after another. Ops of other
    // sizes are one micro-kernel.
    micro = rows;
    int64_t microRows =
        chooseQueryRows(op.getGroup().getModel(), tiles.getQueryRows());
    if (tiles.getKeyBlock() > 0 && tiles.getKeyBlock() % keyTile == 0 &&
        rows == tiles.getQueryBlock() && rows > microRows &&
        rows % microRows == 0) {
      micro = microRows;
      keyBlock = tiles.getKeyBlock();
    }
    // With cache blocks, a one-row op is a sequence shorter than a block
    // (geo-tile-attention): all its key tiles run masked, so its kernel
    // holds one copy of the key step, not two.
    allMasked =
        rows == 1 &&
        chooseQueryBlock(op.getGroup().getModel(), tiles.getQueryRows(),
                         tiles.getQueryBlock(), tiles.getKeyBlock()) > 1;
    numQueryFeatures =
        cast<RankedTensorType>(op.getQueries().getType()).getDimSize(1);
    // The self pair (j = i, score 0) bounds the row max only when queries
    // and keys are one token set; the cross form (a key offset) keeps the
    // running max.
    knownMax = coefs.allNonPositive() && !op.getKeyOffset();
    // bf16 products where the strategy asks for them and the chunks fit
    // vdpbf16ps; f32 FMAs otherwise.
    bf16 = tiles.getProducts() == strategy::AttentionProducts::BF16Dot &&
           supportsBF16Products(elt, chunks, keyTile);
  }

  /// Whether P·V runs on bf16 products; then the kernel reads `values`
  /// before it is built.
  bool usesBF16() const { return bf16; }
  void setPackedValues(PackedValues values) { packed = std::move(values); }

  /// Builds the kernel before `op` and returns the output tensor and,
  /// when the op has one, the lse tensor.
  std::pair<Value, Value> build(ImplicitLocOpBuilder &b);
  /// The pair-form functions the kernel outlined.
  ArrayRef<func::FuncOp> getOutlined() const { return pairs.getOutlined(); }

private:
  VectorType vectorType(int64_t width) const {
    return VectorType::get({width}, elt);
  }
  SoftmaxState unpack(ValueRange values, int64_t count) const {
    return SoftmaxState::unpack(values, knownMax ? 0 : count * heads,
                                count * heads);
  }
  /// The slot of row `row`'s query feature `f` in the probability
  /// buffer, after the probabilities of one micro-kernel's rows.
  Value featureSlot(ImplicitLocOpBuilder &b, Value row, int64_t f) const {
    return arith::AddIOp::create(
        b,
        arith::MulIOp::create(
            b, row, arith::ConstantIndexOp::create(b, numQueryFeatures)),
        arith::ConstantIndexOp::create(b, featureBase() + f));
  }
  /// Row r's accumulators in `acc`.
  MutableArrayRef<Value> rowOf(SmallVectorImpl<Value> &acc, int64_t r) const {
    return MutableArrayRef<Value>(acc).slice(r * chunks.size(), chunks.size());
  }
  /// The query rows one key step scores: `count` rows, the first of
  /// which is row `base` of the op's (the causal mask's row offset and
  /// the rows' slots in the feature buffer).
  struct RowBlock {
    int64_t count;
    Value base;
    /// The rows' features are staged at stagedSlot (a blocked
    /// micro-kernel's), not at featureSlot.
    bool staged = false;
  };
  /// The first slot of the rows' query features: after one micro-kernel's
  /// probabilities and, with cache blocks, its staged features.
  int64_t featureBase() const {
    return micro * heads * keyTile + (keyBlock ? micro * numQueryFeatures : 0);
  }
  /// The slot of feature `f` of a blocked micro-kernel's row `r`, staged
  /// at constant offsets: the pair form's broadcasts then address the
  /// stack pointer plus a constant, as without blocks, rather than a
  /// slot that moves with the micro-kernel's rows (one more register in
  /// the score loop).
  int64_t stagedSlot(int64_t r, int64_t f) const {
    return micro * heads * keyTile + r * numQueryFeatures + f;
  }
  /// One key tile starting at `first` for the rows of `block`: the body
  /// of both key loops.
  SoftmaxState step(ImplicitLocOpBuilder &b, Value first, const RowBlock &block,
                    const SoftmaxState &in, bool masked);
  /// The key tiles [lb, ub) for the rows of `block`, from `state`.
  SoftmaxState keyLoop(ImplicitLocOpBuilder &b, Value lb, Value ub,
                       const RowBlock &block, const SoftmaxState &state,
                       bool masked);
  /// Writes the output row `row` (and its lse) from its final `state`
  /// (one row's) into `out` (and `lse`).
  std::pair<Value, Value> finishRow(ImplicitLocOpBuilder &b, Value row,
                                    const SoftmaxState &state, Value out,
                                    Value lse);

  FlashLieAttentionOp op;
  ScoreCoefficients coefs;
  FloatType elt;
  PairFormEvaluator pairs;
  int64_t rows, heads, keyTile, lanes, keyVectors;
  /// Rows of one micro-kernel: `rows`, or with cache blocks the
  /// strategy's query rows, run over the op's rows block by block of
  /// `keyBlock` keys (0: no blocks).
  int64_t micro, keyBlock = 0;
  SmallVector<ValueChunk> chunks;
  /// Every score ≤ 0 and the row max 0: the state holds no max.
  bool knownMax;
  /// Every key tile runs masked (a one-row op with cache blocks).
  bool allMasked = false;
  /// Query features per row.
  int64_t numQueryFeatures;
  /// P·V on bf16 products (packed values, probabilities rounded into
  /// probBF16).
  bool bf16 = false;
  PackedValues packed;
  // Per-kernel values built in build().
  Value len, offset, probBuffer, probBF16;
};

SoftmaxState ForwardSchedule::step(ImplicitLocOpBuilder &b, Value first,
                                   const RowBlock &block,
                                   const SoftmaxState &in, bool masked) {
  // The rows of this step: all R, or one in the masked row loop.
  int64_t rows = block.count;
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
    Value slot = arith::AddIOp::create(
        kb, at, arith::ConstantIndexOp::create(kb, rh * keyTile));
    // bf16 products: P in [0, 1] rounded once, at the same slot of its own
    // buffer (the f32 sums l take the unrounded p).
    if (bf16)
      vector::StoreOp::create(
          kb,
          arith::TruncFOp::create(
              kb,
              VectorType::get(cast<VectorType>(p.getType()).getShape(),
                              kb.getBF16Type()),
              p),
          probBF16, ValueRange{slot});
    else
      vector::StoreOp::create(kb, p, probBuffer, ValueRange{slot});
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
          if (masked) {
            Value last;
            if (op.getCausal())
              last = arith::AddIOp::create(
                  kb, offset,
                  arith::AddIOp::create(kb, block.base,
                                        arith::ConstantIndexOp::create(kb, r)));
            mask = buildKeyMask(kb, lanes, start, len, last);
          }
          // The row's query features, broadcast from the stack buffer.
          Value row = arith::AddIOp::create(
              kb, block.base, arith::ConstantIndexOp::create(kb, r));
          Scalars q;
          for (int64_t f = 0; f < numQueryFeatures; ++f)
            q.push_back(kvm.splat(memref::LoadOp::create(
                kb, probBuffer,
                ValueRange{block.staged ? Value(arith::ConstantIndexOp::create(
                                              kb, stagedSlot(r, f)))
                                        : featureSlot(kb, row, f)})));
          use(r,
              coefs.buildScores(kvm, pairs.evaluate(kvm, q, keyFeatures).norms),
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
                  buildSoftmaxStep(ksm, kvm, Value(), next[rh], {s[h]}, masks,
                                   /*boundedExp=*/elt.isF32());
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
            ArrayRef<Value>(scores).slice(base, keyVectors), masks,
            /*boundedExp=*/elt.isF32());
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
  if (bf16) {
    // The same micro-kernel on pairs of keys: per pair one packed value
    // row (two keys' bf16 columns interleaved) and per row and head one
    // broadcast pair of bf16 probabilities, summed in f32 by vdpbf16ps.
    Value two = arith::ConstantIndexOp::create(b, 2);
    Value lastPair = arith::DivUIOp::create(b, lastKey, two);
    auto pv = scf::ForOp::create(
        b, arith::ConstantIndexOp::create(b, 0),
        arith::ConstantIndexOp::create(b, keyTile), two, out.acc,
        [&](OpBuilder &nested, Location loc, Value k, ValueRange accs) {
          ImplicitLocOpBuilder lb(loc, nested);
          // `first` is a multiple of the (even) key tile.
          Value pair =
              arith::DivUIOp::create(lb, arith::AddIOp::create(lb, first, k),
                                     arith::ConstantIndexOp::create(lb, 2));
          // Pairs past the end have p = 0; any pair in bounds will do.
          if (masked)
            pair = arith::MinUIOp::create(lb, pair, lastPair);
          SmallVector<Value> row;
          for (const ValueChunk &chunk : chunks)
            row.push_back(vector::TransferReadOp::create(
                lb, VectorType::get({2 * chunk.width}, lb.getBF16Type()),
                packed.packed,
                withBatch(packed.batch, {pair, arith::ConstantIndexOp::create(
                                                   lb, 2 * chunk.col)}),
                arith::ConstantOp::create(lb, lb.getZeroAttr(lb.getBF16Type())),
                ArrayRef<bool>{true}));
          SmallVector<Value> next(accs);
          for (int64_t r = 0; r < rows; ++r)
            buildPVUpdateBF16(
                lb, chunks, rowOf(next, r),
                [&](int64_t h) -> Value {
                  Value at =
                      arith::AddIOp::create(lb, k,
                                            arith::ConstantIndexOp::create(
                                                lb, (r * heads + h) * keyTile));
                  return vector::LoadOp::create(
                      lb, VectorType::get({2}, lb.getBF16Type()), probBF16,
                      ValueRange{at});
                },
                row);
          scf::YieldOp::create(lb, next);
        });
    out.acc.assign(pv.getResults().begin(), pv.getResults().end());
    return out;
  }
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

SoftmaxState ForwardSchedule::keyLoop(ImplicitLocOpBuilder &b, Value lb,
                                      Value ub, const RowBlock &block,
                                      const SoftmaxState &state, bool masked) {
  auto loop = scf::ForOp::create(
      b, lb, ub, arith::ConstantIndexOp::create(b, keyTile), state.pack(),
      [&](OpBuilder &nested, Location loc, Value first, ValueRange args) {
        ImplicitLocOpBuilder ib(loc, nested);
        SoftmaxState next =
            step(ib, first, block, unpack(args, block.count), masked);
        scf::YieldOp::create(ib, next.pack());
      });
  return unpack(loop.getResults(), block.count);
}

std::pair<Value, Value> ForwardSchedule::finishRow(ImplicitLocOpBuilder &b,
                                                   Value row,
                                                   const SoftmaxState &state,
                                                   Value out, Value lse) {
  ScalarBuilder sm(b, elt);
  SmallVector<Value> totals;
  for (int64_t h = 0; h < heads; ++h) {
    totals.push_back(buildLaneSum(b, state.sum[h]));
    if (lse)
      lse = tensor::InsertOp::create(
          b,
          buildLogSumExp(sm, knownMax ? Value() : state.max[h], totals.back()),
          lse, ValueRange{row, arith::ConstantIndexOp::create(b, h)});
  }
  SmallVector<Value> result =
      buildNormalized(b, elt, chunks, state.acc, totals);
  for (auto [chunk, value] : llvm::zip_equal(chunks, result))
    out = vector::TransferWriteOp::create(
              b, value, out,
              ValueRange{row, arith::ConstantIndexOp::create(b, chunk.col)},
              ArrayRef<bool>{true})
              .getResult();
  return {out, lse};
}

std::pair<Value, Value> ForwardSchedule::build(ImplicitLocOpBuilder &b) {
  ScalarBuilder sm(b, elt), vm(b, elt, lanes);
  len = tensor::DimOp::create(b, op.getKeys(), 1);
  offset = buildKeyPosition(b, op.getQueryOffset(), op.getKeyOffset());
  // The probabilities of a tile, [r][h][key], then the rows' query
  // features, [r][f]. The score loop broadcasts each feature from its slot
  // (a memory operand of the pair form's first FMA) rather than keeping
  // rows × features splats in registers through the whole key loop, where
  // they would crowd out the P·V accumulators. Stores of the tile's
  // probabilities into the same buffer keep LLVM from promoting the
  // features back into registers.
  probBuffer = memref::AllocaOp::create(
      b, MemRefType::get({featureBase() + rows * numQueryFeatures}, elt));
  if (bf16)
    probBF16 = memref::AllocaOp::create(
        b, MemRefType::get({micro * heads * keyTile}, b.getBF16Type()));
  // One row's features (one vector) per iteration of a loop over the
  // rows: scalar and unrolled, the copy of 16 rows' features was 30 % of
  // a blocked kernel's LLVM IR.
  auto stageQueries = [&](ImplicitLocOpBuilder &ib, Value row) {
    Value features = vector::TransferReadOp::create(
        ib, vectorType(numQueryFeatures), op.getQueries(),
        ValueRange{row, arith::ConstantIndexOp::create(ib, 0)}, sm.c(0.0),
        ArrayRef<bool>{true});
    vector::StoreOp::create(ib, features, probBuffer,
                            ValueRange{featureSlot(ib, row, 0)});
  };
  if (rows == 1)
    stageQueries(b, arith::ConstantIndexOp::create(b, 0));
  else
    scf::ForOp::create(
        b, arith::ConstantIndexOp::create(b, 0),
        arith::ConstantIndexOp::create(b, rows),
        arith::ConstantIndexOp::create(b, 1), ValueRange{},
        [&](OpBuilder &nested, Location loc, Value row, ValueRange) {
          ImplicitLocOpBuilder ib(loc, nested);
          stageQueries(ib, row);
          scf::YieldOp::create(ib);
        });

  // Whole tiles every row sees run unmasked, all rows at once; keys no
  // row sees are never visited.
  KeyRange range =
      buildKeyRange(b, len, offset, rows, keyTile, op.getCausal(),
                    /*cross=*/static_cast<bool>(op.getKeyOffset()));
  Value zero = arith::ConstantIndexOp::create(b, 0);
  if (allMasked)
    range.unmaskedEnd = zero;
  SoftmaxState state;
  if (!keyBlock) {
    state = SoftmaxState::initial(sm, vm, rows, heads, chunks,
                                  /*withMax=*/!knownMax);
    if (!allMasked)
      state = keyLoop(b, zero, range.unmaskedEnd, RowBlock{rows, zero}, state,
                      /*masked=*/false);
  }

  // The rest (causal diagonal, sequence end) masked, and the outputs: one
  // row at a time. out = acc / Σ l, written into the destination; lse =
  // m + log Σ l.
  auto finish = [&](ImplicitLocOpBuilder &rb, Value row, SoftmaxState one,
                    Value out, Value lse) {
    one = keyLoop(rb, range.unmaskedEnd, range.end, RowBlock{1, row}, one,
                  /*masked=*/true);
    return finishRow(rb, row, one, out, lse);
  };
  if (rows == 1) {
    auto [out, lse] = finish(b, zero, state, op.getInit(), op.getLseInit());
    return {out, lse};
  }
  // The state in buffers of one slot per row: maxima [r][h], lane sums
  // [r][h][lane], accumulators [r][column] (the value columns of all
  // heads, chunk by chunk).
  int64_t dim = cast<RankedTensorType>(op.getValues().getType()).getDimSize(1);
  auto c = [&](ImplicitLocOpBuilder &ib, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ib, v);
  };
  auto buffer = [&](int64_t size) {
    return memref::AllocaOp::create(b, MemRefType::get({size}, elt))
        .getResult();
  };
  // Slot `off` of row `row` in a buffer of `stride` slots per row.
  auto at = [&](ImplicitLocOpBuilder &ib, Value row, int64_t stride,
                int64_t off) -> Value {
    return arith::AddIOp::create(
        ib, arith::MulIOp::create(ib, row, c(ib, stride)), c(ib, off));
  };
  Value maxBuf = knownMax ? Value() : buffer(rows * heads);
  Value sumBuf = buffer(rows * heads * lanes), accBuf = buffer(rows * dim);
  // The state of rows `rowIds` (the rows of `s`, in order) into the
  // buffers, and back.
  auto storeRows = [&](ImplicitLocOpBuilder &ib, ArrayRef<Value> rowIds,
                       const SoftmaxState &s) {
    for (auto [r, row] : llvm::enumerate(rowIds)) {
      for (int64_t h = 0; h < heads; ++h) {
        if (maxBuf)
          memref::StoreOp::create(ib, s.max[r * heads + h], maxBuf,
                                  ValueRange{at(ib, row, heads, h)});
        vector::StoreOp::create(
            ib, s.sum[r * heads + h], sumBuf,
            ValueRange{at(ib, row, heads * lanes, h * lanes)});
      }
      for (auto [i, chunk] : llvm::enumerate(chunks))
        vector::StoreOp::create(ib, s.acc[r * chunks.size() + i], accBuf,
                                ValueRange{at(ib, row, dim, chunk.col)});
    }
  };
  auto loadRows = [&](ImplicitLocOpBuilder &ib, ArrayRef<Value> rowIds) {
    SoftmaxState s;
    for (Value row : rowIds)
      for (int64_t h = 0; h < heads; ++h) {
        if (maxBuf)
          s.max.push_back(memref::LoadOp::create(
              ib, maxBuf, ValueRange{at(ib, row, heads, h)}));
        s.sum.push_back(vector::LoadOp::create(
            ib, vectorType(lanes), sumBuf,
            ValueRange{at(ib, row, heads * lanes, h * lanes)}));
      }
    for (Value row : rowIds)
      for (const ValueChunk &chunk : chunks)
        s.acc.push_back(
            vector::LoadOp::create(ib, vectorType(chunk.width), accBuf,
                                   ValueRange{at(ib, row, dim, chunk.col)}));
    return s;
  };
  if (!keyBlock) {
    SmallVector<Value> rowIds;
    for (int64_t r = 0; r < rows; ++r)
      rowIds.push_back(c(b, r));
    storeRows(b, rowIds, state);
  } else {
    // Cache blocks: every row starts from the initial state; then per
    // block of keys, every micro-kernel of the op's rows takes its rows'
    // state, runs the block's unmasked tiles and puts the state back. A
    // block's key features and values come from memory for the first
    // micro-kernel and from the cache for the others; the tiles are those
    // of the unblocked loop (blocks are whole tiles), so every row sees
    // the same arithmetic in the same order.
    SoftmaxState initial = SoftmaxState::initial(sm, vm, 1, heads, chunks,
                                                 /*withMax=*/!knownMax);
    scf::ForOp::create(
        b, zero, c(b, rows), c(b, 1), ValueRange{},
        [&](OpBuilder &nested, Location loc, Value row, ValueRange) {
          ImplicitLocOpBuilder ib(loc, nested);
          storeRows(ib, {row}, initial);
          scf::YieldOp::create(ib);
        });
    scf::ForOp::create(
        b, zero, range.unmaskedEnd, c(b, keyBlock), ValueRange{},
        [&](OpBuilder &nested, Location loc, Value first, ValueRange) {
          ImplicitLocOpBuilder kb(loc, nested);
          Value last = arith::MinUIOp::create(
              kb, arith::AddIOp::create(kb, first, c(kb, keyBlock)),
              range.unmaskedEnd);
          scf::ForOp::create(
              kb, c(kb, 0), c(kb, rows), c(kb, micro), ValueRange{},
              [&](OpBuilder &nested, Location loc, Value base, ValueRange) {
                ImplicitLocOpBuilder ib(loc, nested);
                SmallVector<Value> rowIds = {base};
                for (int64_t r = 1; r < micro; ++r)
                  rowIds.push_back(arith::AddIOp::create(ib, base, c(ib, r)));
                for (auto [r, row] : llvm::enumerate(rowIds))
                  vector::StoreOp::create(
                      ib,
                      vector::LoadOp::create(
                          ib, vectorType(numQueryFeatures), probBuffer,
                          ValueRange{featureSlot(ib, row, 0)}),
                      probBuffer, ValueRange{c(ib, stagedSlot(r, 0))});
                SoftmaxState s =
                    keyLoop(ib, first, last, RowBlock{micro, base, true},
                            loadRows(ib, rowIds),
                            /*masked=*/false);
                storeRows(ib, rowIds, s);
                scf::YieldOp::create(ib);
              });
          scf::YieldOp::create(kb);
        });
  }
  SmallVector<Value> outs = {op.getInit()};
  if (op.getLseInit())
    outs.push_back(op.getLseInit());
  auto loop = scf::ForOp::create(
      b, zero, c(b, rows), c(b, 1), outs,
      [&](OpBuilder &nested, Location loc, Value row, ValueRange dests) {
        ImplicitLocOpBuilder rb(loc, nested);
        SoftmaxState one = loadRows(rb, {row});
        auto [out, lse] = finish(rb, row, one, dests[0],
                                 dests.size() > 1 ? dests[1] : Value());
        SmallVector<Value> next = {out};
        if (lse)
          next.push_back(lse);
        scf::YieldOp::create(rb, next);
      });
  return {loop.getResult(0), op.getLseInit() ? loop.getResult(1) : Value()};
}

/// The full value tensor a tile of geo-tile-attention slices (batch
/// element `batch` of its [batch...] x L x D, all keys and columns), or
/// null when `values` is not such a slice.
Value fullValues(Value values, SmallVectorImpl<Value> &batch) {
  auto slice = values.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return Value();
  Value source = slice.getSource();
  auto type = slice.getSourceType();
  int64_t rank = type.getRank(), nb = rank - 2;
  if (rank < 2 || !slice.hasUnitStride())
    return Value();
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets(),
                            sizes = slice.getMixedSizes();
  for (int64_t d = 0; d < nb; ++d)
    if (!isConstantIntValue(sizes[d], 1))
      return Value();
  // All keys (the source's dim, or its static size) and all columns.
  auto full = [&](int64_t d) {
    if (!isConstantIntValue(offsets[d], 0))
      return false;
    if (!type.isDynamicDim(d))
      return isConstantIntValue(sizes[d], type.getDimSize(d));
    auto size = dyn_cast_if_present<Value>(sizes[d]);
    auto dimOp = size ? size.getDefiningOp<tensor::DimOp>() : nullptr;
    return dimOp && dimOp.getSource() == source &&
           dimOp.getConstantIndex() == d;
  };
  if (!full(nb) || !full(nb + 1))
    return Value();
  OpBuilder builder(slice);
  for (int64_t d = 0; d < nb; ++d)
    batch.push_back(
        getValueOrCreateConstantIndexOp(builder, slice.getLoc(), offsets[d]));
  return source;
}

/// The values of `op` packed for bf16 products: the full value tensor it
/// slices packed once (reused through `cache` by every tile loop after
/// the first), before the outermost loop around `op` that it is defined
/// outside of; `op`'s own values, packed before it, when they are not a
/// slice.
PackedValues packValues(FlashLieAttentionOp op, DenseMap<Value, Value> &cache) {
  PackedValues result;
  Value source = fullValues(op.getValues(), result.batch);
  if (!source) {
    source = op.getValues();
    result.batch.clear();
  }
  Block *block = source.getParentBlock();
  Operation *anchor = op;
  while (anchor && anchor->getBlock() != block)
    anchor = anchor->getParentOp();
  if (!anchor) {
    source = op.getValues();
    result.batch.clear();
    anchor = op;
  }
  auto it = cache.find(source);
  if (it != cache.end()) {
    Operation *def = it->second.getDefiningOp();
    if (def->getBlock() == anchor->getBlock() && def->isBeforeInBlock(anchor)) {
      result.packed = it->second;
      return result;
    }
  }
  OpBuilder builder(anchor);
  ImplicitLocOpBuilder b(op.getLoc(), builder);
  result.packed = buildPackedValuesBF16(b, source);
  cache[source] = result.packed;
  return result;
}

struct GeoDecomposeAttention
    : torsor::geo::impl::GeoDecomposeAttentionBase<GeoDecomposeAttention> {
  void runOnOperation() override {
    SmallVector<FlashLieAttentionOp> ops;
    getOperation()->walk([&](FlashLieAttentionOp op) { ops.push_back(op); });
    SmallVector<Operation *> approximate;
    // Values packed for bf16 products, per full value tensor: once per
    // call, before the tile loops that read it.
    DenseMap<Value, Value> packedSources;
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
      ForwardSchedule kernel(op,
                             strategyOf(op, rowsType.getElementTypeBitWidth()));
      if (kernel.usesBF16())
        kernel.setPackedValues(packValues(op, packedSources));
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
