//===- ParallelizeMarkedLoops.cpp - torsor.parallel loops to scf.parallel -===//
//
// Lowerings that know a loop's iterations are independent (a batch loop of
// convert-lie-to-arith, the query tiles of geo-tile-attention) mark their
// scf.for `torsor.parallel` (LoopAttributes.h), since on tensors the loop
// must carry its results. Once bufferization has left such a loop without
// results, it is an scf.parallel in all but name; this pass makes it one,
// so the target parts need only handle scf.parallel: the CPU outlines them
// into thread-pool tasks, the GPU maps them onto blocks and threads.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORPARALLELIZEMARKEDLOOPS
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Rewrites a `torsor.parallel` scf.for without results into scf.parallel.
void convertMarkedLoop(scf::ForOp loop) {
  OpBuilder builder(loop);
  auto parallel = scf::ParallelOp::create(
      builder, loop.getLoc(), ValueRange{loop.getLowerBound()},
      ValueRange{loop.getUpperBound()}, ValueRange{loop.getStep()});
  Block *from = loop.getBody();
  Block *to = parallel.getBody();
  loop.getInductionVar().replaceAllUsesWith(parallel.getInductionVars()[0]);
  to->getOperations().splice(to->getTerminator()->getIterator(),
                             from->getOperations(), from->begin(),
                             std::prev(from->end()));
  loop.erase();
}

struct TorsorParallelizeMarkedLoops
    : torsor::impl::TorsorParallelizeMarkedLoopsBase<
          TorsorParallelizeMarkedLoops> {
  void runOnOperation() override {
    // Innermost first (post-order); only loops bufferization left without
    // results, with index bounds (scf.parallel's).
    SmallVector<scf::ForOp> marked;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kParallelLoopAttr) && loop.getNumResults() == 0 &&
          loop.getStep().getType().isIndex())
        marked.push_back(loop);
    });
    for (scf::ForOp loop : marked)
      convertMarkedLoop(loop);
  }
};

} // namespace
