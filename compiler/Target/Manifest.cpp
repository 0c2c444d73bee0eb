//===- Manifest.cpp - The compiled model's manifest -----------------------===//
//
// Reads the `torsor.*` argument and result attributes of the model function
// and writes the manifest JSON the runtime validates against. Nothing is
// assumed: a group input is `left_invariant` only if MLIRGen recorded the
// frontend's proof of it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/Manifest.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/Lie/IR/LieAttrs.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace torsor;

/// "f32", "f64" or "i64" for a tensor's element type.
static FailureOr<std::string> dtypeName(Type type) {
  if (type.isF32())
    return std::string("f32");
  if (type.isF64())
    return std::string("f64");
  if (type.isInteger(64))
    return std::string("i64");
  return failure();
}

llvm::StringMap<std::string>
torsor::collectGroupSpecializations(ModuleOp module) {
  llvm::StringMap<std::string> result;
  // Groups sit on ops directly or inside other attributes (#geo.scores).
  module.walk([&](Operation *op) {
    op->getAttrDictionary().walk([&](lie::GroupAttr group) {
      if (group.isDeclared() && !group.getSpecialization().empty())
        result[group.getName().getValue()] = group.getSpecialization().str();
    });
  });
  return result;
}

/// One tensor entry; `dims` collects symbolic dim names in first-use order.
/// `loc` is the tensor's own declaration, where dtype errors point.
static FailureOr<llvm::json::Object>
describeTensor(func::FuncOp model, Type type, DictionaryAttr attrs,
               StringRef what, unsigned index, std::vector<std::string> &dims,
               const llvm::StringMap<std::string> &specializations,
               Location loc) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  auto name = attrs ? attrs.getAs<StringAttr>("torsor.name") : StringAttr();
  if (!tensor || !name) {
    model.emitError() << what << " #" << index
                      << " needs a ranked tensor type and a torsor.name";
    return failure();
  }
  FailureOr<std::string> dtype = dtypeName(tensor.getElementType());
  if (failed(dtype)) {
    mlir::emitError(loc)
        << what << " '" << name.getValue()
        << "' has an element type the runtime cannot pass: "
        << tensor.getElementType()
        << "; use f32, f64 or i64 (bf16/f16 files are converted to f32 "
           "when loaded)";
    return failure();
  }
  llvm::json::Array shape;
  auto symbolic = attrs.getAs<ArrayAttr>("torsor.dims");
  for (int64_t d = 0; d < tensor.getRank(); ++d) {
    Attribute dim =
        symbolic && d < int64_t(symbolic.size()) ? symbolic[d] : Attribute();
    if (auto sym = dyn_cast_or_null<StringAttr>(dim)) {
      shape.push_back(sym.getValue());
      if (llvm::find(dims, sym.getValue().str()) == dims.end())
        dims.push_back(sym.getValue().str());
    } else if (!tensor.isDynamicDim(d)) {
      shape.push_back(tensor.getDimSize(d));
    } else {
      model.emitError() << what << " '" << name.getValue() << "' dim " << d
                        << " is dynamic but has no symbolic name";
      return failure();
    }
  }
  llvm::json::Object entry{{"name", name.getValue()},
                           {"dtype", *dtype},
                           {"shape", std::move(shape)}};
  if (auto group = attrs.getAs<StringAttr>("torsor.group")) {
    entry["group"] = group.getValue();
    // A declared group the compiler recognised as a built-in: say so.
    auto special = specializations.find(group.getValue());
    if (special != specializations.end())
      entry["specialized_to"] = special->second;
    entry["group_n"] = tensor.getDimSize(tensor.getRank() - 1);
    Attribute proof = attrs.get("torsor.left_invariant");
    entry["left_invariant"] =
        isa_and_nonnull<UnitAttr>(proof) ||
        (isa_and_nonnull<BoolAttr>(proof) && cast<BoolAttr>(proof).getValue());
  }
  return entry;
}

/// Where result `i` is computed (the returned value), else the model.
static Location resultLoc(func::FuncOp model, unsigned i) {
  if (model.isExternal())
    return model.getLoc();
  Operation *term = model.getBody().back().getTerminator();
  if (!term || i >= term->getNumOperands())
    return model.getLoc();
  return term->getOperand(i).getLoc();
}

FailureOr<std::optional<std::string>> torsor::buildManifest(ModuleOp module,
                                                            StringRef target) {
  return buildManifest(module, target, kModelABIVersion, {});
}

FailureOr<std::optional<std::string>>
torsor::buildManifest(ModuleOp module, StringRef target, int abiVersion,
                      llvm::json::Object targetFields) {
  FailureOr<func::FuncOp> found = findModelFunction(module);
  if (failed(found))
    return failure();
  func::FuncOp model = *found;
  if (!model)
    return std::optional<std::string>();

  std::vector<std::string> dims;
  llvm::StringMap<std::string> specializations =
      collectGroupSpecializations(module);
  llvm::json::Array inputs, params, outputs;
  std::string modelDType;
  FunctionType type = model.getFunctionType();
  SmallVector<ResidualCheck> residualChecks = collectResidualChecks(model);
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    DictionaryAttr attrs = model.getArgAttrDict(i);
    Location argLoc =
        model.isExternal() ? model.getLoc() : model.getArgument(i).getLoc();
    auto entry = describeTensor(model, type.getInput(i), attrs, "argument", i,
                                dims, specializations, argLoc);
    if (failed(entry))
      return failure();
    // Declared-group inputs are checked through torsor_group_residual.
    for (const ResidualCheck &c : residualChecks)
      if (c.input == i) {
        (*entry)["residual"] = true;
        if (c.conditioned)
          (*entry)["residual_conditioned"] = true;
      }
    auto kind = attrs.getAs<StringAttr>("torsor.kind");
    bool isParam = kind && kind.getValue() == "param";
    // The compute dtype: that of the first float tensor (token ids are not).
    StringRef dtype = *entry->getString("dtype");
    if (modelDType.empty() && !entry->getObject("group") &&
        !dtype.starts_with("i"))
      modelDType = dtype.str();
    (isParam ? params : inputs).push_back(std::move(*entry));
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    auto entry =
        describeTensor(model, type.getResult(i), model.getResultAttrDict(i),
                       "result", i, dims, specializations, resultLoc(model, i));
    if (failed(entry))
      return failure();
    outputs.push_back(std::move(*entry));
  }
  // The ABI passes inputs, then params, then outputs: the model function's
  // arguments must already be in that order.
  bool seenParam = false;
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    auto kind = model.getArgAttrOfType<StringAttr>(i, "torsor.kind");
    bool isParam = kind && kind.getValue() == "param";
    if (!isParam && seenParam) {
      model.emitError() << "model inputs must come before params, but "
                           "argument #"
                        << i << " is an input after a param";
      return failure();
    }
    seenParam |= isParam;
  }

  llvm::json::Array dimArray;
  for (const std::string &d : dims)
    dimArray.push_back(d);
  llvm::json::Object manifest{
      {"model", model.getName()},
      {"target", target},
      {"dtype", modelDType.empty() ? "f32" : modelDType},
      {"abi", abiVersion},
      {"entry", "torsor_forward"},
      {"dims", std::move(dimArray)},
      {"inputs", std::move(inputs)},
      {"params", std::move(params)},
      {"outputs", std::move(outputs)},
  };
  if (!residualChecks.empty())
    manifest["group_residual"] = kResidualEntryName;
  // torsorc --grad: the backward entry's extra tensors (docs/runtime.md).
  if (auto backward =
          module.lookupSymbol<func::FuncOp>(kBackwardFunctionName)) {
    llvm::json::Array cotangents, gradients;
    FunctionType btype = backward.getFunctionType();
    for (unsigned i = type.getNumInputs(); i < btype.getNumInputs(); ++i) {
      auto entry = describeTensor(backward, btype.getInput(i),
                                  backward.getArgAttrDict(i), "cotangent", i,
                                  dims, specializations, backward.getLoc());
      if (failed(entry))
        return failure();
      cotangents.push_back(std::move(*entry));
    }
    for (unsigned i = 0; i < btype.getNumResults(); ++i) {
      DictionaryAttr attrs = backward.getResultAttrDict(i);
      auto entry =
          describeTensor(backward, btype.getResult(i), attrs, "gradient", i,
                         dims, specializations, backward.getLoc());
      if (failed(entry))
        return failure();
      if (auto of = attrs.getAs<StringAttr>("torsor.grad_of"))
        (*entry)["of"] = of.getValue();
      gradients.push_back(std::move(*entry));
    }
    manifest["backward"] =
        llvm::json::Object{{"entry", kBackwardEntryName},
                           {"cotangents", std::move(cotangents)},
                           {"gradients", std::move(gradients)}};
  }
  // What only this target says (e.g. "gpu_arch").
  for (auto &field : targetFields)
    manifest[field.first] = std::move(field.second);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)));
  os << "\n";
  return std::optional<std::string>(text);
}

void torsor::addPrepareToManifest(std::string &manifest, int64_t bytes) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(manifest);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return;
  }
  llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return;
  (*root)["prepare"] =
      llvm::json::Object{{"entry", kPrepareEntryName}, {"bytes", bytes}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", *parsed);
  os << "\n";
  manifest = std::move(text);
}
