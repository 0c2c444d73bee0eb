//===- WrapModel.cpp - Destination-passing wrapper for the model ----------===//
//
// The runtime owns every buffer: it allocates outputs from the manifest's
// shapes and passes inputs, params and outputs as memref descriptors. This
// pass gives the model that shape at the tensor level, before bufferization,
// so one-shot bufferization writes results straight into the runtime's
// output buffers instead of allocating and copying.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORWRAPMODEL
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

FailureOr<func::FuncOp> torsor::findModelFunction(ModuleOp module) {
  func::FuncOp model;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal() || func.getNumArguments() == 0 ||
        !func.getArgAttr(0, "torsor.name") || func->hasAttr(kBackwardAttrName))
      continue;
    if (model) {
      func.emitError() << "more than one model function: '" << model.getName()
                       << "' and '" << func.getName()
                       << "'; a library holds one: pick it with torsorc "
                          "--model NAME";
      return failure();
    }
    model = func;
  }
  return model;
}

/// The identity-layout memref a tensor argument becomes at the ABI.
static MemRefType toBufferType(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// Adds `wrapperName`: `model` in destination-passing style on memrefs
/// (inputs and params, then outputs), with the C interface.
static LogicalResult wrap(ModuleOp module, func::FuncOp model,
                          StringRef wrapperName) {
  FunctionType type = model.getFunctionType();
  SmallVector<Type> bufferTypes;
  for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults())) {
    if (!isa<RankedTensorType>(t)) {
      model.emitError() << "model arguments and results must be ranked "
                           "tensors at the runtime ABI, got "
                        << t;
      return failure();
    }
    bufferTypes.push_back(toBufferType(t));
  }

  OpBuilder builder(module.getBodyRegion());
  builder.setInsertionPointToEnd(module.getBody());
  Location loc = model.getLoc();
  auto wrapper = func::FuncOp::create(builder, loc, wrapperName,
                                      builder.getFunctionType(bufferTypes, {}));
  wrapper->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  // Where the params are (torsor-hoist-packed-params packs them once).
  int64_t firstParam = 0, endParam = 0;
  for (unsigned i = 0, e = type.getNumInputs(); i < e; ++i) {
    auto kind = model.getArgAttrOfType<StringAttr>(i, "torsor.kind");
    if (!kind || kind.getValue() != "param")
      continue;
    if (endParam == 0)
      firstParam = i;
    endParam = i + 1;
  }
  wrapper->setAttr(kParamArgsAttrName,
                   builder.getDenseI64ArrayAttr({firstParam, endParam}));
  Block *body = wrapper.addEntryBlock();
  builder.setInsertionPointToStart(body);

  unsigned numInputs = type.getNumInputs();
  SmallVector<Value> tensors;
  for (unsigned i = 0; i < numInputs; ++i) {
    // restrict: the runtime never aliases two tensors it passes.
    tensors.push_back(bufferization::ToTensorOp::create(
        builder, loc, type.getInput(i), body->getArgument(i),
        /*restrict=*/true, /*writable=*/false));
  }
  auto call = func::CallOp::create(builder, loc, model, tensors);
  for (auto [i, result] : llvm::enumerate(call.getResults())) {
    auto op = bufferization::MaterializeInDestinationOp::create(
        builder, loc, result, body->getArgument(numInputs + i));
    op.setRestrict(true);
    op.setWritable(true);
  }
  func::ReturnOp::create(builder, loc);
  return success();
}

namespace {
struct TorsorWrapModel : torsor::impl::TorsorWrapModelBase<TorsorWrapModel> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> found = findModelFunction(module);
    if (failed(found))
      return signalPassFailure();
    func::FuncOp model = *found;
    if (!model)
      return;
    if (module.lookupSymbol(kModelWrapperName)) {
      model.emitError() << "the symbol '" << kModelWrapperName
                        << "' is reserved for the model wrapper";
      return signalPassFailure();
    }
    // Built first, while the model still takes tensors and is public.
    if (failed(buildGroupResidualWrapper(module, model)))
      return signalPassFailure();
    if (failed(wrap(module, model, kModelWrapperName)))
      return signalPassFailure();
    // The backward function of torsor-differentiate, when there is one.
    if (auto backward =
            module.lookupSymbol<func::FuncOp>(kBackwardFunctionName)) {
      if (module.lookupSymbol(kBackwardWrapperName)) {
        backward.emitError() << "the symbol '" << kBackwardWrapperName
                             << "' is reserved for the backward wrapper";
        return signalPassFailure();
      }
      if (failed(wrap(module, backward, kBackwardWrapperName)))
        return signalPassFailure();
      backward.setPrivate();
    }
    // Private, so the inliner folds it into the wrapper and it is dropped.
    model.setPrivate();
  }
};
} // namespace
