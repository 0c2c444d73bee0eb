// RUN: torsor-opt %s --torsor-emit-entry=abi-version=2 | FileCheck %s

// NVPTX models: the same trampoline, and torsor_abi_version returns 2 (the
// descriptors point to device memory).
// CHECK-LABEL: llvm.func @torsor_forward
//       CHECK:   llvm.call @_mlir_ciface_torsor_model(
// CHECK-LABEL: llvm.func @torsor_abi_version() -> i32
//       CHECK:   %[[V:.*]] = llvm.mlir.constant(2 : i32) : i32
//       CHECK:   llvm.return %[[V]]
llvm.func @_mlir_ciface_torsor_model(%a: !llvm.ptr) {
  llvm.return
}
