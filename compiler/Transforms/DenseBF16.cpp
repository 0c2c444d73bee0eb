//===- DenseBF16.cpp - bf16 forms of dense contractions -------------------===//
//
// The tensor half of `--compute=bf16` for dense contractions (DenseBF16.h).
// Packing is plain linalg on tensors, so it bufferizes, fuses and is
// checked like every other op, and the packed product is an ordinary
// contraction until torsor-lower-dense-bf16 gives it a kernel: if that pass
// does not run, the generic's loops compute the same numbers.
//
// Layouts (T, T' = tile rows and columns, D = tile depth, H = D / 2):
//   A  [M, K] f32  → round → [Mp, Kp] bf16 → tiles → [Mp/T, Kp/D, T, H, 2]
//   B  [K, N] f32  → round → [Kp, Np] bf16 → tiles → [Np/T', Kp/D, H, T', 2]
//                    (VNNI: Bt[no, ko, a, n, p] = B[ko·D + 2a + p, no·T' + n],
//                    the pairs tdpbf16ps and vdpbf16ps multiply together
//                    sit side by side)
//   C  [M, N] f32  → pad → [Mp, Np] viewed as [Mp/T, T, Np/T', T'],
//                    C += A · B, slice back to [M, N]
// Each tile of A and B is one contiguous KiB (16 rows of 64 bytes): read
// in place, a tile's rows were 2·Kp and 4·Np bytes apart, at K = N = 1024
// 16 lines in the same L1 set, and the AMX kernel ran at half torch's.
// The zero padding adds nothing to the sums. Where B is a param of the
// model, torsor-hoist-packed-params moves its packing into the model's
// prepare function (run once per load and after params change); otherwise
// it is packed on every call.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/DenseBF16.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

using namespace mlir;
using namespace torsor;

namespace {

/// `value` rounded up to a multiple of `multiple`.
OpFoldResult roundUp(OpBuilder &b, Location loc, OpFoldResult value,
                     int64_t multiple) {
  AffineExpr s0 = getAffineSymbolExpr(0, b.getContext());
  return affine::makeComposedFoldedAffineApply(
      b, loc, s0.ceilDiv(multiple) * multiple, {value});
}

/// `padded - value`.
OpFoldResult difference(OpBuilder &b, Location loc, OpFoldResult padded,
                        OpFoldResult value) {
  AffineExpr s0 = getAffineSymbolExpr(0, b.getContext());
  AffineExpr s1 = getAffineSymbolExpr(1, b.getContext());
  return affine::makeComposedFoldedAffineApply(b, loc, s0 - s1,
                                               {padded, value});
}

/// A tensor type of `sizes` (static where known) and `element`.
RankedTensorType tensorOf(ArrayRef<OpFoldResult> sizes, Type element) {
  SmallVector<int64_t> shape;
  for (OpFoldResult size : sizes)
    shape.push_back(getConstantIntValue(size).value_or(ShapedType::kDynamic));
  return RankedTensorType::get(shape, element);
}

/// The sizes of `value`; for the result of a generic that writes a
/// tensor.empty (canonical's), the empty's, which exist before the generic.
SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value value) {
  if (auto generic = value.getDefiningOp<linalg::GenericOp>())
    if (auto empty = generic.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
      return empty.getMixedSizes();
  return tensor::getMixedSizes(b, loc, value);
}

/// `source` zero-padded at the end of its last two dims to `rows` and
/// `cols` (leading dims unchanged). Where `source` is the unused result
/// of a generic writing a tensor.empty (canonical's), the generic is moved
/// here and writes the corner of a zero-filled tensor of the padded shape,
/// which bufferizes in place: a tensor.pad would copy the operand once
/// more, element by element wherever the padded rows are longer.
Value padTo(OpBuilder &b, Location loc, Value source, OpFoldResult rows,
            OpFoldResult cols) {
  SmallVector<OpFoldResult> have = sizesOf(b, loc, source);
  unsigned rank = have.size();
  SmallVector<OpFoldResult> sizes(have);
  sizes[rank - 2] = rows;
  sizes[rank - 1] = cols;
  Type element = getElementTypeOrSelf(source.getType());
  Value zero =
      arith::ConstantOp::create(b, loc, element, b.getZeroAttr(element));
  auto generic = source.getDefiningOp<linalg::GenericOp>();
  // A generic that only reorders (the accumulator's canonical form) is
  // left to fold: padding a fill stays a fill.
  auto converts = [](linalg::GenericOp op) {
    Value yielded = op.getBody()->getTerminator()->getOperand(0);
    return !isa<BlockArgument>(yielded);
  };
  if (generic && source.use_empty() && converts(generic) &&
      generic.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>()) {
    auto same = [](OpFoldResult x, OpFoldResult y) {
      return getConstantIntValue(x) &&
             getConstantIntValue(x) == getConstantIntValue(y);
    };
    if (same(rows, have[rank - 2]) && same(cols, have[rank - 1]))
      return source;
    Value padded =
        linalg::FillOp::create(
            b, loc, ValueRange{zero},
            ValueRange{tensor::EmptyOp::create(b, loc, sizes, element)})
            .getResult(0);
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        strides(rank, b.getIndexAttr(1));
    auto corner = tensor::ExtractSliceOp::create(
        b, loc, cast<RankedTensorType>(source.getType()), padded, offsets, have,
        strides);
    generic->moveAfter(corner);
    generic.getDpsInitsMutable()[0].assign(corner);
    b.setInsertionPointAfter(generic);
    return tensor::InsertSliceOp::create(b, loc, source, padded, offsets, have,
                                         strides);
  }
  SmallVector<OpFoldResult> low(rank, b.getIndexAttr(0)), high(rank);
  for (unsigned i = 0; i < rank; ++i)
    high[i] = i + 2 < rank ? OpFoldResult(b.getIndexAttr(0))
                           : difference(b, loc, sizes[i], have[i]);
  return tensor::PadOp::create(b, loc, tensorOf(sizes, element), source, low,
                               high, zero);
}

/// Where `source` ([batch.., M, K]) is the unused result of a generic
/// writing a tensor.empty (canonical's), redirects that generic to write
/// the tiles [batch.., Mp/T, Kp/D, T, D] (`tiled`) directly, element
/// (m, k) at (m / T, k / D, m % T, k % D), and returns them; null
/// otherwise. One pass over A instead of a padded copy and a reordered
/// one. The depth padding (k ≥ K) is zero-filled first unless K is a
/// multiple of D; the row padding (m ≥ M) is left unwritten: a row of A
/// only reaches the same row of C, and rows ≥ M of C are sliced off.
Value tileRowsInPlace(OpBuilder &b, Location loc, Value source,
                      ArrayRef<OpFoldResult> tiled, int64_t tr, int64_t td) {
  auto generic = source.getDefiningOp<linalg::GenericOp>();
  if (!generic || !source.use_empty() || generic.getNumDpsInits() != 1 ||
      generic->getNumResults() != 1 ||
      !generic.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>() ||
      !generic.getIndexingMapsArray().back().isIdentity() ||
      isa<BlockArgument>(generic.getBody()->getTerminator()->getOperand(0)))
    return Value();
  SmallVector<OpFoldResult> have = sizesOf(b, loc, source);
  unsigned rank = have.size();
  MLIRContext *ctx = b.getContext();
  Type element = getElementTypeOrSelf(source.getType());
  RankedTensorType type = tensorOf(tiled, element);
  Value init = tensor::EmptyOp::create(b, loc, tiled, element);
  std::optional<int64_t> k = getConstantIntValue(have[rank - 1]);
  if (!k || *k % td != 0) {
    Value zero =
        arith::ConstantOp::create(b, loc, element, b.getZeroAttr(element));
    init = linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{init})
               .getResult(0);
  }
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i + 2 < rank; ++i)
    exprs.push_back(b.getAffineDimExpr(i));
  AffineExpr m = b.getAffineDimExpr(rank - 2),
             kk = b.getAffineDimExpr(rank - 1);
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  if (k && *k % td == 0) {
    // Loops (batch.., m, ko, e) with k = ko·D + e: the innermost loop runs
    // along one tile row in both A and its tiles (contiguous, so it
    // vectorizes), and no k lies past K.
    AffineExpr e = b.getAffineDimExpr(rank);
    SmallVector<AffineExpr> split;
    for (unsigned i = 0; i + 1 < rank; ++i)
      split.push_back(b.getAffineDimExpr(i));
    split.push_back(kk * td + e);
    AffineMap sigma = AffineMap::get(rank + 1, 0, split, ctx);
    for (unsigned i = 0; i + 1 < maps.size(); ++i)
      maps[i] = maps[i].compose(sigma);
    exprs.append({m.floorDiv(tr), kk, m % tr, e});
    maps.back() = AffineMap::get(rank + 1, 0, exprs, ctx);
    iterators.push_back(utils::IteratorType::parallel);
  } else {
    exprs.append({m.floorDiv(tr), kk.floorDiv(td), m % tr, kk % td});
    maps.back() = AffineMap::get(rank, 0, exprs, ctx);
  }
  generic->moveAfter(init.getDefiningOp());
  b.setInsertionPointAfter(generic);
  auto redirected = linalg::GenericOp::create(
      b, loc, type, generic.getDpsInputs(), init, maps, iterators);
  redirected.getRegion().takeBody(generic.getRegion());
  generic->erase();
  return redirected.getResult(0);
}

/// The operand of `op` at `index` as a tensor of `element` whose dims are
/// the contraction's loop dims `dims` in that order (the operand must read
/// exactly those), each value converted by `convert`. An operand stored in
/// another order is transposed here.
Value canonical(OpBuilder &b, Location loc, linalg::LinalgOp op, unsigned index,
                ArrayRef<unsigned> dims, Type element,
                function_ref<Value(OpBuilder &, Location, Value)> convert) {
  Value operand = op->getOperand(index);
  AffineMap map = op.getIndexingMapsArray()[index];
  // A transposed copy (the backward's dA = dC·Bᵀ, dB = Aᵀ·dC, autodiff's
  // linalg.transpose into a fresh tensor) is read through: the generic
  // below reorders anyway, and the copy (a pass over A or B per call) is
  // left dead. Result dim i of the transpose is its input's dim perm[i].
  if (auto transpose = operand.getDefiningOp<linalg::TransposeOp>()) {
    ArrayRef<int64_t> perm = transpose.getPermutation();
    SmallVector<AffineExpr> read(perm.size());
    for (auto [i, dim] : llvm::enumerate(perm))
      read[dim] = map.getResult(i);
    operand = transpose.getInput();
    map = AffineMap::get(map.getNumDims(), 0, read, b.getContext());
  }
  SmallVector<AffineExpr> exprs;
  SmallVector<OpFoldResult> sizes(dims.size());
  SmallVector<OpFoldResult> have = tensor::getMixedSizes(b, loc, operand);
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    unsigned dim = cast<AffineDimExpr>(expr).getPosition();
    unsigned at = llvm::find(dims, dim) - dims.begin();
    exprs.push_back(b.getAffineDimExpr(at));
    sizes[at] = have[pos];
  }
  unsigned rank = dims.size();
  Value init = tensor::EmptyOp::create(b, loc, sizes, element);
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, exprs, b.getContext()),
                                 b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), operand, init, maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, convert(nb, nloc, args[0]));
             })
      .getResult(0);
}

/// `x` (f32 or f64) rounded to the nearest bf16, ties to even, in its own
/// type (f64 via f32). f32 is rounded on its bits (add 0x7fff plus the kept
/// part's last bit, clear the low 16), as vcvtneps2bf16 does: `arith.truncf` to
/// bf16 would become a libgcc call (__truncsfbf2) on CPUs without AVX512-BF16,
/// which the model library does not link. NaNs pass unchanged.
Value roundToBF16(OpBuilder &b, Location loc, Value x) {
  Type type = x.getType();
  // f64 goes through f32 (a native conversion) first; rounding twice can
  // differ from one rounding only on exact f32 ties, far below bf16's
  // precision.
  if (!type.isF32()) {
    Value narrow = arith::TruncFOp::create(b, loc, b.getF32Type(), x);
    return arith::ExtFOp::create(b, loc, type, roundToBF16(b, loc, narrow));
  }
  Type i32 = b.getI32Type();
  auto c = [&](uint32_t v) -> Value {
    return arith::ConstantOp::create(
        b, loc, i32, b.getI32IntegerAttr(static_cast<int32_t>(v)));
  };
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value lsb = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, c(16)), c(1));
  Value up = arith::AddIOp::create(
      b, loc, bits, arith::AddIOp::create(b, loc, lsb, c(0x7fff)));
  Value kept = arith::AndIOp::create(b, loc, up, c(0xffff0000u));
  Value rounded = arith::BitcastOp::create(b, loc, type, kept);
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  return arith::SelectOp::create(b, loc, isNaN, x, rounded);
}

/// The dims of `map`'s results, in order (every result a dim).
SmallVector<unsigned> dimsOf(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr expr : map.getResults())
    dims.push_back(cast<AffineDimExpr>(expr).getPosition());
  return dims;
}

} // namespace

LogicalResult torsor::packBF16Contraction(RewriterBase &rewriter,
                                          linalg::LinalgOp op,
                                          ArrayRef<unsigned> batch, unsigned m,
                                          unsigned n, unsigned k,
                                          strategy::BF16ProductsAttr products) {
  SmallVector<AffineMap> opMaps = op.getIndexingMapsArray();
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumLoops() != batch.size() + 3)
    return failure();
  for (AffineMap map : opMaps)
    if (!map.isProjectedPermutation())
      return failure();
  for (Value v : op->getOperands())
    if (!getElementTypeOrSelf(v.getType()).isF32())
      return failure();
  // Which batch dims each operand reads: A and C all of them (a batch the
  // right operand is broadcast over, `x @ W` with x [.., L, K], is a batch
  // dim of A and C only), B those it has.
  auto reads = [&](unsigned index, unsigned dim) {
    return llvm::is_contained(dimsOf(opMaps[index]), dim);
  };
  SmallVector<unsigned> bBatch;
  for (unsigned dim : batch) {
    if (!reads(0, dim) || !reads(2, dim))
      return failure();
    if (reads(1, dim))
      bBatch.push_back(dim);
  }
  auto order = [](ArrayRef<unsigned> lead, unsigned x, unsigned y) {
    SmallVector<unsigned> dims(lead);
    dims.append({x, y});
    return dims;
  };
  SmallVector<unsigned> aDims = order(batch, m, k), bDims = order(bBatch, k, n),
                        cDims = order(batch, m, n);
  if (dimsOf(opMaps[0]).size() != aDims.size() ||
      dimsOf(opMaps[1]).size() != bDims.size() ||
      dimsOf(opMaps[2]).size() != cDims.size())
    return failure();

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  OpBuilder &b = rewriter;
  MLIRContext *ctx = b.getContext();
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  auto round = [&](OpBuilder &nb, Location nloc, Value x) -> Value {
    return arith::TruncFOp::create(nb, nloc, bf16, x);
  };
  auto same = [](OpBuilder &, Location, Value x) { return x; };

  // A as [batch.., M, K] bf16, B as [bBatch.., K, N] bf16, C as
  // [batch.., M, N] f32.
  Value a = canonical(b, loc, op, 0, aDims, bf16, round);
  Value bb = canonical(b, loc, op, 1, bDims, bf16, round);
  Value c = canonical(b, loc, op, 2, cDims, f32, same);
  SmallVector<OpFoldResult> aSizes = sizesOf(b, loc, a);
  SmallVector<OpFoldResult> bSizes = sizesOf(b, loc, bb);
  SmallVector<OpFoldResult> cSizes = sizesOf(b, loc, c);
  unsigned nA = batch.size(), nbB = bBatch.size();
  OpFoldResult mp = roundUp(b, loc, aSizes[nA], products.blockRows());
  OpFoldResult kp = roundUp(b, loc, aSizes[nA + 1], products.blockDepth());
  OpFoldResult np = roundUp(b, loc, bSizes[nbB + 1], products.blockCols());
  OpFoldResult two = b.getIndexAttr(2);

  // Tile-contiguous layouts (T, T' the tile's rows and columns, D its
  // depth, H = D / 2 its VNNI rows): A [batch.., Mp/T, Kp/D, T, H, 2], B
  // [bBatch.., Np/T', Kp/D, H, T', 2], so that one tile of either is 16
  // rows of 64 bytes, one contiguous KiB; C [batch.., Mp, Np] viewed as
  // [batch.., Mp/T, T, Np/T', T'].
  int64_t tr = products.getTileRows(), tc = products.getTileCols(),
          td = products.getTileDepth(), th = td / 2;
  auto over = [&](OpFoldResult size, int64_t tile) {
    return affine::makeComposedFoldedAffineApply(
        b, loc, getAffineSymbolExpr(0, ctx).floorDiv(tile), {size});
  };
  OpFoldResult mo = over(mp, tr), ko = over(kp, td), no = over(np, tc);
  auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
  auto parallel = [](unsigned n) {
    return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
  };
  auto copy = [](OpBuilder &nb, Location nloc, ValueRange args) {
    linalg::YieldOp::create(nb, nloc, args[0]);
  };

  // A: [batch.., Mp, Kp] → [batch.., Mp/T, Kp/D, T, D] (then viewed as
  // [.., T, H, 2]): the rounding generic writes its tiles directly
  // (tileRowsInPlace), else a copy of tile rows (D contiguous bf16) each,
  // loops (batch.., mo, ko, mi, e) reading A[.., mo·T + mi, ko·D + e].
  SmallVector<OpFoldResult> aRows(ArrayRef(aSizes).take_front(nA));
  aRows.append({mo, ko, b.getIndexAttr(tr), b.getIndexAttr(td)});
  Value aTileRows = tileRowsInPlace(b, loc, a, aRows, tr, td);
  if (!aTileRows) {
    Value aPad = padTo(b, loc, a, mp, kp);
    SmallVector<AffineExpr> aRead;
    for (unsigned i = 0; i < nA; ++i)
      aRead.push_back(d(i));
    aRead.push_back(d(nA) * tr + d(nA + 2));
    aRead.push_back(d(nA + 1) * td + d(nA + 3));
    aTileRows =
        linalg::GenericOp::create(
            b, loc, tensorOf(aRows, bf16), aPad,
            tensor::EmptyOp::create(b, loc, aRows, bf16).getResult(),
            SmallVector<AffineMap>{AffineMap::get(nA + 4, 0, aRead, ctx),
                                   b.getMultiDimIdentityMap(nA + 4)},
            parallel(nA + 4), copy)
            .getResult(0);
  }
  SmallVector<OpFoldResult> aTiled(aRows);
  aTiled.back() = b.getIndexAttr(th);
  aTiled.push_back(two);
  SmallVector<ReassociationIndices> aGroups;
  for (unsigned i = 0; i < nA + 3; ++i)
    aGroups.push_back({i});
  aGroups.push_back({nA + 3, nA + 4});
  Value aPacked = tensor::ExpandShapeOp::create(b, loc, tensorOf(aTiled, bf16),
                                                aTileRows, aGroups, aTiled);

  // B: [bBatch.., Kp, Np] → [bBatch.., Np/T', Kp/D, H, T', 2], loops
  // (bBatch.., no, ko, ai, ni, p) reading B[.., ko·D + 2·ai + p, no·T' + ni].
  Value bPad = padTo(b, loc, bb, kp, np);
  SmallVector<OpFoldResult> bTiled(ArrayRef(bSizes).take_front(nbB));
  bTiled.append({no, ko, b.getIndexAttr(th), b.getIndexAttr(tc), two});
  SmallVector<AffineExpr> bRead;
  for (unsigned i = 0; i < nbB; ++i)
    bRead.push_back(d(i));
  bRead.push_back(d(nbB + 1) * td + d(nbB + 2) * 2 + d(nbB + 4));
  bRead.push_back(d(nbB) * tc + d(nbB + 3));
  Value bPacked =
      linalg::GenericOp::create(
          b, loc, tensorOf(bTiled, bf16), bPad,
          tensor::EmptyOp::create(b, loc, bTiled, bf16).getResult(),
          SmallVector<AffineMap>{AffineMap::get(nbB + 5, 0, bRead, ctx),
                                 b.getMultiDimIdentityMap(nbB + 5)},
          parallel(nbB + 5), copy)
          .getResult(0);
  bPacked.getDefiningOp()->setAttr(kPackedOperandAttr, b.getUnitAttr());

  // C: [batch.., Mp, Np] → [batch.., Mp/T, T, Np/T', T'].
  Value cPad = padTo(b, loc, c, mp, np);
  SmallVector<OpFoldResult> cTiled(ArrayRef(cSizes).take_front(nA));
  cTiled.append({mo, b.getIndexAttr(tr), no, b.getIndexAttr(tc)});
  SmallVector<ReassociationIndices> cGroups;
  for (unsigned i = 0; i < nA; ++i)
    cGroups.push_back({i});
  cGroups.push_back({nA, nA + 1});
  cGroups.push_back({nA + 2, nA + 3});
  Value cView = tensor::ExpandShapeOp::create(b, loc, tensorOf(cTiled, f32),
                                              cPad, cGroups, cTiled);

  // C += A · B over (batch.., mo, mi, no, ni, ko, ai, p).
  SmallVector<AffineExpr> aMap, bMap, cMap;
  for (unsigned i = 0; i < nA; ++i) {
    aMap.push_back(d(i));
    cMap.push_back(d(i));
    if (llvm::is_contained(bBatch, batch[i]))
      bMap.push_back(d(i));
  }
  AffineExpr dmo = d(nA), dmi = d(nA + 1), dno = d(nA + 2), dni = d(nA + 3),
             dko = d(nA + 4), dai = d(nA + 5), dp = d(nA + 6);
  aMap.append({dmo, dko, dmi, dai, dp});
  bMap.append({dno, dko, dai, dni, dp});
  cMap.append({dmo, dmi, dno, dni});
  unsigned loops = nA + 7;
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, aMap, ctx),
                                 AffineMap::get(loops, 0, bMap, ctx),
                                 AffineMap::get(loops, 0, cMap, ctx)};
  using utils::IteratorType;
  SmallVector<IteratorType> iterators(nA + 4, IteratorType::parallel);
  iterators.append(3, IteratorType::reduction);
  auto product = linalg::GenericOp::create(
      b, loc, cView.getType(), ValueRange{aPacked, bPacked}, cView, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = arith::ExtFOp::create(nb, nloc, f32, args[0]);
        Value y = arith::ExtFOp::create(nb, nloc, f32, args[1]);
        Value xy = arith::MulFOp::create(nb, nloc, x, y);
        linalg::YieldOp::create(
            nb, nloc, arith::AddFOp::create(nb, nloc, args[2], xy).getResult());
      });
  product->setAttr(kBF16ProductAttr, b.getUnitAttr());
  Value cFlat = tensor::CollapseShapeOp::create(b, loc, cPad.getType(),
                                                product.getResult(0), cGroups);

  // Back to [batch.., M, N], then to the op's own output layout.
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, cast<RankedTensorType>(c.getType()), cFlat,
      SmallVector<OpFoldResult>(nA + 2, b.getIndexAttr(0)), cSizes,
      SmallVector<OpFoldResult>(nA + 2, b.getIndexAttr(1)));
  SmallVector<int64_t> perm;
  for (unsigned dim : dimsOf(opMaps[2]))
    perm.push_back(llvm::find(cDims, dim) - cDims.begin());
  Value result = slice;
  if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size()))) {
    Value init = op.getDpsInits()[0];
    result = linalg::TransposeOp::create(
                 b, loc, slice,
                 tensor::EmptyOp::create(
                     b, loc, tensor::getMixedSizes(b, loc, init), f32),
                 perm)
                 .getResult()[0];
  }
  if (result.getType() != op->getResult(0).getType())
    result = tensor::CastOp::create(b, loc, op->getResult(0).getType(), result);
  rewriter.replaceOp(op, result);
  return success();
}

void torsor::roundOperandsToBF16(RewriterBase &rewriter, linalg::LinalgOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  OpBuilder &b = rewriter;
  for (OpOperand *operand : op.getDpsInputOperands()) {
    Value value = operand->get();
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      continue;
    Type element = type.getElementType();
    Value init = tensor::EmptyOp::create(
        b, loc, tensor::getMixedSizes(b, loc, value), element);
    unsigned rank = type.getRank();
    SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(rank));
    Value rounded =
        linalg::GenericOp::create(
            b, loc, type, value, init, maps,
            SmallVector<utils::IteratorType>(rank,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location nloc, ValueRange args) {
              linalg::YieldOp::create(nb, nloc, roundToBF16(nb, nloc, args[0]));
            })
            .getResult(0);
    rewriter.modifyOpInPlace(op, [&] { operand->set(rounded); });
  }
}
