//===- DenseBF16.cpp - bf16 forms of dense contractions -------------------===//
//
// The tensor half of `--compute=bf16` for dense contractions (DenseBF16.h).
// Packing is plain linalg on tensors, so it bufferizes, fuses and is
// checked like every other op, and the packed product is an ordinary
// contraction until torsor-lower-dense-bf16 gives it a kernel: if that pass
// does not run, the generic's loops compute the same numbers.
//
// Layouts (T = tile rows, D = tile depth, C = block columns):
//   A  [M, K] f32  → round → [Mp, Kp] bf16 → expand → [Mp, Kp/2, 2]
//   B  [K, N] f32  → round → [Kp, Np] bf16 → VNNI  → [Kp/2, Np, 2]
//                    (Bv[a, n, p] = B[2a + p, n]: the pairs tdpbf16ps and
//                    vdpbf16ps multiply together sit side by side)
//   C  [M, N] f32  → pad → [Mp, Np], C += A · B, slice back to [M, N]
// The zero padding adds nothing to the sums. B is packed on every call:
// a weight's packing is O(K·N) against the product's O(M·K·N).
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

/// `source` (2-D) zero-padded at the end to `sizes`.
Value padTo(OpBuilder &b, Location loc, Value source,
            ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> low(2, b.getIndexAttr(0)), high;
  SmallVector<OpFoldResult> have = tensor::getMixedSizes(b, loc, source);
  for (unsigned i = 0; i < 2; ++i)
    high.push_back(difference(b, loc, sizes[i], have[i]));
  Type element = getElementTypeOrSelf(source.getType());
  Value zero =
      arith::ConstantOp::create(b, loc, element, b.getZeroAttr(element));
  return tensor::PadOp::create(b, loc, tensorOf(sizes, element), source, low,
                               high, zero);
}

/// The operand of `op` at `index` (2-D, read through dims `row` and
/// `col` of the contraction) as a [rows, cols] tensor of `element`, each
/// value converted by `convert` (a transposed operand is transposed here).
Value canonical(OpBuilder &b, Location loc, linalg::LinalgOp op, unsigned index,
                unsigned row, unsigned col, Type element,
                function_ref<Value(OpBuilder &, Location, Value)> convert) {
  Value operand = op->getOperand(index);
  AffineMap map = op.getIndexingMapsArray()[index];
  SmallVector<AffineExpr> exprs;
  SmallVector<OpFoldResult> sizes(2);
  SmallVector<OpFoldResult> have = tensor::getMixedSizes(b, loc, operand);
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    unsigned dim = cast<AffineDimExpr>(expr).getPosition();
    exprs.push_back(b.getAffineDimExpr(dim == row ? 0 : 1));
    sizes[dim == row ? 0 : 1] = have[pos];
  }
  Value init = tensor::EmptyOp::create(b, loc, sizes, element);
  SmallVector<AffineMap> maps = {AffineMap::get(2, 0, exprs, b.getContext()),
                                 b.getMultiDimIdentityMap(2)};
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
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

/// Whether every indexing map of `op` reads its operand through dims
/// only, each operand 2-D (a plain matmul in some transposition).
bool isPlain2D(linalg::LinalgOp op) {
  for (AffineMap map : op.getIndexingMapsArray())
    if (map.getNumResults() != 2 || !map.isProjectedPermutation())
      return false;
  return op.getNumLoops() == 3;
}

} // namespace

LogicalResult torsor::packBF16Contraction(RewriterBase &rewriter,
                                          linalg::LinalgOp op, unsigned m,
                                          unsigned n, unsigned k,
                                          strategy::BF16ProductsAttr products) {
  if (!isPlain2D(op))
    return failure();
  for (Value v : op->getOperands())
    if (!getElementTypeOrSelf(v.getType()).isF32())
      return failure();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  OpBuilder &b = rewriter;
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  auto round = [&](OpBuilder &nb, Location nloc, Value x) -> Value {
    return arith::TruncFOp::create(nb, nloc, bf16, x);
  };
  auto same = [](OpBuilder &, Location, Value x) { return x; };

  // A as [M, K] bf16, B as [K, N] bf16, C as [M, N] f32.
  Value a = canonical(b, loc, op, 0, m, k, bf16, round);
  Value bb = canonical(b, loc, op, 1, k, n, bf16, round);
  Value c = canonical(b, loc, op, 2, m, n, f32, same);
  SmallVector<OpFoldResult> aSizes = tensor::getMixedSizes(b, loc, a);
  SmallVector<OpFoldResult> bSizes = tensor::getMixedSizes(b, loc, bb);
  OpFoldResult mp = roundUp(b, loc, aSizes[0], products.blockRows());
  OpFoldResult kp = roundUp(b, loc, aSizes[1], products.blockDepth());
  OpFoldResult np = roundUp(b, loc, bSizes[1], products.blockCols());

  // A: [Mp, Kp] → [Mp, Kp/2, 2].
  Value aPad = padTo(b, loc, a, {mp, kp});
  OpFoldResult k2 = affine::makeComposedFoldedAffineApply(
      b, loc, getAffineSymbolExpr(0, b.getContext()).floorDiv(2), {kp});
  RankedTensorType a3 = tensorOf({mp, k2, b.getIndexAttr(2)}, bf16);
  Value aPacked = tensor::ExpandShapeOp::create(
      b, loc, a3, aPad, SmallVector<ReassociationIndices>{{0}, {1, 2}},
      SmallVector<OpFoldResult>{mp, k2, b.getIndexAttr(2)});

  // B: [Kp, Np] → VNNI [Kp/2, Np, 2].
  Value bPad = padTo(b, loc, bb, {kp, np});
  Value bInit = tensor::EmptyOp::create(
      b, loc, SmallVector<OpFoldResult>{k2, np, b.getIndexAttr(2)}, bf16);
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1),
             d2 = b.getAffineDimExpr(2);
  SmallVector<AffineMap> vnniMaps = {
      AffineMap::get(3, 0, {d0 * 2 + d2, d1}, b.getContext()),
      b.getMultiDimIdentityMap(3)};
  Value bPacked =
      linalg::GenericOp::create(
          b, loc, bInit.getType(), bPad, bInit, vnniMaps,
          SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            linalg::YieldOp::create(nb, nloc, args[0]);
          })
          .getResult(0);

  // C: [Mp, Np] += A · B over (m, n, a, p).
  Value cPad = padTo(b, loc, c, {mp, np});
  AffineExpr d3 = b.getAffineDimExpr(3);
  SmallVector<AffineMap> maps = {
      AffineMap::get(4, 0, {d0, d2, d3}, b.getContext()),
      AffineMap::get(4, 0, {d2, d1, d3}, b.getContext()),
      AffineMap::get(4, 0, {d0, d1}, b.getContext())};
  using utils::IteratorType;
  auto product = linalg::GenericOp::create(
      b, loc, cPad.getType(), ValueRange{aPacked, bPacked}, cPad, maps,
      {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction,
       IteratorType::reduction},
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = arith::ExtFOp::create(nb, nloc, f32, args[0]);
        Value y = arith::ExtFOp::create(nb, nloc, f32, args[1]);
        Value xy = arith::MulFOp::create(nb, nloc, x, y);
        linalg::YieldOp::create(
            nb, nloc, arith::AddFOp::create(nb, nloc, args[2], xy).getResult());
      });
  product->setAttr(kBF16ProductAttr, b.getUnitAttr());

  // Back to [M, N], then to the op's own output layout.
  SmallVector<OpFoldResult> cSizes = tensor::getMixedSizes(b, loc, c);
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, cast<RankedTensorType>(c.getType()), product.getResult(0),
      SmallVector<OpFoldResult>(2, b.getIndexAttr(0)), cSizes,
      SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
  AffineMap outMap = op.getIndexingMapsArray()[2];
  Value result = slice;
  if (cast<AffineDimExpr>(outMap.getResult(0)).getPosition() != m) {
    Value init = op.getDpsInits()[0];
    result = linalg::TransposeOp::create(
                 b, loc, slice,
                 tensor::EmptyOp::create(
                     b, loc, tensor::getMixedSizes(b, loc, init), f32),
                 ArrayRef<int64_t>{1, 0})
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
