// RUN: torsor-opt %s --torsor-lower-parallel-launch | FileCheck %s

// The launcher call becomes a context struct (allocated once, in the entry
// block), stores of the captured values and a dispatch through the
// runtime's weak torsor_parallel_for; the task unpacks and calls the body.
// The task and the dispatcher are never inlined, so the serial fallback does not
// copy the body into the caller, and an argument the body never reads (%n
// here; a static memref's strides in practice) is not packed: the task
// passes poison for it.
// CHECK-LABEL: llvm.func @caller
//  CHECK-SAME:   (%[[P:.*]]: !llvm.ptr, %[[N:.*]]: i64, %[[X:.*]]: f32)
//       CHECK:   %[[CTX:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, f32)>
//       CHECK:   llvm.br ^[[LOOP:.*]]
//       CHECK: ^[[LOOP]]:
//       CHECK:   llvm.store %[[P]], %{{.*}} : !llvm.ptr, !llvm.ptr
//       CHECK:   llvm.store %[[X]], %{{.*}} : f32, !llvm.ptr
//       CHECK:   %[[TASK:.*]] = llvm.mlir.addressof @body_task
//       CHECK:   llvm.call @__torsor_parallel_dispatch(%{{.*}}, %[[N]], %[[TASK]], %[[CTX]])
//   CHECK-NOT:   __torsor_launch
// CHECK-LABEL: llvm.func internal @body(
// CHECK-LABEL: llvm.func internal @body_task
//  CHECK-SAME:   (%[[LO:.*]]: i64, %[[HI:.*]]: i64, %[[C:.*]]: !llvm.ptr)
//  CHECK-SAME:   attributes {no_inline}
//       CHECK:   %[[F0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
//       CHECK:   %[[F1:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
//       CHECK:   %[[NONE:.*]] = llvm.mlir.poison : i64
//       CHECK:   llvm.call @body(%[[LO]], %[[HI]], %[[F0]], %[[F1]], %[[NONE]])
// CHECK-LABEL: llvm.func extern_weak @torsor_parallel_for(i64, i64, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: llvm.func internal @__torsor_parallel_dispatch
//  CHECK-SAME:   attributes {no_inline}
//       CHECK:   %[[FOR:.*]] = llvm.mlir.addressof @torsor_parallel_for
//       CHECK:   %[[MISSING:.*]] = llvm.icmp "eq" %[[FOR]], %{{.*}} : !llvm.ptr
//       CHECK:   llvm.cond_br %[[MISSING]]
//       CHECK:   llvm.call %{{.*}}(%{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (i64, i64, !llvm.ptr) -> ()
//       CHECK:   llvm.call @torsor_parallel_for
llvm.func @caller(%p: !llvm.ptr, %n: i64, %x: f32) {
  llvm.br ^loop
^loop:
  llvm.call @__torsor_launch_body(%n, %p, %x, %n) : (i64, !llvm.ptr, f32, i64) -> ()
  llvm.return
}
llvm.func @__torsor_launch_body(i64, !llvm.ptr, f32, i64)
llvm.func @body(%lo: i64, %hi: i64, %p: !llvm.ptr, %x: f32, %unused: i64) {
  llvm.store %x, %p : f32, !llvm.ptr
  llvm.return
}
