//===- GradSchedule.h - The flash backward's schedules -------*- C++ -*-===//
//
// GradSchedule builds the kernel of one geo.flash_lie_attention_grad
// (geo-decompose-attention-grad, DecomposeAttentionGrad.cpp): the row pass
// and the two-pass schedule live in DecomposeAttentionGrad.cpp, the
// one-pass schedule in DecomposeAttentionGradOnePass.cpp. Private to
// those two files.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_GEO_TRANSFORMS_GRADSCHEDULE_H
#define TORSOR_DIALECTS_GEO_TRANSFORMS_GRADSCHEDULE_H

#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/AttentionKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace torsor::geo::grad {

namespace arith = mlir::arith;
namespace func = mlir::func;
namespace tensor = mlir::tensor;
namespace vector = mlir::vector;
using mlir::ArrayRef;
using mlir::cast;
using mlir::FailureOr;
using mlir::FloatType;
using mlir::ImplicitLocOpBuilder;
using mlir::ModuleOp;
using mlir::RankedTensorType;
using mlir::SmallVector;
using mlir::Value;
using mlir::ValueRange;
using mlir::VectorType;
using torsor::lie::ScalarBuilder;
using torsor::lie::Scalars;

/// What the backward takes from the target strategy.
struct GradTiles {
  int64_t lanes;        ///< keys per vector
  int64_t registerRows; ///< query rows whose state fits the registers
  int64_t keyTile;      ///< keys per block of the one-pass schedule
  bool onePass;         ///< one pass over key blocks, or pass A and pass B
};

/// The key chunks of the one-pass schedule: its parallel loop runs over
/// (batch element, chunk), and each chunk keeps a partial dq of the query
/// rows, [chunks, Lq, Fq]. Eight keep one, two, four or eight threads
/// evenly busy (the runtime splits the iterations into contiguous equal
/// runs) at 8 · Lq · Fq scalars of scratch; a chunk with no key block
/// (fewer than 8) keeps a zero partial.
inline constexpr int64_t kMaxKeyChunks = 8;

/// The one-pass schedule's scratch alignment in bytes: a cache line of
/// every x86 CPU, and a 512-bit vector.
inline constexpr int64_t kScratchAlignment = 64;

/// Builds the backward kernel of one flash_lie_attention_grad. Both
/// passes run over (batch element, tile) pairs: one flat loop whose index
/// is delinearised into the batch indices (row-major), so that no reshape
/// of the operands is needed.
class GradSchedule {
public:
  GradSchedule(FlashLieAttentionGradOp op, const GradTiles &tiles)
      : op(op), model(op.getGroup().getModel()),
        coefs(ScoreCoefficients::of(op)),
        elt(cast<FloatType>(
            cast<RankedTensorType>(op.getValues().getType()).getElementType())),
        pairs(model, op.getGroup(), elt, op->getParentOfType<ModuleOp>(),
              op.getLoc()) {
    dim = cast<RankedTensorType>(op.getValues().getType()).getShape().back();
    heads = op.getHeads();
    headDim = dim / heads;
    lanes = tiles.lanes;
    rows = chooseQueryRows(model, tiles.registerRows);
    numQ = model.getQueryFeatureCount();
    numK = model.getKeyFeatureCount();
    keyVectors = std::max<int64_t>(tiles.keyTile / lanes, 1);
    onePass = tiles.onePass;
    scratch.perVector = (numK + dim) * lanes;
    scratch.packed = keyVectors * scratch.perVector;
    scratch.probs = 2 * scratch.packed;
    scratch.dq = scratch.probs + rows * heads * lanes;
    scratch.query = scratch.dq + rows * numQ * lanes;
    scratch.outGrad = scratch.query + rows * numQ;
    scratch.stats = scratch.outGrad + rows * dim;
    scratch.size = scratch.stats + 2 * rows * heads;
  }

  /// Builds the kernel before `op`; returns (dq, dkᵀ, dv).
  FailureOr<SmallVector<Value>> build(ImplicitLocOpBuilder &b);
  /// The pair-form functions the kernel outlined.
  ArrayRef<func::FuncOp> getOutlined() const { return pairs.getOutlined(); }

private:
  VectorType vec() const { return VectorType::get({lanes}, elt); }
  Value idx(ImplicitLocOpBuilder &b, int64_t i) {
    return arith::ConstantIndexOp::create(b, i);
  }
  /// Element [batch..., i, j] of an operand.
  Value at(ImplicitLocOpBuilder &b, Value t, ValueRange batch, Value i,
           Value j) {
    return tensor::ExtractOp::create(b, t, withBatch(batch, {i, j}));
  }
  /// Masked vector load of row `r` of a feature-major [batch... x F x L]
  /// tensor at keys [j0, j0 + lanes) of one batch element, zero past the
  /// end.
  Value loadKeys(ImplicitLocOpBuilder &b, Value t, ValueRange batch, int64_t r,
                 Value j0) {
    ScalarBuilder sm(b, elt);
    return vector::TransferReadOp::create(b, vec(), t,
                                          withBatch(batch, {idx(b, r), j0}),
                                          sm.c(0.0), ArrayRef<bool>{false});
  }
  /// Splits a flat loop index `t` over (batch element, `inner`) into the
  /// batch indices and the inner index.
  std::pair<SmallVector<Value>, Value> delinearize(ImplicitLocOpBuilder &b,
                                                   Value t, Value inner) {
    Value in = arith::RemUIOp::create(b, t, inner);
    Value rest = arith::DivUIOp::create(b, t, inner);
    return {buildDelinearized(b, rest, batchDims), in};
  }
  /// Pass A over batch elements × `count` query tiles of `tileRows` rows
  /// starting at row `first`, the last tile's rows clamped to the last
  /// query row (a repeated row writes its row's values again); carries
  /// (dq, lse, dsum).
  SmallVector<Value> buildPassA(ImplicitLocOpBuilder &b, ValueRange state,
                                Value first, Value count, int64_t tileRows);
  /// One pass-A tile at row `row0` of batch element `batch`.
  SmallVector<Value> passATile(ImplicitLocOpBuilder &b, ValueRange state,
                               ValueRange batch, Value row0, int64_t tileRows);
  /// The key position of query row `row`: the row itself, or with
  /// offsets row + query_offset − key_offset (may be negative).
  Value keyPosition(ImplicitLocOpBuilder &b, Value row) {
    return cross ? arith::AddIOp::create(b, row, diagonal).getResult() : row;
  }
  /// The diagonal query_offset − key_offset, built inside a loop body:
  /// offsets read from rank-0 tensors (a model's i64 inputs) are read
  /// again there, so that on the GPU the read lands in the kernel.
  Value diagonalHere(ImplicitLocOpBuilder &b) {
    auto here = [&](Value v) -> Value {
      auto cast = v.getDefiningOp<arith::IndexCastOp>();
      auto extract =
          cast ? cast.getIn().getDefiningOp<tensor::ExtractOp>() : nullptr;
      if (!extract || extract.getTensor().getType().getRank() != 0)
        return v;
      Value scalar =
          tensor::ExtractOp::create(b, extract.getTensor(), ValueRange{});
      return arith::IndexCastOp::create(b, b.getIndexType(), scalar);
    };
    return buildKeyPosition(b, here(op.getQueryOffset()),
                            here(op.getKeyOffset()));
  }
  /// Pass B over batch elements × key vectors; carries (dkT, dvT).
  SmallVector<Value> buildPassB(ImplicitLocOpBuilder &b, ValueRange state,
                                Value lse, Value dsum);
  /// The one-pass schedule over batch elements × key chunks; carries
  /// (dq partials [batch..., chunk, Lq, Fq], dkT, dv row-major).
  SmallVector<Value> buildOnePass(ImplicitLocOpBuilder &b, ValueRange state,
                                  Value chunks, Value lse, Value dsum);
  /// The query rows [first, last) of one key block at `j0`, `tileRows` at
  /// a time (the last row block repeating row last − 1 with dO = 0 and
  /// D = 0), against its first `kvEnd` key vectors: dk and dv accumulate
  /// in `buffer`, dq per lane over the block and then into chunk `chunk`'s
  /// partial; returns the partials.
  Value onePassRows(ImplicitLocOpBuilder &b, Value partial, ValueRange batch,
                    Value chunk, Value j0, Value kvEnd, Value first, Value last,
                    int64_t tileRows, Value lse, Value dsum, Value buffer);
  /// Packs the keys and values of the key block at `j0` (its first
  /// `kvEnd` key vectors) into the scratch's `packed` part, per key vector
  /// [F, lanes], zero past the end: the key loop reads a key vector's
  /// features at fixed offsets from the scratch's one address, where rows
  /// of a [F, L] tensor take a pointer each (held across the loop,
  /// spilled, and loaded masked). Per block, so that no packed copy of K
  /// and V (L · (Fk + D) scalars) exists: each block is packed once, by
  /// the chunk that owns it.
  void packBlock(ImplicitLocOpBuilder &b, ValueRange batch, Value j0,
                 Value kvEnd, Value buffer);
  /// The FMA chains of one dP = dO·v of the one-pass key loop: up to 4
  /// per head, while `tileRows` · heads · chains stays within 4
  /// accumulators (1 head of 64 features: 64 dependent FMAs per row
  /// otherwise, whose latency the rest of the loop body does not hide);
  /// one where the rows and heads give that many independent chains
  /// already (more accumulators only add register pressure).
  int64_t dPChains(int64_t tileRows) const {
    int64_t chains = 1;
    while (chains < 4 && 2 * chains <= headDim &&
           tileRows * heads * 2 * chains <= 4)
      chains *= 2;
    return chains;
  }
  /// dq = Σ over chunks of the partials.
  Value reduceChunks(ImplicitLocOpBuilder &b, Value partial, Value chunks);

  FlashLieAttentionGradOp op;
  const lie::GroupModel &model;
  ScoreCoefficients coefs;
  FloatType elt;
  PairFormEvaluator pairs;
  int64_t dim, heads, headDim, lanes, rows, keyVectors;
  unsigned numQ, numK;
  /// One pass over key blocks (the CPU's), or pass A then pass B.
  bool onePass;
  /// The self form (every score ≤ 0, the self pair's 0): the row max is
  /// 0, so the statistics need no running max and the one-pass schedule's
  /// P = e^s · e^{−lse} (buildKnownMaxProbability).
  bool knownMax = false;
  /// The one-pass schedule's scratch (one stack buffer per chunk, in
  /// elements): per key vector of the block its dk then dv per lane
  /// (`perVector` each, from 0); from `packed`, per key vector of the
  /// block its keys then values per lane (the block packed, `perVector`
  /// each); then per row of a row block P per head and lane, dq per
  /// feature and lane, the query features, dO, and per row and head lse
  /// (with the known max, e^{−lse}), then per row and head D.
  struct Scratch {
    int64_t perVector, packed, probs, dq, query, outGrad, stats, size;
  } scratch;
  // Built in build(): the operands, the batch extents, their product,
  // the sequence length and the values feature-major.
  Value queries, keys, values, out, outGrad, givenLse;
  SmallVector<Value> batchDims;
  Value batches, len, valuesT;
  /// With offsets: queries and keys are two token sets, `queryLen` rows
  /// against `len` keys, query row i at key position i + `diagonal`.
  bool cross = false;
  Value queryLen, diagonal;
  bool failedVJP = false;
};

} // namespace torsor::geo::grad

#endif // TORSOR_DIALECTS_GEO_TRANSFORMS_GRADSCHEDULE_H
