//===- AttentionMatch.cpp - Find attention blocks in a model --------------===//
//
// The standard form is matched backwards from the output projection, one
// MLIRGen construct at a time (docs/language.md §9): a plain 2-D
// `linalg.matmul` on a zero-filled init for `@`, `tensor.expand_shape` +
// `linalg.transpose` for `heads`, a batched contraction `linalg.generic`
// for 3-D `@`, and upstream's four-generic decomposition of softmax. Each
// matcher checks the payload ops, not just the op kinds, so a look-alike
// (a max where a sum should be, softmax on another axis) is not taken for
// attention.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/AttentionMatch.h"

#include "dialects/Geo/IR/GeoOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <optional>

using namespace mlir;
using namespace torsor;

namespace {

/// `heads(x @ W, H)`: the projection input, its weight and the split.
struct Projection {
  Value x, w;
  int64_t heads = 0, dh = 0;
};

/// Whether `init` is a `linalg.fill` of +0.0 (the accumulator of `@`).
bool isZeroFilled(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

/// The single value a generic's body yields, or null.
Value yielded(linalg::GenericOp generic) {
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  return yield.getNumOperands() == 1 ? yield.getOperand(0) : Value();
}

/// Whether `v` is the body argument `index` of `generic`.
bool isBodyArg(Value v, linalg::GenericOp generic, unsigned index) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == generic.getBody() &&
         arg.getArgNumber() == index;
}

/// Whether `op` is binary op `Op` of body args `a` and `b`, in either order
/// when `commutative`.
template <typename Op>
bool isBinaryOfArgs(Value v, linalg::GenericOp generic, unsigned a, unsigned b,
                    bool commutative) {
  auto op = v.getDefiningOp<Op>();
  if (!op)
    return false;
  if (isBodyArg(op.getLhs(), generic, a) && isBodyArg(op.getRhs(), generic, b))
    return true;
  return commutative && isBodyArg(op.getLhs(), generic, b) &&
         isBodyArg(op.getRhs(), generic, a);
}

/// Whether the generic has the given iterator kinds (true = reduction).
bool hasIterators(linalg::GenericOp generic, ArrayRef<bool> reductions) {
  auto kinds = generic.getIteratorTypesArray();
  if (kinds.size() != reductions.size())
    return false;
  for (auto [kind, red] : llvm::zip(kinds, reductions))
    if ((kind == utils::IteratorType::reduction) != red)
      return false;
  return true;
}

/// Affine map of `dims` loops selecting the listed loop indices.
AffineMap selectMap(MLIRContext *ctx, unsigned dims, ArrayRef<unsigned> pick) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i : pick)
    exprs.push_back(getAffineDimExpr(i, ctx));
  return AffineMap::get(dims, 0, exprs, ctx);
}

/// Whether the generic's indexing maps are exactly `maps`.
bool hasMaps(linalg::GenericOp generic, ArrayRef<AffineMap> maps) {
  return generic.getIndexingMapsArray() == SmallVector<AffineMap>(maps);
}

/// A plain 2-D `a @ b`: linalg.matmul, default maps, zero-filled init.
std::optional<std::pair<Value, Value>> matchMatmul(Value v) {
  auto mm = v.getDefiningOp<linalg::MatmulOp>();
  if (!mm || mm.hasUserDefinedMaps() || !isZeroFilled(mm.getOutputs()[0]))
    return std::nullopt;
  return std::make_pair(mm.getInputs()[0], mm.getInputs()[1]);
}

/// A 3-D batched `a @ b`: (b,i,j,k): a[b,i,k] · c[b,k,j] summed over k.
std::optional<std::pair<Value, Value>> matchBatchMatmul(Value v) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      !hasIterators(g, {false, false, false, true}) ||
      !isZeroFilled(g.getDpsInits()[0]))
    return std::nullopt;
  MLIRContext *ctx = g.getContext();
  if (!hasMaps(g, {selectMap(ctx, 4, {0, 1, 3}), selectMap(ctx, 4, {0, 3, 2}),
                   selectMap(ctx, 4, {0, 1, 2})}))
    return std::nullopt;
  auto add = yielded(g) ? yielded(g).getDefiningOp<arith::AddFOp>() : nullptr;
  if (!add)
    return std::nullopt;
  Value mul = isBodyArg(add.getLhs(), g, 2) ? add.getRhs() : add.getLhs();
  if (!isBodyArg(add.getLhs(), g, 2) && !isBodyArg(add.getRhs(), g, 2))
    return std::nullopt;
  if (!isBinaryOfArgs<arith::MulFOp>(mul, g, 0, 1, /*commutative=*/true))
    return std::nullopt;
  return std::make_pair(g.getDpsInputs()[0], g.getDpsInputs()[1]);
}

/// A `linalg.transpose` of `v` with permutation `perm`; its input or null.
Value matchTranspose(Value v, ArrayRef<int64_t> perm) {
  auto t = v.getDefiningOp<linalg::TransposeOp>();
  if (!t || t.getPermutation() != perm)
    return {};
  return t.getInput();
}

/// `heads(x @ W, H)`: transpose [1,0,2] of expand_shape [[0],[1,2]].
std::optional<Projection> matchHeads(Value v) {
  Value expanded = matchTranspose(v, {1, 0, 2});
  auto expand =
      expanded ? expanded.getDefiningOp<tensor::ExpandShapeOp>() : nullptr;
  if (!expand || expand.getReassociationIndices() !=
                     SmallVector<ReassociationIndices>{{0}, {1, 2}})
    return std::nullopt;
  auto mm = matchMatmul(expand.getSrc());
  if (!mm)
    return std::nullopt;
  auto type = expand.getResultType();
  return Projection{mm->first, mm->second, type.getDimSize(1),
                    type.getDimSize(2)};
}

/// One rank-3 generic with identity maps on its operands except the listed
/// ones, which drop the last loop (the per-row max and sum).
bool rowMaps(linalg::GenericOp g, ArrayRef<bool> dropsLast) {
  MLIRContext *ctx = g.getContext();
  SmallVector<AffineMap> maps;
  for (bool drop : dropsLast)
    maps.push_back(drop ? selectMap(ctx, 3, {0, 1})
                        : AffineMap::getMultiDimIdentityMap(3, ctx));
  return hasMaps(g, maps);
}

/// A row reduction of `s` over the last dim with combiner `Op`.
template <typename Op> Value matchRowReduce(Value v) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumDpsInputs() != 1 ||
      !hasIterators(g, {false, false, true}) || !rowMaps(g, {false, true}) ||
      !yielded(g) ||
      !isBinaryOfArgs<Op>(yielded(g), g, 0, 1, /*commutative=*/true))
    return {};
  return g.getDpsInputs()[0];
}

/// softmax(s) along the last dim, as upstream decomposes linalg.softmax:
/// m = max(s); e = exp(s - m); z = sum(e); p = e / z. Returns s.
Value matchSoftmax(Value p) {
  auto div = p.getDefiningOp<linalg::GenericOp>();
  if (!div || div.getNumDpsInputs() != 2 ||
      !hasIterators(div, {false, false, false}) ||
      !rowMaps(div, {false, true, false}) || !yielded(div) ||
      !isBinaryOfArgs<arith::DivFOp>(yielded(div), div, 0, 1, false))
    return {};
  Value e = div.getDpsInputs()[0];
  if (matchRowReduce<arith::AddFOp>(div.getDpsInputs()[1]) != e ||
      !isZeroFilled(div.getDpsInputs()[1]
                        .getDefiningOp<linalg::GenericOp>()
                        .getDpsInits()[0]))
    return {};
  auto exp = e.getDefiningOp<linalg::GenericOp>();
  if (!exp || exp.getNumDpsInputs() != 2 ||
      !hasIterators(exp, {false, false, false}) ||
      !rowMaps(exp, {false, true, false}) || !yielded(exp))
    return {};
  auto expOp = yielded(exp).getDefiningOp<math::ExpOp>();
  if (!expOp ||
      !isBinaryOfArgs<arith::SubFOp>(expOp.getOperand(), exp, 0, 1, false))
    return {};
  Value s = exp.getDpsInputs()[0];
  Value maxOf = matchRowReduce<arith::MaxNumFOp>(exp.getDpsInputs()[1]);
  if (!maxOf)
    maxOf = matchRowReduce<arith::MaximumFOp>(exp.getDpsInputs()[1]);
  return maxOf == s ? s : Value();
}

/// `t * c`, `c * t` or `t / c` elementwise with a constant c; returns t and
/// sets `scale`. Anything else is `t` itself with scale 1.
Value matchScale(Value v, double &scale) {
  scale = 1.0;
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumDpsInputs() != 1 || g.getNumLoops() != 3 ||
      !hasIterators(g, {false, false, false}) || !rowMaps(g, {false, false}) ||
      !yielded(g))
    return v;
  Operation *op = yielded(g).getDefiningOp();
  if (!op || op->getNumOperands() != 2 ||
      !isa<arith::MulFOp, arith::DivFOp>(op))
    return v;
  FloatAttr c;
  bool lhsIsArg = isBodyArg(op->getOperand(0), g, 0);
  bool rhsIsArg = isBodyArg(op->getOperand(1), g, 0);
  if (lhsIsArg && matchPattern(op->getOperand(1), m_Constant(&c))) {
    double value = c.getValueAsDouble();
    if (isa<arith::DivFOp>(op) && value == 0.0)
      return v;
    scale = isa<arith::DivFOp>(op) ? 1.0 / value : value;
    return g.getDpsInputs()[0];
  }
  if (rhsIsArg && isa<arith::MulFOp>(op) &&
      matchPattern(op->getOperand(0), m_Constant(&c))) {
    scale = c.getValueAsDouble();
    return g.getDpsInputs()[0];
  }
  return v;
}

/// Matches the standard form with `root` as its output projection.
std::optional<AttentionBlock> matchStandard(linalg::MatmulOp root) {
  auto out = matchMatmul(root->getResult(0));
  if (!out)
    return std::nullopt;
  auto collapse = out->first.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getReassociationIndices() !=
                       SmallVector<ReassociationIndices>{{0}, {1, 2}})
    return std::nullopt;
  Value pv = matchTranspose(collapse.getSrc(), {1, 0, 2});
  auto pvParts = pv ? matchBatchMatmul(pv) : std::nullopt;
  if (!pvParts)
    return std::nullopt;
  auto v = matchHeads(pvParts->second);
  Value scaled = matchSoftmax(pvParts->first);
  if (!v || !scaled)
    return std::nullopt;
  AttentionBlock block;
  auto qk = matchBatchMatmul(matchScale(scaled, block.scale));
  if (!qk)
    return std::nullopt;
  auto q = matchHeads(qk->first);
  Value kt = matchTranspose(qk->second, {0, 2, 1});
  auto k = kt ? matchHeads(kt) : std::nullopt;
  if (!q || !k || q->heads != k->heads || q->heads != v->heads)
    return std::nullopt;
  auto xType = cast<RankedTensorType>(q->x.getType());
  auto woType = cast<RankedTensorType>(out->second.getType());
  if (!woType.hasStaticShape() || xType.isDynamicDim(xType.getRank() - 1))
    return std::nullopt;
  block.form = AttentionBlock::Form::Standard;
  block.root = root;
  block.xq = q->x;
  block.xk = k->x;
  block.xv = v->x;
  block.wq = q->w;
  block.wk = k->w;
  block.wv = v->w;
  block.wo = out->second;
  block.d = xType.getDimSize(xType.getRank() - 1);
  block.dOut = woType.getDimSize(1);
  block.heads = q->heads;
  block.dh = q->dh;
  return block;
}

} // namespace

SmallVector<AttentionBlock> torsor::findAttentionBlocks(func::FuncOp func) {
  SmallVector<AttentionBlock> blocks;
  func.walk([&](Operation *op) {
    if (auto mm = dyn_cast<linalg::MatmulOp>(op)) {
      if (auto block = matchStandard(mm))
        blocks.push_back(*block);
      return;
    }
    auto rel = dyn_cast<geo::RelationalAttentionOp>(op);
    if (!rel)
      return;
    auto xType = cast<RankedTensorType>(rel.getInput().getType());
    if (xType.isDynamicDim(xType.getRank() - 1))
      return; // counts need a fixed d
    AttentionBlock block;
    block.form = AttentionBlock::Form::Relational;
    block.root = op;
    block.xq = block.xk = block.xv = rel.getInput();
    block.gqk = rel.getGQk();
    block.gvo = rel.getGVo();
    block.d = block.dOut = xType.getDimSize(xType.getRank() - 1);
    block.heads = rel.getHeads();
    block.scale = rel.getScale().convertToDouble();
    block.causal = rel.getCausal();
    blocks.push_back(block);
  });
  return blocks;
}

std::string torsor::paramName(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return "";
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!func || arg.getOwner() != &func.getBody().front())
    return "";
  auto name =
      func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "torsor.name");
  return name ? name.str() : "";
}
