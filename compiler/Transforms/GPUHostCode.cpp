//===- GPUHostCode.cpp - What NVPTX host code may do ----------------------===//
//
// The predicate behind torsor-map-serial-code-to-gpu and
// torsor-verify-gpu-host-code, from MLIR's memory-effect interfaces rather
// than a list of op names, so new ops are judged by what they declare.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/GPUHostCode.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

bool torsor::accessesBufferContents(Operation *op) {
  // The host's business: allocation, copies, launches, waits.
  if (isa<gpu::GPUDialect>(op->getDialect()))
    return false;
  if (op->hasTrait<OpTrait::IsTerminator>())
    return false;
  // A call of a function of this module is host code calling host code:
  // the callee's body is judged (and mapped) where it is. A call of an
  // external function may do anything with the buffers it is given.
  if (auto call = dyn_cast<CallOpInterface>(op)) {
    auto callee = dyn_cast_or_null<FunctionOpInterface>(call.resolveCallable());
    return !callee || callee.isExternal();
  }
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects) {
    // Region ops with recursive effects (scf.for, scf.if) are judged by
    // what is inside; other ops without the interface may do anything.
    return !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
  }
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::any_of(instances, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect());
  });
}

bool torsor::containsBufferAccess(Operation *op) {
  bool found = false;
  op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
    if (isa<gpu::LaunchOp>(nested))
      return WalkResult::skip();
    if (accessesBufferContents(nested)) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}
