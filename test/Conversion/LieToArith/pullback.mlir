// RUN: torsor-opt %s --convert-lie-to-arith --split-input-file --verify-diagnostics | FileCheck %s

// lie.pullback lowers like every lie op: one parallel loop per batch dim,
// the element's scalars extracted, the group model's derivative in the
// body. SO(3) log: the adjoint of atan2 (its partials guarded to 0 where
// not finite, so a select against +inf appears) and the tangent space of
// exp at 0, inserted as a 3×3 ambient cotangent.
// CHECK-LABEL: func.func @so3_log
//       CHECK:   %[[INF:.*]] = arith.constant 0x7FF0000000000000 : f64
//       CHECK:   scf.for
//       CHECK:     tensor.extract
//       CHECK:     math.atan2
//       CHECK:     arith.cmpf olt, %{{.*}}, %[[INF]]
//       CHECK:     arith.select
//       CHECK:     tensor.insert
//       CHECK:   } {torsor.parallel}
//   CHECK-NOT:   lie.pullback
func.func @so3_log(%g: tensor<?x3x3xf64>, %w: tensor<?x3xf64>) -> tensor<?x3x3xf64> {
  %0 = lie.pullback "log"(%g), %w {group = #lie.group<so3>, wrt = 0 : i64} : (tensor<?x3x3xf64>, tensor<?x3xf64>) -> tensor<?x3x3xf64>
  return %0 : tensor<?x3x3xf64>
}

// -----

// left_trivialize: ⟨gᵀḠ, E_k⟩, a k-vector per element.
// CHECK-LABEL: func.func @se3_left_trivialize
//       CHECK:   scf.for
//       CHECK:     tensor.insert {{.*}} : tensor<?x6xf32>
//   CHECK-NOT:   lie.pullback
func.func @se3_left_trivialize(%g: tensor<?x4x4xf32>, %c: tensor<?x4x4xf32>) -> tensor<?x6xf32> {
  %0 = lie.pullback "left_trivialize"(%g), %c {group = #lie.group<se3>, wrt = 0 : i64} : (tensor<?x4x4xf32>, tensor<?x4x4xf32>) -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

// A declared group whose log is iterative: the adjoint comes from the
// generic model (J_r(w)^-T applied to the cotangent, with J_r built from the
// structure constants), not from differentiating the iterative log, so it
// lowers to straight-line arithmetic per element, with no pullback left.
// CHECK-LABEL: func.func @declared_log
//       CHECK:   scf.for
//       CHECK:     math.fma
//       CHECK:     tensor.insert {{.*}} : tensor<?x2x2xf64>
//   CHECK-NOT:   lie.pullback
func.func @declared_log(%g: tensor<?x2x2xf64>, %w: tensor<?x2xf64>) -> tensor<?x2x2xf64> {
  %0 = lie.pullback "log"(%g), %w {group = #lie.group<"Scale2", n = 2, generators = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0>, blocks = [["all", 0, 1]], generic>, wrt = 0 : i64} : (tensor<?x2x2xf64>, tensor<?x2xf64>) -> tensor<?x2x2xf64>
  return %0 : tensor<?x2x2xf64>
}
