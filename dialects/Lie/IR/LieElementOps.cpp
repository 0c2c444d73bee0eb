//===- LieElementOps.cpp - The element-op interface of the lie ops --------===//
//
// Each lie op states, through ElementOpInterface, which operands one element
// is built from, how many trailing dims form an element, and which group
// model builder makes one element's result. That is all that differs
// between the ops' lowerings, so convert-lie-to-arith is one pattern over
// this interface. lie.pullback's methods are in LiePullback.cpp, beside its
// verifier, because both follow from the forward op it differentiates.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/LieOps.h"

using namespace mlir;
using namespace torsor::lie;

#include "dialects/Lie/IR/LieEnums.cpp.inc"
#include "dialects/Lie/IR/LieInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// IdentityOp: no operands; every element is the model's identity matrix.
//===----------------------------------------------------------------------===//

SmallVector<ElementOperand> IdentityOp::getElementOperands() { return {}; }
unsigned IdentityOp::getResultElementRank() { return 2; }
ValueRange IdentityOp::getDynamicBatchSizes() { return getDynamicSizes(); }
FailureOr<Scalars> IdentityOp::buildElement(ScalarBuilder &m,
                                            ArrayRef<Scalars>) {
  Scalars entries;
  for (double x : getGroup().getModel().getIdentity())
    entries.push_back(m.c(x));
  return entries;
}

//===----------------------------------------------------------------------===//
// ComposeOp, InverseOp: group elements to a group element.
//===----------------------------------------------------------------------===//

SmallVector<ElementOperand> ComposeOp::getElementOperands() {
  return {{getLhs(), 2}, {getRhs(), 2}};
}
unsigned ComposeOp::getResultElementRank() { return 2; }
FailureOr<Scalars> ComposeOp::buildElement(ScalarBuilder &m,
                                           ArrayRef<Scalars> in) {
  return getGroup().getModel().buildCompose(m, in[0], in[1]);
}

SmallVector<ElementOperand> InverseOp::getElementOperands() {
  return {{getInput(), 2}};
}
unsigned InverseOp::getResultElementRank() { return 2; }
FailureOr<Scalars> InverseOp::buildElement(ScalarBuilder &m,
                                           ArrayRef<Scalars> in) {
  return getGroup().getModel().buildInverse(m, in[0]);
}

//===----------------------------------------------------------------------===//
// LogOp, ExpOp: between group elements and algebra coordinates.
//===----------------------------------------------------------------------===//

SmallVector<ElementOperand> LogOp::getElementOperands() {
  return {{getInput(), 2}};
}
unsigned LogOp::getResultElementRank() { return 1; }
FailureOr<Scalars> LogOp::buildElement(ScalarBuilder &m, ArrayRef<Scalars> in) {
  return getGroup().getModel().buildLog(m, in[0]);
}

SmallVector<ElementOperand> ExpOp::getElementOperands() {
  return {{getInput(), 1}};
}
unsigned ExpOp::getResultElementRank() { return 2; }
FailureOr<Scalars> ExpOp::buildElement(ScalarBuilder &m, ArrayRef<Scalars> in) {
  return getGroup().getModel().buildExp(m, in[0]);
}

//===----------------------------------------------------------------------===//
// PairFeaturesOp: one side of the factored pair form.
//===----------------------------------------------------------------------===//

SmallVector<ElementOperand> PairFeaturesOp::getElementOperands() {
  return {{getInput(), 2}};
}
unsigned PairFeaturesOp::getResultElementRank() { return 1; }
FailureOr<Scalars> PairFeaturesOp::buildElement(ScalarBuilder &m,
                                                ArrayRef<Scalars> in) {
  const GroupModel &model = getGroup().getModel();
  return getKey() ? model.buildKeyFeatures(m, in[0])
                  : model.buildQueryFeatures(m, in[0]);
}

//===----------------------------------------------------------------------===//
// ActOp: a group element acting on a point.
//===----------------------------------------------------------------------===//

SmallVector<ElementOperand> ActOp::getElementOperands() {
  return {{getElement(), 2}, {getPoint(), 1}};
}
unsigned ActOp::getResultElementRank() { return 1; }
FailureOr<Scalars> ActOp::buildElement(ScalarBuilder &m, ArrayRef<Scalars> in) {
  return getGroup().getModel().buildAct(m, in[0], in[1]);
}

//===----------------------------------------------------------------------===//
// Dist2Op, MembershipResidualOp: one scalar per element.
//===----------------------------------------------------------------------===//

SmallVector<ElementOperand> Dist2Op::getElementOperands() {
  return {{getLhs(), 2}, {getRhs(), 2}};
}
unsigned Dist2Op::getResultElementRank() { return 0; }
FailureOr<Scalars> Dist2Op::buildElement(ScalarBuilder &m,
                                         ArrayRef<Scalars> in) {
  Scalars weights;
  for (double w : getLambdaOrDefault())
    weights.push_back(m.c(w));
  return Scalars{getGroup().getModel().buildDist2(m, in[0], in[1], weights)};
}

SmallVector<ElementOperand> MembershipResidualOp::getElementOperands() {
  return {{getInput(), 2}};
}
unsigned MembershipResidualOp::getResultElementRank() { return 0; }
FailureOr<Scalars> MembershipResidualOp::buildElement(ScalarBuilder &m,
                                                      ArrayRef<Scalars> in) {
  return Scalars{getGroup().getModel().buildMembershipResidual(m, in[0])};
}
