//===- TileDense.cpp - Tiled, vectorized dense contractions ---------------===//
//
// torsor-tile-dense: every matmul-like linalg contraction on tensors (the
// frontend's `linalg.matmul` and batched generics, the `x Wᵀ` generics of
// convert-geo-to-linalg) becomes a BLIS-style loop nest built from
// upstream tiling (TilingInterface), peeling and vectorization:
//
//   scf.forall  rows in blocks of matmulTaskRows (and batch)   → tasks
//     scf.for   columns in blocks of matmulCacheCols            → L2 block
//       scf.for depth in blocks of matmulCacheDepth
//         scf.for rows by matmulRegisterRows (mr)               → registers
//           scf.for columns by nr = matmulRegisterVectors · lanes
//             scf.for k: acc[mr × nr] += A[:, k] ⊗ B[k, :]    → FMAs
//
// The innermost [mr, nr, 1] contraction is vectorized to vector.contract
// and lowered to outer products, i.e. one broadcast and nr / lanes FMAs
// per row; the accumulator is hoisted out of the k loop so it stays in
// registers. A right operand stored transposed ([n, k]) is transposed
// once first so its rows are contiguous vectors. Ragged row and column
// edges are peeled off and stay scalar loops. All sizes come from the
// function's #strategy.dense.
//
// With the strategy's compute = bf16, a contraction is first packed for
// the bf16 unit (DenseBF16.h; torsor-lower-dense-bf16 gives it its AMX or
// AVX512-BF16 kernel after bufferization), or, without one, its operands
// are rounded to bf16 before the f32 nest above.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/DenseBF16.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORTILEDENSE
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Marks the innermost [mr, nr, 1] contractions the nest produced, so the
/// vectorizer finds them (and only them) after canonicalization.
constexpr StringLiteral kKernelAttr = "torsor.dense_kernel";

/// Loop dims of a contraction with one m, one n and one k dim.
struct Dims {
  SmallVector<unsigned> batch;
  unsigned m, n, k, numLoops;
};

/// Index of the dim `dim` in the results of `map`.
unsigned resultOf(AffineMap map, unsigned dim) {
  return *map.getResultPosition(getAffineDimExpr(dim, map.getContext()));
}

/// The dims of `op` if it is a float matmul-like contraction this pass
/// handles: tensors, one m/n/k dim each, and n the innermost dim of the
/// output (so register tiles are rows of vectors).
std::optional<Dims> matchContraction(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  if (!isa<FloatType>(getElementTypeOrSelf(op->getResult(0).getType())))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.size() != 1 ||
      dims->k.size() != 1)
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return std::nullopt;
  // Several m dims: a batch the right operand is broadcast over. The
  // innermost one in the output is the kernel's m, the others are tiled
  // by 1 like a batch.
  AffineMap out = op.getIndexingMapsArray()[2];
  unsigned m = *llvm::max_element(dims->m, [&](unsigned a, unsigned b) {
    return resultOf(out, a) < resultOf(out, b);
  });
  Dims d{llvm::to_vector(dims->batch), m, dims->n[0], dims->k[0],
         op.getNumLoops()};
  for (unsigned other : dims->m)
    if (other != m)
      d.batch.push_back(other);
  llvm::sort(d.batch);
  if (out.getNumResults() == 0 ||
      out.getResults().back() != getAffineDimExpr(d.n, op.getContext()))
    return std::nullopt;
  return d;
}

/// `op` as a `linalg.contract` with the same maps (the form the vectorizer
/// turns straight into vector.contract). If its right operand is stored
/// [.., n, k], that operand is first transposed once into [.., k, n] (a
/// linalg.transpose) and the map follows, so that rows of it are vectors.
linalg::ContractOp toContract(RewriterBase &rewriter, linalg::LinalgOp op,
                              const Dims &d, bool packTransposed) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  Value rhs = op.getDpsInputs()[1];
  AffineMap rhsMap = maps[1];
  unsigned rank = rhsMap.getNumResults();
  if (packTransposed && rank >= 2 && resultOf(rhsMap, d.k) == rank - 1 &&
      resultOf(rhsMap, d.n) == rank - 2) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, rhs);
    std::swap(sizes[rank - 1], sizes[rank - 2]);
    Value init = tensor::EmptyOp::create(rewriter, loc, sizes,
                                         getElementTypeOrSelf(rhs.getType()));
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 1], perm[rank - 2]);
    rhs = linalg::TransposeOp::create(rewriter, loc, rhs, init, perm)
              .getResult()[0];
    SmallVector<AffineExpr> exprs(rhsMap.getResults());
    std::swap(exprs[rank - 1], exprs[rank - 2]);
    maps[1] = AffineMap::get(rhsMap.getNumDims(), 0, exprs, op.getContext());
  }
  auto contract = linalg::ContractOp::create(
      rewriter, loc, op->getResultTypes(),
      ValueRange{op.getDpsInputs()[0], rhs}, op.getDpsInits(),
      rewriter.getAffineMapArrayAttr(maps));
  rewriter.replaceOp(op, contract->getResults());
  return contract;
}

/// A 2-D operand of the contraction packed into panels (packPanels):
/// `root` is the value the tiles slice, `packed` its panels, `kPos` and
/// `wPos` the positions in root's dims of the depth dim and of the dim
/// cut into panels (loop dim `dim`: n for the right operand, m for the
/// left), `width` the panels' width.
struct Panels {
  Value root, packed;
  unsigned kPos, wPos, dim;
  int64_t width;
};

/// Positions of the loop dims `k` and `w` in operand `index` of `op`, if
/// the operand reads those two dims and no other.
std::optional<std::pair<unsigned, unsigned>>
panelDims(linalg::LinalgOp op, unsigned index, unsigned k, unsigned w) {
  AffineMap map = op.getIndexingMapsArray()[index];
  if (map.getNumResults() != 2)
    return std::nullopt;
  return std::make_pair(resultOf(map, k), resultOf(map, w));
}

/// `value` (2-D; its depth dim at `kPos`, the other at `wPos`) packed into
/// panels of `width` along the other dim, [ceil(W / width), K, width]
/// (P[j, k, c] = value[k, j·width + c] in [K, W] terms), zero-padded in
/// the last panel. For the right operand a panel is one register tile's
/// columns: the tile's k loop then reads one contiguous stream of them
/// instead of rows N floats apart (a 4 KiB stride at N = 1024, which also
/// maps every row onto the same L1 sets). Where `width` divides W the
/// packing is a reshape and a transpose; otherwise one generic that reads
/// each element (zero past the edge), since a tensor.pad would become an
/// element-wise strided copy. With `hoistable` the packing op carries
/// kPackedOperandAttr, so that torsor-hoist-packed-params packs a param
/// once per model load.
Value packPanels(RewriterBase &rewriter, Location loc, Value value,
                 unsigned kPos, unsigned wPos, int64_t width, bool hoistable) {
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, value);
  AffineExpr s0 = getAffineSymbolExpr(0, ctx);
  OpFoldResult w = sizes[wPos], k = sizes[kPos];
  OpFoldResult panels = affine::makeComposedFoldedAffineApply(
      rewriter, loc, s0.ceilDiv(width), w);
  Type element = getElementTypeOrSelf(value.getType());
  OpFoldResult widthAttr = rewriter.getIndexAttr(width);
  SmallVector<OpFoldResult> packedSizes = {panels, k, widthAttr};
  Value init = tensor::EmptyOp::create(rewriter, loc, packedSizes, element);
  Operation *pack;
  std::optional<int64_t> staticWidth = getConstantIntValue(w);
  if (staticWidth && *staticWidth % width == 0) {
    // The cut dim split into [panels, width], then the panels outermost.
    SmallVector<int64_t> shape = {*staticWidth / width, width};
    std::optional<int64_t> depth = getConstantIntValue(k);
    shape.insert(wPos == 1 ? shape.begin() : shape.end(),
                 depth.value_or(ShapedType::kDynamic));
    SmallVector<OpFoldResult> split = {panels, widthAttr};
    split.insert(wPos == 1 ? split.begin() : split.end(), k);
    SmallVector<ReassociationIndices> groups =
        wPos == 1 ? SmallVector<ReassociationIndices>{{0}, {1, 2}}
                  : SmallVector<ReassociationIndices>{{0, 1}, {2}};
    SmallVector<int64_t> perm = wPos == 1 ? SmallVector<int64_t>{1, 0, 2}
                                          : SmallVector<int64_t>{0, 2, 1};
    Value expanded = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(shape, element), value, groups,
        split);
    pack = linalg::TransposeOp::create(rewriter, loc, expanded, init, perm);
  } else {
    Value wValue = getValueOrCreateConstantIndexOp(rewriter, loc, w);
    SmallVector<utils::IteratorType> parallel(3, utils::IteratorType::parallel);
    pack = linalg::GenericOp::create(
        rewriter, loc, init.getType(), ValueRange{}, init,
        SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(3)}, parallel,
        [&](OpBuilder &b, Location nloc, ValueRange) {
          Value j = linalg::IndexOp::create(b, nloc, 0);
          Value kk = linalg::IndexOp::create(b, nloc, 1);
          Value c = linalg::IndexOp::create(b, nloc, 2);
          Value col = affine::AffineApplyOp::create(
              b, nloc,
              AffineMap::get(0, 3,
                             getAffineSymbolExpr(0, ctx) * width +
                                 getAffineSymbolExpr(1, ctx)),
              ValueRange{j, c});
          // Past the edge: read the last column (in bounds) and yield 0.
          Value inside = arith::CmpIOp::create(
              b, nloc, arith::CmpIPredicate::ult, col, wValue);
          Value last = arith::SubIOp::create(
              b, nloc, wValue, arith::ConstantIndexOp::create(b, nloc, 1));
          Value clamped = arith::MinUIOp::create(b, nloc, col, last);
          SmallVector<Value> at(2);
          at[kPos] = kk;
          at[wPos] = clamped;
          Value x = tensor::ExtractOp::create(b, nloc, value, at);
          Value zero = arith::ConstantOp::create(b, nloc, element,
                                                 b.getZeroAttr(element));
          linalg::YieldOp::create(
              b, nloc,
              arith::SelectOp::create(b, nloc, inside, x, zero).getResult());
        });
  }
  if (hoistable)
    pack->setAttr(kPackedOperandAttr, rewriter.getUnitAttr());
  return pack->getResult(0);
}

/// The offsets into `root` of `slice`, a chain of unit-stride,
/// rank-preserving tensor.extract_slice ops from `root` (what tiling makes
/// of an operand), composed.
FailureOr<SmallVector<OpFoldResult>> offsetsInto(OpBuilder &b, Location loc,
                                                 Value slice, Value root) {
  unsigned rank = cast<RankedTensorType>(root.getType()).getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  AffineExpr sum = getAffineSymbolExpr(0, b.getContext()) +
                   getAffineSymbolExpr(1, b.getContext());
  while (slice != root) {
    auto extract = slice.getDefiningOp<tensor::ExtractSliceOp>();
    if (!extract || extract.getSourceType().getRank() != rank ||
        extract.getResultType().getRank() != rank ||
        !llvm::all_of(extract.getMixedStrides(), isOneInteger))
      return failure();
    for (auto [offset, step] : llvm::zip(offsets, extract.getMixedOffsets()))
      offset =
          affine::makeComposedFoldedAffineApply(b, loc, sum, {offset, step});
    slice = extract.getSource();
  }
  return offsets;
}

/// Makes the register tile `tile` read its operands from their panels
/// (`panels[i]` for input i, where set): a [k, w] slice of the panel the
/// tile starts in, which holds all of the tile's rows or columns because
/// register tiles start at multiples of the panel width. The product is
/// unchanged (the same elements in the same k order). Returns the new
/// tile.
FailureOr<Operation *> readPanels(RewriterBase &rewriter, linalg::LinalgOp tile,
                                  ArrayRef<std::optional<Panels>> panels,
                                  const Dims &d) {
  Location loc = tile.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(tile);
  SmallVector<Value> inputs(tile.getDpsInputs());
  SmallVector<AffineMap> maps = tile.getIndexingMapsArray();
  for (auto [index, p] : llvm::enumerate(panels)) {
    if (!p)
      continue;
    Value slice = inputs[index];
    FailureOr<SmallVector<OpFoldResult>> offsets =
        offsetsInto(rewriter, loc, slice, p->root);
    if (failed(offsets))
      return failure();
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, slice);
    OpFoldResult panel = affine::makeComposedFoldedAffineApply(
        rewriter, loc, getAffineSymbolExpr(0, ctx).floorDiv(p->width),
        (*offsets)[p->wPos]);
    SmallVector<OpFoldResult> at = {panel, (*offsets)[p->kPos],
                                    rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> extent = {rewriter.getIndexAttr(1),
                                        sizes[p->kPos], sizes[p->wPos]};
    SmallVector<OpFoldResult> unit(3, rewriter.getIndexAttr(1));
    auto type = tensor::ExtractSliceOp::inferCanonicalRankReducedResultType(
        2, cast<RankedTensorType>(p->packed.getType()), extent);
    inputs[index] = tensor::ExtractSliceOp::create(rewriter, loc, type,
                                                   p->packed, at, extent, unit);
    maps[index] = AffineMap::get(
        d.numLoops, 0,
        {rewriter.getAffineDimExpr(d.k), rewriter.getAffineDimExpr(p->dim)},
        ctx);
  }
  auto replacement = linalg::ContractOp::create(
      rewriter, loc, tile->getResultTypes(), inputs, tile.getDpsInits(),
      rewriter.getAffineMapArrayAttr(maps));
  rewriter.replaceOp(tile, replacement->getResults());
  return replacement.getOperation();
}

/// Tiles `op` by `sizes` (0: untiled) with loops in `order` (dims listed
/// outermost first; untiled dims may be left out).
FailureOr<scf::SCFTilingResult> tile(RewriterBase &rewriter, Operation *op,
                                     ArrayRef<int64_t> sizes,
                                     ArrayRef<unsigned> order,
                                     scf::SCFTilingOptions::LoopType loopType) {
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(op->getContext(), sizes));
  options.setLoopType(loopType);
  SmallVector<int64_t> interchange;
  for (unsigned d : order)
    interchange.push_back(d);
  for (unsigned d = 0; d < sizes.size(); ++d)
    if (!llvm::is_contained(order, d))
      interchange.push_back(d);
  options.setInterchange(interchange);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> result =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(op), options);
  if (succeeded(result))
    rewriter.replaceOp(op, result->replacements);
  return result;
}

/// Whether `op` is an elementwise linalg.generic over a tensor of `type`
/// (all loops parallel, identity output map) that reads `value` through
/// the identity map: a link of an epilogue chain.
bool isEpilogue(Operation *op, Value value, Type type) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      generic->getResult(0).getType() != type)
    return false;
  if (!generic.getIndexingMapsArray().back().isIdentity())
    return false;
  for (OpOperand &operand : generic->getOpOperands())
    if (operand.get() == value &&
        !generic.getMatchingIndexingMap(&operand).isIdentity())
      return false;
  return true;
}

/// The task loop around `contract` (and the elementwise epilogue chain that
/// consumes it: bias, activation, residual, ...): an scf.forall over
/// blocks of `mc` rows and every batch element. The epilogue's ops and the
/// accumulator's fill (or bias broadcast) are fused into the same task, so they
/// run on the task's block while it is in cache instead of as passes of their
/// own over memory. Returns the contraction inside the task.
FailureOr<Operation *> tileTasks(RewriterBase &rewriter,
                                 linalg::ContractOp contract, const Dims &d,
                                 int64_t mc) {
  SmallVector<Operation *> chain = {contract};
  Type type = contract->getResult(0).getType();
  // The accumulator's init must be recomputable per task (a fill or a
  // bias broadcast): a task may write in place only into its share of the
  // loop's own output, so any other init would be copied per task.
  Operation *init = contract.getDpsInits()[0].getDefiningOp();
  bool fusable = isa_and_nonnull<linalg::FillOp, linalg::BroadcastOp>(init);
  while (
      fusable && chain.back()->hasOneUse() &&
      isEpilogue(*chain.back()->user_begin(), chain.back()->getResult(0), type))
    chain.push_back(*chain.back()->user_begin());
  // Sizes over the loops of the root (the dims of the output).
  AffineMap out = contract.getIndexingMapsArray()[2];
  SmallVector<int64_t> sizes(out.getNumResults(), 0);
  SmallVector<int64_t> order;
  for (unsigned pos = 0; pos < out.getNumResults(); ++pos) {
    unsigned dim = out.getDimPosition(pos);
    if (llvm::is_contained(d.batch, dim)) {
      sizes[pos] = 1;
      order.push_back(pos);
    }
  }
  sizes[resultOf(out, d.m)] = mc;
  order.push_back(resultOf(out, d.m));
  for (unsigned pos = 0; pos < out.getNumResults(); ++pos)
    if (!llvm::is_contained(order, pos))
      order.push_back(pos);

  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  tiling.setInterchange(order);
  if (chain.size() == 1) {
    // No epilogue: tile the contraction itself (its loops, not the
    // output's, so sizes move to loop dims).
    SmallVector<int64_t> loopSizes(d.numLoops, 0), loopOrder;
    for (unsigned b : d.batch) {
      loopSizes[b] = 1;
      loopOrder.push_back(b);
    }
    loopSizes[d.m] = mc;
    loopOrder.push_back(d.m);
    for (unsigned l = 0; l < d.numLoops; ++l)
      if (!llvm::is_contained(loopOrder, l))
        loopOrder.push_back(l);
    tiling.setTileSizes(
        getAsIndexOpFoldResult(rewriter.getContext(), loopSizes));
    tiling.setInterchange(loopOrder);
    rewriter.setInsertionPoint(contract);
    FailureOr<scf::SCFTilingResult> tasks = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(contract.getOperation()), tiling);
    if (failed(tasks))
      return failure();
    rewriter.replaceOp(contract, tasks->replacements);
    return tasks->tiledOps[0];
  }

  llvm::SmallPtrSet<Operation *, 8> members(chain.begin(), chain.end());
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult producer,
          bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        Operation *op = producer.getOwner();
        if (members.contains(op) ||
            isa<linalg::FillOp, linalg::BroadcastOp>(op))
          return scf::SCFTileAndFuseOptions::ControlFnResult{};
        return std::nullopt;
      });
  rewriter.setInsertionPoint(chain.back());
  FailureOr<scf::SCFTileAndFuseResult> fused =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(chain.back()), options);
  if (failed(fused))
    return failure();
  for (auto [original, replacement] : fused->replacements)
    rewriter.replaceAllUsesWith(original, replacement);
  for (Operation *op : fused->tiledAndFusedOps)
    if (isa<linalg::ContractOp>(op))
      return op;
  return failure();
}

/// Builds the loop nest of the file comment around one contraction.
LogicalResult tileContraction(RewriterBase &rewriter, linalg::LinalgOp op,
                              const Dims &d, strategy::DenseAttr s) {
  std::optional<std::pair<unsigned, unsigned>> rightDims;
  if (s.getPackPanels())
    rightDims = panelDims(op, 1, d.k, d.n);
  linalg::ContractOp generic =
      toContract(rewriter, op, d, s.getPackTransposed() && !rightDims);

  unsigned bits = getElementTypeOrSelf(generic->getResult(0).getType())
                      .getIntOrFloatBitWidth();
  int64_t mr = s.getRegisterRows(), nr = s.registerCols(bits);
  // The right operand's panels, once per call before the tasks (or once
  // per load, torsor-hoist-packed-params).
  SmallVector<std::optional<Panels>, 2> panels(2);
  if (rightDims) {
    rewriter.setInsertionPoint(generic);
    Value rhs = generic.getDpsInputs()[1];
    auto [kPos, nPos] = *rightDims;
    panels[1] = Panels{rhs,
                       packPanels(rewriter, generic.getLoc(), rhs, kPos, nPos,
                                  nr, /*hoistable=*/true),
                       kPos,
                       nPos,
                       d.n,
                       nr};
  }
  int64_t mc = std::max<int64_t>(s.getTaskRows() / mr, 1) * mr;
  using LoopType = scf::SCFTilingOptions::LoopType;
  auto sizes = [&](std::initializer_list<std::pair<unsigned, int64_t>> set) {
    SmallVector<int64_t> v(d.numLoops, 0);
    for (auto [dim, size] : set)
      v[dim] = size;
    return v;
  };

  // Tasks: blocks of rows (and every batch element) in parallel, with the
  // epilogue.
  FailureOr<Operation *> task = tileTasks(rewriter, generic, d, mc);
  if (failed(task))
    return failure();
  // Cache blocks: columns, then depth.
  auto cache = tile(rewriter, *task,
                    sizes({{d.n, s.getCacheCols()}, {d.k, s.getCacheDepth()}}),
                    {d.n, d.k}, LoopType::ForOp);
  if (failed(cache))
    return failure();
  // Register tiles.
  auto regs = tile(rewriter, cache->tiledOps[0], sizes({{d.m, mr}, {d.n, nr}}),
                   {d.m, d.n}, LoopType::ForOp);
  if (failed(regs))
    return failure();
  Operation *kernel = regs->tiledOps[0];
  if (panels[0] || panels[1]) {
    FailureOr<Operation *> reading =
        readPanels(rewriter, cast<linalg::LinalgOp>(kernel), panels, d);
    if (failed(reading))
      return failure();
    kernel = *reading;
  }
  // One k step per micro-kernel iteration.
  auto steps =
      tile(rewriter, kernel, sizes({{d.k, 1}}), {d.k}, LoopType::ForOp);
  if (failed(steps))
    return failure();
  steps->tiledOps[0]->setAttr(kKernelAttr, rewriter.getUnitAttr());

  // Ragged edges: the full register tiles get static shapes, the rest
  // (fewer than mr rows or nr columns) stays a dynamic op.
  for (LoopLikeOpInterface loop : llvm::reverse(regs->loops)) {
    auto forOp = dyn_cast<scf::ForOp>(loop.getOperation());
    scf::ForOp partial;
    if (forOp)
      (void)scf::peelForLoopAndSimplifyBounds(rewriter, forOp, partial);
  }
  return success();
}

/// The name of llvm.br's loop annotation: scf-to-cf copies a loop's
/// LLVM-dialect attributes onto its back edge under their own names.
constexpr StringLiteral kLoopAnnotationAttr = "loop_annotation";

/// `#llvm.loop_annotation<vectorize = #llvm.loop_vectorize<disable =
/// true>>`: LLVM's loop vectorizer leaves the loop alone.
LLVM::LoopAnnotationAttr noVectorizeAnnotation(MLIRContext *ctx) {
  auto vectorize = LLVM::LoopVectorizeAttr::get(ctx, BoolAttr::get(ctx, true),
                                                {}, {}, {}, {}, {}, {});
  return LLVM::LoopAnnotationAttr::get(ctx, {}, vectorize, {}, {}, {}, {}, {},
                                       {}, {}, {}, {}, {}, {}, {}, {});
}

/// The ragged edges' micro-kernels (fewer than mr rows or nr columns:
/// dynamic extents) become loops of unit steps over their dynamic dims
/// around a static kernel, and those loops carry a loop_annotation that
/// keeps LLVM's loop vectorizer off them (scf-to-cf puts it on the back
/// edge's llvm.br). Left to the later linalg lowering, the innermost loop
/// of such a kernel runs fewer than mr times with nr unrolled scalar
/// products per iteration, and the loop vectorizer costed hundreds of
/// memory accesses for a vector body that never runs. The static kernel
/// inside stays scalar (the linalg lowering's c + a·b, product rounded
/// first, as before: test/Numerics/f32-dense-order.py pins the sums of
/// the ragged rows bit for bit).
void tileRaggedKernels(RewriterBase &rewriter, func::FuncOp func) {
  SmallVector<linalg::LinalgOp> ragged;
  func.walk([&](linalg::LinalgOp op) {
    if (op->hasAttr(kKernelAttr) && op.hasDynamicShape())
      ragged.push_back(op);
  });
  if (ragged.empty())
    return;
  LLVM::LoopAnnotationAttr annotation =
      noVectorizeAnnotation(func.getContext());
  for (linalg::LinalgOp op : ragged) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<int64_t> sizes(ranges.size(), 0);
    SmallVector<unsigned> order;
    for (auto [dim, range] : llvm::enumerate(ranges))
      if (ShapedType::isDynamic(range)) {
        sizes[dim] = 1;
        order.push_back(dim);
      }
    FailureOr<scf::SCFTilingResult> loops = tile(
        rewriter, op, sizes, order, scf::SCFTilingOptions::LoopType::ForOp);
    if (failed(loops))
      continue;
    for (LoopLikeOpInterface loop : loops->loops)
      loop->setAttr(kLoopAnnotationAttr, annotation);
    loops->tiledOps[0]->removeAttr(kKernelAttr);
  }
}

/// Vectorizes the static micro-kernels and lowers their contractions to
/// outer products (broadcast + FMA), with the accumulator hoisted out of
/// the k loop.
void vectorizeKernels(RewriterBase &rewriter, func::FuncOp func) {
  tileRaggedKernels(rewriter, func);
  SmallVector<linalg::LinalgOp> kernels;
  func.walk([&](linalg::LinalgOp op) {
    if (op->hasAttr(kKernelAttr) && !op.hasDynamicShape())
      kernels.push_back(op);
    else if (op->hasAttr(kKernelAttr))
      op->removeAttr(kKernelAttr);
  });
  SmallVector<scf::ForOp> kLoops;
  for (linalg::LinalgOp op : kernels) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::VectorizationResult> v =
        linalg::vectorize(rewriter, op, {}, {}, false, false, false,
                          /*createNamedContraction=*/true);
    if (failed(v)) {
      op->removeAttr(kKernelAttr);
      continue;
    }
    if (auto loop = op->getParentOfType<scf::ForOp>())
      kLoops.push_back(loop);
    rewriter.replaceOp(op, v->replacements);
  }
  // The vectorizer's index constants sit inside the loop; once they are
  // out, the accumulator's read/write pair is loop-invariant.
  for (scf::ForOp loop : kLoops) {
    moveLoopInvariantCode(loop);
    (void)hoistLoopInvariantSubsets(rewriter, loop);
  }
}

/// f32 erf, exp and tanh in the bodies of elementwise generics (the
/// epilogues and the standalone glue) → MLIR's branch-free polynomial
/// forms. A libm call per element (erff for GELU, expf for sigmoid) keeps
/// LLVM from vectorizing the loop these bodies become and, measured on
/// grassmann_lm, cost 15 % of the model; the polynomials are plain
/// arith ops that vectorize. f64 keeps libm (no f64 approximations
/// upstream, and f64 is the accuracy mode).
void approximateElementwiseMath(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](linalg::GenericOp generic) {
    if (generic.getNumParallelLoops() != generic.getNumLoops())
      return;
    generic.getBody()->walk([&](Operation *op) {
      if (isa<math::ErfOp, math::ExpOp, math::TanhOp>(op) &&
          getElementTypeOrSelf(op->getResult(0).getType()).isF32())
        ops.push_back(op);
    });
  });
  if (ops.empty())
    return;
  RewritePatternSet patterns(func.getContext());
  populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
    name.consume_front("math.");
    return name == "erf" || name == "exp" || name == "tanh";
  });
  (void)applyOpPatternsGreedily(ops, std::move(patterns));
}

struct TileDense : torsor::impl::TorsorTileDenseBase<TileDense> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    strategy::DenseAttr strategy = strategy::denseOf(func);
    IRRewriter rewriter(&getContext());
    approximateElementwiseMath(func);

    // Elementwise chains (bias + activation, ...) into one generic each.
    // Only all-parallel consumers: fused into a contraction's generic, a
    // producer would turn it into something the kernels no longer match.
    // Only operands the consumer reads through a permutation: a broadcast
    // producer (a rank-0 scale, say) kept as an extra result would be
    // written by every iteration (the backward functions have these).
    RewritePatternSet elementwise(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(
        elementwise, [](OpOperand *operand) {
          auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
          auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
          return consumer && producer && producer->hasOneUse() &&
                 consumer.getMatchingIndexingMap(operand).isPermutation() &&
                 consumer.getNumParallelLoops() == consumer.getNumLoops() &&
                 producer.getNumParallelLoops() == producer.getNumLoops();
        });
    if (failed(applyPatternsGreedily(func, std::move(elementwise))))
      return signalPassFailure();

    SmallVector<std::pair<linalg::LinalgOp, Dims>> contractions;
    func.walk([&](linalg::LinalgOp op) {
      if (auto d = matchContraction(op))
        contractions.push_back({op, *d});
    });
    for (auto &[op, d] : contractions) {
      // --compute=bf16 (DenseBF16.h): packed for a bf16 unit (batch dims,
      // such as attention heads, included), else bf16-rounded operands on
      // the f32 kernel.
      if (strategy::BF16ProductsAttr products = strategy.getBf16()) {
        if (products.packs() &&
            succeeded(packBF16Contraction(rewriter, op, d.batch, d.m, d.n, d.k,
                                          products)))
          continue;
        roundOperandsToBF16(rewriter, op);
      }
      if (failed(tileContraction(rewriter, op, d, strategy)))
        return signalPassFailure();
    }

    // Static shapes for the peeled full tiles.
    RewritePatternSet canon(&getContext());
    for (Dialect *dialect : getContext().getLoadedDialects())
      dialect->getCanonicalizationPatterns(canon);
    for (RegisteredOperationName op : getContext().getRegisteredOperations())
      op.getCanonicalizationPatterns(canon, &getContext());
    if (failed(applyPatternsGreedily(func, std::move(canon))))
      return signalPassFailure();

    vectorizeKernels(rewriter, func);

    // broadcast + mul + multi_reduction (the generic form) → vector.contract.
    RewritePatternSet contract(&getContext());
    vector::populateVectorReductionToContractPatterns(contract);
    if (failed(applyPatternsGreedily(func, std::move(contract))))
      return signalPassFailure();

    RewritePatternSet lowering(&getContext());
    vector::populateVectorContractLoweringPatterns(
        lowering, vector::VectorContractLowering::OuterProduct);
    vector::populateVectorOuterProductLoweringPatterns(lowering);
    vector::populateVectorTransposeLoweringPatterns(
        lowering, vector::VectorTransposeLowering::EltWise);
    vector::populateVectorTransferPermutationMapLoweringPatterns(lowering);
    vector::populateVectorBroadcastLoweringPatterns(lowering);
    vector::populateVectorShapeCastLoweringPatterns(lowering);
    vector::TransferReadOp::getCanonicalizationPatterns(lowering,
                                                        &getContext());
    vector::TransferWriteOp::getCanonicalizationPatterns(lowering,
                                                         &getContext());
    // The k loops still carry the accumulator's tensor, now yielded
    // unchanged: dropping it lets bufferization write tiles in place.
    scf::ForOp::getCanonicalizationPatterns(lowering, &getContext());
    tensor::ExtractSliceOp::getCanonicalizationPatterns(lowering,
                                                        &getContext());
    tensor::InsertSliceOp::getCanonicalizationPatterns(lowering, &getContext());
    if (failed(applyPatternsGreedily(func, std::move(lowering))))
      return signalPassFailure();
  }
};

} // namespace
