// RUN: torsor-opt %s --torsor-cpu-pipeline | FileCheck %s

// The whole CPU pipeline: lie ops on tensors in, LLVM dialect out, with the
// destination-passing C interface the runtime and the tests call. The batch
// loop of lie.log is independent per element, so it becomes a task of the
// runtime's thread pool: the function dispatches, the task computes.
// CHECK-LABEL: llvm.func @log_so2
//   CHECK-NOT:   lie.
//   CHECK-NOT:   tensor.
//   CHECK-NOT:   memref.
//       CHECK:   %[[TASK:.*]] = llvm.mlir.addressof @log_so2_parallel0_task
//       CHECK:   llvm.call @__torsor_parallel_dispatch(%{{.*}}, %{{.*}}, %[[TASK]], %{{.*}})
// CHECK-LABEL: llvm.func @_mlir_ciface_log_so2
// CHECK-LABEL: llvm.func internal @log_so2_parallel0(
//       CHECK:   llvm.call @atan2f
// CHECK-LABEL: llvm.func extern_weak @torsor_parallel_for
func.func @log_so2(%g: memref<?x2x2xf32>, %out: memref<?x1xf32>) attributes {llvm.emit_c_interface} {
  %t = bufferization.to_tensor %g restrict : memref<?x2x2xf32> to tensor<?x2x2xf32>
  %w = lie.log %t {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?x1xf32>
  bufferization.materialize_in_destination %w in restrict writable %out : (tensor<?x1xf32>, memref<?x1xf32>) -> ()
  return
}
