// RUN: torsor-opt %s --torsor-emit-entry --split-input-file --verify-diagnostics | FileCheck %s

// torsor_forward loads one descriptor pointer per tensor and calls the C
// interface of the wrapper; torsor_abi_version returns 1.
// CHECK-LABEL: llvm.func @torsor_forward
//  CHECK-SAME:   (%[[DESCS:.*]]: !llvm.ptr)
//       CHECK:   %[[P0:.*]] = llvm.getelementptr %[[DESCS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
//       CHECK:   %[[D0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
//       CHECK:   %[[P1:.*]] = llvm.getelementptr %[[DESCS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
//       CHECK:   %[[D1:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
//       CHECK:   llvm.call @_mlir_ciface_torsor_model(%[[D0]], %[[D1]])
// CHECK-LABEL: llvm.func @torsor_abi_version() -> i32
//       CHECK:   %[[V:.*]] = llvm.mlir.constant(1 : i32) : i32
//       CHECK:   llvm.return %[[V]]
llvm.func @_mlir_ciface_torsor_model(%a: !llvm.ptr, %b: !llvm.ptr) {
  llvm.return
}

// -----

// Without the wrapper (plain MLIR) nothing is exported.
// CHECK-LABEL: llvm.func @other
//   CHECK-NOT:   torsor_forward
llvm.func @other() {
  llvm.return
}

// -----

// expected-error @+1 {{the symbol 'torsor_forward' is reserved for the runtime entry points}}
module {
  llvm.func @_mlir_ciface_torsor_model(%a: !llvm.ptr) {
    llvm.return
  }
  llvm.func @torsor_forward() {
    llvm.return
  }
}

// -----

// With a group-residual wrapper (declared-group inputs), a second
// trampoline, torsor_group_residual, calls its C interface the same way.
// CHECK-LABEL: llvm.func @torsor_forward
//       CHECK:   llvm.call @_mlir_ciface_torsor_model
// CHECK-LABEL: llvm.func @torsor_group_residual
//  CHECK-SAME:   (%[[DESCS:.*]]: !llvm.ptr)
//       CHECK:   %[[P0:.*]] = llvm.getelementptr %[[DESCS]][0]
//       CHECK:   %[[D0:.*]] = llvm.load %[[P0]]
//       CHECK:   %[[P1:.*]] = llvm.getelementptr %[[DESCS]][1]
//       CHECK:   %[[D1:.*]] = llvm.load %[[P1]]
//       CHECK:   llvm.call @_mlir_ciface_torsor_residual(%[[D0]], %[[D1]])
llvm.func @_mlir_ciface_torsor_model(%a: !llvm.ptr) {
  llvm.return
}
llvm.func @_mlir_ciface_torsor_residual(%g: !llvm.ptr, %r: !llvm.ptr) {
  llvm.return
}
