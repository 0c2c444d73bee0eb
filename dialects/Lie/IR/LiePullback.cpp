//===- LiePullback.cpp - Verifier and element builder of lie.pullback -----===//
//
// lie.pullback's shapes follow from the forward op it differentiates: each
// operand, the cotangent and the result have the forward op's batch dims
// and a trailing shape fixed by the group (n×n for elements, k for
// left-trivialised cotangents, the model's feature counts, point dims).
//
// Its element is the group model's derivative builder (Groups/Derivatives.h),
// the adjoint of the model's own formula. When that formula builds loops (a
// declared group's iterative log) no adjoint exists yet; the element-op
// interface's verifyElementLowering reports that before any IR is built.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Derivatives.h"
#include "dialects/Lie/IR/LieOps.h"

using namespace mlir;
using namespace torsor::lie;

namespace {

/// The trailing shape of operand `i` of `kind`'s forward op.
SmallVector<int64_t> operandTrailing(const GroupModel &model, PullbackKind kind,
                                     unsigned i) {
  int64_t n = model.getMatrixSize();
  if (isGroupOperand(kind, i))
    return {n, n};
  if (kind == PullbackKind::Exp)
    return {static_cast<int64_t>(model.getAlgebraDim())};
  return {static_cast<int64_t>(model.getPointDim())}; // act's point
}

/// The trailing shape of `kind`'s result cotangent.
SmallVector<int64_t> cotangentTrailing(const GroupModel &model,
                                       PullbackKind kind) {
  switch (kind) {
  case PullbackKind::Dist2:
    return {};
  case PullbackKind::Act:
    return {static_cast<int64_t>(model.getPointDim())};
  case PullbackKind::QueryFeatures:
    return {static_cast<int64_t>(model.getQueryFeatureCount())};
  case PullbackKind::KeyFeatures:
    return {static_cast<int64_t>(model.getKeyFeatureCount())};
  case PullbackKind::Log:
    return {static_cast<int64_t>(model.getAlgebraDim())};
  default: // ambient cotangents of group-valued results
    return {static_cast<int64_t>(model.getMatrixSize()),
            static_cast<int64_t>(model.getMatrixSize())};
  }
}

/// "2x?x3" for a shape (? for dynamic dims).
std::string shapeString(ArrayRef<int64_t> shape) {
  std::string out;
  for (auto [i, d] : llvm::enumerate(shape))
    out += (i ? "x" : "") +
           (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  return out;
}

} // namespace

LogicalResult PullbackOp::verify() {
  PullbackKind kind = getOf();
  const GroupModel &model = getGroup().getModel();
  unsigned arity = getPullbackArity(kind);
  if (getInputs().size() != arity)
    return emitOpError("expects ")
           << arity << " operands of the forward '"
           << stringifyPullbackKind(getOf()) << "', got " << getInputs().size();
  if (getWrt() < 0 || getWrt() >= arity)
    return emitOpError("expects wrt in [0, ") << arity << "), got " << getWrt();
  if (kind == PullbackKind::Dist2 && getLambda() &&
      getLambda()->size() != model.getBlocks().size())
    return emitOpError("expects ")
           << model.getBlocks().size() << " lambda weights, got "
           << getLambda()->size();

  // Every tensor: batch dims of the first operand, then its trailing shape.
  auto first = cast<RankedTensorType>(getInputs()[0].getType());
  SmallVector<int64_t> firstTrailing = operandTrailing(model, kind, 0);
  if (first.getRank() < static_cast<int64_t>(firstTrailing.size()))
    return emitOpError("expects operand 0 with trailing dims ")
           << shapeString(firstTrailing) << ", got " << first;
  unsigned batch = first.getRank() - firstTrailing.size();
  ArrayRef<int64_t> batchShape = first.getShape().take_front(batch);
  auto check = [&](Type type, ArrayRef<int64_t> trailing,
                   StringRef what) -> LogicalResult {
    auto t = cast<RankedTensorType>(type);
    SmallVector<int64_t> want(batchShape);
    want.append(trailing.begin(), trailing.end());
    bool ok = t.getRank() == static_cast<int64_t>(want.size());
    for (size_t d = 0; ok && d < want.size(); ++d)
      ok = t.getDimSize(d) == want[d] || ShapedType::isDynamic(want[d]) ||
           t.isDynamicDim(d);
    if (ok && t.getElementType() == first.getElementType())
      return success();
    return emitOpError("expects ")
           << what << " of shape [" << shapeString(want)
           << "] and element type " << first.getElementType() << ", got " << t;
  };
  for (unsigned i = 0; i < arity; ++i)
    if (failed(check(getInputs()[i].getType(), operandTrailing(model, kind, i),
                     "operand " + std::to_string(i))))
      return failure();
  if (failed(check(getCotangent().getType(), cotangentTrailing(model, kind),
                   "cotangent")))
    return failure();
  SmallVector<int64_t> resultTrailing =
      kind == PullbackKind::LeftTrivialize
          ? SmallVector<int64_t>{static_cast<int64_t>(model.getAlgebraDim())}
          : operandTrailing(model, kind, getWrt());
  return check(getType(), resultTrailing, "result");
}

//===----------------------------------------------------------------------===//
// ElementOpInterface
//===----------------------------------------------------------------------===//

namespace {

/// Trailing element dims of operand `i` of the forward op.
unsigned trailingDims(PullbackKind kind, unsigned i) {
  return isGroupOperand(kind, i) ? 2 : 1;
}

/// Trailing element dims of the result's cotangent: ambient n×n for group
/// results (and left_trivialize's input), none for dist2.
unsigned cotangentDims(PullbackKind kind) {
  if (kind == PullbackKind::Dist2)
    return 0;
  return hasGroupResult(kind) || kind == PullbackKind::LeftTrivialize ? 2 : 1;
}

} // namespace

SmallVector<ElementOperand> PullbackOp::getElementOperands() {
  SmallVector<ElementOperand> operands;
  for (auto [i, input] : llvm::enumerate(getInputs()))
    operands.push_back({input, trailingDims(getOf(), i)});
  operands.push_back({getCotangent(), cotangentDims(getOf())});
  return operands;
}

unsigned PullbackOp::getResultElementRank() {
  PullbackKind kind = getOf();
  return kind != PullbackKind::LeftTrivialize && isGroupOperand(kind, getWrt())
             ? 2
             : 1;
}

FailureOr<Scalars> PullbackOp::buildElement(ScalarBuilder &m,
                                            ArrayRef<Scalars> in) {
  const GroupModel &model = getGroup().getModel();
  Scalars lambda;
  if (auto weights = getLambda())
    for (double w : *weights)
      lambda.push_back(m.c(w));
  else
    for (size_t b = 0; b < model.getBlocks().size(); ++b)
      lambda.push_back(m.c(1.0));
  SmallVector<Scalars> operands(in.drop_back());
  return buildPullback(model, m, getOf(), operands, in.back(), getWrt(),
                       lambda);
}

LogicalResult PullbackOp::verifyElementLowering() {
  // Dry run in a detached block: the model's formula may build loops,
  // which have no adjoint; report that instead of half-built IR.
  const GroupModel &model = getGroup().getModel();
  auto elt = cast<FloatType>(getType().getElementType());
  Block scratch;
  auto scalarsOf = [&](unsigned count) {
    Scalars s;
    for (unsigned i = 0; i < count; ++i)
      s.push_back(scratch.addArgument(elt, getLoc()));
    return s;
  };
  unsigned n = model.getMatrixSize();
  SmallVector<Scalars> in;
  for (ElementOperand operand : getElementOperands()) {
    auto type = cast<RankedTensorType>(operand.value.getType());
    in.push_back(scalarsOf(operand.trailing == 0   ? 1
                           : operand.trailing == 2 ? n * n
                                                   : type.getShape().back()));
  }
  OpBuilder ob(getContext());
  ob.setInsertionPointToEnd(&scratch);
  ImplicitLocOpBuilder ib(getLoc(), ob);
  ScalarBuilder m(ib, elt);
  bool ok = succeeded(buildElement(m, in));
  while (!scratch.empty())
    scratch.back().erase();
  if (!ok)
    return emitOpError("cannot be differentiated for group ")
           << model.getDisplayName()
           << ": its formula builds loops (no adjoint yet)";
  return success();
}
