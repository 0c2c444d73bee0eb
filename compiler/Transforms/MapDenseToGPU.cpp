//===- MapDenseToGPU.cpp - Dense contractions as shared-memory GPU tiles --===//
//
// torsor-map-dense-to-gpu: the GPU form of torsor-tile-dense. Every
// matmul-like linalg contraction on buffers (one n and one k loop, any
// batch loops and m loops, the innermost m tiled and the others indexing
// blocks like batch loops; linalg.matmul, batch_matmul, the `x Wᵀ`
// generics of convert-geo-to-linalg) becomes one gpu.launch of the classic
// shared-memory tiling:
//
//   block (x, y, z): the BM × BN output tile at rows y·BM, columns x·BN of
//                    batch element z;
//   thread t:        TM × TN outputs, rows r0 + i·(BM/TM), columns
//                    c0 + j·(BN/TN) (strided, so neighbouring threads
//                    store neighbouring columns: coalesced, and read
//                    neighbouring shared words: no bank conflicts), with
//                    the accumulators in registers;
//   per depth tile of BK: barrier, the block copies the A tile [BM][BK]
//   and the B tile [BK][BN] into shared memory (consecutive threads on the
//   operand's contiguous dim), barrier, then BK steps of TM + TN shared
//   loads and TM·TN applications of the op's own body (mulf/addf, or
//   whatever scalar combiner the generic has).
//
// Ragged edges: loads clamp their indices (never out of bounds), the depth
// loop stops at K, and only outputs inside the result are stored. The
// accumulators start from the output buffer, so a preceding fill (or a
// bias) is kept, as linalg's semantics say. Guard, launch, tiles, barriers
// and the host-loop emulation are the GPU kernel builder's
// (dialects/Support/GPUKernelBuilder.h), shared with the attention kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Support/GPUKernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORMAPDENSETOGPU
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Block and thread tiles of one contraction.
struct DenseTiles {
  int64_t blockRows, blockCols, depth, threadRows, threadCols;
  int64_t threads() const {
    return (blockRows / threadRows) * (blockCols / threadCols);
  }
};

/// The loop dims of a contraction this pass maps, or failure.
struct Dims {
  SmallVector<unsigned> batch;
  unsigned m, n, k;
  /// Which input has (m, k) (the A operand); the other has (k, n).
  unsigned aInput;
};

FailureOr<Dims> matchContraction(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op->getNumRegions() != 1 ||
      op->getRegion(0).empty())
    return failure();
  auto outType = dyn_cast<MemRefType>(op.getDpsInits()[0].getType());
  if (!outType || !isa<FloatType>(outType.getElementType()))
    return failure();
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return failure();
  FailureOr<linalg::ContractionDimensions> c = linalg::inferContractionDims(op);
  if (failed(c) || c->m.empty() || c->n.size() != 1 || c->k.size() != 1)
    return failure();
  if (op.getNumLoops() != c->batch.size() + c->m.size() + 2)
    return failure();
  // Of several m dims (`x Wᵀ` over [batch, tokens, k]: the batch is not in
  // W, so it counts as an m dim) the one nearest the output's contiguous
  // dim is tiled; the others index blocks along z like batch dims.
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto outPos = [&](unsigned dim) {
    return outMap.getResultPosition(getAffineDimExpr(dim, op->getContext()))
        .value_or(0);
  };
  Dims d;
  d.m = c->m[0];
  for (unsigned m : c->m)
    if (outPos(m) > outPos(d.m))
      d.m = m;
  d.batch.assign(c->batch.begin(), c->batch.end());
  for (unsigned m : c->m)
    if (m != d.m)
      d.batch.push_back(m);
  llvm::sort(d.batch);
  d.n = c->n[0];
  d.k = c->k[0];
  AffineMap a0 = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  d.aInput = a0.isFunctionOfDim(d.m) ? 0 : 1;
  return d;
}

/// Builds the kernel of one contraction.
class DenseKernel {
public:
  DenseKernel(linalg::LinalgOp op, const Dims &dims, const DenseTiles &t,
              bool emulate)
      : op(op), d(dims), t(t), emulate(emulate) {}

  void build(ImplicitLocOpBuilder &b);

private:
  Value idx(ImplicitLocOpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, v);
  }
  /// Indices of `operand` at loop position `ivs` (a projected permutation).
  SmallVector<Value> indicesOf(OpOperand *operand, ArrayRef<Value> ivs) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    SmallVector<Value> indices;
    for (unsigned r = 0; r < map.getNumResults(); ++r)
      indices.push_back(ivs[map.getDimPosition(r)]);
    return indices;
  }
  /// Whether `dim` is the last (contiguous) index of `operand`.
  bool isInnermost(OpOperand *operand, unsigned dim) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    return map.getNumResults() > 0 &&
           map.getDimPosition(map.getNumResults() - 1) == dim;
  }
  /// One thread's code: stage, compute, store (kb is inside the kernel).
  void buildThread(ImplicitLocOpBuilder &kb, const GPUKernelBuilder &kernel,
                   Value blockX, Value blockY, Value blockZ, Value tid,
                   Value aTile, Value bTile);
  /// The block's copy of one input's tile into `tile` ([rows][cols],
  /// row-major), rows along loop dim `rowDim` from `rowStart`, columns
  /// along `colDim` from `colStart`.
  void stage(ImplicitLocOpBuilder &b, OpOperand *input, Value tile, Value tid,
             unsigned rowDim, Value rowStart, int64_t rows, unsigned colDim,
             Value colStart, int64_t cols);

  linalg::LinalgOp op;
  Dims d;
  DenseTiles t;
  /// Host loops instead of a gpu.launch (cpu-emulation).
  bool emulate;
  Type elt;
  SmallVector<Value> sizes;      // per loop dim
  SmallVector<Value> batchIvs;   // per loop dim: batch ivs, else null
  Value lastRow, lastCol, lastK; // sizes − 1
};

void DenseKernel::stage(ImplicitLocOpBuilder &b, OpOperand *input, Value tile,
                        Value tid, unsigned rowDim, Value rowStart,
                        int64_t rows, unsigned colDim, Value colStart,
                        int64_t cols) {
  // Consecutive threads walk the operand's contiguous dim, so global loads
  // coalesce whether the operand is stored [rows][cols] or transposed.
  bool colsFastest = !isInnermost(input, rowDim);
  int64_t fast = colsFastest ? cols : rows;
  Value zero = idx(b, 0);
  // Emulated, each thread copies the whole tile into its own buffer (the
  // same elements the block's threads copy together).
  GPUKernelBuilder::buildStagingLoop(
      b, emulate ? zero : tid, idx(b, rows * cols),
      idx(b, emulate ? 1 : t.threads()),
      [&](ImplicitLocOpBuilder &lb, Value i) {
        Value inner = arith::RemUIOp::create(lb, i, idx(lb, fast));
        Value outer = arith::DivUIOp::create(lb, i, idx(lb, fast));
        Value r = colsFastest ? outer : inner;
        Value c = colsFastest ? inner : outer;
        auto clamp = [&](unsigned dim, Value start, Value off) {
          Value last = dim == d.m ? lastRow : dim == d.n ? lastCol : lastK;
          return arith::MinUIOp::create(
              lb, arith::AddIOp::create(lb, start, off), last);
        };
        SmallVector<Value> ivs(batchIvs);
        for (Value &iv : ivs)
          if (!iv)
            iv = zero;
        ivs[rowDim] = clamp(rowDim, rowStart, r);
        ivs[colDim] = clamp(colDim, colStart, c);
        Value x =
            memref::LoadOp::create(lb, input->get(), indicesOf(input, ivs));
        Value at = arith::AddIOp::create(
            lb, arith::MulIOp::create(lb, r, idx(lb, cols)), c);
        memref::StoreOp::create(lb, x, tile, ValueRange{at});
      });
}

void DenseKernel::build(ImplicitLocOpBuilder &b) {
  elt = cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType();
  for (Range r : op.createLoopRanges(b, b.getLoc()))
    sizes.push_back(getValueOrCreateConstantIndexOp(b, b.getLoc(), r.size));
  Value one = idx(b, 1), zero = idx(b, 0);
  lastRow = arith::SubIOp::create(b, sizes[d.m], one);
  lastCol = arith::SubIOp::create(b, sizes[d.n], one);
  lastK = arith::SubIOp::create(b, sizes[d.k], one);
  Value gridX = arith::CeilDivUIOp::create(b, sizes[d.n], idx(b, t.blockCols));
  Value gridY = arith::CeilDivUIOp::create(b, sizes[d.m], idx(b, t.blockRows));
  Value gridZ = one;
  for (unsigned bd : d.batch)
    gridZ = arith::MulIOp::create(b, gridZ, sizes[bd]);
  // No launch for an empty output; an empty depth (K = 0) launches and
  // keeps the output as it is.
  GPUKernelBuilder kernel(op, emulate);
  ImplicitLocOpBuilder gb =
      kernel.guardNonEmptyGrid(b, ValueRange{gridX, gridY, gridZ}, zero);

  if (emulate) {
    // Blocks and threads as one host scf.parallel.
    kernel.buildHostParallel(
        gb, ValueRange{zero, zero, zero, zero},
        ValueRange{gridX, gridY, gridZ, idx(gb, t.threads())},
        ValueRange{one, one, one, one},
        [&](ImplicitLocOpBuilder &pb, ValueRange ivs) {
          // Heap tiles, freed per thread: stack ones would grow the stack
          // every iteration of the loops the parallel becomes.
          Value aTile = memref::AllocOp::create(
              pb, MemRefType::get({t.blockRows * t.depth}, elt));
          Value bTile = memref::AllocOp::create(
              pb, MemRefType::get({t.depth * t.blockCols}, elt));
          buildThread(pb, kernel, ivs[0], ivs[1], ivs[2], ivs[3], aTile, bTile);
          memref::DeallocOp::create(pb, aTile);
          memref::DeallocOp::create(pb, bTile);
        });
    return;
  }
  // The tiles are module-level workgroup globals, as the attention
  // kernel's.
  memref::GlobalOp aGlobal = kernel.declareSharedTile(
      b.getLoc(), "__torsor_dense_tile_a", t.blockRows * t.depth, elt);
  memref::GlobalOp bGlobal = kernel.declareSharedTile(
      b.getLoc(), "__torsor_dense_tile_b", t.depth * t.blockCols, elt);
  kernel.buildLaunch(
      gb, gridX, gridY, gridZ, idx(gb, t.threads()), one, {aGlobal, bGlobal},
      [&](ImplicitLocOpBuilder &kb, const KernelIds &ids, ValueRange tiles) {
        buildThread(kb, kernel, ids.blockX, ids.blockY, ids.blockZ, ids.thread,
                    tiles[0], tiles[1]);
      });
}

void DenseKernel::buildThread(ImplicitLocOpBuilder &kb,
                              const GPUKernelBuilder &kernel, Value blockX,
                              Value blockY, Value blockZ, Value tid,
                              Value aTile, Value bTile) {
  batchIvs.assign(op.getNumLoops(), Value());
  Value rest = blockZ;
  for (int i = d.batch.size() - 1; i >= 0; --i) {
    batchIvs[d.batch[i]] = arith::RemUIOp::create(kb, rest, sizes[d.batch[i]]);
    rest = arith::DivUIOp::create(kb, rest, sizes[d.batch[i]]);
  }
  Value rowStart = arith::MulIOp::create(kb, blockY, idx(kb, t.blockRows));
  Value colStart = arith::MulIOp::create(kb, blockX, idx(kb, t.blockCols));
  int64_t rowStride = t.blockRows / t.threadRows;
  int64_t colStride = t.blockCols / t.threadCols;
  Value tRow = arith::DivUIOp::create(kb, tid, idx(kb, colStride));
  Value tCol = arith::RemUIOp::create(kb, tid, idx(kb, colStride));
  SmallVector<Value> rows, cols; // in the block tile
  for (int64_t i = 0; i < t.threadRows; ++i)
    rows.push_back(arith::AddIOp::create(kb, tRow, idx(kb, i * rowStride)));
  for (int64_t j = 0; j < t.threadCols; ++j)
    cols.push_back(arith::AddIOp::create(kb, tCol, idx(kb, j * colStride)));

  // Output ivs of accumulator (i, j), clamped for the initial load.
  OpOperand *init = op.getDpsInitOperand(0);
  auto outIvs = [&](ImplicitLocOpBuilder &ib, int64_t i, int64_t j,
                    bool clamp) {
    SmallVector<Value> ivs(batchIvs);
    for (Value &iv : ivs)
      if (!iv)
        iv = idx(ib, 0);
    Value r = arith::AddIOp::create(ib, rowStart, rows[i]);
    Value c = arith::AddIOp::create(ib, colStart, cols[j]);
    ivs[d.m] = clamp ? arith::MinUIOp::create(ib, r, lastRow).getResult() : r;
    ivs[d.n] = clamp ? arith::MinUIOp::create(ib, c, lastCol).getResult() : c;
    return ivs;
  };
  SmallVector<Value> acc;
  for (int64_t i = 0; i < t.threadRows; ++i)
    for (int64_t j = 0; j < t.threadCols; ++j)
      acc.push_back(memref::LoadOp::create(
          kb, init->get(), indicesOf(init, outIvs(kb, i, j, true))));

  OpOperand *aIn = op.getDpsInputOperand(d.aInput);
  OpOperand *bIn = op.getDpsInputOperand(1 - d.aInput);
  Block &body = op->getRegion(0).front();
  auto depthLoop = scf::ForOp::create(
      kb, idx(kb, 0), sizes[d.k], idx(kb, t.depth), acc,
      [&](OpBuilder &nested, Location loc, Value k0, ValueRange args) {
        ImplicitLocOpBuilder ib(loc, nested);
        // The previous tiles are consumed before they are overwritten.
        kernel.barrier(ib);
        stage(ib, aIn, aTile, tid, d.m, rowStart, t.blockRows, d.k, k0,
              t.depth);
        stage(ib, bIn, bTile, tid, d.k, k0, t.depth, d.n, colStart,
              t.blockCols);
        kernel.barrier(ib);
        Value kEnd = arith::MinUIOp::create(
            ib, idx(ib, t.depth), arith::SubIOp::create(ib, sizes[d.k], k0));
        auto inner = scf::ForOp::create(
            ib, idx(ib, 0), kEnd, idx(ib, 1), args,
            [&](OpBuilder &n2, Location l2, Value kk, ValueRange accs) {
              ImplicitLocOpBuilder jb(l2, n2);
              SmallVector<Value> a, bv;
              for (int64_t i = 0; i < t.threadRows; ++i)
                a.push_back(memref::LoadOp::create(
                    jb, aTile,
                    ValueRange{arith::AddIOp::create(
                        jb,
                        arith::MulIOp::create(jb, rows[i], idx(jb, t.depth)),
                        kk)}));
              Value kRow = arith::MulIOp::create(jb, kk, idx(jb, t.blockCols));
              for (int64_t j = 0; j < t.threadCols; ++j)
                bv.push_back(memref::LoadOp::create(
                    jb, bTile,
                    ValueRange{arith::AddIOp::create(jb, kRow, cols[j])}));
              SmallVector<Value> next;
              for (int64_t i = 0; i < t.threadRows; ++i)
                for (int64_t j = 0; j < t.threadCols; ++j) {
                  // The op's own scalar body: (a, b, acc) → acc'.
                  IRMapping map;
                  map.map(body.getArgument(d.aInput), a[i]);
                  map.map(body.getArgument(1 - d.aInput), bv[j]);
                  map.map(body.getArgument(2), accs[i * t.threadCols + j]);
                  for (Operation &inner : body.without_terminator())
                    jb.clone(inner, map);
                  next.push_back(
                      map.lookup(body.getTerminator()->getOperand(0)));
                }
              scf::YieldOp::create(jb, next);
            });
        scf::YieldOp::create(ib, inner.getResults());
      });

  // Only outputs inside the result are stored.
  for (int64_t i = 0; i < t.threadRows; ++i)
    for (int64_t j = 0; j < t.threadCols; ++j) {
      SmallVector<Value> ivs = outIvs(kb, i, j, false);
      Value inside = arith::AndIOp::create(
          kb,
          arith::CmpIOp::create(kb, arith::CmpIPredicate::ult, ivs[d.m],
                                sizes[d.m]),
          arith::CmpIOp::create(kb, arith::CmpIPredicate::ult, ivs[d.n],
                                sizes[d.n]));
      auto store = scf::IfOp::create(kb, inside, /*withElse=*/false);
      ImplicitLocOpBuilder sb(kb.getLoc(), store.getThenBodyBuilder());
      memref::StoreOp::create(sb, depthLoop.getResult(i * t.threadCols + j),
                              init->get(), indicesOf(init, ivs));
    }
}

struct TorsorMapDenseToGPU
    : torsor::impl::TorsorMapDenseToGPUBase<TorsorMapDenseToGPU> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::LinalgOp, Dims>> work;
    module.walk([&](linalg::LinalgOp op) {
      // Ops already inside a kernel (or a parallel loop) are left alone.
      if (op->getParentOfType<gpu::LaunchOp>() ||
          op->getParentOfType<scf::ParallelOp>())
        return;
      FailureOr<Dims> d = matchContraction(op);
      if (succeeded(d))
        work.push_back({op, *d});
    });
    for (auto &[op, d] : work) {
      OpBuilder builder(op);
      ImplicitLocOpBuilder b(op.getLoc(), builder);
      // The function's #strategy.gpu_dense (its verifier checks TM | BM
      // and TN | BN).
      strategy::GPUDenseAttr s = strategy::gpuDenseOf(op);
      DenseTiles t{s.getBlockRows(), s.getBlockCols(), s.getBlockDepth(),
                   s.getThreadRows(), s.getThreadCols()};
      DenseKernel(op, d, t, cpuEmulation).build(b);
      op->erase();
    }
  }
};

} // namespace
