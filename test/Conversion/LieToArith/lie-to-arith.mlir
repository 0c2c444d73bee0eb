// RUN: torsor-opt %s --convert-lie-to-arith --split-input-file | FileCheck %s

// One loop per batch dim, carrying the result tensor; the group model's
// closed form in the body (SO(2) log: atan2 of the antisymmetric and
// symmetric parts).
// CHECK-LABEL: func.func @log_so2
//  CHECK-SAME:   (%[[G:.*]]: tensor<?x2x2xf32>)
//       CHECK:   %[[N:.*]] = tensor.dim %[[G]]
//       CHECK:   %[[INIT:.*]] = tensor.empty(%[[N]]) : tensor<?x1xf32>
//       CHECK:   %[[R:.*]] = scf.for %[[I:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]])
//   CHECK-DAG:     %[[A00:.*]] = tensor.extract %[[G]][%[[I]], %{{.*}}, %{{.*}}]
//       CHECK:     %[[T:.*]] = math.atan2 %{{.*}}, %{{.*}} : f32
//       CHECK:     %[[NEW:.*]] = tensor.insert %[[T]] into %[[ACC]][%[[I]], %{{.*}}]
//       CHECK:     scf.yield %[[NEW]]
//       CHECK:   } {torsor.parallel}
//   CHECK-NOT:   lie.log
//       CHECK:   return %[[R]]
func.func @log_so2(%g: tensor<?x2x2xf32>) -> tensor<?x1xf32> {
  %w = lie.log %g {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?x1xf32>
  return %w : tensor<?x1xf32>
}

// -----

// Two batch dims give a two-deep loop nest.
// CHECK-LABEL: func.func @exp_two_batch_dims
//       CHECK:   scf.for
//       CHECK:     scf.for
//   CHECK-DAG:       math.cos %{{.*}} : f64
//   CHECK-DAG:       math.sin %{{.*}} : f64
//   CHECK-NOT:   lie.exp
func.func @exp_two_batch_dims(%v: tensor<3x?x1xf64>) -> tensor<3x?x2x2xf64> {
  %g = lie.exp %v {group = #lie.group<so2>} : tensor<3x?x1xf64> -> tensor<3x?x2x2xf64>
  return %g : tensor<3x?x2x2xf64>
}

// -----

// No batch dims: no loop, just the body.
// CHECK-LABEL: func.func @inverse_single
//   CHECK-NOT:   scf.for
//       CHECK:   tensor.extract
//       CHECK:   tensor.insert
//   CHECK-NOT:   lie.inverse
func.func @inverse_single(%g: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %i = lie.inverse %g {group = #lie.group<so2>} : tensor<2x2xf32>
  return %i : tensor<2x2xf32>
}

// -----

// compose is a dense 2×2 product: fused multiply-adds.
// CHECK-LABEL: func.func @compose
//       CHECK:   scf.for
//       CHECK:     math.fma
//   CHECK-NOT:   lie.compose
func.func @compose(%a: tensor<?x2x2xf32>, %b: tensor<?x2x2xf32>) -> tensor<?x2x2xf32> {
  %c = lie.compose %a, %b {group = #lie.group<so2>} : tensor<?x2x2xf32>
  return %c : tensor<?x2x2xf32>
}

// -----

// act on points and dist2 with its λ weight materialized as a constant.
// CHECK-LABEL: func.func @act_dist2
//   CHECK-DAG:   arith.constant 2.500000e-01 : f32
//       CHECK:   scf.for
//       CHECK:   scf.for
//   CHECK-NOT:   lie.act
//   CHECK-NOT:   lie.dist2
func.func @act_dist2(%g: tensor<?x2x2xf32>, %p: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?xf32>) {
  %q = lie.act %g, %p {group = #lie.group<so2>} : tensor<?x2x2xf32>, tensor<?x2xf32> -> tensor<?x2xf32>
  %h = lie.inverse %g {group = #lie.group<so2>} : tensor<?x2x2xf32>
  %d = lie.dist2 %g, %h {group = #lie.group<so2>, lambda = array<f64: 0.25>} : tensor<?x2x2xf32> -> tensor<?xf32>
  return %q, %d : tensor<?x2xf32>, tensor<?xf32>
}

// -----

// lie.identity becomes stores of the identity matrix's entries.
// CHECK-LABEL: func.func @identity
//  CHECK-SAME:   (%[[N:.*]]: index)
//   CHECK-DAG:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
//   CHECK-DAG:   %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
//       CHECK:   %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x2x2xf32>
//       CHECK:   scf.for %[[I:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[E]])
//       CHECK:     %[[D0:.*]] = tensor.insert %[[ONE]] into %[[ACC]]
//       CHECK:     %[[D1:.*]] = tensor.insert %[[ZERO]] into %[[D0]]
//       CHECK:     %[[D2:.*]] = tensor.insert %[[ZERO]] into %[[D1]]
//       CHECK:     %[[D3:.*]] = tensor.insert %[[ONE]] into %[[D2]]
//       CHECK:     scf.yield %[[D3]]
//   CHECK-NOT:   lie.identity
func.func @identity(%n: index) -> tensor<?x2x2xf32> {
  %e = lie.identity %n {group = #lie.group<so2>} : tensor<?x2x2xf32>
  return %e : tensor<?x2x2xf32>
}

// -----

// membership_residual: the round trip exp(log g) against g, one scalar per
// element.
// CHECK-LABEL: func.func @membership
//       CHECK:   scf.for
//       CHECK:     math.atan2
//       CHECK:     math.cos
//       CHECK:     math.sqrt
//       CHECK:     tensor.insert %{{.*}} into %{{.*}}[%{{.*}}] : tensor<?xf32>
//   CHECK-NOT:   lie.membership_residual
func.func @membership(%g: tensor<?x2x2xf32>) -> tensor<?xf32> {
  %r = lie.membership_residual %g {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?xf32>
  return %r : tensor<?xf32>
}
