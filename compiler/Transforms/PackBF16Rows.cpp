//===- PackBF16Rows.cpp - A's bf16 packing inside the product's tasks -----===//
//
// See PackBF16Rows.h. Before, at L = 16384, d = n = 256, the whole-matrix
// pass that rounds and packs A was 7.7 % of the call: it read A (16 MiB of
// f32), wrote 8 MiB of bf16 tiles, and the kernel read them back from
// memory. Per task and depth block (task_rows × cache_depth bf16, 64 KiB
// at 128 × 256) the tiles are written into a stack buffer each task
// reuses and read while still in cache.
//
// The per-task copy is the same linalg.generic (same maps, same body) on
// subviews: the rows [row, min(rowEnd, M)) of every input that reads m,
// and the depth [k0·D, min(kEnd·D, K)) of every input that reads k. Its
// output is the corner of the task's buffer, whose first two dims are
// the task's row tiles and depth tiles, so (m floordiv T, ko, m mod T, e)
// on the local loop indices is the tile's place in it (row and k0·D are
// multiples of T and D). Each tile holds the same bf16 values as before,
// and the products sum in the same order: results are bit-identical.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/PackBF16Rows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace torsor;

Value torsor::viewedBuffer(Value value, bool *whole) {
  if (whole)
    *whole = true;
  while (Operation *def = value.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view || view.getViewSource() != def->getOperand(0))
      break;
    if (whole)
      *whole &= isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def);
    value = view.getViewSource();
  }
  return value;
}

SmallVector<Value> torsor::viewsOf(Value root) {
  SmallVector<Value> views = {root};
  for (unsigned i = 0; i < views.size(); ++i)
    for (Operation *user : views[i].getUsers())
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == views[i])
          views.push_back(view->getResult(0));
  return views;
}

namespace {

/// Whether `user` only reads the buffer it has as `view`: a structured op
/// with it as an input only, a copy from it, a dim, a view.
bool onlyReads(Operation *user, Value view) {
  if (isa<ViewLikeOpInterface>(user) || isMemoryEffectFree(user))
    return true;
  if (auto copy = dyn_cast<memref::CopyOp>(user))
    return copy.getTarget() != view;
  if (auto structured = dyn_cast<linalg::LinalgOp>(user))
    return llvm::none_of(structured.getDpsInits(),
                         [&](Value init) { return init == view; });
  return false;
}

/// Whether no op of `block` strictly between `from` and `to` may write
/// the buffer of `value`.
bool unwrittenBetween(Value value, Block *block, Operation *from,
                      Operation *to) {
  for (Value view : viewsOf(viewedBuffer(value)))
    for (Operation *user : view.getUsers()) {
      if (onlyReads(user, view))
        continue;
      Operation *at = block->findAncestorOpInBlock(*user);
      if (!at || (from->isBeforeInBlock(at) && at->isBeforeInBlock(to)))
        return false;
    }
  return true;
}

/// `expr` as `d floordiv c` / `d mod c` (`kind`) with c == `by`: d's
/// position, or none.
std::optional<unsigned> dimOf(AffineExpr expr, AffineExprKind kind,
                              int64_t by) {
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary || binary.getKind() != kind)
    return std::nullopt;
  auto dim = dyn_cast<AffineDimExpr>(binary.getLHS());
  auto c = dyn_cast<AffineConstantExpr>(binary.getRHS());
  if (!dim || !c || c.getValue() != by)
    return std::nullopt;
  return dim.getPosition();
}

/// How an input reads the loop dims the per-task copy narrows: per result,
/// the row (m), the depth (k, or ko·D + e), or neither.
enum class Reads { Row, Depth, Other };

/// The reads of every result of `map`, or failure where one uses m or k
/// other than whole.
FailureOr<SmallVector<Reads>> readsOf(AffineMap map, const RowPacking &p,
                                      int64_t tileDepth) {
  MLIRContext *ctx = map.getContext();
  AffineExpr dm = getAffineDimExpr(p.m, ctx);
  AffineExpr whole = p.split ? getAffineDimExpr(p.k, ctx) * tileDepth +
                                   getAffineDimExpr(p.e, ctx)
                             : getAffineDimExpr(p.k, ctx);
  SmallVector<Reads> reads;
  for (AffineExpr expr : map.getResults()) {
    expr = simplifyAffineExpr(expr, map.getNumDims(), 0);
    if (expr == dm) {
      reads.push_back(Reads::Row);
    } else if (expr == simplifyAffineExpr(whole, map.getNumDims(), 0)) {
      reads.push_back(Reads::Depth);
    } else if (expr.isFunctionOfDim(p.m) || expr.isFunctionOfDim(p.k) ||
               (p.split && expr.isFunctionOfDim(p.e))) {
      return failure();
    } else {
      reads.push_back(Reads::Other);
    }
  }
  return reads;
}

} // namespace

RowPacking torsor::findRowPacking(OpBuilder &b, linalg::GenericOp product,
                                  int64_t tileRows, int64_t tileDepth) {
  Value root = viewedBuffer(product.getDpsInputs()[0]);
  auto rootType = dyn_cast<MemRefType>(root.getType());
  if (!root.getDefiningOp<memref::AllocOp>() || rootType.getRank() != 4 ||
      rootType.getShape()[2] != tileRows || rootType.getShape()[3] != tileDepth)
    return {};
  Block *block = product->getBlock();
  RowPacking p;
  p.buffer = root;
  for (Value view : viewsOf(root))
    for (Operation *user : view.getUsers()) {
      if (isa<ViewLikeOpInterface>(user) || user == product.getOperation())
        continue;
      if (isa<memref::DeallocOp>(user)) {
        if (user->getBlock() != block || user->isBeforeInBlock(product))
          return {};
        continue;
      }
      // The packing writes the buffer itself (not a view of part of it).
      if (auto generic = dyn_cast<linalg::GenericOp>(user)) {
        if (p.pack || view != root || generic.getNumDpsInits() != 1 ||
            generic.getDpsInits()[0] != root)
          return {};
        p.pack = generic;
        continue;
      }
      auto fill = dyn_cast<linalg::FillOp>(user);
      if (!fill || p.fill || view != root || fill.getDpsInits()[0] != root ||
          !matchPattern(fill.getDpsInputs()[0], m_AnyZeroFloat()))
        return {};
      p.fill = fill;
    }
  if (!p.pack || p.pack->getBlock() != block ||
      !p.pack->isBeforeInBlock(product) ||
      (p.fill &&
       (p.fill->getBlock() != block || !p.fill->isBeforeInBlock(p.pack))) ||
      !p.pack.hasPureBufferSemantics())
    return {};
  // A pure body that does not ask where it is: the copy computes the same
  // values on the same elements.
  for (Operation &op : p.pack.getBody()->without_terminator())
    if (isa<linalg::IndexOp>(op) || !isMemoryEffectFree(&op))
      return {};

  // Output (m floordiv T, ko, m mod T, e) or (m floordiv T, k floordiv D,
  // m mod T, k mod D).
  SmallVector<AffineMap> maps = p.pack.getIndexingMapsArray();
  AffineMap out = maps.back();
  if (out.getNumResults() != 4)
    return {};
  std::optional<unsigned> m =
      dimOf(out.getResult(2), AffineExprKind::Mod, tileRows);
  if (!m || out.getResult(0) !=
                getAffineDimExpr(*m, b.getContext()).floorDiv(tileRows))
    return {};
  p.m = *m;
  auto ko = dyn_cast<AffineDimExpr>(out.getResult(1));
  auto e = dyn_cast<AffineDimExpr>(out.getResult(3));
  if (ko && e && out.getNumDims() == 3) {
    p.split = true;
    p.k = ko.getPosition();
    p.e = e.getPosition();
  } else {
    std::optional<unsigned> k =
        dimOf(out.getResult(3), AffineExprKind::Mod, tileDepth);
    if (!k || out.getNumDims() != 2 ||
        out.getResult(1) !=
            getAffineDimExpr(*k, b.getContext()).floorDiv(tileDepth))
      return {};
    p.k = *k;
  }
  if (p.m == p.k || (p.split && (p.e == p.m || p.e == p.k)))
    return {};

  // Inputs: m and k read whole; each one's sizes give A's rows and depth.
  for (OpOperand *input : p.pack.getDpsInputOperands()) {
    if (!isa<MemRefType>(input->get().getType()))
      return {};
    FailureOr<SmallVector<Reads>> reads =
        readsOf(maps[input->getOperandNumber()], p, tileDepth);
    if (failed(reads) ||
        !unwrittenBetween(input->get(), block, p.pack, product))
      return {};
    for (auto [pos, read] : llvm::enumerate(*reads)) {
      Value &extent = read == Reads::Row ? p.rows : p.depth;
      if (read != Reads::Other && !extent)
        extent = memref::DimOp::create(b, product.getLoc(), input->get(), pos);
    }
  }
  // Neither read by any input (a constant A): nothing to narrow.
  if (!p.rows || !p.depth)
    return {};
  return p;
}

void torsor::packRowsInto(OpBuilder &b, Location loc, const RowPacking &p,
                          Value tiles, Value row, Value rowEnd, Value k0,
                          Value kEnd, int64_t tileRows, int64_t tileDepth) {
  linalg::GenericOp pack = p.pack;
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value last = arith::MinUIOp::create(b, loc, rowEnd, p.rows);
  Value rowCount = arith::SubIOp::create(b, loc, last, row);
  Value kFirst = arith::MulIOp::create(b, loc, k0, c(tileDepth));
  Value kTiles = arith::SubIOp::create(b, loc, kEnd, k0);
  Value kLast = arith::MinUIOp::create(
      b, loc, arith::MulIOp::create(b, loc, kEnd, c(tileDepth)), p.depth);
  Value kCount = arith::SubIOp::create(b, loc, kLast, kFirst);
  SmallVector<AffineMap> maps = pack.getIndexingMapsArray();
  SmallVector<Value> operands;
  for (OpOperand *input : pack.getDpsInputOperands()) {
    Value value = input->get();
    SmallVector<Reads> reads =
        *readsOf(maps[input->getOperandNumber()], p, tileDepth);
    SmallVector<OpFoldResult> offsets, sizes,
        strides(reads.size(), b.getIndexAttr(1));
    for (auto [pos, read] : llvm::enumerate(reads)) {
      offsets.push_back(read == Reads::Row     ? OpFoldResult(row)
                        : read == Reads::Depth ? OpFoldResult(kFirst)
                                               : b.getIndexAttr(0));
      sizes.push_back(read == Reads::Row ? OpFoldResult(rowCount)
                      : read == Reads::Depth
                          ? OpFoldResult(kCount)
                          : memref::getMixedSize(b, loc, value, pos));
    }
    operands.push_back(
        memref::SubViewOp::create(b, loc, value, offsets, sizes, strides));
  }
  Value rowTiles = arith::CeilDivUIOp::create(b, loc, rowCount, c(tileRows));
  SmallVector<OpFoldResult> zeros(4, b.getIndexAttr(0)),
      ones(4, b.getIndexAttr(1));
  Value corner = memref::SubViewOp::create(
      b, loc, tiles, zeros,
      SmallVector<OpFoldResult>{rowTiles, kTiles, b.getIndexAttr(tileRows),
                                b.getIndexAttr(tileDepth)},
      ones);
  // The depth padding of the last depth tile is zeros (the rows past M
  // only reach rows of C that are never kept).
  if (p.fill)
    linalg::FillOp::create(b, loc, linalg::FillOp(p.fill).getDpsInputs()[0],
                           corner);
  operands.push_back(corner);
  Operation *copy = b.clone(*pack.getOperation());
  copy->setOperands(operands);
}

void torsor::eraseRowPacking(RowPacking &p) {
  p.pack->erase();
  if (p.fill)
    p.fill->erase();
  SmallVector<Value> views = viewsOf(p.buffer);
  SmallVector<Operation *> deallocs;
  for (Value view : views)
    for (Operation *user : view.getUsers()) {
      if (isa<memref::DeallocOp>(user))
        deallocs.push_back(user);
      else if (!isa<ViewLikeOpInterface>(user))
        return;
    }
  for (Operation *dealloc : deallocs)
    dealloc->erase();
  for (Value view : llvm::reverse(views))
    view.getDefiningOp()->erase();
}
