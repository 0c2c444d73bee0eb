//===- Passes.td - Torsor model-level passes ---------------*- tablegen -*-===//
//
// Passes that shape a whole compiled model for the runtime's ABI
// (docs/runtime.md "Compiled-model ABI").
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_TRANSFORMS_PASSES
#define TORSOR_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def TorsorWrapModel : Pass<"torsor-wrap-model", "::mlir::ModuleOp"> {
  let summary = "Wrap the model function in destination-passing style";
  let description = [{
    The frontend emits the model as one function on tensors whose arguments
    (inputs, then params) and results (outputs) carry `torsor.name`. The
    runtime allocates every tensor itself, so this pass adds
    `@torsor_model`, taking one memref per input, param and output (in that
    order) with the C interface, and makes the model private so the inliner
    folds it in. Modules without a model function are left alone.

    Before:
    ```mlir
    func.func @M(%x: tensor<?x8xf32> {torsor.name = "x"}) -> (tensor<?x8xf32> {torsor.name = "y"})
    ```
    After:
    ```mlir
    func.func private @M(...)
    func.func @torsor_model(%x: memref<?x8xf32>, %y: memref<?x8xf32>) attributes {llvm.emit_c_interface} {
      %t = bufferization.to_tensor %x restrict : memref<?x8xf32> to tensor<?x8xf32>
      %r = call @M(%t) : (tensor<?x8xf32>) -> tensor<?x8xf32>
      bufferization.materialize_in_destination %r in restrict writable %y : (tensor<?x8xf32>, memref<?x8xf32>) -> ()
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TorsorEmitEntry : Pass<"torsor-emit-entry", "::mlir::ModuleOp"> {
  let summary = "Emit the runtime entry points around the lowered model";
  let description = [{
    Runs on the LLVM dialect, after `torsor-wrap-model` and the lowering.
    Adds `torsor_forward(void **descriptors)`, which loads one memref
    descriptor pointer per tensor and calls `_mlir_ciface_torsor_model`, and
    `torsor_abi_version()`, which returns the ABI version (1). The runtime
    calls nothing else.

    After:
    ```mlir
    llvm.func @torsor_forward(%descs: !llvm.ptr) {
      %p0 = llvm.getelementptr %descs[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
      %d0 = llvm.load %p0 : !llvm.ptr -> !llvm.ptr
      ...
      llvm.call @_mlir_ciface_torsor_model(%d0, ...) : (!llvm.ptr, ...) -> ()
      llvm.return
    }
    llvm.func @torsor_abi_version() -> i32
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // TORSOR_TRANSFORMS_PASSES
