// RUN: torsor-opt %s --torsor-outline-parallel-loops --split-input-file | FileCheck %s

// An outermost scf.parallel becomes a launcher call with its trip count and
// the values the body uses; constants are rematerialized in the body.
// CHECK-LABEL: func.func @scale
//  CHECK-SAME:   (%[[BUF:.*]]: memref<?xf32>, %[[N:.*]]: index)
//       CHECK:   %[[EXTENT:.*]] = arith.subi %[[N]], %{{.*}} : index
//       CHECK:   %[[TRIPS:.*]] = arith.ceildivsi %[[EXTENT]], %{{.*}} : index
//       CHECK:   call @__torsor_launch_scale_parallel0(%[[TRIPS]], %[[BUF]]) : (index, memref<?xf32>) -> ()
//   CHECK-NOT:   scf.parallel
// CHECK-LABEL: func.func private @__torsor_launch_scale_parallel0(index, memref<?xf32>)
// CHECK-LABEL: func.func private @scale_parallel0
//  CHECK-SAME:   (%[[LO:.*]]: index, %[[HI:.*]]: index, %[[B:.*]]: memref<?xf32>)
//   CHECK-DAG:   %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
//       CHECK:   scf.for %[[K:.*]] = %[[LO]] to %[[HI]]
//       CHECK:     %[[I:.*]] = arith.addi %{{.*}}, %{{.*}} : index
//       CHECK:     memref.load %[[B]][%[[I]]]
//       CHECK:     arith.mulf %{{.*}}, %[[TWO]]
func.func @scale(%buf: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %buf[%i] : memref<?xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// Two parallel dims: the first is split across tasks, the second stays an
// scf.parallel inside each task.
// CHECK-LABEL: func.func private @grid_parallel0
//       CHECK:   scf.for
//       CHECK:     scf.parallel
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

// Loops with reductions are not outlined: their iterations are not
// independent.
// CHECK-LABEL: func.func @sum
//       CHECK:   scf.parallel
//   CHECK-NOT:   __torsor_launch
func.func @sum(%buf: memref<?xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %s = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%z) -> f32 {
    %x = memref.load %buf[%i] : memref<?xf32>
    scf.reduce(%x : f32) {
    ^bb0(%a: f32, %b: f32):
      %r = arith.addf %a, %b : f32
      scf.reduce.return %r : f32
    }
  }
  return %s : f32
}

// -----

// A fixed-size alloca inside the parallel loop moves to the entry block of
// the outlined task function: one buffer per task, not one per iteration.
// CHECK-LABEL: func.func @scratch
//       CHECK:   call @__torsor_launch_scratch_parallel0
// CHECK-LABEL: func.func private @scratch_parallel0
//  CHECK-NEXT:   %[[BUF:.*]] = memref.alloca() : memref<16xf32>
//       CHECK:   scf.for
//   CHECK-NOT:     memref.alloca
//       CHECK:     memref.store %{{.*}}, %[[BUF]]
func.func @scratch(%out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %buf = memref.alloca() : memref<16xf32>
    memref.store %f, %buf[%c0] : memref<16xf32>
    %v = memref.load %buf[%c0] : memref<16xf32>
    memref.store %v, %out[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// Identical loops (a repeated layer's, say) share one outlined body and
// launcher, here across two functions; a loop that differs (a different
// constant) gets its own.
// CHECK-LABEL: func.func @twice
//       CHECK:   call @__torsor_launch_twice_parallel0(
//       CHECK:   call @__torsor_launch_twice_parallel0(
//       CHECK:   call @__torsor_launch_twice_parallel2(
//   CHECK-NOT:   @twice_parallel1
// CHECK-LABEL: func.func private @twice_parallel2(
//       CHECK:   arith.constant 3.000000e+00 : f32
//   CHECK-NOT:   @twice_parallel1
// CHECK-LABEL: func.func private @twice_parallel0(
//       CHECK:   arith.constant 2.000000e+00 : f32
//   CHECK-NOT:   @twice_parallel1
// CHECK-LABEL: func.func @again
//       CHECK:   call @__torsor_launch_twice_parallel0(
//   CHECK-NOT:   func.func private @again_parallel0(
func.func @twice(%a: memref<?xf32>, %b: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<?xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %a[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %b[%i] : memref<?xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %b[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %b[%i] : memref<?xf32>
    %y = arith.mulf %x, %three : f32
    memref.store %y, %b[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
func.func @again(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<?xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
