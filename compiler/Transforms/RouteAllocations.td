//===- RouteAllocations.td - torsor-route-allocations ------*- tablegen -*-===//
//
// The pass that routes the lowered model's heap allocations through the
// runtime (RouteAllocations.cpp). It has its own .td so that adding it did
// not touch Passes.td, which every Transforms file includes.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_TRANSFORMS_ROUTEALLOCATIONS
#define TORSOR_TRANSFORMS_ROUTEALLOCATIONS

include "mlir/Pass/PassBase.td"

def TorsorRouteAllocations
    : Pass<"torsor-route-allocations", "::mlir::ModuleOp"> {
  let summary = "Route the model's heap allocations through the runtime";
  let description = [{
    Runs on the LLVM dialect, after memrefs are lowered. Every call of
    `malloc` becomes a call of `__torsor_alloc(bytes, site)`, where `site`
    is a constant string naming the source location of the buffer, and every
    call of `free` becomes `__torsor_free`. The helpers call the runtime's
    `torsor_alloc`/`torsor_free` (declared `extern_weak`), which track the
    buffers of a run and turn a failed allocation into a
    TORSOR_OUT_OF_MEMORY error that says how much was needed and for what,
    instead of a null pointer the model writes through. Without the runtime
    (the symbols are null) they call malloc/free. The helpers are
    `noinline`: each allocation stays one call where it is made.

    Before:
    ```mlir
    %buf = llvm.call @malloc(%bytes) : (i64) -> !llvm.ptr
    llvm.call @free(%buf) : (!llvm.ptr) -> ()
    ```
    After:
    ```mlir
    %site = llvm.mlir.addressof @__torsor_alloc_site_0 : !llvm.ptr
    %buf = llvm.call @__torsor_alloc(%bytes, %site)
        : (i64, !llvm.ptr) -> !llvm.ptr
    llvm.call @__torsor_free(%buf) : (!llvm.ptr) -> ()
    llvm.func extern_weak @torsor_alloc(i64, !llvm.ptr) -> !llvm.ptr
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // TORSOR_TRANSFORMS_ROUTEALLOCATIONS
