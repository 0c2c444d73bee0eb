//===- MapSerialCodeToGPU.cpp - Host data accesses into 1-thread kernels --===//
//
// After torsor-map-parallel-loops-to-gpu, what is left on the host of an
// NVPTX model is control (loops and branches around launches, shapes)
// plus whatever code was not a parallel loop: a serial scan, a reduction
// loop, a scalar store. In an ABI 2 model the buffers are device memory,
// so that code must run on the device too; it moves, as whole operations,
// into kernels of one thread. Slow but correct, and each such kernel is
// visible in the IR (`gpu.launch` with a grid and block of 1), never a
// silent host fallback. Host allocations become device allocations, and
// constants (memref.get_global) move into the kernels that read them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/GPUHostCode.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORMAPSERIALCODETOGPU
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Whether `op` has a gpu.launch nested in it.
bool containsLaunch(Operation *op) {
  return op->walk([](gpu::LaunchOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// Moves the ops [first, last] of one block into a gpu.launch of one block
/// of one thread, placed where `first` was.
void wrapInSerialKernel(Operation *first, Operation *last) {
  OpBuilder builder(first);
  Location loc = first->getLoc();
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  auto launch =
      gpu::LaunchOp::create(builder, loc, one, one, one, one, one, one);
  Block &body = launch.getBody().front();
  builder.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(builder, loc);
  Block *block = first->getBlock();
  body.getOperations().splice(terminator->getIterator(), block->getOperations(),
                              first->getIterator(),
                              std::next(last->getIterator()));
}

/// The last op of `first`'s block that must move with it: ops move with
/// everything in the block that uses their results, so no host op is left
/// needing a value computed on the device. Null when that range would take
/// a launch or the terminator along (the host needs the value).
Operation *serialRangeEnd(Operation *first) {
  Block *block = first->getBlock();
  Operation *last = first;
  for (Operation *op = first;; op = op->getNextNode()) {
    if (op->hasTrait<OpTrait::IsTerminator>() || isa<gpu::LaunchOp>(op) ||
        (op != first && op->getNumRegions() > 0 && containsLaunch(op)))
      return nullptr;
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (Operation *ancestor = block->findAncestorOpInBlock(*user))
          if (last->isBeforeInBlock(ancestor))
            last = ancestor;
    if (op == last)
      return last;
  }
}

/// Moves every data access in `block` into a kernel, entering ops that
/// also launch kernels (a host loop around launches stays on the host).
void mapBlock(Block &block) {
  for (Operation *op = block.empty() ? nullptr : &block.front(); op;) {
    Operation *next = op->getNextNode();
    if (isa<gpu::LaunchOp>(op) || !containsBufferAccess(op)) {
      op = next;
      continue;
    }
    if (op->getNumRegions() > 0 && containsLaunch(op)) {
      for (Region &region : op->getRegions())
        for (Block &nested : region)
          mapBlock(nested);
      op = next;
      continue;
    }
    // A range whose results the host needs cannot move; it stays, and
    // torsor-verify-gpu-host-code reports it at its location.
    if (Operation *last = serialRangeEnd(op)) {
      next = last->getNextNode();
      wrapInSerialKernel(op, last);
    }
    op = next;
  }
}

/// Host allocations and deallocations become device ones.
void useDeviceMemory(func::FuncOp function) {
  SmallVector<memref::AllocOp> allocs;
  SmallVector<memref::DeallocOp> deallocs;
  function.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (auto alloc = dyn_cast<memref::AllocOp>(op))
      allocs.push_back(alloc);
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
      deallocs.push_back(dealloc);
    return WalkResult::advance();
  });
  // gpu-to-llvm lowers allocation only in its asynchronous form: each
  // gets a stream of its own that is waited for at once, so it is
  // synchronous still (mgpuStreamCreate, mgpuMemAlloc, mgpuStreamSynchronize,
  // mgpuStreamDestroy).
  Type token = gpu::AsyncTokenType::get(function.getContext());
  for (memref::AllocOp alloc : allocs) {
    OpBuilder builder(alloc);
    Location loc = alloc.getLoc();
    Value stream =
        gpu::WaitOp::create(builder, loc, token, ValueRange()).getAsyncToken();
    auto device = gpu::AllocOp::create(
        builder, loc, alloc.getType(), token, ValueRange{stream},
        alloc.getDynamicSizes(), alloc.getSymbolOperands(),
        /*hostShared=*/false);
    gpu::WaitOp::create(builder, loc, Type(),
                        ValueRange{device.getAsyncToken()});
    alloc.replaceAllUsesWith(device.getMemref());
    alloc.erase();
  }
  for (memref::DeallocOp dealloc : deallocs) {
    OpBuilder builder(dealloc);
    Location loc = dealloc.getLoc();
    Value stream =
        gpu::WaitOp::create(builder, loc, token, ValueRange()).getAsyncToken();
    auto free = gpu::DeallocOp::create(builder, loc, token, ValueRange{stream},
                                       dealloc.getMemref());
    gpu::WaitOp::create(builder, loc, Type(), ValueRange{free.getAsyncToken()});
    dealloc.erase();
  }
}

/// Re-creates in `launch` the constants (memref.get_global, and views of
/// them) its body uses from the host, so kernel outlining copies the
/// memref.global into the GPU module instead of passing a host address.
void sinkGlobals(gpu::LaunchOp launch) {
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(launch.getBody(), above);
  for (Value value : above) {
    // The chain get_global → view ops, innermost last.
    SmallVector<Operation *> chain;
    Value v = value;
    while (Operation *def = v.getDefiningOp()) {
      chain.push_back(def);
      if (isa<memref::GetGlobalOp>(def))
        break;
      auto view = dyn_cast<ViewLikeOpInterface>(def);
      if (!view || def->getNumResults() != 1)
        break;
      v = view.getViewSource();
    }
    if (chain.empty() || !isa<memref::GetGlobalOp>(chain.back()))
      continue;
    OpBuilder builder = OpBuilder::atBlockBegin(&launch.getBody().front());
    IRMapping mapping;
    Operation *last = nullptr;
    for (Operation *op : llvm::reverse(chain)) {
      // View ops may take sizes from the host (index values): fine to use.
      last = builder.clone(*op, mapping);
    }
    replaceAllUsesInRegionWith(value, last->getResult(0), launch.getBody());
  }
}

struct TorsorMapSerialCodeToGPU
    : torsor::impl::TorsorMapSerialCodeToGPUBase<TorsorMapSerialCodeToGPU> {
  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      for (Block &block : function.getBody())
        mapBlock(block);
      useDeviceMemory(function);
      function.walk([](gpu::LaunchOp launch) { sinkGlobals(launch); });
    }
  }
};

} // namespace
