// RUN: torsor-opt %s --split-input-file --torsor-map-serial-code-to-gpu | FileCheck %s

// A serial loop (a scan: each step reads the one before) runs on the GPU
// in a kernel of one thread; host buffers become device buffers.
// CHECK-LABEL: func.func @scan
//  CHECK-SAME:   (%[[BUF:.*]]: memref<?xf32>, %[[N:.*]]: index)
//       CHECK:   %[[S0:.*]] = gpu.wait async
//       CHECK:   %[[TMP:.*]], %[[S1:.*]] = gpu.alloc async [%[[S0]]] (%[[N]]) : memref<?xf32>
//       CHECK:   gpu.wait [%[[S1]]]
//       CHECK:   %[[ONE:.*]] = arith.constant 1 : index
//       CHECK:   gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]])
//       CHECK:     scf.for
//       CHECK:       memref.load %[[BUF]]
//       CHECK:       memref.store %{{.*}}, %[[TMP]]
//       CHECK:     gpu.terminator
//       CHECK:   %[[S2:.*]] = gpu.wait async
//       CHECK:   %[[S3:.*]] = gpu.dealloc async [%[[S2]]] %[[TMP]] : memref<?xf32>
//       CHECK:   gpu.wait [%[[S3]]]
//   CHECK-NOT:   memref.alloc
func.func @scan(%buf: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %tmp = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c1 to %n step %c1 {
    %p = arith.subi %i, %c1 : index
    %a = memref.load %buf[%p] : memref<?xf32>
    %b = memref.load %buf[%i] : memref<?xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %tmp[%i] : memref<?xf32>
  }
  memref.dealloc %tmp : memref<?xf32>
  return
}

// -----

// A value the device computes moves with its users: the load and the
// store that needs it run in one kernel.
// CHECK-LABEL: func.func @chain
//       CHECK:   gpu.launch
//  CHECK-NEXT:     %[[X:.*]] = memref.load
//  CHECK-NEXT:     %[[Y:.*]] = arith.mulf %[[X]], %[[X]]
//  CHECK-NEXT:     memref.store %[[Y]]
//  CHECK-NEXT:     gpu.terminator
//   CHECK-NOT:   gpu.launch
func.func @chain(%a: memref<f32>, %b: memref<f32>) {
  %x = memref.load %a[] : memref<f32>
  %y = arith.mulf %x, %x : f32
  memref.store %y, %b[] : memref<f32>
  return
}

// -----

// A host loop around a kernel stays on the host; the access beside the
// kernel inside it moves into a kernel of its own.
// CHECK-LABEL: func.func @around
//       CHECK:   scf.for
//       CHECK:     gpu.launch
//       CHECK:       memref.store
//       CHECK:     gpu.launch
//       CHECK:       memref.store
func.func @around(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      memref.store %z, %a[%i] : memref<?xf32>
      gpu.terminator
    }
    memref.store %z, %a[%c0] : memref<?xf32>
  }
  return
}

// -----

// A constant the kernel reads is re-created inside it, so outlining puts
// the memref.global into the GPU module.
memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
// CHECK-LABEL: func.func @constant
//       CHECK:   gpu.launch
//       CHECK:     %[[T:.*]] = memref.get_global @table : memref<2xf32>
//       CHECK:     memref.load %[[T]]
func.func @constant(%out: memref<f32>) {
  %c1 = arith.constant 1 : index
  %t = memref.get_global @table : memref<2xf32>
  %x = memref.load %t[%c1] : memref<2xf32>
  memref.store %x, %out[] : memref<f32>
  return
}
