//===- LowerDenseBF16.cpp - Packed bf16 products to AMX / AVX512-BF16 -----===//
//
// torsor-lower-dense-bf16: the buffer half of `--compute=bf16`
// (DenseBF16.h). Each packed product torsor-tile-dense left (a
// linalg.generic marked `torsor.bf16_product` reading tile-contiguous A
// [.., Mp/T, Kp/D, T, D/2, 2] and VNNI B [.., Np/T', Kp/D, D/2, T', 2] in
// bf16 and accumulating into C [.., Mp/T, T, Np/T', T'] f32; the leading
// dims are batch dims, attention heads say) becomes, by the strategy's
// matmul unit:
//
//   amx         scf.parallel over batch elements × tasks of task_rows rows
//               (the f32 kernel's task_rows where C has fewer than two
//               tasks' rows, so a short sequence still spreads out)
//                 scf.for depth blocks of cache_depth
//                   scf.for columns in blocks of B·T'
//                     scf.for the task's rows in blocks of R·T
//                       R × B C tiles (amx.tile_load), then over the block:
//                         R A tiles, B B tiles (each one contiguous KiB,
//                         rows 64 bytes apart), R·B amx.tile_mulf
//                       amx.tile_store
//   avx512bf16  scf.parallel over the same tasks, depth blocks and columns
//                 scf.for the task's rows by mr:
//                   mr × B vector<16xf32> accumulators; per VNNI row a of
//                   each depth tile: B vector<32xbf16> loads (one B tile
//                   row each), and per row the pair A[r, 2a..2a+1]
//                   broadcast → x86vector.avx512.dot
//
// Where a zero fill initializes C just before the product (the usual
// `linalg.fill` + matmul), or bufferization's copy of a zero-filled buffer
// does (one fill several products' accumulators share), both kernels
// start the first depth block from zero accumulators (amx.tile_zero, zero
// vectors) instead of loading C, and the fill or copy is dropped: one pass
// writing C and one reading it less.
//
// Tile configuration (ldtilecfg) is LLVM's: its X86 backend configures the
// tiles at the entry of every function that uses them and releases them at
// its exit, so each thread-pool task (an outlined function,
// torsor-outline-parallel-loops) configures its own thread's tiles. The
// runtime asks Linux for tile state once per process (docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/DenseBF16.h"
#include "compiler/Transforms/PackBF16Rows.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORLOWERDENSEBF16
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// What this pass reads of the strategy (kept in one place).
struct BF16Schedule {
  /// The packed products' unit (AMX or AVX512-BF16); none when the
  /// function has no packed bf16 products.
  std::optional<strategy::MatmulUnit> unit;
  int64_t tileRows, tileCols, tileDepth, blockRows, blockCols;
  /// Rows of C per task, and the depth block in tiles.
  int64_t taskRows, depthTiles;
  /// Rows per task where C has fewer than 2 · taskRows rows: the f32
  /// kernel's tasks (rounded up to a row block), so that a short
  /// sequence still spreads over the thread pool.
  int64_t shortTaskRows;
  /// Rows of one AVX512-BF16 register tile.
  int64_t registerRows;

  static BF16Schedule get(Operation *op) {
    strategy::DenseAttr dense = strategy::denseOf(op);
    strategy::BF16ProductsAttr p = dense.getBf16();
    if (!p)
      return {};
    BF16Schedule schedule{p.packs() ? std::optional(p.getUnit()) : std::nullopt,
                          p.getTileRows(),
                          p.getTileCols(),
                          p.getTileDepth(),
                          p.getBlockRows(),
                          p.getBlockCols(),
                          p.getTaskRows(),
                          p.getCacheDepth() / p.getTileDepth(),
                          0,
                          dense.getRegisterRows()};
    int64_t rowBlock = p.blockRows();
    schedule.shortTaskRows = std::min<int64_t>(
        schedule.taskRows,
        (dense.getTaskRows() + rowBlock - 1) / rowBlock * rowBlock);
    // The register tile must divide the tile's rows (one register tile
    // reads one row of A tiles).
    while (schedule.registerRows > 1 &&
           schedule.tileRows % schedule.registerRows != 0)
      --schedule.registerRows;
    return schedule;
  }
};

/// The packed operands of a marked product, with each tile's VNNI pairs
/// collapsed: A [batch.., Mp/T, Kp/D, T, D], B [batch'.., Np/T', Kp/D,
/// D/2, 2·T'] (VNNI rows), C [batch.., Mp, Np], and their extents.
struct Operands {
  Value a, b, c;
  /// Rows and columns of C, and the depth in tiles.
  Value rows, cols, depthTiles;
  /// Which batch dims (positions in C's) B reads, in B's order.
  SmallVector<unsigned> bBatch;
  unsigned batchRank = 0;
  /// Whether C has only the rows of the product (not a whole number of
  /// register tiles): the AVX512-BF16 kernel then loads and stores only
  /// the rows before the task's end (redirectToOutput).
  bool raggedRows = false;
};

/// Collapses the packed buffers to the tiles the kernels load; fails when
/// a buffer is not contiguous enough to collapse or its tiles are not the
/// schedule's.
FailureOr<Operands> collapse(OpBuilder &b, Location loc, linalg::GenericOp op,
                             const BF16Schedule &s) {
  Value a = op.getDpsInputs()[0], bv = op.getDpsInputs()[1],
        c = op.getDpsInits()[0];
  auto aType = dyn_cast<MemRefType>(a.getType());
  auto bType = dyn_cast<MemRefType>(bv.getType());
  auto cType = dyn_cast<MemRefType>(c.getType());
  if (!aType || !bType || !cType || cType.getRank() < 4 ||
      aType.getRank() != cType.getRank() + 1 || bType.getRank() < 5)
    return failure();
  auto trailing = [](MemRefType type, ArrayRef<int64_t> shape) {
    return type.getShape().take_back(shape.size()) == shape;
  };
  int64_t h = s.tileDepth / 2;
  if (!trailing(aType, {s.tileRows, h, 2}) ||
      !trailing(bType, {h, s.tileCols, 2}) ||
      cType.getShape()[cType.getRank() - 3] != s.tileRows ||
      cType.getShape().back() != s.tileCols)
    return failure();
  auto pairs = [](int64_t rank) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i + 2 < rank; ++i)
      groups.push_back({i});
    groups.push_back({rank - 2, rank - 1});
    return groups;
  };
  unsigned batchRank = cType.getRank() - 4;
  SmallVector<ReassociationIndices> cGroups;
  for (unsigned i = 0; i < batchRank; ++i)
    cGroups.push_back({i});
  cGroups.push_back({batchRank, batchRank + 1});
  cGroups.push_back({batchRank + 2, batchRank + 3});
  if (!memref::CollapseShapeOp::isGuaranteedCollapsible(
          aType, pairs(aType.getRank())) ||
      !memref::CollapseShapeOp::isGuaranteedCollapsible(
          bType, pairs(bType.getRank())) ||
      !memref::CollapseShapeOp::isGuaranteedCollapsible(cType, cGroups))
    return failure();
  Operands o;
  o.batchRank = batchRank;
  AffineMap bMap = op.getIndexingMapsArray()[1];
  for (unsigned pos = 0; pos + 5 < bMap.getNumResults(); ++pos)
    o.bBatch.push_back(bMap.getDimPosition(pos));
  o.a = memref::CollapseShapeOp::create(b, loc, a, pairs(aType.getRank()));
  o.b = memref::CollapseShapeOp::create(b, loc, bv, pairs(bType.getRank()));
  o.c = memref::CollapseShapeOp::create(b, loc, c, cGroups);
  o.rows = memref::DimOp::create(b, loc, o.c, o.batchRank);
  o.cols = memref::DimOp::create(b, loc, o.c, o.batchRank + 1);
  // From B (where it is a param, a constant): A's buffer may go
  // (PackBF16Rows.h).
  o.depthTiles = memref::DimOp::create(b, loc, o.b, o.bBatch.size() + 1);
  return o;
}

Value constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value add(OpBuilder &b, Location loc, Value x, int64_t y) {
  return y == 0 ? x : arith::AddIOp::create(b, loc, x, constant(b, loc, y));
}

Value divide(OpBuilder &b, Location loc, Value x, int64_t y) {
  return y == 1 ? x : arith::DivUIOp::create(b, loc, x, constant(b, loc, y));
}

/// One task's place: its batch element (indices into A and C, and the
/// ones B reads) and its rows [row, rowEnd).
struct Task {
  SmallVector<Value> aBatch, bBatch;
  Value row, rowEnd;

  SmallVector<Value> aAt(ArrayRef<Value> tail) const {
    return at(aBatch, tail);
  }
  SmallVector<Value> bAt(ArrayRef<Value> tail) const {
    return at(bBatch, tail);
  }

private:
  static SmallVector<Value> at(ArrayRef<Value> lead, ArrayRef<Value> tail) {
    SmallVector<Value> indices(lead);
    indices.append(tail.begin(), tail.end());
    return indices;
  }
};

/// The task loop: one scf.parallel (the runtime's thread pool splits its
/// first dim) over every batch element × block of the schedule's task rows
/// (the last one shorter; shortTaskRows where C has fewer than two
/// tasks' rows), its iteration number split into the batch indices and
/// the row block. Leaves the builder in its body.
Task buildTasks(OpBuilder &b, Location loc, const Operands &o,
                const BF16Schedule &s) {
  Value zero = constant(b, loc, 0);
  Value per = constant(b, loc, s.taskRows);
  if (s.shortTaskRows != s.taskRows) {
    Value isLong =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, o.rows,
                              constant(b, loc, 2 * s.taskRows));
    per = arith::SelectOp::create(b, loc, isLong, per,
                                  constant(b, loc, s.shortTaskRows));
  }
  Task t;
  auto end = [&](Value row) {
    Value next = arith::AddIOp::create(b, loc, row, per);
    return arith::MinUIOp::create(b, loc, next, o.rows).getResult();
  };
  if (o.batchRank == 0) {
    auto tasks = scf::ParallelOp::create(b, loc, zero, o.rows, per);
    b.setInsertionPointToStart(tasks.getBody());
    t.row = tasks.getInductionVars()[0];
    t.rowEnd = end(t.row);
    return t;
  }
  Value blocks = arith::CeilDivUIOp::create(b, loc, o.rows, per);
  Value count = blocks;
  SmallVector<Value> extents;
  for (unsigned d = 0; d < o.batchRank; ++d) {
    extents.push_back(memref::DimOp::create(b, loc, o.c, d));
    count = arith::MulIOp::create(b, loc, count, extents.back());
  }
  auto tasks =
      scf::ParallelOp::create(b, loc, zero, count, constant(b, loc, 1));
  b.setInsertionPointToStart(tasks.getBody());
  Value rest = tasks.getInductionVars()[0];
  t.row = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, rest, blocks), per);
  t.rowEnd = end(t.row);
  rest = arith::DivUIOp::create(b, loc, rest, blocks);
  t.aBatch.resize(o.batchRank);
  for (int d = o.batchRank - 1; d >= 0; --d) {
    t.aBatch[d] =
        d == 0 ? rest : arith::RemUIOp::create(b, loc, rest, extents[d]);
    if (d > 0)
      rest = arith::DivUIOp::create(b, loc, rest, extents[d]);
  }
  for (unsigned d : o.bBatch)
    t.bBatch.push_back(t.aBatch[d]);
  return t;
}

/// The buffer `value` is a view of (through view-like ops), and whether
/// the chain is only full reshapes (every element of the buffer).
std::pair<Value, bool> rootOf(Value value) {
  bool whole;
  Value root = viewedBuffer(value, &whole);
  return {root, whole};
}

/// Whether no op of `block` strictly between `from` and `to` touches an
/// element of `views` (sizes, memref.dim, and further views do not), except
/// where `allowed` says so.
bool untouchedBetween(ArrayRef<Value> views, Block *block, Operation *from,
                      Operation *to,
                      function_ref<bool(Operation *)> allowed = nullptr) {
  for (Value view : views)
    for (Operation *user : view.getUsers()) {
      if (user == from || user == to || isa<ViewLikeOpInterface>(user) ||
          isMemoryEffectFree(user) || (allowed && allowed(user)))
        continue;
      Operation *at = block->findAncestorOpInBlock(*user);
      if (at && from->isBeforeInBlock(at) && at->isBeforeInBlock(to))
        return false;
    }
  return true;
}

/// The last `linalg.fill` of zeros before `before` in its block that
/// writes all of `root` (through full reshapes only), if any.
linalg::FillOp lastZeroFill(ArrayRef<Value> views, Value root,
                            Operation *before) {
  linalg::FillOp fill;
  Block *block = before->getBlock();
  for (Value view : views)
    for (Operation *user : view.getUsers()) {
      auto candidate = dyn_cast<linalg::FillOp>(user);
      if (!candidate || candidate->getBlock() != block ||
          !candidate->isBeforeInBlock(before) ||
          candidate.getDpsInits()[0] != view ||
          !matchPattern(candidate.getDpsInputs()[0], m_AnyZeroFloat()))
        continue;
      auto [filled, whole] = rootOf(view);
      if (filled != root || !whole)
        continue;
      if (!fill || fill->isBeforeInBlock(candidate))
        fill = candidate;
    }
  return fill;
}

/// What zeroes `op`'s C just before the product, if anything: the
/// kernels then start the first depth block from zero accumulators
/// instead of loading C, and `init` (a pass writing C, and one reading it
/// back, less: at L = 16384, d = n = 256 they were a third of the call)
/// is dropped. Either a `linalg.fill` of zeros on C's buffer, or a
/// `memref.copy` into it from a buffer a zero fill wrote (bufferization's
/// copy of a zero-filled accumulator several products share; the fill is
/// `source`, dropped once no copy reads it). C must be a reshape of the
/// written buffer (no subview: the init would cover more than the kernels
/// write), and no other use of that buffer or a view of it may lie
/// between the init and the product.
struct ZeroInit {
  Operation *init = nullptr;
  linalg::FillOp source;
  explicit operator bool() const { return init; }
};

ZeroInit zeroInitOf(linalg::GenericOp op) {
  auto [root, whole] = rootOf(op.getDpsInits()[0]);
  if (!whole)
    return {};
  SmallVector<Value> views = viewsOf(root);
  Block *block = op->getBlock();
  ZeroInit found;
  if (linalg::FillOp fill = lastZeroFill(views, root, op))
    found.init = fill;
  // The last copy into all of C before the product, if after the fill.
  for (Value view : views)
    for (Operation *user : view.getUsers()) {
      auto copy = dyn_cast<memref::CopyOp>(user);
      if (!copy || copy.getTarget() != view || copy->getBlock() != block ||
          !copy->isBeforeInBlock(op) || !rootOf(view).second ||
          (found.init && copy->isBeforeInBlock(found.init)))
        continue;
      found = {copy, {}};
    }
  if (!found || !untouchedBetween(views, block, found.init, op))
    return {};
  auto copy = dyn_cast<memref::CopyOp>(found.init);
  if (!copy)
    return found;
  // The copy's source must hold zeros: a zero fill of all of its buffer,
  // and between the two no write to it (other copies reading it are fine).
  Value sourceRoot = rootOf(copy.getSource()).first;
  SmallVector<Value> sourceViews = viewsOf(sourceRoot);
  linalg::FillOp fill = lastZeroFill(sourceViews, sourceRoot, copy);
  if (!fill || llvm::is_contained(sourceViews, root) ||
      !untouchedBetween(sourceViews, block, fill, copy, [&](Operation *user) {
        auto reader = dyn_cast<memref::CopyOp>(user);
        return reader && !llvm::is_contained(sourceViews, reader.getTarget());
      }))
    return {};
  found.source = fill;
  return found;
}

/// Whether nothing but views, sizes and deallocation uses the buffer
/// `fill` writes, other than `fill` itself: the fill is then dead.
bool onlyFillReads(linalg::FillOp fill) {
  for (Value view : viewsOf(rootOf(fill.getDpsInits()[0]).first))
    for (Operation *user : view.getUsers())
      if (user != fill.getOperation() && !isa<ViewLikeOpInterface>(user) &&
          !isa<memref::DeallocOp>(user) && !isMemoryEffectFree(user))
        return false;
  return true;
}

/// Where `op`'s padded C (a fresh buffer the zero init `zero` fills) is
/// only copied out afterwards, its [M, N] corner into another buffer D
/// (the model's output, or an intermediate), and the padding is only in
/// the rows (N a whole number of column blocks): points the kernel's C at
/// D instead (rows [0, M), raggedRows) and returns the copy, which then
/// goes; null otherwise. The padded rows are never stored, and A's padded
/// rows only reach them. Without it the padded C is written and then
/// copied, a second pass over the output (at L = 16384, d = n = 256 a
/// tenth of the call).
memref::CopyOp redirectToOutput(OpBuilder &b, Location loc,
                                linalg::GenericOp op, Operands &o,
                                const ZeroInit &zero) {
  if (!zero || o.batchRank != 0)
    return {};
  auto [root, whole] = rootOf(op.getDpsInits()[0]);
  if (!whole || !root.getDefiningOp<memref::AllocOp>())
    return {};
  auto rootType = cast<MemRefType>(root.getType());
  if (rootType.getRank() != 2)
    return {};
  Block *block = op->getBlock();
  memref::CopyOp copy;
  for (Value view : viewsOf(root))
    for (Operation *user : view.getUsers()) {
      if (user == op.getOperation() || user == zero.init ||
          isa<ViewLikeOpInterface, memref::DeallocOp>(user) ||
          isMemoryEffectFree(user))
        continue;
      auto candidate = dyn_cast<memref::CopyOp>(user);
      if (copy || !candidate || candidate.getSource() != view ||
          candidate->getBlock() != block || !op->isBeforeInBlock(candidate))
        return {};
      copy = candidate;
    }
  if (!copy)
    return {};
  // The corner [0, M) x [0, N) with N all of C's columns.
  auto corner = copy.getSource().getDefiningOp<memref::SubViewOp>();
  if (!corner || corner.getSource() != root ||
      !llvm::all_of(corner.getMixedOffsets(), isZeroInteger) ||
      !llvm::all_of(corner.getMixedStrides(), isOneInteger))
    return {};
  std::optional<int64_t> cols = getConstantIntValue(corner.getMixedSizes()[1]);
  if (!cols || rootType.isDynamicDim(1) || *cols != rootType.getDimSize(1))
    return {};
  // D: rows of unit stride, not read or written before the copy, and not
  // an operand of the product.
  Value d = copy.getTarget();
  auto dType = cast<MemRefType>(d.getType());
  int64_t offset;
  SmallVector<int64_t> strides;
  if (failed(dType.getStridesAndOffset(strides, offset)) ||
      strides.back() != 1 || dType.getShape()[1] != *cols)
    return {};
  Value dRoot = rootOf(d).first;
  if (dRoot == rootOf(op.getDpsInputs()[0]).first ||
      dRoot == rootOf(op.getDpsInputs()[1]).first ||
      !untouchedBetween(viewsOf(dRoot), block, op, copy))
    return {};
  // D's views must be defined before the product (the kernel stores there).
  if (Operation *def = d.getDefiningOp())
    if (def->getBlock() == block && !def->isBeforeInBlock(op))
      return {};
  o.c = d;
  o.rows = memref::DimOp::create(b, loc, d, 0);
  o.raggedRows = true;
  return copy;
}

/// The kernels' accumulators: `load()` where C holds partial sums, and
/// `zero()` in the first depth block (k0 = 0) where C starts at zero
/// (`zeroInit`, what zeroInitOf found).
SmallVector<Value>
initialAccumulators(OpBuilder &b, Location loc, bool zeroInit, Value k0,
                    TypeRange types,
                    function_ref<SmallVector<Value>(OpBuilder &)> load,
                    function_ref<SmallVector<Value>(OpBuilder &)> zero) {
  if (!zeroInit)
    return load(b);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k0,
                                      constant(b, loc, 0));
  auto branch = scf::IfOp::create(b, loc, types, first, /*addThenBlock=*/true,
                                  /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  scf::YieldOp::create(b, loc, zero(b));
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, loc, load(b));
  return SmallVector<Value>(branch.getResults());
}

/// Where the depth-block loop ends: the depth in tiles, but at least one
/// block where C starts at zero (`zeroInit`), so that with no depth (K = 0,
/// the backward's dW at L = 0) the kernels still store the zeros the
/// dropped fill wrote.
Value depthBlockEnd(OpBuilder &b, Location loc, const Operands &o,
                    bool zeroInit) {
  if (!zeroInit)
    return o.depthTiles;
  return arith::MaxUIOp::create(b, loc, o.depthTiles, constant(b, loc, 1));
}

/// The AMX kernel of the file comment.
void buildAMX(OpBuilder &b, Location loc, const Operands &o,
              const BF16Schedule &s, bool zeroInit) {
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  auto cTile = amx::TileType::get({s.tileRows, s.tileCols}, f32);
  auto aTile = amx::TileType::get({s.tileRows, s.tileDepth}, bf16);
  // A B tile: depth / 2 VNNI rows of tileCols pairs.
  auto bTile = amx::TileType::get({s.tileDepth / 2, 2 * s.tileCols}, bf16);
  Value zero = constant(b, loc, 0), one = constant(b, loc, 1);
  int64_t rowBlock = s.tileRows * s.blockRows;
  int64_t colBlock = s.tileCols * s.blockCols;
  Task t = buildTasks(b, loc, o, s);
  // Depth blocks: [k0, kEnd) in tiles.
  auto depthBlocks =
      scf::ForOp::create(b, loc, zero, depthBlockEnd(b, loc, o, zeroInit),
                         constant(b, loc, s.depthTiles));
  b.setInsertionPointToStart(depthBlocks.getBody());
  Value k0 = depthBlocks.getInductionVar();
  Value kEnd = arith::MinUIOp::create(b, loc, add(b, loc, k0, s.depthTiles),
                                      o.depthTiles);
  auto cols =
      scf::ForOp::create(b, loc, zero, o.cols, constant(b, loc, colBlock));
  b.setInsertionPointToStart(cols.getBody());
  Value j = cols.getInductionVar();
  Value panel = divide(b, loc, j, s.tileCols);
  auto rows =
      scf::ForOp::create(b, loc, t.row, t.rowEnd, constant(b, loc, rowBlock));
  b.setInsertionPointToStart(rows.getBody());
  Value i = rows.getInductionVar();
  Value rowTile = divide(b, loc, i, s.tileRows);
  SmallVector<Value> rowAt, colAt, rowTiles, panels;
  for (int64_t r = 0; r < s.blockRows; ++r) {
    rowAt.push_back(add(b, loc, i, r * s.tileRows));
    rowTiles.push_back(add(b, loc, rowTile, r));
  }
  for (int64_t c = 0; c < s.blockCols; ++c) {
    colAt.push_back(add(b, loc, j, c * s.tileCols));
    panels.push_back(add(b, loc, panel, c));
  }
  SmallVector<Type> accTypes(s.blockRows * s.blockCols, cTile);
  SmallVector<Value> acc = initialAccumulators(
      b, loc, zeroInit, k0, accTypes,
      [&](OpBuilder &nb) {
        SmallVector<Value> tiles;
        for (int64_t r = 0; r < s.blockRows; ++r)
          for (int64_t c = 0; c < s.blockCols; ++c)
            tiles.push_back(amx::TileLoadOp::create(
                nb, loc, cTile, o.c, t.aAt({rowAt[r], colAt[c]})));
        return tiles;
      },
      [&](OpBuilder &nb) {
        SmallVector<Value> tiles;
        for (Type type : accTypes)
          tiles.push_back(amx::TileZeroOp::create(nb, loc, type));
        return tiles;
      });
  auto depth = scf::ForOp::create(
      b, loc, k0, kEnd, one, acc,
      [&](OpBuilder &nb, Location nloc, Value k, ValueRange iter) {
        SmallVector<Value> as, bs;
        for (int64_t r = 0; r < s.blockRows; ++r)
          as.push_back(amx::TileLoadOp::create(
              nb, nloc, aTile, o.a, t.aAt({rowTiles[r], k, zero, zero})));
        for (int64_t c = 0; c < s.blockCols; ++c)
          bs.push_back(amx::TileLoadOp::create(
              nb, nloc, bTile, o.b, t.bAt({panels[c], k, zero, zero})));
        SmallVector<Value> next;
        for (int64_t r = 0; r < s.blockRows; ++r)
          for (int64_t c = 0; c < s.blockCols; ++c)
            next.push_back(amx::TileMulFOp::create(
                nb, nloc, cTile, as[r], bs[c], iter[r * s.blockCols + c]));
        scf::YieldOp::create(nb, nloc, next);
      });
  for (int64_t r = 0; r < s.blockRows; ++r)
    for (int64_t c = 0; c < s.blockCols; ++c)
      amx::TileStoreOp::create(b, loc, o.c, t.aAt({rowAt[r], colAt[c]}),
                               depth.getResult(r * s.blockCols + c));
}

/// The AVX512-BF16 kernel of the file comment.
void buildAVX512BF16(OpBuilder &b, Location loc, const Operands &o,
                     const BF16Schedule &s, bool zeroInit,
                     const RowPacking &packing) {
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  constexpr int64_t lanes = 16; // f32 lanes of a 512-bit vector
  auto accType = VectorType::get({lanes}, f32);
  auto pairsType = VectorType::get({2 * lanes}, bf16);
  // One vector of columns is one B tile's row: tiles of 16 columns.
  int64_t vectors = s.blockCols;
  Value zero = constant(b, loc, 0), one = constant(b, loc, 1);
  Task t = buildTasks(b, loc, o, s);
  // With `packing`, the task's tiles of A for one depth block: a stack
  // buffer (static, so torsor-outline-parallel-loops hoists it to the task
  // function's entry and every task of a thread reuses it).
  Value tiles;
  if (packing)
    tiles = memref::AllocaOp::create(
        b, loc,
        MemRefType::get(
            {s.taskRows / s.tileRows, s.depthTiles, s.tileRows, s.tileDepth},
            bf16),
        b.getI64IntegerAttr(64));
  // Depth blocks [k0, kEnd) in tiles, then columns, then the task's rows:
  // one block column of B (B·16 columns × cache_depth) stays in L1 while
  // every register tile of the task's rows reads it.
  auto depthBlocks =
      scf::ForOp::create(b, loc, zero, depthBlockEnd(b, loc, o, zeroInit),
                         constant(b, loc, s.depthTiles));
  b.setInsertionPointToStart(depthBlocks.getBody());
  Value k0 = depthBlocks.getInductionVar();
  Value kEnd = arith::MinUIOp::create(b, loc, add(b, loc, k0, s.depthTiles),
                                      o.depthTiles);
  if (packing)
    packRowsInto(b, loc, packing, tiles, t.row, t.rowEnd, k0, kEnd, s.tileRows,
                 s.tileDepth);
  auto cols = scf::ForOp::create(b, loc, zero, o.cols,
                                 constant(b, loc, vectors * lanes));
  b.setInsertionPointToStart(cols.getBody());
  Value j = cols.getInductionVar();
  Value panel = divide(b, loc, j, lanes);
  auto rows = scf::ForOp::create(b, loc, t.row, t.rowEnd,
                                 constant(b, loc, s.registerRows));
  b.setInsertionPointToStart(rows.getBody());
  Value i = rows.getInductionVar();
  // The register tile's rows lie in one row of A tiles (of the task's
  // buffer, which starts at the task's first row, with `packing`).
  Value rowTile =
      divide(b, loc, packing ? arith::SubIOp::create(b, loc, i, t.row) : i,
             s.tileRows);
  Value inTile =
      arith::RemUIOp::create(b, loc, i, constant(b, loc, s.tileRows));
  SmallVector<Value> rowAt, inTileAt, colAt, panels, acc;
  // With ragged rows (C holds just the product's rows), whether each row
  // of the register tile lies before the task's end; null where it must
  // (row 0, or C padded to whole register tiles).
  SmallVector<Value> rowInside;
  for (int64_t r = 0; r < s.registerRows; ++r) {
    rowAt.push_back(add(b, loc, i, r));
    inTileAt.push_back(add(b, loc, inTile, r));
    rowInside.push_back(o.raggedRows && r > 0
                            ? arith::CmpIOp::create(b, loc,
                                                    arith::CmpIPredicate::ult,
                                                    rowAt[r], t.rowEnd)
                                  .getResult()
                            : Value());
  }
  for (int64_t v = 0; v < vectors; ++v) {
    colAt.push_back(add(b, loc, j, v * lanes));
    panels.push_back(add(b, loc, panel, v));
  }
  SmallVector<Type> accTypes(s.registerRows * vectors, accType);
  acc = initialAccumulators(
      b, loc, zeroInit, k0, accTypes,
      [&](OpBuilder &nb) {
        SmallVector<Value> loads;
        for (int64_t r = 0; r < s.registerRows; ++r) {
          auto load = [&](OpBuilder &lb, Location lloc) {
            SmallVector<Value> row;
            for (int64_t v = 0; v < vectors; ++v)
              row.push_back(vector::LoadOp::create(
                  lb, lloc, accType, o.c, t.aAt({rowAt[r], colAt[v]})));
            return row;
          };
          if (!rowInside[r]) {
            llvm::append_range(loads, load(nb, loc));
            continue;
          }
          // Past C's rows: zeros (the row is never stored).
          SmallVector<Type> rowTypes(vectors, accType);
          auto guarded = scf::IfOp::create(
              nb, loc, rowInside[r],
              [&](OpBuilder &tb, Location tloc) {
                scf::YieldOp::create(tb, tloc, load(tb, tloc));
              },
              [&](OpBuilder &eb, Location eloc) {
                Value zeros = arith::ConstantOp::create(
                    eb, eloc, accType,
                    cast<TypedAttr>(eb.getZeroAttr(accType)));
                scf::YieldOp::create(eb, eloc,
                                     SmallVector<Value>(vectors, zeros));
              });
          llvm::append_range(loads, guarded.getResults());
        }
        return loads;
      },
      [&](OpBuilder &nb) {
        Value zeros = arith::ConstantOp::create(
            nb, loc, accType, cast<TypedAttr>(nb.getZeroAttr(accType)));
        return SmallVector<Value>(accTypes.size(), zeros);
      });
  auto depth = scf::ForOp::create(
      b, loc, k0, kEnd, one, acc,
      [&](OpBuilder &kb, Location kloc, Value k, ValueRange kIter) {
        auto pairsLoop = scf::ForOp::create(
            kb, kloc, zero, constant(kb, kloc, s.tileDepth / 2), one, kIter,
            [&](OpBuilder &nb, Location nloc, Value a, ValueRange iter) {
              SmallVector<Value> bs;
              for (int64_t v = 0; v < vectors; ++v)
                bs.push_back(vector::LoadOp::create(
                    nb, nloc, pairsType, o.b, t.bAt({panels[v], k, a, zero})));
              Value col =
                  arith::MulIOp::create(nb, nloc, a, constant(nb, nloc, 2));
              // The task's buffer holds one depth block, from k0.
              Value kA = packing ? arith::SubIOp::create(nb, nloc, k, k0) : k;
              SmallVector<Value> next;
              for (int64_t r = 0; r < s.registerRows; ++r) {
                // The pair A[r, 2a], A[r, 2a + 1] as one i32, in every lane.
                Value pair = vector::LoadOp::create(
                    nb, nloc, VectorType::get({2}, bf16), packing ? tiles : o.a,
                    t.aAt({rowTile, kA, inTileAt[r], col}));
                Value word = vector::BitCastOp::create(
                    nb, nloc, VectorType::get({1}, nb.getI32Type()), pair);
                Value scalar = vector::ExtractOp::create(nb, nloc, word, 0);
                Value splat = vector::BroadcastOp::create(
                    nb, nloc, VectorType::get({lanes}, nb.getI32Type()),
                    scalar);
                Value pairs =
                    vector::BitCastOp::create(nb, nloc, pairsType, splat);
                for (int64_t v = 0; v < vectors; ++v)
                  next.push_back(x86vector::DotBF16Op::create(
                      nb, nloc, accType, iter[r * vectors + v], pairs, bs[v]));
              }
              scf::YieldOp::create(nb, nloc, next);
            });
        scf::YieldOp::create(kb, kloc, pairsLoop.getResults());
      });
  for (int64_t r = 0; r < s.registerRows; ++r) {
    OpBuilder::InsertionGuard guard(b);
    if (rowInside[r]) {
      auto inside = scf::IfOp::create(b, loc, rowInside[r]);
      b.setInsertionPointToStart(inside.thenBlock());
    }
    for (int64_t v = 0; v < vectors; ++v)
      vector::StoreOp::create(b, loc, depth.getResult(r * vectors + v), o.c,
                              t.aAt({rowAt[r], colAt[v]}));
  }
}

struct LowerDenseBF16 : torsor::impl::TorsorLowerDenseBF16Base<LowerDenseBF16> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    BF16Schedule schedule = BF16Schedule::get(func);
    if (!schedule.unit)
      return;
    SmallVector<linalg::GenericOp> products;
    func.walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kBF16ProductAttr) && op.hasPureBufferSemantics())
        products.push_back(op);
    });
    llvm::SetVector<linalg::FillOp> sources;
    for (linalg::GenericOp op : products) {
      OpBuilder b(op);
      // The AVX512-BF16 kernel reads one B tile row per vector.
      if (*schedule.unit == strategy::MatmulUnit::AVX512BF16 &&
          schedule.tileCols != 16)
        continue;
      FailureOr<Operands> operands = collapse(b, op.getLoc(), op, schedule);
      // Not collapsible: the generic's own loops compute the same sums.
      if (failed(operands))
        continue;
      ZeroInit zero = zeroInitOf(op);
      // AMX tiles store whole tiles of rows: only the vector kernel writes
      // straight into the output.
      memref::CopyOp copyOut;
      if (*schedule.unit == strategy::MatmulUnit::AVX512BF16)
        copyOut = redirectToOutput(b, op.getLoc(), op, *operands, zero);
      // The vector kernel packs A's rows per task (PackBF16Rows.h); the
      // AMX kernel still reads the whole-matrix tiles.
      RowPacking packing;
      if (*schedule.unit == strategy::MatmulUnit::AVX512BF16 &&
          operands->batchRank == 0)
        packing = findRowPacking(b, op, schedule.tileRows, schedule.tileDepth);
      if (*schedule.unit == strategy::MatmulUnit::AMX)
        buildAMX(b, op.getLoc(), *operands, schedule, bool(zero));
      else
        buildAVX512BF16(b, op.getLoc(), *operands, schedule, bool(zero),
                        packing);
      op.erase();
      if (packing)
        eraseRowPacking(packing);
      if (zero) {
        // A fill other products' copies read may be this one's own.
        if (auto fill = dyn_cast<linalg::FillOp>(zero.init))
          sources.remove(fill);
        zero.init->erase();
      }
      if (copyOut)
        copyOut.erase();
      if (zero.source)
        sources.insert(zero.source);
    }
    // A zero fill whose copies all went is dead.
    for (linalg::FillOp fill : sources)
      if (onlyFillReads(fill))
        fill.erase();
  }
};

} // namespace
