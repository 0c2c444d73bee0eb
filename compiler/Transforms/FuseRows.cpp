//===- FuseRows.cpp - Row kernels for norms and softmax -------------------===//
//
// torsor-fuse-rows: LayerNorm, RMS norm and softmax as single-pass row
// kernels. The frontend (and upstream's softmax decomposition) states them
// as separate generics, each a pass over the [rows, d] tensor: reductions
// over the last dim and elementwise generics reading the rows and the
// per-row statistics. Tiled by blocks of rows and fused with upstream
// tile-and-fuse, they run block by block inside one task loop, so the
// tensor is read from memory once and every later pass hits L1.
//
// Roots are the elementwise generics that read (directly or through other
// elementwise generics) a row reduction, and that no other such root
// consumes: the last op of each norm or softmax. Producers fused into the
// root's task are generics that are not contractions, fills and
// broadcasts; contractions stay for torsor-tile-dense, and everything
// before them is left alone. Block size: the function's
// #strategy.dense row_task_rows.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORFUSEROWS
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Whether `op` is a generic on tensors whose only reduction is the
/// innermost loop, with an output that drops it: a row reduction (sum,
/// sum of squares, max over the last dim).
bool isRowReduction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || op.getNumLoops() < 2)
    return false;
  unsigned last = op.getNumLoops() - 1;
  if (op.getIteratorTypesArray()[last] != utils::IteratorType::reduction)
    return false;
  AffineMap out = op.getIndexingMapsArray().back();
  return out.isProjectedPermutation() && !out.isFunctionOfDim(last) &&
         out.getNumResults() == last && !linalg::isaContractionOpInterface(op);
}

/// Whether `op` is an all-parallel generic on tensors with an identity
/// output map (an elementwise link of a row chain).
bool isElementwise(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && generic.hasPureTensorSemantics() &&
         generic.getNumDpsInits() == 1 &&
         generic.getNumParallelLoops() == generic.getNumLoops() &&
         generic.getNumLoops() >= 2 &&
         generic.getIndexingMapsArray().back().isIdentity();
}

/// Whether a row reduction feeds `op` through elementwise generics only.
bool readsRowReduction(linalg::GenericOp op) {
  SmallVector<Operation *> work = {op};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Operation *cur = work.pop_back_val();
    if (!seen.insert(cur).second)
      continue;
    for (Value in : cast<linalg::GenericOp>(cur).getDpsInputs()) {
      auto producer = in.getDefiningOp<linalg::GenericOp>();
      if (!producer)
        continue;
      if (isRowReduction(producer))
        return true;
      if (isElementwise(producer))
        work.push_back(producer);
    }
  }
  return false;
}

/// The reductions' combiners may be reassociated: LLVM then vectorizes
/// the row loop (lanes of partial sums) instead of adding serially.
void allowReassociation(linalg::GenericOp op) {
  auto reassoc = arith::FastMathFlagsAttr::get(op.getContext(),
                                               arith::FastMathFlags::reassoc);
  Value acc = op.getRegionOutputArgs()[0];
  for (Operation *user : acc.getUsers())
    if (auto fm = dyn_cast<arith::ArithFastMathInterface>(user))
      if (isa<arith::AddFOp, arith::MaxNumFOp, arith::MaximumFOp>(user))
        user->setAttr(fm.getFastMathAttrName(), reassoc);
}

struct FuseRows : torsor::impl::TorsorFuseRowsBase<FuseRows> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t rows = strategy::denseOf(func).getRowTaskRows();

    // Roots: chain ends, i.e. not read by another chain member.
    SmallVector<linalg::GenericOp> roots;
    func.walk([&](linalg::GenericOp op) {
      if (!isElementwise(op) || !readsRowReduction(op) ||
          op->getParentOfType<scf::ForallOp>())
        return;
      bool consumedByChain = llvm::any_of(op->getUsers(), [](Operation *u) {
        return isElementwise(u) &&
               readsRowReduction(cast<linalg::GenericOp>(u));
      });
      if (!consumedByChain)
        roots.push_back(op);
    });

    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp root : roots) {
      unsigned rank = root.getNumLoops();
      SmallVector<int64_t> sizes(rank, 0);
      // Every dim but the last is a row dim: the innermost row dim gets
      // blocks, the outer ones (batch) single rows.
      for (unsigned i = 0; i + 2 < rank; ++i)
        sizes[i] = 1;
      sizes[rank - 2] = rows;
      scf::SCFTilingOptions tiling;
      tiling.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
      tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      scf::SCFTileAndFuseOptions options;
      options.setTilingOptions(tiling);
      // The chain: generics reachable backwards from the root through
      // elementwise generics and row reductions. A producer is fused only
      // if every user is in it; one read elsewhere too would be computed
      // twice (once per block, once whole).
      llvm::SmallPtrSet<Operation *, 16> chain;
      SmallVector<Operation *> work = {root};
      while (!work.empty()) {
        Operation *cur = work.pop_back_val();
        if (!chain.insert(cur).second)
          continue;
        for (Value in : cast<linalg::GenericOp>(cur).getDpsInputs()) {
          auto producer = in.getDefiningOp<linalg::GenericOp>();
          if (producer && (isElementwise(producer) || isRowReduction(producer)))
            work.push_back(producer);
        }
      }
      options.setFusionControlFn(
          [&](tensor::ExtractSliceOp slice, OpResult producer, bool)
              -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
            Operation *op = producer.getOwner();
            if (isa<linalg::FillOp, linalg::BroadcastOp>(op))
              return scf::SCFTileAndFuseOptions::ControlFnResult{};
            // Users: chain members, slices the new task loop takes, and
            // shape queries (folded to the inits' sizes at the end).
            Operation *loop = slice->getParentOfType<scf::ForallOp>();
            if (chain.contains(op) &&
                llvm::all_of(op->getUsers(), [&](Operation *user) {
                  return chain.contains(user) || isa<tensor::DimOp>(user) ||
                         (isa<tensor::ExtractSliceOp>(user) &&
                          user->getParentOfType<scf::ForallOp>() == loop);
                }))
              return scf::SCFTileAndFuseOptions::ControlFnResult{};
            return std::nullopt;
          });
      rewriter.setInsertionPoint(root);
      FailureOr<scf::SCFTileAndFuseResult> fused =
          scf::tileConsumerAndFuseProducersUsingSCF(
              rewriter, cast<TilingInterface>(root.getOperation()), options);
      if (failed(fused)) {
        root.emitError("torsor-fuse-rows: cannot tile this row kernel");
        return signalPassFailure();
      }
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceAllUsesWith(original, replacement);
      for (Operation *op : fused->tiledAndFusedOps)
        if (auto generic = dyn_cast<linalg::GenericOp>(op))
          if (isRowReduction(generic))
            allowReassociation(generic);
    }
    if (roots.empty())
      return;
    // The loop bounds read the fused producers' sizes: fold those reads to
    // the sizes of the inits, so that the whole-tensor producers die here
    // instead of being bufferized and run once more.
    RewritePatternSet patterns(&getContext());
    memref::populateResolveRankedShapedTypeResultDimsPatterns(patterns);
    tensor::DimOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();
    // Tile-and-fuse fuses a producer once per slice that reads it (the
    // centred rows feed both the sum of squares and the normalisation):
    // CSE leaves one copy of each per task.
    DominanceInfo dominance(func);
    eliminateCommonSubExpressions(rewriter, dominance, func);
  }
};

} // namespace
