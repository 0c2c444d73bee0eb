//===- VJP.cpp - The rule table and the reverse sweep ---------------------===//
//
// The registry, the helpers rules share (zeros, sums, elementwise maps) and
// the reverse sweep that walks a block backwards applying rules. The sweep
// is the same at every level: over a function's tensor ops, and over the
// scalar body of a linalg.generic (CoreRules.cpp's structured-op rule).
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/VJP.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace torsor::autodiff;

void VJPRegistry::add(StringRef opName, VJPRule rule) {
  bool inserted = rules.try_emplace(opName, rule).second;
  assert(inserted && "two VJP rules for one op");
  (void)inserted;
}

const VJPRule *VJPRegistry::lookup(Operation *op) const {
  auto it = rules.find(op->getName().getStringRef());
  return it == rules.end() ? nullptr : &it->second;
}

SmallVector<StringRef> VJPRegistry::names() const {
  SmallVector<StringRef> result;
  for (const auto &entry : rules)
    result.push_back(entry.getKey());
  llvm::sort(result);
  return result;
}

const VJPRegistry &torsor::autodiff::getVJPRegistry() {
  static const VJPRegistry registry = [] {
    VJPRegistry r;
    registerCoreVJPRules(r);
    registerLieGeoVJPRules(r);
    registerGrassmannVJPRules(r);
    return r;
  }();
  return registry;
}

bool torsor::autodiff::isDifferentiableType(Type t) {
  return isa<FloatType>(getElementTypeOrSelf(t));
}

bool torsor::autodiff::isDifferentiable(Value v) {
  return v && isDifferentiableType(v.getType());
}

Value torsor::autodiff::floatConstant(OpBuilder &b, Location loc, Type type,
                                      double value) {
  auto elem = cast<FloatType>(getElementTypeOrSelf(type));
  if (auto shaped = dyn_cast<ShapedType>(type))
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(shaped, b.getFloatAttr(elem, value)));
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(elem, value));
}

Value torsor::autodiff::zerosLike(OpBuilder &b, Location loc, Value like) {
  auto tensor = dyn_cast<RankedTensorType>(like.getType());
  if (!tensor)
    return floatConstant(b, loc, like.getType(), 0.0);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
  Value empty = tensor::EmptyOp::create(b, loc, sizes, tensor.getElementType());
  Value zero = floatConstant(b, loc, tensor.getElementType(), 0.0);
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

Value torsor::autodiff::mapElementwise(
    OpBuilder &b, Location loc, ValueRange operands,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  auto tensor = dyn_cast<RankedTensorType>(operands.front().getType());
  if (!tensor)
    return body(b, loc, operands);
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(b, loc, operands.front());
  Value init = tensor::EmptyOp::create(b, loc, sizes, tensor.getElementType());
  unsigned rank = tensor.getRank();
  SmallVector<AffineMap> maps(operands.size() + 1,
                              b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, tensor, operands, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

Value torsor::autodiff::addValues(OpBuilder &b, Location loc, Value a,
                                  Value c) {
  if (!a)
    return c;
  if (!c)
    return a;
  return mapElementwise(
      b, loc, {a, c}, [](OpBuilder &nb, Location nloc, ValueRange x) {
        return arith::AddFOp::create(nb, nloc, x[0], x[1]).getResult();
      });
}

/// Captured cotangents of the rule being applied (addCapturedCotangent).
static thread_local SmallVector<std::pair<Value, Value>> *capturedSink =
    nullptr;

void torsor::autodiff::addCapturedCotangent(Value primal, Value cot) {
  assert(capturedSink && "addCapturedCotangent outside a rule");
  capturedSink->push_back({primal, cot});
}

LogicalResult
torsor::autodiff::backpropagate(OpBuilder &b, ArrayRef<Operation *> ops,
                                DenseMap<Value, Value> &cotangents,
                                const VJPRegistry &registry) {
  for (Operation *op : llvm::reverse(ops)) {
    bool hasCotangent = llvm::any_of(
        op->getResults(), [&](Value r) { return cotangents.lookup(r); });
    if (!hasCotangent)
      continue;
    // Ops reading no float value (tensor.empty, shape arithmetic) end the
    // chain: nothing upstream of them is differentiable.
    if (llvm::none_of(op->getOperands(), isDifferentiable) &&
        op->getNumRegions() == 0)
      continue;
    const VJPRule *rule = registry.lookup(op);
    if (!rule)
      return op->emitError() << "no gradient rule for '" << op->getName()
                             << "' (torsor-differentiate); the ops with "
                                "rules are listed in docs/training.md";
    Location loc = op->getLoc();
    SmallVector<Value> resultCots;
    for (Value r : op->getResults()) {
      Value cot = cotangents.lookup(r);
      if (!cot && isDifferentiable(r))
        cot = zerosLike(b, loc, r);
      resultCots.push_back(cot);
    }
    SmallVector<Value> operandCots(op->getNumOperands(), Value());
    SmallVector<std::pair<Value, Value>> captured;
    auto *outerSink = capturedSink;
    capturedSink = &captured;
    LogicalResult built = rule->build(b, op, resultCots, operandCots);
    capturedSink = outerSink;
    if (failed(built))
      return failure();
    for (auto [primal, cot] : captured)
      cotangents[primal] = addValues(b, loc, cotangents.lookup(primal), cot);
    for (auto [operand, cot] : llvm::zip(op->getOperands(), operandCots)) {
      if (!cot || !isDifferentiable(operand))
        continue;
      assert(cot.getType() == operand.getType() &&
             "a cotangent has the type of its primal value");
      cotangents[operand] = addValues(b, loc, cotangents.lookup(operand), cot);
    }
  }
  return success();
}
