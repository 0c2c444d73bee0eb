//===- GeoOps.cpp - Geo dialect op verifiers ------------------------------===//
//
// Verifiers for the sequence-level ops. They check what the lowering and the
// fusion passes rely on (ranks, the group's n×n, the head split, weight
// shapes; heads, τ and λ through the one verifier of #geo.scores,
// verifyScores) and say what was expected and what
// was found. A `?` dim is accepted wherever a static dim is expected but not
// needed at compile time; it is then a run-time contract.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;

#define GET_OP_CLASSES
#include "dialects/Geo/IR/GeoOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Whether two dims can agree at run time: equal, or either one dynamic.
static bool isCompatibleDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Formats a shape as `8x6`, with `?` for dynamic dims, for diagnostics.
static std::string formatShape(ArrayRef<int64_t> shape) {
  return llvm::join(llvm::map_range(shape,
                                    [](int64_t d) -> std::string {
                                      return ShapedType::isDynamic(d)
                                                 ? "?"
                                                 : std::to_string(d);
                                    }),
                    "x");
}

/// Checks that `value` is a tensor of exactly `shape` (up to dynamic dims)
/// and of element type `elementType`; `what` names the operand and
/// `meaning` spells the shape symbolically, e.g. "d x C(r,2)".
static LogicalResult verifyOperandShape(Operation *op, Value value,
                                        StringRef what, ArrayRef<int64_t> shape,
                                        StringRef meaning, Type elementType) {
  auto type = cast<RankedTensorType>(value.getType());
  bool ok = type.getRank() == static_cast<int64_t>(shape.size()) &&
            llvm::all_of(llvm::zip_equal(type.getShape(), shape), [](auto p) {
              return isCompatibleDim(std::get<0>(p), std::get<1>(p));
            });
  if (!ok)
    return op->emitOpError()
           << "expects " << what << " of shape " << formatShape(shape) << " ("
           << meaning << "), got " << type;
  if (type.getElementType() != elementType)
    return op->emitOpError()
           << "expects " << what << " with element type " << elementType
           << " (that of the input), got " << type.getElementType();
  return success();
}

/// Checks that a sequence op's result has exactly the type of `input`.
static LogicalResult verifyResultLikeInput(Operation *op, Type input,
                                           StringRef what) {
  Type result = op->getResult(0).getType();
  if (result != input)
    return op->emitOpError() << "expects result type " << input << " (the "
                             << what << " type), got " << result;
  return success();
}

/// Checks that a token tensor `[batch...] x L x d` has rank >= 2.
static LogicalResult verifySequence(Operation *op, RankedTensorType type) {
  if (type.getRank() < 2)
    return op->emitOpError()
           << "expects input of rank >= 2 ([batch...] x L x d), got " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// LieAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult LieAttentionOp::verify() {
  if (failed(verifyScores(*this, getScores())))
    return failure();
  auto g = cast<RankedTensorType>(getElements().getType());
  auto v = cast<RankedTensorType>(getValues().getType());
  const lie::GroupModel &model = getGroup().getModel();
  int64_t n = model.getMatrixSize();

  if (g.getRank() < 3)
    return emitOpError() << "expects group elements of rank >= 3 ([batch...] "
                            "x L x n x n), got "
                         << g;
  if (g.getDimSize(g.getRank() - 2) != n || g.getDimSize(g.getRank() - 1) != n)
    return emitOpError() << "expects group elements with trailing dims " << n
                         << "x" << n << " for group " << model.getDisplayName()
                         << ", got " << g;
  if (v.getRank() != g.getRank() - 1)
    return emitOpError() << "expects values of rank " << g.getRank() - 1
                         << " (one less than the group elements), got " << v;
  for (int64_t i = 0, e = v.getRank() - 1; i < e; ++i)
    if (!isCompatibleDim(v.getDimSize(i), g.getDimSize(i)))
      return emitOpError() << "expects values and group elements to agree on "
                              "batch and sequence dims, got "
                           << v << " and " << g;
  if (v.getElementType() != g.getElementType())
    return emitOpError() << "expects values and group elements of the same "
                            "element type, got "
                         << v.getElementType() << " and " << g.getElementType();
  if (failed(verifyResultLikeInput(*this, v, "values")))
    return failure();

  int64_t heads = getHeads();
  int64_t dim = v.getDimSize(v.getRank() - 1);
  if (ShapedType::isDynamic(dim))
    return emitOpError() << "expects a static value feature dim, got " << v;
  if (dim % heads != 0)
    return emitOpError() << "expects the value feature dim (" << dim
                         << ") to be divisible by heads (" << heads << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// LieCrossAttentionOp
//===----------------------------------------------------------------------===//

/// Checks the operands every cross-attention op shares: query and key
/// group elements `gq`, `gk` ([batch...] x L x n x n of one rank, batch
/// dims agreeing), values `v` ([batch...] x Lk x D, D static and divisible
/// by heads) and the scores.
static LogicalResult verifyCrossOperands(Operation *op, ScoresAttr scores,
                                         RankedTensorType gq,
                                         RankedTensorType gk,
                                         RankedTensorType v) {
  if (failed(verifyScores(op, scores)))
    return failure();
  const lie::GroupModel &model = scores.getGroup().getModel();
  int64_t heads = scores.getHeads();
  int64_t n = model.getMatrixSize();
  for (auto [what, g] :
       {std::pair<const char *, RankedTensorType>{"query", gq}, {"key", gk}}) {
    if (g.getRank() < 3)
      return op->emitOpError()
             << "expects " << what
             << " group elements of rank >= 3 ([batch...] x L x n x n), got "
             << g;
    if (g.getDimSize(g.getRank() - 2) != n ||
        g.getDimSize(g.getRank() - 1) != n)
      return op->emitOpError()
             << "expects " << what << " group elements with trailing dims " << n
             << "x" << n << " for group " << model.getDisplayName() << ", got "
             << g;
  }
  int64_t rank = gq.getRank() - 1; // of values and outputs
  if (gk.getRank() != gq.getRank() || v.getRank() != rank)
    return op->emitOpError() << "expects query and key group elements of one "
                                "rank and values of one rank less, got "
                             << gq << ", " << gk << " and " << v;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (!isCompatibleDim(gq.getDimSize(i), gk.getDimSize(i)) ||
        !isCompatibleDim(gq.getDimSize(i), v.getDimSize(i)))
      return op->emitOpError() << "expects the operands to agree on batch "
                                  "dims, got "
                               << gq << ", " << gk << " and " << v;
  if (!isCompatibleDim(gk.getDimSize(rank - 2), v.getDimSize(rank - 2)))
    return op->emitOpError()
           << "expects one value per key, got " << gk << " and " << v;
  if (gq.getElementType() != v.getElementType() ||
      gk.getElementType() != v.getElementType())
    return op->emitOpError() << "expects one element type, got " << gq << ", "
                             << gk << " and " << v;
  int64_t dim = v.getDimSize(rank - 1);
  if (ShapedType::isDynamic(dim) || dim % heads != 0)
    return op->emitOpError() << "expects a static value feature dim divisible "
                                "by heads ("
                             << heads << "), got " << v;
  return success();
}

/// The type of a per-query-row result of a cross attention: the query
/// elements' leading dims followed by `last`.
static RankedTensorType rowResultType(RankedTensorType gq, int64_t last) {
  SmallVector<int64_t> shape(gq.getShape().drop_back(2));
  shape.push_back(last);
  return RankedTensorType::get(shape, gq.getElementType());
}

/// Whether `t` is `want` up to dynamic dims.
static bool isCompatibleType(RankedTensorType t, RankedTensorType want) {
  if (t.getRank() != want.getRank() ||
      t.getElementType() != want.getElementType())
    return false;
  for (int64_t i = 0; i < t.getRank(); ++i)
    if (!isCompatibleDim(t.getDimSize(i), want.getDimSize(i)))
      return false;
  return true;
}

LogicalResult LieCrossAttentionOp::verify() {
  auto gq = cast<RankedTensorType>(getQueries().getType());
  auto gk = cast<RankedTensorType>(getKeys().getType());
  auto v = cast<RankedTensorType>(getValues().getType());
  if (failed(verifyCrossOperands(*this, getScores(), gq, gk, v)))
    return failure();
  auto out = cast<RankedTensorType>(getResult().getType());
  auto lse = cast<RankedTensorType>(getLse().getType());
  if (!isCompatibleType(out, rowResultType(gq, v.getShape().back())))
    return emitOpError() << "expects a result of [batch...] x Lq x D ("
                         << rowResultType(gq, v.getShape().back()) << "), got "
                         << out;
  if (!isCompatibleType(lse, rowResultType(gq, getHeads())))
    return emitOpError() << "expects an lse of [batch...] x Lq x heads ("
                         << rowResultType(gq, getHeads()) << "), got " << lse;
  return success();
}

//===----------------------------------------------------------------------===//
// LieCrossAttentionGradOp
//===----------------------------------------------------------------------===//

LogicalResult LieCrossAttentionGradOp::verify() {
  auto gq = cast<RankedTensorType>(getQueries().getType());
  auto gk = cast<RankedTensorType>(getKeys().getType());
  auto v = cast<RankedTensorType>(getValues().getType());
  if (failed(verifyCrossOperands(*this, getScores(), gq, gk, v)))
    return failure();
  RankedTensorType rows = rowResultType(gq, v.getShape().back());
  for (auto [what, value] : {std::pair<const char *, Value>{"out", getOut()},
                             {"out_grad", getOutGrad()}})
    if (!isCompatibleType(cast<RankedTensorType>(value.getType()), rows))
      return emitOpError() << "expects " << what << " of [batch...] x Lq x D ("
                           << rows << "), got " << value.getType();
  if (!isCompatibleType(cast<RankedTensorType>(getLse().getType()),
                        rowResultType(gq, getHeads())))
    return emitOpError() << "expects an lse of [batch...] x Lq x heads ("
                         << rowResultType(gq, getHeads()) << "), got "
                         << getLse().getType();
  if (getQueriesGrad().getType() != gq || getKeysGrad().getType() != gk ||
      getValuesGrad().getType() != v)
    return emitOpError() << "expects results of the types of queries, keys "
                            "and values";
  return success();
}

//===----------------------------------------------------------------------===//
// PluckerOp
//===----------------------------------------------------------------------===//

LogicalResult PluckerOp::verify() {
  auto u = cast<RankedTensorType>(getLhs().getType());
  auto v = cast<RankedTensorType>(getRhs().getType());
  auto p = cast<RankedTensorType>(getResult().getType());
  if (u.getRank() < 1)
    return emitOpError() << "expects operands of rank >= 1 ([...] x r), got "
                         << u;
  bool sameShape =
      u.getRank() == v.getRank() &&
      llvm::all_of(llvm::zip_equal(u.getShape(), v.getShape()), [](auto d) {
        return isCompatibleDim(std::get<0>(d), std::get<1>(d));
      });
  if (!sameShape || u.getElementType() != v.getElementType())
    return emitOpError()
           << "expects operands of the same shape and element type, got " << u
           << " and " << v;
  int64_t r = u.getDimSize(u.getRank() - 1);
  if (ShapedType::isDynamic(r))
    r = v.getDimSize(v.getRank() - 1);
  if (ShapedType::isDynamic(r) || r < 2)
    return emitOpError() << "expects a static vector dim r >= 2, got " << u;

  SmallVector<int64_t> expected(u.getShape());
  expected.back() = r * (r - 1) / 2;
  bool resultOk =
      p.getRank() == u.getRank() && p.getElementType() == u.getElementType() &&
      p.getShape().back() == expected.back() &&
      llvm::all_of(llvm::zip_equal(p.getShape(), expected), [](auto d) {
        return isCompatibleDim(std::get<0>(d), std::get<1>(d));
      });
  if (!resultOk)
    return emitOpError() << "expects result of shape " << formatShape(expected)
                         << " (last dim C(r,2) for r = " << r
                         << ") and element type " << u.getElementType()
                         << ", got " << p;
  return success();
}

//===----------------------------------------------------------------------===//
// GrassmannMixOp
//===----------------------------------------------------------------------===//

LogicalResult GrassmannMixOp::verify() {
  auto h = cast<RankedTensorType>(getInput().getType());
  if (failed(verifySequence(*this, h)))
    return failure();
  int64_t d = h.getDimSize(h.getRank() - 1);
  if (ShapedType::isDynamic(d))
    return emitOpError() << "expects a static feature dim d, got " << h;
  Type elt = h.getElementType();

  auto wRed = cast<RankedTensorType>(getWRed().getType());
  if (wRed.getRank() != 2 || ShapedType::isDynamic(wRed.getDimSize(0)) ||
      wRed.getDimSize(0) < 2)
    return emitOpError() << "expects W_red of shape r x " << d
                         << " with static r >= 2, got " << wRed;
  int64_t r = wRed.getDimSize(0);
  int64_t c = r * (r - 1) / 2;

  if (failed(verifyOperandShape(*this, getWRed(), "W_red", {r, d}, "r x d",
                                elt)) ||
      failed(verifyOperandShape(*this, getBRed(), "b_red", {r}, "r", elt)) ||
      failed(verifyOperandShape(*this, getWPlu(), "W_plu", {d, c}, "d x C(r,2)",
                                elt)) ||
      failed(verifyOperandShape(*this, getBPlu(), "b_plu", {d}, "d", elt)) ||
      failed(verifyOperandShape(*this, getWGate(), "W_gate", {d, 2 * d},
                                "d x 2d", elt)) ||
      failed(verifyOperandShape(*this, getBGate(), "b_gate", {d}, "d", elt)) ||
      failed(verifyResultLikeInput(*this, h, "input")))
    return failure();

  ArrayRef<int64_t> offsets = getOffsets();
  if (offsets.empty())
    return emitOpError() << "expects at least one offset";
  for (int64_t o : offsets)
    if (o <= 0)
      return emitOpError() << "expects positive offsets, got " << o;
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError() << "expects positive eps, got "
                         << getEps().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// RelationalAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult RelationalAttentionOp::verify() {
  auto x = cast<RankedTensorType>(getInput().getType());
  if (failed(verifySequence(*this, x)))
    return failure();
  int64_t heads = getHeads();
  if (heads < 1)
    return emitOpError() << "expects a positive number of heads, got " << heads;
  int64_t d = x.getDimSize(x.getRank() - 1);
  Type elt = x.getElementType();
  if (failed(verifyOperandShape(*this, getGQk(), "G_QK", {heads, d, d},
                                "heads x d x d", elt)) ||
      failed(verifyOperandShape(*this, getGVo(), "G_VO", {heads, d, d},
                                "heads x d x d", elt)) ||
      failed(verifyResultLikeInput(*this, x, "input")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// RelationalNormOp
//===----------------------------------------------------------------------===//

LogicalResult RelationalNormOp::verify() {
  auto x = cast<RankedTensorType>(getInput().getType());
  if (x.getRank() < 1)
    return emitOpError() << "expects input of rank >= 1, got " << x;
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError() << "expects positive eps, got "
                         << getEps().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// FlashLieAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult FlashLieAttentionOp::verify() {
  if (failed(verifyScores(*this, getScores())))
    return failure();
  auto q = cast<RankedTensorType>(getQueries().getType());
  auto k = cast<RankedTensorType>(getKeys().getType());
  auto v = cast<RankedTensorType>(getValues().getType());
  auto init = cast<RankedTensorType>(getInit().getType());
  const lie::GroupModel &model = getGroup().getModel();
  int64_t rank = q.getRank();
  if (rank < 2 || k.getRank() != rank || v.getRank() != rank ||
      init.getRank() != rank)
    return emitOpError() << "expects queries, keys, values and init of one "
                            "rank >= 2, got "
                         << q << ", " << k << ", " << v << " and " << init;
  if (q.getElementType() != v.getElementType() ||
      k.getElementType() != v.getElementType() ||
      init.getElementType() != v.getElementType())
    return emitOpError() << "expects one element type, got " << q << ", " << k
                         << ", " << v << " and " << init;
  if (q.getDimSize(rank - 1) != model.getQueryFeatureCount() ||
      k.getDimSize(rank - 2) != model.getKeyFeatureCount())
    return emitOpError() << "expects " << model.getQueryFeatureCount()
                         << " query and " << model.getKeyFeatureCount()
                         << " key features for group " << model.getDisplayName()
                         << ", got " << q << " and " << k;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (!isCompatibleDim(q.getDimSize(i), k.getDimSize(i)) ||
        !isCompatibleDim(q.getDimSize(i), v.getDimSize(i)) ||
        !isCompatibleDim(q.getDimSize(i), init.getDimSize(i)))
      return emitOpError() << "expects the operands to agree on batch dims";
  if (!isCompatibleDim(k.getDimSize(rank - 1), v.getDimSize(rank - 2)))
    return emitOpError() << "expects as many keys as values, got " << k
                         << " and " << v;
  if (!isCompatibleDim(q.getDimSize(rank - 2), init.getDimSize(rank - 2)) ||
      v.getDimSize(rank - 1) != init.getDimSize(rank - 1))
    return emitOpError() << "expects init of [batch...] x rows x D, got "
                         << init;
  if (getResult().getType() != init)
    return emitOpError() << "expects the result type of init, got "
                         << getResult().getType();
  int64_t dim = v.getDimSize(rank - 1);
  int64_t heads = getHeads();
  if (ShapedType::isDynamic(dim) || dim % heads != 0)
    return emitOpError() << "expects a static value feature dim divisible by "
                            "heads ("
                         << heads << "), got " << v;
  // The optional log-sum-exp: a destination and a result of one type,
  // [batch...] x rows x heads.
  if (static_cast<bool>(getLseInit()) != static_cast<bool>(getLse()))
    return emitOpError() << "expects an lse result exactly when lse_init is "
                            "given";
  if (Value lseInit = getLseInit()) {
    auto l = cast<RankedTensorType>(lseInit.getType());
    bool ok = l.getRank() == rank && l.getElementType() == v.getElementType() &&
              l.getDimSize(rank - 1) == heads && l == getLse().getType();
    for (int64_t i = 0; ok && i + 1 < rank; ++i)
      ok = isCompatibleDim(l.getDimSize(i), init.getDimSize(i));
    if (!ok)
      return emitOpError() << "expects lse_init and lse of [batch...] x rows "
                              "x heads ("
                           << heads << "), got " << l;
  }
  if (std::optional<int64_t> tile = getKeyTile(); tile && *tile < 1)
    return emitOpError() << "expects a positive key_tile, got " << *tile;
  return success();
}
