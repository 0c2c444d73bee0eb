//===- LieOps.cpp - Lie dialect op verifiers ------------------------------===//
//
// Verifiers check shapes against the group model: group tensors end in n×n,
// algebra tensors in the algebra dimension, points in the point dimension,
// and batch dims agree. Messages say what was expected and what was found.
// Folds live in LieFolds.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/LieOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace torsor::lie;

/// Checks that `type` ends in the group's n×n matrix dims.
static LogicalResult verifyGroupTensor(Operation *op, RankedTensorType type,
                                       const GroupModel &model,
                                       StringRef what) {
  int64_t n = model.getMatrixSize();
  int64_t rank = type.getRank();
  if (rank < 2 || type.getDimSize(rank - 2) != n ||
      type.getDimSize(rank - 1) != n) {
    auto diag = op->emitOpError()
                << "expects " << what << " with trailing dims " << n << "x" << n
                << " for group " << model.getDisplayName() << ", got ";
    diag << type;
    return diag;
  }
  return success();
}

/// Checks that `type`'s last dim is `expected` (the algebra or point dim).
static LogicalResult verifyVectorTensor(Operation *op, RankedTensorType type,
                                        int64_t expected,
                                        const GroupModel &model,
                                        StringRef what) {
  if (type.getRank() < 1 || type.getDimSize(type.getRank() - 1) != expected)
    return op->emitOpError()
           << "expects " << what << " with last dim " << expected
           << " for group " << model.getDisplayName() << ", got " << type;
  return success();
}

/// Checks that two types agree on their batch dims: all dims but the last
/// `trailingA` of `a` and the last `trailingB` of `b`.
static LogicalResult verifyBatchDims(Operation *op, RankedTensorType a,
                                     unsigned trailingA, RankedTensorType b,
                                     unsigned trailingB, StringRef whatA,
                                     StringRef whatB) {
  ArrayRef<int64_t> batchA = a.getShape().drop_back(trailingA);
  ArrayRef<int64_t> batchB = b.getShape().drop_back(trailingB);
  if (batchA != batchB)
    return op->emitOpError()
           << "expects " << whatA << " and " << whatB
           << " to have the same batch dims, got " << a << " and " << b;
  if (a.getElementType() != b.getElementType())
    return op->emitOpError()
           << "expects " << whatA << " and " << whatB
           << " to have the same element type, got " << a.getElementType()
           << " and " << b.getElementType();
  return success();
}

LogicalResult IdentityOp::verify() {
  auto type = getType();
  if (failed(verifyGroupTensor(*this, type, getGroup().getModel(), "result")))
    return failure();
  int64_t dynamic = type.getNumDynamicDims();
  if (static_cast<int64_t>(getDynamicSizes().size()) != dynamic)
    return emitOpError() << "expects one size operand per dynamic dim ("
                         << dynamic << "), got " << getDynamicSizes().size();
  return success();
}

LogicalResult ComposeOp::verify() {
  return verifyGroupTensor(*this, getType(), getGroup().getModel(), "operands");
}

LogicalResult InverseOp::verify() {
  return verifyGroupTensor(*this, getType(), getGroup().getModel(), "operand");
}

LogicalResult LogOp::verify() {
  const GroupModel &model = getGroup().getModel();
  auto in = getInput().getType();
  auto out = getType();
  if (failed(verifyGroupTensor(*this, in, model, "input")) ||
      failed(verifyVectorTensor(*this, out, model.getAlgebraDim(), model,
                                "result")))
    return failure();
  return verifyBatchDims(*this, in, 2, out, 1, "input", "result");
}

unsigned PairFeaturesOp::getFeatureCount() {
  const GroupModel &model = getGroup().getModel();
  return getKey() ? model.getKeyFeatureCount() : model.getQueryFeatureCount();
}

LogicalResult PairFeaturesOp::verify() {
  const GroupModel &model = getGroup().getModel();
  auto in = getInput().getType();
  auto out = getType();
  if (failed(verifyGroupTensor(*this, in, model, "input")) ||
      failed(
          verifyVectorTensor(*this, out, getFeatureCount(), model, "result")))
    return failure();
  return verifyBatchDims(*this, in, 2, out, 1, "input", "result");
}

LogicalResult ExpOp::verify() {
  const GroupModel &model = getGroup().getModel();
  auto in = getInput().getType();
  auto out = getType();
  if (failed(verifyVectorTensor(*this, in, model.getAlgebraDim(), model,
                                "input")) ||
      failed(verifyGroupTensor(*this, out, model, "result")))
    return failure();
  return verifyBatchDims(*this, in, 1, out, 2, "input", "result");
}

LogicalResult ActOp::verify() {
  const GroupModel &model = getGroup().getModel();
  auto g = getElement().getType();
  auto p = getPoint().getType();
  if (failed(verifyGroupTensor(*this, g, model, "element")) ||
      failed(
          verifyVectorTensor(*this, p, model.getPointDim(), model, "point")) ||
      failed(verifyBatchDims(*this, g, 2, p, 1, "element", "point")))
    return failure();
  if (p != getType())
    return emitOpError() << "expects result type " << p << " (the point type)"
                         << ", got " << getType();
  return success();
}

LogicalResult MembershipResidualOp::verify() {
  auto in = getInput().getType();
  if (failed(verifyGroupTensor(*this, in, getGroup().getModel(), "input")))
    return failure();
  return verifyBatchDims(*this, in, 2, getType(), 0, "input", "result");
}

SmallVector<double> Dist2Op::getLambdaOrDefault() {
  if (auto lambda = getLambda())
    return SmallVector<double>(lambda->begin(), lambda->end());
  return SmallVector<double>(getGroup().getModel().getBlocks().size(), 1.0);
}

LogicalResult Dist2Op::verify() {
  const GroupModel &model = getGroup().getModel();
  auto a = getLhs().getType();
  auto b = getRhs().getType();
  if (failed(verifyGroupTensor(*this, a, model, "operands")))
    return failure();
  if (a != b)
    return emitOpError() << "expects operands of the same type, got " << a
                         << " and " << b;
  if (failed(verifyBatchDims(*this, a, 2, getType(), 0, "operands", "result")))
    return failure();
  size_t numBlocks = model.getBlocks().size();
  if (auto lambda = getLambda()) {
    if (lambda->size() != numBlocks)
      return emitOpError() << "expects " << numBlocks
                           << " lambda weights (one per block of "
                           << model.getDisplayName() << "), got "
                           << lambda->size();
    for (double w : *lambda)
      if (!(w >= 0.0))
        return emitOpError()
               << "expects non-negative lambda weights, got " << w;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// lie.pullback's kind: a bare keyword (`log`), or the quoted form
// (`"log"`) that IR written before it was an enum uses.
//===----------------------------------------------------------------------===//

static ParseResult parsePullbackKind(OpAsmParser &parser,
                                     PullbackKindAttr &kind) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (failed(parser.parseKeywordOrString(&name)))
    return failure();
  std::optional<PullbackKind> parsed = symbolizePullbackKind(name);
  if (!parsed)
    return parser.emitError(loc)
           << "lie.pullback differentiates compose, inverse, log, exp, act, "
              "dist2, query_features, key_features or left_trivialize, got '"
           << name << "'";
  kind = PullbackKindAttr::get(parser.getContext(), *parsed);
  return success();
}

static void printPullbackKind(OpAsmPrinter &printer, Operation *,
                              PullbackKindAttr kind) {
  printer << stringifyPullbackKind(kind.getValue());
}

#define GET_OP_CLASSES
#include "dialects/Lie/IR/LieOps.cpp.inc"
