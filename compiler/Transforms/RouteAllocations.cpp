//===- RouteAllocations.cpp - Heap allocations through the runtime --------===//
//
// The lowered model allocates its intermediate buffers with `malloc` and
// releases them with `free` (finalize-memref-to-llvm). A failed malloc then
// returns null and the model writes through it: SIGSEGV, with nothing to
// say how much memory was needed or what for. This pass rewrites every
//   llvm.call @malloc(%bytes)  ->  llvm.call @__torsor_alloc(%bytes, @site)
//   llvm.call @free(%p)        ->  llvm.call @__torsor_free(%p)
// where @site is a constant string naming the source location of the
// allocation (the .tsr line the buffer belongs to). The two helpers call the
// runtime's `torsor_alloc`/`torsor_free`, declared extern_weak: inside a run
// torsor_alloc tracks the buffer, and on failure unwinds to the runtime,
// which returns TORSOR_OUT_OF_MEMORY with the size and the site. Loaded
// without the runtime (ctypes numerics tests), the symbols are null and the
// helpers fall back to malloc/free. The helpers are `noinline`: each
// allocation stays one call in the code that makes it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/RouteAllocations.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORROUTEALLOCATIONS
#include "compiler/Transforms/RouteAllocations.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

constexpr llvm::StringLiteral kAllocHelper = "__torsor_alloc";
constexpr llvm::StringLiteral kFreeHelper = "__torsor_free";

/// "model.tsr:12:5" for the first file location inside `loc`, else "".
std::string siteOf(Location loc) {
  std::string site;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      site = (file.getFilename().getValue() + ":" + Twine(file.getLine()) +
              ":" + Twine(file.getColumn()))
                 .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return site;
}

/// Returns the declaration of `name` with `type`, creating it with
/// `linkage` if the module has none.
LLVM::LLVMFuncOp declare(ModuleOp module, OpBuilder &builder, StringRef name,
                         LLVM::LLVMFunctionType type, LLVM::Linkage linkage) {
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  return LLVM::LLVMFuncOp::create(builder, module.getLoc(), name, type,
                                  linkage);
}

/// Builds `helper(args)`: calls `runtime(args)` when the weak symbol is
/// present, `fallback(fallbackArgs)` otherwise, and returns the result.
LLVM::LLVMFuncOp buildHelper(ModuleOp module, OpBuilder &builder,
                             StringRef name, LLVM::LLVMFunctionType type,
                             LLVM::LLVMFuncOp runtime,
                             LLVM::LLVMFuncOp fallback,
                             unsigned numFallbackArgs) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  auto helper = LLVM::LLVMFuncOp::create(builder, loc, name, type,
                                         LLVM::Linkage::Internal);
  // Not inlined: a backward allocates hundreds of buffers in its serial
  // code, and each inlined copy of the null test and its two calls grew
  // what LLVM compiles there; a direct call beside malloc costs nothing.
  helper.setNoInline(true);
  Block *entry = helper.addEntryBlock(builder);
  Block *withRuntime = helper.addBlock();
  Block *without = helper.addBlock();
  builder.setInsertionPointToStart(entry);
  auto ptr = LLVM::LLVMPointerType::get(module.getContext());
  Value address = LLVM::AddressOfOp::create(builder, loc, runtime);
  Value null = LLVM::ZeroOp::create(builder, loc, ptr);
  Value present = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::ne,
                                       address, null);
  LLVM::CondBrOp::create(builder, loc, present, withRuntime, without);
  auto args = entry->getArguments();
  auto emitCall = [&](Block *block, LLVM::LLVMFuncOp callee,
                      ValueRange callArgs) {
    builder.setInsertionPointToStart(block);
    auto call = LLVM::CallOp::create(builder, loc, callee, callArgs);
    LLVM::ReturnOp::create(builder, loc, call.getResults());
  };
  emitCall(withRuntime, runtime, args);
  emitCall(without, fallback, args.take_front(numFallbackArgs));
  return helper;
}

struct TorsorRouteAllocations
    : torsor::impl::TorsorRouteAllocationsBase<TorsorRouteAllocations> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<LLVM::CallOp> allocs, frees;
    module.walk([&](LLVM::CallOp call) {
      std::optional<StringRef> callee = call.getCallee();
      if (callee == StringRef("malloc") && call.getNumOperands() == 1)
        allocs.push_back(call);
      else if (callee == StringRef("free") && call.getNumOperands() == 1)
        frees.push_back(call);
    });
    if (allocs.empty() && frees.empty())
      return;
    for (StringRef reserved : {kAllocHelper, kFreeHelper})
      if (module.lookupSymbol(reserved)) {
        module.emitError() << "the symbol '" << reserved
                           << "' is reserved for the allocation helpers";
        return signalPassFailure();
      }

    MLIRContext *context = &getContext();
    OpBuilder builder(context);
    auto i64 = IntegerType::get(context, 64);
    auto ptr = LLVM::LLVMPointerType::get(context);
    auto voidType = LLVM::LLVMVoidType::get(context);
    auto allocType = LLVM::LLVMFunctionType::get(ptr, {i64, ptr});
    auto freeType = LLVM::LLVMFunctionType::get(voidType, {ptr});
    auto malloc = declare(module, builder, "malloc",
                          LLVM::LLVMFunctionType::get(ptr, {i64}),
                          LLVM::Linkage::External);
    auto free =
        declare(module, builder, "free", freeType, LLVM::Linkage::External);
    auto runtimeAlloc = declare(module, builder, "torsor_alloc", allocType,
                                LLVM::Linkage::ExternWeak);
    auto runtimeFree = declare(module, builder, "torsor_free", freeType,
                               LLVM::Linkage::ExternWeak);
    auto allocHelper = buildHelper(module, builder, kAllocHelper, allocType,
                                   runtimeAlloc, malloc, 1);
    auto freeHelper = buildHelper(module, builder, kFreeHelper, freeType,
                                  runtimeFree, free, 1);

    // One NUL-terminated constant per allocation site.
    llvm::StringMap<LLVM::GlobalOp> sites;
    auto siteGlobal = [&](const std::string &text) {
      auto [it, inserted] = sites.try_emplace(text);
      if (!inserted)
        return it->second;
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(module.getBody());
      std::string bytes = text;
      bytes.push_back('\0');
      auto type =
          LLVM::LLVMArrayType::get(IntegerType::get(context, 8), bytes.size());
      it->second = LLVM::GlobalOp::create(
          builder, module.getLoc(), type, /*isConstant=*/true,
          LLVM::Linkage::Private,
          ("__torsor_alloc_site_" + Twine(sites.size() - 1)).str(),
          builder.getStringAttr(bytes));
      return it->second;
    };

    for (LLVM::CallOp call : allocs) {
      std::string site = siteOf(call.getLoc());
      std::string what = site.empty()
                             ? "an intermediate buffer"
                             : "an intermediate buffer of the op at " + site;
      builder.setInsertionPoint(call);
      Value text =
          LLVM::AddressOfOp::create(builder, call.getLoc(), siteGlobal(what));
      auto routed = LLVM::CallOp::create(builder, call.getLoc(), allocHelper,
                                         ValueRange{call.getOperand(0), text});
      call.replaceAllUsesWith(routed.getResults());
      call.erase();
    }
    for (LLVM::CallOp call : frees) {
      builder.setInsertionPoint(call);
      LLVM::CallOp::create(builder, call.getLoc(), freeHelper,
                           call.getOperands());
      call.erase();
    }
  }
};

} // namespace
