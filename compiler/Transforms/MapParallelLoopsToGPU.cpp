//===- MapParallelLoopsToGPU.cpp - Parallel loops onto blocks and threads -===//
//
// The NVPTX pipeline's one mapping of parallel work onto the GPU: every
// outermost scf.parallel (a linalg op's parallel dims, a lie batch loop,
// the Grassmann per-token loops, a copy) becomes a gpu.launch whose
// iteration space is flattened row-major and cut into tiles of
// `threads_per_block` (#strategy.gpu_dense) consecutive iterations: tiles are
// blocks, the lanes of a tile are threads. Flattening keeps the innermost
// dimension fastest across neighbouring threads, so a warp's loads and stores
// of a row-major buffer coalesce; it also maps loops of any rank and any extent
// (L = 1, ragged ends) the same way, with one bounds check. Upstream's
// gpu-map-parallel-loops + convert-parallel-loops-to-gpu map loop dims one to
// one onto grid dims instead, which leaves one thread per block for a 1-D loop
// and rejects sibling nests with different bounds.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORMAPPARALLELLOOPSTOGPU
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Replaces a memref.copy by an scf.parallel of loads and stores over its
/// shape (rank 0: one load and store), so the copy runs where the data is.
void expandCopy(memref::CopyOp copy) {
  OpBuilder builder(copy);
  Location loc = copy.getLoc();
  Value source = copy.getSource(), target = copy.getTarget();
  auto type = cast<MemRefType>(source.getType());
  if (type.getRank() == 0) {
    Value v = memref::LoadOp::create(builder, loc, source);
    memref::StoreOp::create(builder, loc, v, target);
    copy.erase();
    return;
  }
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    lbs.push_back(zero);
    ubs.push_back(memref::DimOp::create(builder, loc, source, d));
    steps.push_back(one);
  }
  scf::ParallelOp::create(builder, loc, lbs, ubs, steps,
                          [&](OpBuilder &b, Location l, ValueRange ivs) {
                            Value v = memref::LoadOp::create(b, l, source, ivs);
                            memref::StoreOp::create(b, l, v, target, ivs);
                          });
  copy.erase();
}

/// Turns static-shape allocations of a kernel body into per-thread stack
/// buffers (registers or local memory after ptxas) and drops their
/// deallocations: device-side malloc is slow and its heap is small.
void promoteKernelAllocations(gpu::LaunchOp launch) {
  SmallVector<memref::AllocOp> allocs;
  launch.getBody().walk([&](memref::AllocOp alloc) {
    if (alloc.getType().hasStaticShape())
      allocs.push_back(alloc);
  });
  for (memref::AllocOp alloc : allocs) {
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    OpBuilder builder(alloc);
    auto alloca = memref::AllocaOp::create(
        builder, alloc.getLoc(), alloc.getType(), alloc.getAlignmentAttr());
    alloc.replaceAllUsesWith(alloca.getResult());
    alloc.erase();
  }
}

/// Maps one outermost scf.parallel onto a gpu.launch (see file comment).
void mapLoop(scf::ParallelOp loop, unsigned threadsPerBlock) {
  OpBuilder builder(loop);
  Location loc = loop.getLoc();
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value tile = arith::ConstantIndexOp::create(builder, loc, threadsPerBlock);

  // Trip counts ceil((ub - lb) / step) and their product; an empty
  // dimension (ub <= lb) counts 0, so no block is launched.
  SmallVector<Value> trips;
  Value total = one;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    Value extent = arith::SubIOp::create(builder, loc, ub, lb);
    extent = arith::MaxSIOp::create(builder, loc, extent, zero);
    Value n = arith::CeilDivUIOp::create(builder, loc, extent, step);
    trips.push_back(n);
    total = arith::MulIOp::create(builder, loc, total, n);
  }
  // CUDA rejects a launch of zero blocks: an empty loop launches nothing.
  Value nonEmpty = arith::CmpIOp::create(
      builder, loc, arith::CmpIPredicate::ugt, total, zero);
  auto guard = scf::IfOp::create(builder, loc, nonEmpty, /*else=*/false);
  builder.setInsertionPointToStart(guard.thenBlock());
  Value blocks = arith::CeilDivUIOp::create(builder, loc, total, tile);
  auto launch =
      gpu::LaunchOp::create(builder, loc, blocks, one, one, tile, one, one);
  Block &body = launch.getBody().front();
  builder.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(builder, loc);

  // id = blockIdx.x * T + threadIdx.x; lanes past the end do nothing.
  builder.setInsertionPointToStart(&body);
  Value id = arith::AddIOp::create(
      builder, loc,
      arith::MulIOp::create(builder, loc, launch.getBlockIds().x, tile),
      launch.getThreadIds().x);
  Value inRange =
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult, id, total);
  auto inside = scf::IfOp::create(builder, loc, inRange, /*else=*/false);
  builder.setInsertionPointToStart(inside.thenBlock());

  // Delinearize, last dimension fastest: iv_k = lb_k + (i_k * step_k).
  IRMapping mapping;
  Value rest = id;
  unsigned rank = loop.getNumLoops();
  for (unsigned k = rank; k-- > 0;) {
    Value index = rest;
    if (k > 0) {
      index = arith::RemUIOp::create(builder, loc, rest, trips[k]);
      rest = arith::DivUIOp::create(builder, loc, rest, trips[k]);
    }
    Value iv = arith::AddIOp::create(
        builder, loc, loop.getLowerBound()[k],
        arith::MulIOp::create(builder, loc, index, loop.getStep()[k]));
    mapping.map(loop.getInductionVars()[k], iv);
  }
  for (Operation &op : loop.getBody()->without_terminator())
    builder.clone(op, mapping);
  loop.erase();
  promoteKernelAllocations(launch);
}

struct TorsorMapParallelLoopsToGPU
    : torsor::impl::TorsorMapParallelLoopsToGPUBase<
          TorsorMapParallelLoopsToGPU> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Copies outside kernels become loops, then kernels like the others.
    SmallVector<memref::CopyOp> copies;
    module.walk([&](memref::CopyOp copy) {
      if (!copy->getParentOfType<gpu::LaunchOp>() &&
          !copy->getParentOfType<gpu::GPUModuleOp>())
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies)
      expandCopy(copy);

    // Outermost parallel loops without reductions: their iterations are
    // independent by definition. Loops with reductions are left to
    // torsor-map-serial-code-to-gpu.
    SmallVector<scf::ParallelOp> loops;
    module.walk([&](scf::ParallelOp loop) {
      if (loop.getInitVals().empty() &&
          !loop->getParentOfType<scf::ParallelOp>() &&
          !loop->getParentOfType<gpu::LaunchOp>() &&
          !loop->getParentOfType<gpu::GPUModuleOp>())
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops)
      mapLoop(loop, strategy::gpuDenseOf(loop).getThreadsPerBlock());
  }
};

} // namespace
