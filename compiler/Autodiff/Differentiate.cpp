//===- Differentiate.cpp - Build the model's backward function ------------===//
//
// torsor-differentiate: clones the model function into
// @torsor_model_backward (inputs, params, then one cotangent per output),
// recomputes the forward pass there and runs the reverse sweep of VJP.h
// over it. Recompute, not store: the forward and backward entry points
// share no state, so the runtime can call backward alone, and peak memory
// is one forward pass's activations plus their cotangents.
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/Passes.h"
#include "compiler/Autodiff/VJP.h"
#include "compiler/Conversion/GeoToLinalg/GeoToLinalg.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Geo/IR/GeoOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORDIFFERENTIATE
#include "compiler/Autodiff/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;
using namespace torsor::autodiff;

/// Lowers the geo ops that have no rule with their unfused (-O0) linalg
/// lowering, so the core rules differentiate them. Ops with a rule are
/// kept: a rule knows the math (stable series, tiled backward), unless
/// listed in `unfused` (the pass option: the oracle of a rule's tests).
static LogicalResult decomposeOpsWithoutRules(func::FuncOp func,
                                              const VJPRegistry &registry,
                                              ArrayRef<std::string> unfused) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    // Lie attention lowers to loops over lie ops: its gradient needs its
    // own rule (the group models'), not this fallback.
    if (isa<geo::LieAttentionOp, geo::FlashLieAttentionOp>(op))
      return;
    if (op->getDialect() && op->getDialect()->getNamespace() == "geo" &&
        (!registry.lookup(op) ||
         llvm::is_contained(unfused, op->getName().getStringRef())))
      ops.push_back(op);
  });
  if (ops.empty())
    return success();
  RewritePatternSet patterns(func.getContext());
  populateGeoToLinalgConversionPatterns(patterns);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingOps);
  return applyOpPatternsGreedily(ops, std::move(patterns), config);
}

/// A copy of `attrs` with torsor.name replaced by `name`.
static DictionaryAttr renamed(MLIRContext *ctx, DictionaryAttr attrs,
                              StringRef name, StringRef kind) {
  NamedAttrList list(attrs);
  list.set("torsor.name", StringAttr::get(ctx, name));
  if (!kind.empty())
    list.set("torsor.kind", StringAttr::get(ctx, kind));
  else
    list.erase("torsor.kind");
  list.erase("torsor.left_invariant");
  return list.getDictionary(ctx);
}

namespace {
struct TorsorDifferentiate
    : torsor::impl::TorsorDifferentiateBase<TorsorDifferentiate> {
  using TorsorDifferentiateBase::TorsorDifferentiateBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> found = findModelFunction(module);
    if (failed(found))
      return signalPassFailure();
    func::FuncOp model = *found;
    if (!model || model.isExternal())
      return;
    if (module.lookupSymbol(kBackwardFunctionName)) {
      model.emitError() << "the symbol '" << kBackwardFunctionName
                        << "' is reserved for the backward function";
      return signalPassFailure();
    }
    if (failed(buildBackward(module, model)))
      return signalPassFailure();
  }

  LogicalResult buildBackward(ModuleOp module, func::FuncOp model) {
    MLIRContext *ctx = module.getContext();
    const VJPRegistry &registry = getVJPRegistry();
    FunctionType type = model.getFunctionType();
    OpBuilder b(ctx);
    b.setInsertionPointAfter(model);
    Location loc = model.getLoc();

    SmallVector<Type> argTypes(type.getInputs());
    argTypes.append(type.getResults().begin(), type.getResults().end());
    auto backward = func::FuncOp::create(b, loc, kBackwardFunctionName,
                                         b.getFunctionType(argTypes, {}));
    backward->setAttr(kBackwardAttrName, b.getUnitAttr());
    Block *entry = backward.addEntryBlock();
    unsigned numArgs = type.getNumInputs();
    for (unsigned i = 0; i < numArgs; ++i)
      if (DictionaryAttr attrs = model.getArgAttrDict(i))
        backward.setArgAttrs(i, attrs);
    for (unsigned k = 0; k < type.getNumResults(); ++k) {
      DictionaryAttr attrs = model.getResultAttrDict(k);
      auto name = attrs ? attrs.getAs<StringAttr>("torsor.name") : nullptr;
      if (!name)
        return model.emitError() << "result #" << k << " has no torsor.name";
      backward.setArgAttrs(
          numArgs + k,
          renamed(ctx, attrs, ("cot." + name.getValue()).str(), "cotangent"));
    }

    // Forward recompute.
    IRMapping mapping;
    for (unsigned i = 0; i < numArgs; ++i)
      mapping.map(model.getArgument(i), entry->getArgument(i));
    b.setInsertionPointToStart(entry);
    Block &forward = model.getBody().front();
    for (Operation &op : forward.without_terminator())
      b.clone(op, mapping);
    SmallVector<Value> outputs;
    for (Value v : forward.getTerminator()->getOperands())
      outputs.push_back(mapping.lookupOrDefault(v));
    // Output values may be replaced by the decomposition: keep them alive
    // through a placeholder terminator while it runs.
    auto placeholder = func::ReturnOp::create(b, loc, outputs);
    if (failed(decomposeOpsWithoutRules(backward, registry, unfused)))
      return backward.emitError("could not decompose a geo op for its "
                                "gradient");
    outputs.assign(placeholder.getOperands().begin(),
                   placeholder.getOperands().end());
    SmallVector<Operation *> forwardOps;
    for (Operation &op : entry->without_terminator())
      forwardOps.push_back(&op);
    placeholder.erase();

    // Reverse sweep, seeded with the output cotangents.
    b.setInsertionPointToEnd(entry);
    DenseMap<Value, Value> cotangents;
    for (auto [k, v] : llvm::enumerate(outputs))
      if (isDifferentiable(v))
        cotangents[v] = addValues(b, loc, cotangents.lookup(v),
                                  entry->getArgument(numArgs + k));
    if (failed(backpropagate(b, forwardOps, cotangents, registry)))
      return failure();

    // One gradient per float input and param, in argument order.
    SmallVector<Value> grads;
    SmallVector<DictionaryAttr> gradAttrs;
    for (unsigned i = 0; i < numArgs; ++i) {
      Value arg = entry->getArgument(i);
      if (!isDifferentiable(arg))
        continue;
      DictionaryAttr attrs = model.getArgAttrDict(i);
      auto name = attrs ? attrs.getAs<StringAttr>("torsor.name") : nullptr;
      if (!name)
        return model.emitError() << "argument #" << i << " has no torsor.name";
      Value grad = cotangents.lookup(arg);
      if (!grad)
        grad = zerosLike(b, loc, arg);
      NamedAttrList list(
          renamed(ctx, attrs, ("grad." + name.getValue()).str(), ""));
      list.set("torsor.grad_of", name);
      if (Attribute group = attrs.get("torsor.group")) {
        if (!registry.groupInputGradient)
          return emitError(arg.getLoc())
                 << "no gradient for group input '" << name.getValue()
                 << "': the left-trivialised group gradients are not "
                    "registered (registerLieGeoVJPRules)";
        FailureOr<Value> projected =
            registry.groupInputGradient(b, loc, arg, grad, group);
        if (failed(projected))
          return failure();
        grad = *projected;
        list.erase("torsor.group");
        // The algebra dim replaces the n×n matrix dims.
        if (auto dims = attrs.getAs<ArrayAttr>("torsor.dims")) {
          SmallVector<Attribute> newDims(dims.getValue().drop_back(2));
          newDims.push_back(b.getI64IntegerAttr(
              cast<RankedTensorType>(grad.getType()).getShape().back()));
          list.set("torsor.dims", b.getArrayAttr(newDims));
        }
      }
      grads.push_back(grad);
      gradAttrs.push_back(list.getDictionary(ctx));
    }
    func::ReturnOp::create(b, loc, grads);
    SmallVector<Type> resultTypes;
    for (Value g : grads)
      resultTypes.push_back(g.getType());
    backward.setType(b.getFunctionType(argTypes, resultTypes));
    for (auto [k, attrs] : llvm::enumerate(gradAttrs))
      backward.setResultAttrs(k, attrs);
    return success();
  }
};
} // namespace
