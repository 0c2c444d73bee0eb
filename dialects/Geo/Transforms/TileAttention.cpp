//===- TileAttention.cpp - Query tiles of geo.flash_lie_attention ---------===//
//
// geo-tile-attention: the second step of the fused attention pipeline.
// An untiled flash_lie_attention over [batch...] x L query rows becomes a
// loop over (batch, query tile) pairs, flattened into one parallel loop so
// that the thread pool balances work across batch elements and tiles
// alike. Each iteration is a flash_lie_attention on rank-2 slices with a
// static row count and the key tile of the target strategy. An lse result
// (the per-row log-sum-exp a gradient asked for) is tiled the same way.
// Causal tiles run in a zigzag order (first, last, second, ...), so that
// the thread pool's contiguous chunks get equal work (buildBalancedOrder).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/LoopAttributes.h"
#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/AttentionKernel.h"
#include "dialects/Geo/Transforms/Passes.h"
#include "dialects/Strategy/IR/Strategy.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace torsor::geo {
#define GEN_PASS_DEF_GEOTILEATTENTION
#include "dialects/Geo/Transforms/Passes.h.inc"
} // namespace torsor::geo

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;

namespace {

/// Builds `scf.for %t = 0 to product(batch) * tiles` over `outs` (the
/// output, and the lse when the op has one), whose iteration t computes
/// rows first + (t mod tiles) · rows … of batch element t div tiles
/// (row-major over the batch dims) as one flash op; with `balance`
/// (causal), tile t mod tiles of the zigzag order (buildBalancedOrder)
/// instead. With `lastRow`, a tile starts at lastRow at the latest: the
/// last tile then overlaps its neighbour instead of passing the end.
SmallVector<Value> buildTileLoop(OpBuilder &b, Location loc,
                                 FlashLieAttentionOp op, ValueRange outs,
                                 ArrayRef<Value> batch, Value tiles,
                                 Value first, int64_t rows, int64_t keyTile,
                                 bool balance, Value lastRow = Value()) {
  auto qType = cast<RankedTensorType>(op.getQueries().getType());
  unsigned rank = qType.getRank(), nb = rank - 2;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value trips = tiles;
  for (Value extent : batch)
    trips = arith::MulIOp::create(b, loc, trips, extent);

  auto loop = scf::ForOp::create(
      b, loc, zero, trips, one, outs,
      [&](OpBuilder &lb, Location nloc, Value t, ValueRange iterArgs) {
        // Delinearize t into (batch indices..., tile).
        ImplicitLocOpBuilder ib(nloc, lb);
        Value tile = arith::RemUIOp::create(lb, nloc, t, tiles);
        Value rest = arith::DivUIOp::create(lb, nloc, t, tiles);
        if (balance)
          tile = buildBalancedOrder(ib, tile, tiles);
        SmallVector<OpFoldResult> batchIdx =
            getAsOpFoldResult(buildDelinearized(ib, rest, batch));
        Value rowsV = arith::ConstantIndexOp::create(lb, nloc, rows);
        Value row = arith::AddIOp::create(
            lb, nloc, first, arith::MulIOp::create(lb, nloc, tile, rowsV));
        // A tile moved back to end at lastRow computes `rows` rows from
        // `row` but owns only those from its nominal first row on: the
        // `skip` rows before it are its neighbour's.
        Value nominal = row, skip;
        if (lastRow) {
          row = arith::MinUIOp::create(lb, nloc, row, lastRow);
          skip = arith::SubIOp::create(lb, nloc, nominal, row);
        }

        // A rank-2 slice of `t` at batch element batchIdx: rows
        // [r0, r0 + rowCount) of its last-but-one dim (all when r0 null).
        auto slice = [&](Value src, OpFoldResult r0, OpFoldResult count) {
          auto type = cast<RankedTensorType>(src.getType());
          SmallVector<OpFoldResult> offs(batchIdx),
              sizes(nb, lb.getIndexAttr(1)), strides(rank, lb.getIndexAttr(1));
          SmallVector<OpFoldResult> full = tensor::getMixedSizes(lb, nloc, src);
          offs.push_back(r0 ? r0 : lb.getIndexAttr(0));
          offs.push_back(lb.getIndexAttr(0));
          sizes.push_back(r0 ? count : full[nb]);
          sizes.push_back(full[nb + 1]);
          SmallVector<int64_t> shape = {r0 ? rows : type.getDimSize(nb),
                                        type.getDimSize(nb + 1)};
          auto sliceType = RankedTensorType::get(shape, type.getElementType());
          return tensor::ExtractSliceOp::create(lb, nloc, sliceType, src, offs,
                                                sizes, strides)
              .getResult();
        };
        OpFoldResult count = lb.getIndexAttr(rows);
        Value q = slice(op.getQueries(), row, count);
        Value k = slice(op.getKeys(), nullptr, nullptr);
        Value v = slice(op.getValues(), nullptr, nullptr);
        // The tile's destination: its rows of the output, or, for tiles
        // that may move, a tile of its own, so that no tile writes a row
        // another one owns (the loop's iterations run as parallel tasks).
        auto destOf = [&](Value into) -> Value {
          if (!lastRow)
            return slice(into, row, count);
          auto type = cast<RankedTensorType>(into.getType());
          return tensor::EmptyOp::create(
              lb, nloc,
              ArrayRef<int64_t>{rows, type.getDimSize(type.getRank() - 1)},
              type.getElementType());
        };
        Value dest = destOf(iterArgs[0]);
        Value lseDest;
        if (op.getLse())
          lseDest = destOf(iterArgs[1]);
        Value offset =
            arith::AddIOp::create(lb, nloc, op.getQueryOffset(), row);
        auto tileOp = FlashLieAttentionOp::create(
            lb, nloc, dest.getType(), lseDest ? lseDest.getType() : Type(), q,
            k, v, offset, op.getKeyOffset(), dest, lseDest, op.getScores(),
            lb.getI64IntegerAttr(keyTile));
        tileOp->setAttr(strategy::kStrategyAttrName,
                        op->getAttr(strategy::kStrategyAttrName));

        // Each tile result back into its rows: a moved tile's from its
        // nominal first row on, rows - skip of them.
        auto insert = [&](Value tile, Value into) {
          OpFoldResult cols = lb.getIndexAttr(
              cast<RankedTensorType>(tile.getType()).getDimSize(1));
          OpFoldResult owned = count;
          if (lastRow) {
            owned = arith::SubIOp::create(lb, nloc, rowsV, skip).getResult();
            tile = tensor::ExtractSliceOp::create(
                lb, nloc, tile,
                ArrayRef<OpFoldResult>{skip, lb.getIndexAttr(0)},
                ArrayRef<OpFoldResult>{owned, cols},
                ArrayRef<OpFoldResult>{lb.getIndexAttr(1), lb.getIndexAttr(1)});
          }
          SmallVector<OpFoldResult> offs(batchIdx),
              sizes(nb, lb.getIndexAttr(1)), strides(rank, lb.getIndexAttr(1));
          offs.append({nominal, lb.getIndexAttr(0)});
          sizes.append({owned, cols});
          // The owned rows go into their slice of the output by a
          // linalg.copy, which bufferization writes in place (an
          // insert_slice of the tile's rows would become a strided
          // memref.copy, a runtime memrefCopy call).
          if (lastRow) {
            Value rowsOut = tensor::ExtractSliceOp::create(
                lb, nloc, cast<RankedTensorType>(tile.getType()), into, offs,
                sizes, strides);
            tile = linalg::CopyOp::create(lb, nloc, tile, rowsOut).getResult(0);
          }
          return tensor::InsertSliceOp::create(lb, nloc, tile, into, offs,
                                               sizes, strides)
              .getResult();
        };
        SmallVector<Value> next = {insert(tileOp.getResult(), iterArgs[0])};
        if (op.getLse())
          next.push_back(insert(tileOp.getLse(), iterArgs[1]));
        scf::YieldOp::create(lb, nloc, next);
      });
  // Tiles write disjoint rows and keep no state between iterations.
  loop->setAttr(kParallelLoopAttr, b.getUnitAttr());
  return SmallVector<Value>(loop.getResults());
}

/// Replaces the untiled `op` by its tile loops.
void tileFlashAttention(FlashLieAttentionOp op, RewriterBase &rewriter) {
  Location loc = op.getLoc();
  auto vType = cast<RankedTensorType>(op.getValues().getType());
  unsigned rank = vType.getRank(), nb = rank - 2;
  unsigned bits = vType.getElementType().getIntOrFloatBitWidth();
  strategy::VectorAttentionAttr tiles =
      strategy::vectorAttentionOf(op, bits, vType.getShape().back());
  // The tiles carry the strategy on, for geo-decompose-attention.
  op->setAttr(strategy::kStrategyAttrName, tiles);
  int64_t keyTile = tiles.getKeyTile();
  // The rows that share each key load: the rule the backward uses too.
  int64_t rows =
      chooseQueryRows(op.getGroup().getModel(), tiles.getQueryRows());
  // Cache blocks: query_block rows per op, which geo-decompose-attention
  // runs as micro-kernels of `rows` rows over each block of key_block
  // keys.
  int64_t blockRows =
      chooseQueryBlock(op.getGroup().getModel(), tiles.getQueryRows(),
                       tiles.getQueryBlock(), tiles.getKeyBlock());

  SmallVector<Value> batch;
  for (unsigned d = 0; d < nb; ++d)
    batch.push_back(tensor::DimOp::create(rewriter, loc, op.getQueries(), d));
  Value len = tensor::DimOp::create(rewriter, loc, op.getQueries(), nb);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);

  SmallVector<Value> outs = {op.getInit()};
  if (op.getLseInit())
    outs.push_back(op.getLseInit());
  if (blockRows > rows) {
    // Cache blocks: ceil(L / blockRows) tiles of blockRows rows, the last
    // one moved back to end at row L, so it recomputes rows of its
    // neighbour (the same arithmetic in the same order, the same bits:
    // every row sees the same key tiles, masked ones only where its keys
    // end) instead of remainder ops of fewer rows, each another copy of
    // the kernel (a third of the forward's code). Shorter sequences take
    // one-row tiles, which geo-decompose-attention runs fully masked (one
    // copy of the key step).
    Value blockV = arith::ConstantIndexOp::create(rewriter, loc, blockRows);
    Value full = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::uge,
                                       len, blockV);
    Value blocks = arith::CeilDivUIOp::create(rewriter, loc, len, blockV);
    Value lastRow = arith::SubIOp::create(rewriter, loc, len, blockV);
    outs = buildTileLoop(
        rewriter, loc, op, outs, batch,
        arith::SelectOp::create(rewriter, loc, full, blocks, zero), zero,
        blockRows, keyTile, /*balance=*/op.getCausal(), lastRow);
    outs =
        buildTileLoop(rewriter, loc, op, outs, batch,
                      arith::SelectOp::create(rewriter, loc, full, zero, len),
                      zero, 1, keyTile, /*balance=*/false);
    rewriter.replaceOp(op, outs);
    return;
  }
  // Tiles of `rows` rows, then the rows R does not divide, one at a time.
  SmallVector<int64_t> sizes = {rows};
  if (rows > 1)
    sizes.push_back(1);
  Value first = zero;
  for (auto [i, tileRows] : llvm::enumerate(sizes)) {
    Value rowsV = arith::ConstantIndexOp::create(rewriter, loc, tileRows);
    Value count;
    if (i == 0)
      count = arith::DivUIOp::create(rewriter, loc, len, rowsV);
    else
      count = arith::SubIOp::create(rewriter, loc, len, first);
    outs = buildTileLoop(rewriter, loc, op, outs, batch, count, first, tileRows,
                         keyTile,
                         /*balance=*/i == 0 && op.getCausal());
    if (i + 1 == sizes.size())
      break;
    first = arith::MulIOp::create(rewriter, loc, count, rowsV);
  }
  rewriter.replaceOp(op, outs);
}

struct GeoTileAttention
    : torsor::geo::impl::GeoTileAttentionBase<GeoTileAttention> {
  void runOnOperation() override {
    // Walk instead of a greedy driver: the tiles created are flash ops too
    // and must not be visited again.
    SmallVector<FlashLieAttentionOp> ops;
    getOperation()->walk([&](FlashLieAttentionOp op) {
      if (!op.getKeyTile())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (FlashLieAttentionOp op : ops) {
      rewriter.setInsertionPoint(op);
      tileFlashAttention(op, rewriter);
    }
  }
};

} // namespace
