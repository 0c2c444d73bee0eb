// RUN: torsor-opt %s --ownership-based-buffer-deallocation --cse | FileCheck %s

// gpu.barrier reads and writes memory (GPUBarrierEffects.cpp): the buffer
// deallocation of the bufferization pipeline accepts kernels with barriers
// (upstream it fails with "ops with unknown memory side effects") and frees
// the temporary after the kernel; CSE keeps both barriers in place.
// CHECK-LABEL: func.func @kernel_with_barriers
//       CHECK:   gpu.launch
//       CHECK:     memref.load
//  CHECK-NEXT:     gpu.barrier
//  CHECK-NEXT:     memref.store
//  CHECK-NEXT:     gpu.barrier
//  CHECK-NEXT:     gpu.terminator
//       CHECK:   bufferization.dealloc
func.func @kernel_with_barriers(%m: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %t = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%a, %b, %c) in (%x = %c1, %y = %c1, %z = %c1) threads(%d, %e, %f) in (%u = %c1, %v = %c1, %w = %c1) {
    %0 = memref.load %m[%d] : memref<?xf32>
    gpu.barrier
    memref.store %0, %t[%d] : memref<?xf32>
    gpu.barrier
    gpu.terminator
  }
  return
}
