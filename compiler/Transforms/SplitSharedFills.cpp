//===- SplitSharedFills.cpp - One fill of an empty tensor per use ---------===//
//
// torsor-split-shared-fills: runs right before empty-tensor elimination and
// one-shot bufferization. A `linalg.fill` of a `tensor.empty` that several
// ops use (CSE merges the identical zero fills of every reduction's and
// product's accumulator) becomes one fill of its own empty tensor per use,
// each at the place of the original. The values are the same, so the
// program is unchanged; what changes is what bufferization sees:
//   - each accumulator writes a buffer of its own instead of one copied
//     from the shared fill (a fill is one pass writing memory, a copy one
//     reading and one writing it);
//   - empty-tensor elimination, which replaces the empty tensor at the
//     root of a chain that ends in a model output by that output's
//     buffer, rewrites a fill only the chain uses. On a shared fill it
//     made every other user's accumulator the output's buffer: the
//     backward of examples/se3_pose_attention.tsr summed the gradient of
//     blocks.0.ln1_b into a fill that already held the gradient of lnf_g
//     (test/Models/lie-gradients.py).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORSPLITSHAREDFILLS
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;

namespace {

struct SplitSharedFills
    : torsor::impl::TorsorSplitSharedFillsBase<SplitSharedFills> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> shared;
    getOperation().walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics() && !fill->getResult(0).hasOneUse() &&
          !fill->getResult(0).use_empty() &&
          fill.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
        shared.push_back(fill);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::FillOp fill : shared) {
      auto empty = fill.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>();
      Value result = fill->getResult(0);
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : result.getUses())
        uses.push_back(&use);
      // The first use keeps the original; each other one gets a copy of
      // the empty tensor and the fill, right after the original (which
      // dominates every use).
      rewriter.setInsertionPointAfter(fill);
      for (OpOperand *use : llvm::drop_begin(uses)) {
        Operation *init = rewriter.clone(*empty);
        IRMapping map;
        map.map(empty.getResult(), init->getResult(0));
        Operation *copy = rewriter.clone(*fill, map);
        rewriter.modifyOpInPlace(use->getOwner(),
                                 [&] { use->set(copy->getResult(0)); });
      }
    }
  }
};

} // namespace
