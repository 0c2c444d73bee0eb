// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=target=nvptx --torsor-map-parallel-loops-to-gpu | FileCheck %s

// A 2-D parallel loop is one launch: m·n iterations in tiles of 256
// threads (gpu_threads_per_block), the last dimension fastest; an empty
// loop launches nothing, and threads past the end do nothing.
// CHECK-LABEL: func.func @grid
//  CHECK-SAME:   (%[[BUF:.*]]: memref<?x?xf32>, %[[M:.*]]: index, %[[N:.*]]: index)
//   CHECK-DAG:   %[[T:.*]] = arith.constant 256 : index
//       CHECK:   %[[TM:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : index
//       CHECK:   %[[TN:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : index
//       CHECK:   %[[TOTAL:.*]] = arith.muli %{{.*}}, %[[TN]] : index
//       CHECK:   %[[ANY:.*]] = arith.cmpi ugt, %[[TOTAL]], %{{.*}} : index
//       CHECK:   scf.if %[[ANY]] {
//       CHECK:     %[[BLOCKS:.*]] = arith.ceildivui %[[TOTAL]], %[[T]] : index
//       CHECK:     gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}}, %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[T]], %{{.*}}, %{{.*}})
//       CHECK:       %[[BASE:.*]] = arith.muli %[[BX]], %[[T]] : index
//       CHECK:       %[[ID:.*]] = arith.addi %[[BASE]], %[[TX]] : index
//       CHECK:       %[[IN:.*]] = arith.cmpi ult, %[[ID]], %[[TOTAL]] : index
//       CHECK:       scf.if %[[IN]] {
//       CHECK:         %[[J:.*]] = arith.remui %[[ID]], %[[TN]] : index
//       CHECK:         %[[I:.*]] = arith.divui %[[ID]], %[[TN]] : index
//       CHECK:         memref.store %{{.*}}, %[[BUF]][%{{.*}}, %{{.*}}] : memref<?x?xf32>
//       CHECK:       gpu.terminator
//   CHECK-NOT:   scf.parallel
func.func @grid(%buf: memref<?x?xf32>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %n) step (%c1, %c1) {
    memref.store %z, %buf[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  return
}

// -----

// A copy between buffers becomes a kernel like any parallel loop.
// CHECK-LABEL: func.func @copy
//  CHECK-SAME:   (%[[A:.*]]: memref<?x4xf32>, %[[B:.*]]: memref<?x4xf32>)
//   CHECK-NOT:   memref.copy
//       CHECK:   gpu.launch
//       CHECK:     %[[X:.*]] = memref.load %[[A]]
//       CHECK:     memref.store %[[X]], %[[B]]
func.func @copy(%a: memref<?x4xf32>, %b: memref<?x4xf32>) {
  memref.copy %a, %b : memref<?x4xf32> to memref<?x4xf32>
  return
}

// -----

// Nested parallel loops run sequentially inside each thread; a scratch
// buffer of static shape becomes a per-thread alloca, without dealloc.
// CHECK-LABEL: func.func @nested
//       CHECK:   gpu.launch
//       CHECK:     %[[SCRATCH:.*]] = memref.alloca() : memref<4xf32>
//       CHECK:     scf.parallel
//       CHECK:       memref.store %{{.*}}, %[[SCRATCH]]
//   CHECK-NOT:     memref.dealloc
//       CHECK:     gpu.terminator
func.func @nested(%buf: memref<?x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %s = memref.alloc() : memref<4xf32>
    scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
      memref.store %z, %s[%j] : memref<4xf32>
      scf.reduce
    }
    %x = memref.load %s[%c0] : memref<4xf32>
    memref.store %x, %buf[%i, %c0] : memref<?x4xf32>
    memref.dealloc %s : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// A loop with a reduction is not independent: it is left to
// torsor-map-serial-code-to-gpu.
// CHECK-LABEL: func.func @sum
//   CHECK-NOT:   gpu.launch
//       CHECK:   scf.parallel
func.func @sum(%buf: memref<?xf32>, %out: memref<f32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %s = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%z) -> f32 {
    %x = memref.load %buf[%i] : memref<?xf32>
    scf.reduce(%x : f32) {
    ^bb0(%l: f32, %r: f32):
      %y = arith.addf %l, %r : f32
      scf.reduce.return %y : f32
    }
  }
  memref.store %s, %out[] : memref<f32>
  return
}
