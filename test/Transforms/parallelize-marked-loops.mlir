// RUN: torsor-opt %s --torsor-parallelize-marked-loops --split-input-file | FileCheck %s

// An scf.for a lowering marked torsor.parallel (no results left after
// bufferization) becomes an scf.parallel with the same bounds and body; an
// unmarked one stays a serial loop.
// CHECK-LABEL: func.func @marked
//  CHECK-SAME:   (%[[BUF:.*]]: memref<?xf32>, %[[N:.*]]: index)
//       CHECK:   scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%[[N]]) step (%{{.*}})
//       CHECK:     memref.store %{{.*}}, %[[BUF]][%[[I]]]
//       CHECK:   scf.for
//   CHECK-NOT:   torsor.parallel
//       CHECK:   return
func.func @marked(%buf: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    memref.store %z, %buf[%i] : memref<?xf32>
  } {torsor.parallel}
  scf.for %i = %c0 to %n step %c1 {
    memref.store %z, %buf[%i] : memref<?xf32>
  }
  return
}

// -----

// Nested marked loops both become parallel (innermost first).
// CHECK-LABEL: func.func @nested
//       CHECK:   scf.parallel
//       CHECK:     scf.parallel
//   CHECK-NOT:   scf.for
func.func @nested(%buf: memref<?x?xf32>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      memref.store %z, %buf[%i, %j] : memref<?x?xf32>
    } {torsor.parallel}
  } {torsor.parallel}
  return
}

// -----

// A marked loop that still carries a value is not independent as written:
// it stays an scf.for.
// CHECK-LABEL: func.func @carried
//   CHECK-NOT:   scf.parallel
//       CHECK:   scf.for {{.*}} iter_args
func.func @carried(%buf: memref<?xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> f32 {
    %x = memref.load %buf[%i] : memref<?xf32>
    %y = arith.addf %acc, %x : f32
    scf.yield %y : f32
  } {torsor.parallel}
  return %s : f32
}
