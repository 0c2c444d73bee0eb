// RUN: torsorc %s --emit=llvm --mcpu=x86-64-v3 | FileCheck %s

// LLVM's SLP vectorizer skips the serial entries the runtime calls once per
// run (torsor_forward, torsor_backward, torsor_prepare: launch glue, whose
// blocks of thousands of instructions make SLP's scheduling slow) and
// keeps working on every other function, where the kernels are. The two
// functions below are the same four-float copy: SLP makes one <4 x float>
// load and store of it, except in the entry.

// CHECK-LABEL: define {{.*}}@torsor_forward(
//   CHECK-NOT:   <4 x float>
//       CHECK:   ret void
// CHECK-LABEL: define {{.*}}@kernel(
//       CHECK:   load <4 x float>
//       CHECK:   store <4 x float>

func.func @torsor_forward(%a: memref<4xf32>, %b: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %x0 = memref.load %a[%c0] : memref<4xf32>
  %x1 = memref.load %a[%c1] : memref<4xf32>
  %x2 = memref.load %a[%c2] : memref<4xf32>
  %x3 = memref.load %a[%c3] : memref<4xf32>
  %y0 = arith.mulf %x0, %x0 : f32
  %y1 = arith.mulf %x1, %x1 : f32
  %y2 = arith.mulf %x2, %x2 : f32
  %y3 = arith.mulf %x3, %x3 : f32
  memref.store %y0, %b[%c0] : memref<4xf32>
  memref.store %y1, %b[%c1] : memref<4xf32>
  memref.store %y2, %b[%c2] : memref<4xf32>
  memref.store %y3, %b[%c3] : memref<4xf32>
  return
}

func.func @kernel(%a: memref<4xf32>, %b: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %x0 = memref.load %a[%c0] : memref<4xf32>
  %x1 = memref.load %a[%c1] : memref<4xf32>
  %x2 = memref.load %a[%c2] : memref<4xf32>
  %x3 = memref.load %a[%c3] : memref<4xf32>
  %y0 = arith.mulf %x0, %x0 : f32
  %y1 = arith.mulf %x1, %x1 : f32
  %y2 = arith.mulf %x2, %x2 : f32
  %y3 = arith.mulf %x3, %x3 : f32
  memref.store %y0, %b[%c0] : memref<4xf32>
  memref.store %y1, %b[%c1] : memref<4xf32>
  memref.store %y2, %b[%c2] : memref<4xf32>
  memref.store %y3, %b[%c3] : memref<4xf32>
  return
}
