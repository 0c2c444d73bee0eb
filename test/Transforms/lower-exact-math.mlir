// RUN: torsor-opt %s --torsor-lower-exact-math | FileCheck %s

// Exact ops become intrinsics, on scalars and vectors.
// CHECK-LABEL: func.func @exact
//       CHECK:   llvm.intr.fma
//       CHECK:   llvm.intr.sqrt
//       CHECK:   llvm.intr.fabs
//   CHECK-NOT:   math.
func.func @exact(%a: vector<16xf32>, %b: f64) -> (vector<16xf32>, f64, f64) {
  %0 = math.fma %a, %a, %a : vector<16xf32>
  %1 = math.sqrt %b : f64
  %2 = math.absf %b : f64
  return %0, %1, %2 : vector<16xf32>, f64, f64
}

// Ops whose intrinsic form would lose accuracy, or that have none, stay
// for math-to-libm.
// CHECK-LABEL: func.func @inexact
//       CHECK:   math.expm1
//       CHECK:   math.log1p
//       CHECK:   math.atan2
func.func @inexact(%a: f32) -> (f32, f32, f32) {
  %0 = math.expm1 %a : f32
  %1 = math.log1p %a : f32
  %2 = math.atan2 %a, %a : f32
  return %0, %1, %2 : f32, f32, f32
}
