//===- DecomposeAttentionGrad.cpp - Flash backward to vector loops --------===//
//
// geo-decompose-attention-grad: lowers geo.flash_lie_attention_grad to
// parallel loops over vectors (FlashAttention-2's backward, atomics-free):
//
//   row pass, over (batch element, query tile of R rows) (torsor.parallel):
//     D_i = ⟨dO_i, O_i⟩ per head;
//     lse_i per head from the op's lse operand (the fused forward's) or,
//       without one, a recompute of the scores: per-lane sums of exp(s)
//       in the self form (every λ ≥ 0, so scores ≤ 0, and the self pair
//       makes the row max 0), else (two token sets, no self pair) a
//       running max and per-lane sums as the forward's online softmax;
//     lse_i and D_i are stored: 2·heads scalars per row.
//   CPU (`backward = one_pass`), one pass over (batch element, key chunk)
//     (torsor.parallel): chunk
//     c of 8 takes key blocks c and 15 − c of every 16, of `key_tile`
//     keys (under a causal mask a mirrored pair is as much work as any
//     other); per block, the
//     query rows that may see it in row blocks of R, and per row block the
//     block's key vectors: P = exp(s − lse) (with the known max 0,
//     e^s · e^{−lse}), dP = dO_i·v_j (the block's keys and values packed
//     per key vector, [F, lanes], in the block's stack scratch, so a key
//     vector's features are read at fixed offsets from one address; each
//     value column loaded once for the R rows), dS = P (dP − D), n̄_b = Σ_h dS
//     c_hb and the adjoint of the group model's pair form: dk_j and dv_j += P
//     dO_i accumulate per lane in the block's stack scratch, dq_i per lane over
//     the block, then lane-summed into chunk c's partial [chunks, Lq, Fq];
//     a last parallel loop over rows sums the partials. Each pair's form
//     (and exp) is evaluated once. (DecomposeAttentionGradOnePass.cpp.)
//   GPU (vectors of one lane: a thread per row or key), two passes (the
//   strategy's `backward = two_pass`):
//     pass A also accumulates dq per row over every key it sees;
//     pass B, over (batch element, key vector): for every query i that may
//     see them, the same P and dS from the stored lse_i and D_i,
//     dv_j += P dO_i and the pair form's adjoint gives dk_j, both
//     accumulated per lane in registers.
//
// Each pass recomputes the pair block norms from the per-token features,
// so no L × L tensor (scores, probabilities or log coordinates) exists;
// memory beyond the inputs and gradients is O(L·(heads + chunks·Fq)) plus
// (two passes) the feature-major copies of V and dV. The derivative of the pair
// form is buildPairBlockNormsVJP: the adjoint of the same formula the forward
// kernel runs, on vectors (one pair per lane), or, for a pair form that
// builds loops (declared groups' iterative log), per lane with scalar code
// as the forward does, with the log's derivative from the group model.
// Scores, masks, softmax statistics and the pair form and its adjoint are
// AttentionKernel.h's, shared with both forward kernels.
//
// First, geo.lie_cross_attention_grad (the block backward on group
// elements) is expanded into pair features, a flash backward with
// offsets, and the features' pullbacks. With offsets
// (the block backward of two token sets) the row pass (and pass A) runs
// over the Lq query rows and the key loops over the Lk keys, masked at the
// offsets' diagonal.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/LoopAttributes.h"
#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/AttentionKernel.h"
#include "dialects/Geo/Transforms/GradSchedule.h"
#include "dialects/Geo/Transforms/KernelMath.h"
#include "dialects/Geo/Transforms/Passes.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace torsor::geo {
#define GEN_PASS_DEF_GEODECOMPOSEATTENTIONGRAD
#include "dialects/Geo/Transforms/Passes.h.inc"
} // namespace torsor::geo

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using namespace torsor::geo::grad;

namespace {

/// The schedule's one read of the target strategy.
GradTiles strategyTiles(FlashLieAttentionGradOp op) {
  auto vType = cast<RankedTensorType>(op.getValues().getType());
  strategy::VectorAttentionAttr tiles = strategy::vectorAttentionOf(
      op, vType.getElementTypeBitWidth(), vType.getShape().back());
  return {tiles.getLanes(), tiles.getQueryRows(), tiles.getKeyTile(),
          tiles.getBackward() == strategy::GradSchedule::OnePass};
}

} // namespace

SmallVector<Value> GradSchedule::passATile(ImplicitLocOpBuilder &b,
                                           ValueRange state, ValueRange batch,
                                           Value row0, int64_t tileRows) {
  ScalarBuilder sm(b, elt), vm(b, elt, lanes);
  Value dq = state[0], lse = state[1], dsum = state[2];
  Value zeroIdx = idx(b, 0);
  if (cross)
    diagonal = diagonalHere(b);
  Value step = idx(b, lanes);

  // Per row: query features (splats), dO (scalars), D per head.
  // Rows past the last (the last tile of fewer than R rows) repeat it:
  // they compute and write its values again, so that the key loops are
  // built once, not once for R rows and again for one.
  SmallVector<Value> rowIdx(tileRows);
  SmallVector<Scalars> qSplat(tileRows), dOut(tileRows);
  SmallVector<SmallVector<Value>> dvec(tileRows);
  Value lastRow = arith::SubIOp::create(b, queryLen, idx(b, 1));
  for (int64_t r = 0; r < tileRows; ++r) {
    Value row = arith::AddIOp::create(b, row0, idx(b, r));
    rowIdx[r] = r == 0 ? row : arith::MinUIOp::create(b, row, lastRow);
    for (unsigned f = 0; f < numQ; ++f)
      qSplat[r].push_back(
          vm.splat(at(b, queries, batch, rowIdx[r], idx(b, f))));
    for (int64_t h = 0; h < heads; ++h) {
      Value acc = sm.c(0.0);
      for (int64_t d = h * headDim; d < (h + 1) * headDim; ++d) {
        Value g = at(b, outGrad, batch, rowIdx[r], idx(b, d));
        Value o = at(b, out, batch, rowIdx[r], idx(b, d));
        dOut[r].push_back(g);
        acc = sm.fma(g, o, acc);
      }
      dvec[r].push_back(acc);
    }
  }
  // Keys the tile's rows may see: [0, end), row r up to `last[r]`.
  Value end = buildKeyRange(b, len, keyPosition(b, row0), tileRows,
                            /*tile=*/0, op.getCausal(), cross)
                  .end;
  SmallVector<Value> last(tileRows);
  if (op.getCausal())
    for (int64_t r = 0; r < tileRows; ++r)
      last[r] = keyPosition(b, rowIdx[r]);

  SmallVector<Value> lseRow(tileRows * heads);
  if (givenLse) {
    // The forward's statistics: no recompute.
    for (int64_t r = 0; r < tileRows; ++r)
      for (int64_t h = 0; h < heads; ++h)
        lseRow[r * heads + h] = at(b, givenLse, batch, rowIdx[r], idx(b, h));
  } else {
    // Stats: lse per row and head from a recompute of the scores, with
    // the online softmax's running max unless the row max is known (0:
    // the self pair, which two token sets do not have).
    size_t maxes = knownMax ? 0 : tileRows * heads;
    SoftmaxState init = SoftmaxState::initial(sm, vm, tileRows, heads, {},
                                              /*withMax=*/!knownMax);
    auto stats = scf::ForOp::create(
        b, zeroIdx, end, step, init.pack(),
        [&](OpBuilder &nested, Location loc, Value j0, ValueRange args) {
          ImplicitLocOpBuilder lb(loc, nested);
          ScalarBuilder lsm(lb, elt), lvm(lb, elt, lanes);
          Scalars k;
          for (unsigned f = 0; f < numK; ++f)
            k.push_back(loadKeys(lb, keys, batch, f, j0));
          SoftmaxState in = SoftmaxState::unpack(args, maxes, tileRows * heads);
          SoftmaxState next = in;
          for (int64_t r = 0; r < tileRows; ++r) {
            Value mask = buildKeyMask(lb, lanes, j0, len, last[r]);
            SmallVector<Value> s =
                coefs.buildScores(lvm, pairs.evaluate(lvm, qSplat[r], k).norms);
            for (int64_t h = 0; h < heads; ++h) {
              size_t rh = r * heads + h;
              SoftmaxStep st =
                  buildSoftmaxStep(lsm, lvm, knownMax ? Value() : in.max[rh],
                                   in.sum[rh], {s[h]}, {mask});
              if (!knownMax)
                next.max[rh] = st.max;
              next.sum[rh] = st.sum;
            }
          }
          scf::YieldOp::create(lb, next.pack());
        });
    SoftmaxState final =
        SoftmaxState::unpack(stats.getResults(), maxes, tileRows * heads);
    for (int64_t rh = 0; rh < tileRows * heads; ++rh)
      lseRow[rh] = buildLogSumExp(sm, knownMax ? Value() : final.max[rh],
                                  buildLaneSum(b, final.sum[rh]));
  }

  // The one-pass schedule takes the statistics only; dq comes from its
  // key-block loop.
  if (onePass) {
    for (int64_t r = 0; r < tileRows; ++r)
      for (int64_t h = 0; h < heads; ++h) {
        SmallVector<Value> at = withBatch(batch, {rowIdx[r], idx(b, h)});
        lse = tensor::InsertOp::create(b, lseRow[r * heads + h], lse, at);
        dsum = tensor::InsertOp::create(b, dvec[r][h], dsum, at);
      }
    return {dq, lse, dsum};
  }

  // Grads: dq accumulated per lane, reduced once.
  SmallVector<Value> accInit;
  for (int64_t i = 0; i < tileRows * numQ; ++i)
    accInit.push_back(vm.c(0.0));
  auto grads = scf::ForOp::create(
      b, zeroIdx, end, step, accInit,
      [&](OpBuilder &nested, Location loc, Value j0, ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        ScalarBuilder lvm(lb, elt, lanes);
        Scalars k;
        for (unsigned f = 0; f < numK; ++f)
          k.push_back(loadKeys(lb, keys, batch, f, j0));
        SmallVector<Value> vcol;
        for (int64_t d = 0; d < dim; ++d)
          vcol.push_back(loadKeys(lb, valuesT, batch, d, j0));
        SmallVector<Value> next(args);
        for (int64_t r = 0; r < tileRows; ++r) {
          Value mask = buildKeyMask(lb, lanes, j0, len, last[r]);
          PairEvaluation pair = pairs.evaluate(lvm, qSplat[r], k);
          SmallVector<Value> s = coefs.buildScores(lvm, pair.norms);
          SmallVector<Value> ds;
          for (int64_t h = 0; h < heads; ++h) {
            Value p = buildProbability(lvm, s[h], lseRow[r * heads + h], mask);
            Value dp = lvm.c(0.0);
            for (int64_t d = 0; d < headDim; ++d)
              dp = lvm.fma(lvm.splat(dOut[r][h * headDim + d]),
                           vcol[h * headDim + d], dp);
            ds.push_back(buildScoreBar(lvm, p, dp, dvec[r][h]));
          }
          auto vjp = pairs.evaluateVJP(lvm, pair, qSplat[r], k,
                                       coefs.buildNormBars(lvm, ds), mask);
          if (failed(vjp)) {
            failedVJP = true;
            break;
          }
          for (unsigned f = 0; f < numQ; ++f)
            next[r * numQ + f] = lvm.add(next[r * numQ + f], vjp->first[f]);
        }
        scf::YieldOp::create(lb, next);
      });

  for (int64_t r = 0; r < tileRows; ++r) {
    for (unsigned f = 0; f < numQ; ++f)
      dq = tensor::InsertOp::create(
          b, buildLaneSum(b, grads.getResult(r * numQ + f)), dq,
          withBatch(batch, {rowIdx[r], idx(b, f)}));
    for (int64_t h = 0; h < heads; ++h) {
      lse = tensor::InsertOp::create(b, lseRow[r * heads + h], lse,
                                     withBatch(batch, {rowIdx[r], idx(b, h)}));
      dsum = tensor::InsertOp::create(b, dvec[r][h], dsum,
                                      withBatch(batch, {rowIdx[r], idx(b, h)}));
    }
  }
  return {dq, lse, dsum};
}

SmallVector<Value> GradSchedule::buildPassA(ImplicitLocOpBuilder &b,
                                            ValueRange state, Value first,
                                            Value count, int64_t tileRows) {
  // One flat loop over (batch element, tile) so that the thread pool
  // balances work across both.
  Value trips = arith::MulIOp::create(b, batches, count);
  auto loop = scf::ForOp::create(
      b, idx(b, 0), trips, idx(b, 1), state,
      [&](OpBuilder &nested, Location loc, Value t, ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        auto [batch, tile] = delinearize(lb, t, count);
        Value row0 = arith::AddIOp::create(
            lb, first, arith::MulIOp::create(lb, tile, idx(lb, tileRows)));
        scf::YieldOp::create(lb, passATile(lb, args, batch, row0, tileRows));
      });
  // Tiles write their own rows of dq, lse and dsum only.
  loop->setAttr(kParallelLoopAttr, b.getUnitAttr());
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> GradSchedule::buildPassB(ImplicitLocOpBuilder &b,
                                            ValueRange state, Value lse,
                                            Value dsum) {
  Value vectors = arith::DivUIOp::create(
      b, arith::AddIOp::create(b, len, idx(b, lanes - 1)), idx(b, lanes));
  Value trips = arith::MulIOp::create(b, batches, vectors);
  auto loop = scf::ForOp::create(
      b, idx(b, 0), trips, idx(b, 1), state,
      [&](OpBuilder &nested, Location loc, Value t, ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        ScalarBuilder lvm(lb, elt, lanes);
        auto [batch, vector] = delinearize(lb, t, vectors);
        Value j0 = arith::MulIOp::create(lb, vector, idx(lb, lanes));
        if (cross)
          diagonal = diagonalHere(lb);
        Scalars k;
        for (unsigned f = 0; f < numK; ++f)
          k.push_back(loadKeys(lb, keys, batch, f, j0));
        SmallVector<Value> vcol;
        for (int64_t d = 0; d < dim; ++d)
          vcol.push_back(loadKeys(lb, valuesT, batch, d, j0));
        // Queries that may see these keys: all, or (causal) i ≥ j0 (with
        // offsets i ≥ j0 − diagonal, clamped to the query rows).
        Value start = idx(lb, 0);
        if (op.getCausal() && !cross)
          start = j0;
        else if (op.getCausal())
          start = arith::MaxSIOp::create(
              lb, idx(lb, 0),
              arith::MinSIOp::create(lb, queryLen,
                                     arith::SubIOp::create(lb, j0, diagonal)));
        SmallVector<Value> init;
        for (int64_t i = 0; i < numK + dim; ++i)
          init.push_back(lvm.c(0.0));
        auto rowLoop = scf::ForOp::create(
            lb, start, queryLen, idx(lb, 1), init,
            [&](OpBuilder &nested2, Location loc2, Value i, ValueRange acc) {
              ImplicitLocOpBuilder ib(loc2, nested2);
              ScalarBuilder ivm(ib, elt, lanes);
              Scalars q;
              for (unsigned f = 0; f < numQ; ++f)
                q.push_back(ivm.splat(at(ib, queries, batch, i, idx(ib, f))));
              Value mask =
                  buildKeyMask(ib, lanes, j0, len,
                               op.getCausal() ? keyPosition(ib, i) : Value());
              PairEvaluation pair = pairs.evaluate(ivm, q, k);
              SmallVector<Value> s = coefs.buildScores(ivm, pair.norms);
              SmallVector<Value> next(acc), ds;
              for (int64_t h = 0; h < heads; ++h) {
                Value lseI = at(ib, lse, batch, i, idx(ib, h));
                Value dI = at(ib, dsum, batch, i, idx(ib, h));
                Value p = buildProbability(ivm, s[h], lseI, mask);
                Value dp = ivm.c(0.0);
                for (int64_t d = h * headDim; d < (h + 1) * headDim; ++d) {
                  Value g = ivm.splat(at(ib, outGrad, batch, i, idx(ib, d)));
                  dp = ivm.fma(g, vcol[d], dp);
                  next[numK + d] = ivm.fma(p, g, next[numK + d]);
                }
                ds.push_back(buildScoreBar(ivm, p, dp, dI));
              }
              auto vjp = pairs.evaluateVJP(ivm, pair, q, k,
                                           coefs.buildNormBars(ivm, ds), mask);
              if (failed(vjp))
                failedVJP = true;
              else
                for (unsigned f = 0; f < numK; ++f)
                  next[f] = ivm.add(next[f], vjp->second[f]);
              scf::YieldOp::create(ib, next);
            });
        Value dkT = args[0], dvT = args[1];
        for (unsigned f = 0; f < numK; ++f)
          dkT = vector::TransferWriteOp::create(
                    lb, rowLoop.getResult(f), dkT,
                    withBatch(batch, {idx(lb, f), j0}), ArrayRef<bool>{false})
                    .getResult();
        for (int64_t d = 0; d < dim; ++d)
          dvT = vector::TransferWriteOp::create(
                    lb, rowLoop.getResult(numK + d), dvT,
                    withBatch(batch, {idx(lb, d), j0}), ArrayRef<bool>{false})
                    .getResult();
        scf::YieldOp::create(lb, ValueRange{dkT, dvT});
      });
  // Key vectors write their own columns of dkᵀ and dvᵀ only.
  loop->setAttr(kParallelLoopAttr, b.getUnitAttr());
  return SmallVector<Value>(loop.getResults());
}

FailureOr<SmallVector<Value>> GradSchedule::build(ImplicitLocOpBuilder &b) {
  queries = op.getQueries();
  keys = op.getKeys();
  values = op.getValues();
  out = op.getOut();
  outGrad = op.getOutGrad();
  givenLse = op.getLse();
  int64_t rank = cast<RankedTensorType>(values.getType()).getRank();
  batches = idx(b, 1);
  for (int64_t d = 0; d + 2 < rank; ++d) {
    batchDims.push_back(tensor::DimOp::create(b, keys, d));
    batches = arith::MulIOp::create(b, batches, batchDims.back());
  }
  len = tensor::DimOp::create(b, keys, rank - 1);
  queryLen = len;
  if (op.getQueryOffset()) {
    cross = true;
    queryLen = tensor::DimOp::create(b, queries, rank - 2);
  }
  // The scores' verifier refuses λ < 0, so every score is ≤ 0; the self
  // pair's is 0.
  assert(coefs.allNonPositive() && "λ ≥ 0 on the gradient ops");
  knownMax = !cross;
  auto transposed = [&](Value t) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, b.getLoc(), t);
    std::swap(sizes[rank - 2], sizes[rank - 1]);
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 2], perm[rank - 1]);
    Value empty = tensor::EmptyOp::create(b, sizes, elt);
    return linalg::TransposeOp::create(b, t, empty, perm).getResult()[0];
  };
  // Values feature-major: lanes read consecutive keys (the two passes;
  // the one-pass schedule packs them per key vector).
  if (!onePass)
    valuesT = transposed(values);

  auto empty = [&](int64_t cols) {
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, b.getLoc(), queries);
    sizes.back() = b.getIndexAttr(cols);
    return tensor::EmptyOp::create(b, sizes, elt).getResult();
  };
  SmallVector<Value> state = {empty(numQ), empty(heads), empty(heads)};
  // ceil(Lq / R) tiles, the last one's rows clamped.
  Value tiles = arith::DivUIOp::create(
      b, arith::AddIOp::create(b, queryLen, idx(b, rows - 1)), idx(b, rows));
  state = buildPassA(b, state, idx(b, 0), tiles, rows);
  Value dq = state[0], lse = state[1], dsum = state[2];

  // dkᵀ and dvᵀ start at zero: pass B writes whole key vectors, masked at
  // the end of the sequence.
  ScalarBuilder sm(b, elt);
  auto zeros = [&](Value like, bool swapLast = false) {
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, b.getLoc(), like);
    if (swapLast)
      std::swap(sizes[rank - 2], sizes[rank - 1]);
    Value e = tensor::EmptyOp::create(b, sizes, elt);
    return linalg::FillOp::create(b, ValueRange{sm.c(0.0)}, ValueRange{e})
        .getResult(0);
  };
  // The one-pass schedule writes dv row-major; the two passes dvᵀ.
  SmallVector<Value> kv = {zeros(keys), zeros(values, /*swapLast=*/!onePass)};
  if (onePass) {
    // Partials of dq, [batch..., chunks, Lq, Fq], zero where a chunk sees
    // no key of a row (causal, or fewer key blocks than chunks). The chunk
    // count is static: the scratch is O(Lq), whatever the sequence.
    Value chunks = idx(b, kMaxKeyChunks);
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, b.getLoc(), queries);
    sizes.insert(sizes.end() - 2, b.getIndexAttr(kMaxKeyChunks));
    Value partial = linalg::FillOp::create(
                        b, ValueRange{sm.c(0.0)},
                        ValueRange{tensor::EmptyOp::create(b, sizes, elt)})
                        .getResult(0);
    SmallVector<Value> grads =
        buildOnePass(b, {partial, kv[0], kv[1]}, chunks, lse, dsum);
    if (failedVJP)
      return failure();
    dq = reduceChunks(b, grads[0], chunks);
    kv = {grads[1], grads[2]};
  } else {
    kv = buildPassB(b, kv, lse, dsum);
  }
  if (failedVJP)
    return failure();
  return SmallVector<Value>{dq, kv[0], onePass ? kv[1] : transposed(kv[1])};
}

namespace {

/// geo.lie_cross_attention_grad on group elements → pair features, the
/// flash backward with offsets and the given lse, and the features'
/// pullbacks to the elements (ambient cotangents).
LogicalResult expandCrossGrad(LieCrossAttentionGradOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  lie::GroupAttr group = op.getGroup();
  const lie::GroupModel &model = group.getModel();
  auto gType = cast<RankedTensorType>(op.getQueries().getType());
  if (gType.getRank() != 3 && !model.hasStraightLinePairForm())
    return op.emitOpError()
           << "has no fused backward for group " << model.getDisplayName()
           << " with batch dims (its pair form builds loops); pass one "
              "sequence ([L, n, n]) at a time";
  Value q = buildPairFeatures(b, loc, op.getQueries(), group, false);
  Value kT = buildPairFeatures(b, loc, op.getKeys(), group, true);
  auto flash = FlashLieAttentionGradOp::create(
      b, loc, TypeRange{q.getType(), kT.getType(), op.getValues().getType()}, q,
      kT, op.getValues(), op.getOut(), op.getOutGrad(), op.getLse(),
      op.getQueryOffset(), op.getKeyOffset(), group, op.getHeadsAttr(),
      op.getTauAttr(), op.getLambdaAttr(), op.getCausalAttr());
  // The target's strategy, stamped on the block backward by
  // torsor-select-strategy (without it the kernel gets the portable one).
  if (Attribute stamp = op->getAttr(strategy::kStrategyAttrName))
    flash->setAttr(strategy::kStrategyAttrName, stamp);
  Value dk = buildSwapLastDims(b, loc, flash.getKeysGrad());
  auto pullback = [&](lie::PullbackKind kind, Value g, Value cot) -> Value {
    return lie::PullbackOp::create(
        b, loc, g.getType(), lie::PullbackKindAttr::get(b.getContext(), kind),
        ValueRange{g}, cot, group, b.getI64IntegerAttr(0), DenseF64ArrayAttr());
  };
  Value dgq = pullback(lie::PullbackKind::QueryFeatures, op.getQueries(),
                       flash.getQueriesGrad());
  Value dgk = pullback(lie::PullbackKind::KeyFeatures, op.getKeys(), dk);
  op->replaceAllUsesWith(ValueRange{dgq, dgk, flash.getValuesGrad()});
  op.erase();
  return success();
}

/// Appends the loops a kernel built before `op` since `prev` (the op that
/// preceded it; null when the kernel starts its block): what holds its
/// arithmetic, and what the math approximations leave in place.
void collectKernelLoops(Operation *prev, Operation *op,
                        SmallVectorImpl<Operation *> &loops) {
  for (Operation *it = prev ? prev->getNextNode() : &op->getBlock()->front();
       it != op; it = it->getNextNode())
    if (isa<scf::ForOp>(it))
      loops.push_back(it);
}

/// Lets the f32 kernel's divisions take a reciprocal (`arcp`): x / y
/// becomes x · (1 / y) where LLVM sees one divisor in several divisions,
/// as the pair forms' adjoints divide their cotangents by the forward's
/// divisors again (the adjoint of a / b is ā / b and −c̄ a / b²), so that
/// one vdivps serves them all. At most one more rounding (≤ 1.5 ulp per
/// quotient, within the f32 contract's 1e-5).
void allowReciprocals(ArrayRef<Operation *> loops) {
  for (Operation *loop : loops)
    loop->walk([](arith::DivFOp div) {
      div.setFastmath(div.getFastmath() | arith::FastMathFlags::arcp);
    });
}

struct GeoDecomposeAttentionGrad
    : torsor::geo::impl::GeoDecomposeAttentionGradBase<
          GeoDecomposeAttentionGrad> {
  /// The one-pass schedule's scalar move loops carry LLVM loop metadata
  /// (keepRolled, DecomposeAttentionGradOnePass.cpp).
  void getDependentDialects(DialectRegistry &registry) const override {
    GeoDecomposeAttentionGradBase::getDependentDialects(registry);
    registry.insert<LLVM::LLVMDialect>();
  }
  void runOnOperation() override {
    SmallVector<LieCrossAttentionGradOp> crossOps;
    getOperation()->walk(
        [&](LieCrossAttentionGradOp op) { crossOps.push_back(op); });
    for (LieCrossAttentionGradOp op : crossOps)
      if (failed(expandCrossGrad(op)))
        return signalPassFailure();
    SmallVector<FlashLieAttentionGradOp> ops;
    getOperation()->walk(
        [&](FlashLieAttentionGradOp op) { ops.push_back(op); });
    SmallVector<Operation *> approximate, loops;
    for (FlashLieAttentionGradOp op : ops) {
      OpBuilder builder(op);
      Operation *before = op->getPrevNode();
      ImplicitLocOpBuilder b(op.getLoc(), builder);
      GradSchedule kernel(op, strategyTiles(op));
      FailureOr<SmallVector<Value>> results = kernel.build(b);
      if (failed(results))
        return signalPassFailure();
      // f32: the same polynomial atan2/exp as the forward kernel, so the
      // backward differentiates what the forward computed.
      if (cast<RankedTensorType>(op.getValues().getType())
              .getElementType()
              .isF32()) {
        collectKernelMath(before, op, approximate);
        for (func::FuncOp fn : kernel.getOutlined())
          collectKernelMath(fn, approximate);
        collectKernelLoops(before, op, loops);
      }
      op->replaceAllUsesWith(*results);
      op.erase();
    }
    if (failed(approximateKernelMath(&getContext(), approximate)))
      return signalPassFailure();
    // After the approximations, whose atan2 divides too.
    allowReciprocals(loops);
  }
};

} // namespace
