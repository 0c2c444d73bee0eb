//===- LowerParallelLaunch.cpp - Launcher calls into runtime tasks --------===//
//
// Second half of CPU multithreading (first half: torsor-outline-parallel-
// loops). In the LLVM dialect, each `__torsor_launch_<body>(trips, args...)`
// call becomes:
//   - a context struct of `args...` on the caller's stack (allocated once in
//     the entry block, so a launch inside a loop does not grow the stack),
//   - a call `__torsor_parallel_dispatch(0, trips, @<body>_task, ctx)`,
// where `<body>_task(lo, hi, ctx)` unpacks the struct and calls `<body>`.
// The dispatcher calls the runtime's `torsor_parallel_for`, declared
// extern_weak: when the model is loaded without the runtime (e.g. by a test
// through ctypes) the symbol is null and the task runs inline, serially.
// Tasks are `noinline`, so that serial call does not copy the body, and
// the context holds only the arguments the body reads. The dispatcher is
// `noinline` too, so each launch is one call in the caller's code.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORLOWERPARALLELLAUNCH
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

constexpr llvm::StringLiteral kDispatchName = "__torsor_parallel_dispatch";
constexpr llvm::StringLiteral kRuntimeParallelFor = "torsor_parallel_for";

/// `void __torsor_parallel_dispatch(i64 begin, i64 end, ptr task, ptr ctx)`.
LLVM::LLVMFuncOp getOrCreateDispatch(ModuleOp module, OpBuilder &builder) {
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(kDispatchName))
    return existing;
  MLIRContext *context = module.getContext();
  Location loc = module.getLoc();
  auto i64 = IntegerType::get(context, 64);
  auto ptr = LLVM::LLVMPointerType::get(context);
  auto voidType = LLVM::LLVMVoidType::get(context);
  auto taskType = LLVM::LLVMFunctionType::get(voidType, {i64, i64, ptr});

  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto runtime = module.lookupSymbol<LLVM::LLVMFuncOp>(kRuntimeParallelFor);
  if (!runtime) {
    runtime = LLVM::LLVMFuncOp::create(
        builder, loc, kRuntimeParallelFor,
        LLVM::LLVMFunctionType::get(voidType, {i64, i64, ptr, ptr}),
        LLVM::Linkage::ExternWeak);
  }
  auto dispatch = LLVM::LLVMFuncOp::create(
      builder, loc, kDispatchName,
      LLVM::LLVMFunctionType::get(voidType, {i64, i64, ptr, ptr}),
      LLVM::Linkage::Internal);
  // Never inlined either: inlined, each of a backward's hundreds of
  // launches put a null test, two calls and three blocks into the serial
  // code, which then cost a third of its code generation. One more direct
  // call per launch is nothing beside the launch itself.
  dispatch.setNoInline(true);
  Block *entry = dispatch.addEntryBlock(builder);
  Block *serial = dispatch.addBlock();
  Block *parallel = dispatch.addBlock();
  builder.setInsertionPointToStart(entry);
  Value address = LLVM::AddressOfOp::create(builder, loc, runtime);
  Value null = LLVM::ZeroOp::create(builder, loc, ptr);
  Value missing = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq,
                                       address, null);
  LLVM::CondBrOp::create(builder, loc, missing, serial, parallel);
  auto args = entry->getArguments();
  builder.setInsertionPointToStart(serial);
  LLVM::CallOp::create(builder, loc, taskType,
                       ValueRange{args[2], args[0], args[1], args[3]});
  LLVM::ReturnOp::create(builder, loc, ValueRange{});
  builder.setInsertionPointToStart(parallel);
  LLVM::CallOp::create(builder, loc, runtime, args);
  LLVM::ReturnOp::create(builder, loc, ValueRange{});
  return dispatch;
}

/// Whether the body reads its argument `i`. Arguments it never reads (the
/// sizes and strides of a static memref's descriptor, which the lowered
/// body takes from the type) are not packed into the context: the caller
/// would store them on every launch and LLVM would compile those stores.
bool isRead(LLVM::LLVMFuncOp body, unsigned i) {
  return !body.getArgument(i).use_empty();
}

/// `void <body>_task(i64 lo, i64 hi, ptr ctx)`: unpack and call the body.
/// `context` holds the captured arguments the body reads, in order; the
/// others are passed as poison.
LLVM::LLVMFuncOp createTask(ModuleOp module, OpBuilder &builder,
                            LLVM::LLVMFuncOp body,
                            LLVM::LLVMStructType context) {
  std::string name = (body.getName() + "_task").str();
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  Location loc = body.getLoc();
  auto i64 = IntegerType::get(ctx, 64);
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfter(body);
  auto task = LLVM::LLVMFuncOp::create(
      builder, loc, name,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                  {i64, i64, ptr}),
      LLVM::Linkage::Internal);
  // Never inlined: the dispatcher's serial fallback calls the task
  // directly, and once LLVM inlines the dispatcher into the model, an
  // inlinable task would put a second copy of every parallel body into
  // the serial code, doubling what LLVM optimizes and compiles. The
  // runtime calls the task through a pointer either way.
  task.setNoInline(true);
  Block *entry = task.addEntryBlock(builder);
  builder.setInsertionPointToStart(entry);
  SmallVector<Value> operands = {entry->getArgument(0), entry->getArgument(1)};
  int32_t field = 0;
  for (unsigned i = 2, e = body.getNumArguments(); i < e; ++i) {
    Type type = body.getArgument(i).getType();
    if (!isRead(body, i)) {
      operands.push_back(LLVM::PoisonOp::create(builder, loc, type));
      continue;
    }
    Value address =
        LLVM::GEPOp::create(builder, loc, ptr, context, entry->getArgument(2),
                            ArrayRef<LLVM::GEPArg>{0, field++});
    operands.push_back(LLVM::LoadOp::create(builder, loc, type, address));
  }
  LLVM::CallOp::create(builder, loc, body, operands);
  LLVM::ReturnOp::create(builder, loc, ValueRange{});
  return task;
}

struct TorsorLowerParallelLaunch
    : torsor::impl::TorsorLowerParallelLaunchBase<TorsorLowerParallelLaunch> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    OpBuilder builder(context);
    auto i64 = IntegerType::get(context, 64);
    auto ptr = LLVM::LLVMPointerType::get(context);

    SmallVector<LLVM::CallOp> launches;
    module.walk([&](LLVM::CallOp call) {
      auto callee = call.getCallee();
      if (callee && callee->starts_with(kParallelLauncherPrefix))
        launches.push_back(call);
    });
    for (LLVM::CallOp call : launches) {
      StringRef bodyName =
          call.getCallee()->drop_front(kParallelLauncherPrefix.size());
      auto body = module.lookupSymbol<LLVM::LLVMFuncOp>(bodyName);
      if (!body || body.getNumArguments() != call.getNumOperands() + 1) {
        call.emitOpError() << "launches '" << bodyName
                           << "', which is missing or has the wrong arity";
        return signalPassFailure();
      }
      Location loc = call.getLoc();
      // Launcher operand k + 1 is the body's argument k + 2.
      SmallVector<Value> fields;
      for (auto [k, arg] : llvm::enumerate(call.getArgOperands().drop_front()))
        if (isRead(body, k + 2))
          fields.push_back(arg);
      SmallVector<Type> fieldTypes;
      for (Value arg : fields)
        fieldTypes.push_back(arg.getType());
      auto contextType = LLVM::LLVMStructType::getLiteral(context, fieldTypes);
      LLVM::LLVMFuncOp dispatch = getOrCreateDispatch(module, builder);
      LLVM::LLVMFuncOp task = createTask(module, builder, body, contextType);
      // Only the task reaches the body now; keep it out of the exports.
      body.setLinkage(LLVM::Linkage::Internal);

      // The context lives in the caller's frame, allocated once.
      auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
      builder.setInsertionPointToStart(&caller.getBody().front());
      Value one = LLVM::ConstantOp::create(builder, loc, i64,
                                           builder.getI64IntegerAttr(1));
      Value storage =
          LLVM::AllocaOp::create(builder, loc, ptr, contextType, one);

      builder.setInsertionPoint(call);
      for (auto [i, arg] : llvm::enumerate(fields)) {
        Value field = LLVM::GEPOp::create(
            builder, loc, ptr, contextType, storage,
            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
        LLVM::StoreOp::create(builder, loc, arg, field);
      }
      Value zero = LLVM::ConstantOp::create(builder, loc, i64,
                                            builder.getI64IntegerAttr(0));
      Value taskAddress = LLVM::AddressOfOp::create(builder, loc, task);
      LLVM::CallOp::create(builder, loc, dispatch,
                           ValueRange{zero, call.getArgOperands().front(),
                                      taskAddress, storage});
      call.erase();
    }
    // The launcher declarations have no callers left.
    for (auto function :
         llvm::make_early_inc_range(module.getOps<LLVM::LLVMFuncOp>()))
      if (function.getName().starts_with(kParallelLauncherPrefix) &&
          function.isExternal())
        function.erase();
  }
};
} // namespace
