//===- EmitEntry.cpp - The runtime's entry points -------------------------===//
//
// The runtime calls every model the same way, whatever its arity:
// `torsor_forward(void **descriptors)` with one memref descriptor pointer
// per tensor. This pass builds that trampoline (and `torsor_abi_version`)
// in the LLVM dialect around `_mlir_ciface_torsor_model`, the C interface
// the func-to-LLVM lowering generated for the wrapper of torsor-wrap-model.
// emitManifestFunction adds the third export, `torsor_model_manifest`, once
// the driver has the manifest text. The C interfaces and wrappers become
// internal and always-inline: each trampoline is then one function.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/EmitEntry.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace torsor {
#define GEN_PASS_DEF_TORSOREMITENTRY
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {
struct TorsorEmitEntry : torsor::impl::TorsorEmitEntryBase<TorsorEmitEntry> {
  using TorsorEmitEntryBase::TorsorEmitEntryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string cifaceName = ("_mlir_ciface_" + kModelWrapperName).str();
    auto ciface = module.lookupSymbol<LLVM::LLVMFuncOp>(cifaceName);
    if (!ciface)
      return; // Not a model (plain MLIR input): nothing to export.
    for (StringRef reserved :
         {"torsor_forward", "torsor_abi_version", "torsor_group_residual",
          "torsor_backward", "torsor_model_manifest", "torsor_prepare"})
      if (module.lookupSymbol(reserved)) {
        module.emitError() << "the symbol '" << reserved
                           << "' is reserved for the runtime entry points";
        return signalPassFailure();
      }

    MLIRContext *context = &getContext();
    Location loc = ciface.getLoc();
    OpBuilder builder(module.getBodyRegion());
    builder.setInsertionPointToEnd(module.getBody());
    auto ptrType = LLVM::LLVMPointerType::get(context);
    auto voidType = LLVM::LLVMVoidType::get(context);
    auto i32Type = IntegerType::get(context, 32);

    // void NAME(void **descriptors), calling `target` with the pointers.
    auto emitTrampoline = [&](LLVM::LLVMFuncOp target, StringRef name) {
      builder.setInsertionPointToEnd(module.getBody());
      auto trampoline = LLVM::LLVMFuncOp::create(
          builder, target.getLoc(), name,
          LLVM::LLVMFunctionType::get(voidType, {ptrType}));
      Block *body = trampoline.addEntryBlock(builder);
      builder.setInsertionPointToStart(body);
      SmallVector<Value> descriptors;
      for (unsigned i = 0, e = target.getNumArguments(); i < e; ++i) {
        Value slot = LLVM::GEPOp::create(builder, loc, ptrType, ptrType,
                                         body->getArgument(0),
                                         ArrayRef<LLVM::GEPArg>{int32_t(i)});
        descriptors.push_back(
            LLVM::LoadOp::create(builder, loc, ptrType, slot));
      }
      LLVM::CallOp::create(builder, loc, target, descriptors);
      LLVM::ReturnOp::create(builder, loc, ValueRange{});
    };
    emitTrampoline(ciface, "torsor_forward");
    // The group check of declared-group inputs (GroupResidual.cpp), if any.
    std::string residualCiface = ("_mlir_ciface_" + kResidualWrapperName).str();
    if (auto residual = module.lookupSymbol<LLVM::LLVMFuncOp>(residualCiface))
      emitTrampoline(residual, kResidualEntryName);
    // The backward entry of torsor --grad (compiler/Autodiff), if any.
    std::string backwardCiface = ("_mlir_ciface_" + kBackwardWrapperName).str();
    if (auto backward = module.lookupSymbol<LLVM::LLVMFuncOp>(backwardCiface))
      emitTrampoline(backward, kBackwardEntryName);
    // The params' prepare function of --compute=bf16
    // (HoistPackedParams.cpp), if any.
    std::string prepareCiface = ("_mlir_ciface_" + kPrepareWrapperName).str();
    if (auto prepare = module.lookupSymbol<LLVM::LLVMFuncOp>(prepareCiface))
      emitTrampoline(prepare, kPrepareEntryName);

    // The runtime reaches the wrappers only through the trampolines, so
    // they are folded into them: the C interface calls its wrapper with one
    // argument per descriptor field (a thousand for a deep model's
    // backward), and LLVM's instruction selection is slow on such calls,
    // and on functions taking that many arguments.
    for (StringRef wrapper : {kModelWrapperName, kResidualWrapperName,
                              kBackwardWrapperName, kPrepareWrapperName})
      for (const std::string &name :
           {("_mlir_ciface_" + wrapper).str(), wrapper.str()})
        if (auto function = module.lookupSymbol<LLVM::LLVMFuncOp>(name)) {
          function.setLinkage(LLVM::Linkage::Internal);
          function.setAlwaysInline(true);
        }
    // int32_t torsor_abi_version(void)
    builder.setInsertionPointToEnd(module.getBody());
    auto version =
        LLVM::LLVMFuncOp::create(builder, loc, "torsor_abi_version",
                                 LLVM::LLVMFunctionType::get(i32Type, {}));
    Block *versionBody = version.addEntryBlock(builder);
    builder.setInsertionPointToStart(versionBody);
    Value constant = LLVM::ConstantOp::create(
        builder, loc, i32Type, builder.getI32IntegerAttr(abiVersion));
    LLVM::ReturnOp::create(builder, loc, constant);
  }
};
} // namespace

void torsor::emitManifestFunction(ModuleOp module, StringRef manifest) {
  MLIRContext *context = module.getContext();
  Location loc = module.getLoc();
  OpBuilder builder(module.getBodyRegion());
  builder.setInsertionPointToEnd(module.getBody());
  // The text with its NUL, as a private constant.
  std::string text = manifest.str();
  text.push_back('\0');
  auto arrayType =
      LLVM::LLVMArrayType::get(IntegerType::get(context, 8), text.size());
  auto global = LLVM::GlobalOp::create(
      builder, loc, arrayType, /*isConstant=*/true, LLVM::Linkage::Private,
      "__torsor_manifest_text", builder.getStringAttr(text));
  // const char *torsor_model_manifest(void) { return text; }
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto func =
      LLVM::LLVMFuncOp::create(builder, loc, kManifestEntryName,
                               LLVM::LLVMFunctionType::get(ptrType, {}));
  Block *body = func.addEntryBlock(builder);
  builder.setInsertionPointToStart(body);
  Value address = LLVM::AddressOfOp::create(builder, loc, global);
  LLVM::ReturnOp::create(builder, loc, address);
}
