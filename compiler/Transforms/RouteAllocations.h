//===- RouteAllocations.h - torsor-route-allocations ----------*- C++ -*-===//
//
// Declares and registers the torsor-route-allocations pass
// (RouteAllocations.td), kept apart from Passes.h so that adding it did not
// rebuild every Transforms file.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_TRANSFORMS_ROUTEALLOCATIONS_H
#define TORSOR_TRANSFORMS_ROUTEALLOCATIONS_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace torsor {

#define GEN_PASS_DECL
#include "compiler/Transforms/RouteAllocations.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/RouteAllocations.h.inc"

} // namespace torsor

#endif // TORSOR_TRANSFORMS_ROUTEALLOCATIONS_H
