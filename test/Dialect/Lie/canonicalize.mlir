// RUN: torsor-opt %s --canonicalize --split-input-file | FileCheck %s

// inverse(inverse(x)) -> x
// CHECK-LABEL: func.func @inverse_inverse
//  CHECK-SAME:   (%[[G:.*]]: tensor<?x2x2xf32>)
//   CHECK-NOT:   lie.inverse
//       CHECK:   return %[[G]]
func.func @inverse_inverse(%g: tensor<?x2x2xf32>) -> tensor<?x2x2xf32> {
  %a = lie.inverse %g {group = #lie.group<so2>} : tensor<?x2x2xf32>
  %b = lie.inverse %a {group = #lie.group<so2>} : tensor<?x2x2xf32>
  return %b : tensor<?x2x2xf32>
}

// -----

// compose(x, e) -> x and compose(e, x) -> x, for lie.identity and for a
// constant identity.
// CHECK-LABEL: func.func @compose_identity
//  CHECK-SAME:   (%[[G:.*]]: tensor<?x2x2xf32>, %[[N:.*]]: index)
//   CHECK-NOT:   lie.compose
//       CHECK:   return %[[G]], %[[G]]
func.func @compose_identity(%g: tensor<?x2x2xf32>, %n: index) -> (tensor<?x2x2xf32>, tensor<?x2x2xf32>) {
  %e = lie.identity %n {group = #lie.group<so2>} : tensor<?x2x2xf32>
  %a = lie.compose %g, %e {group = #lie.group<so2>} : tensor<?x2x2xf32>
  %b = lie.compose %e, %a {group = #lie.group<so2>} : tensor<?x2x2xf32>
  return %a, %b : tensor<?x2x2xf32>, tensor<?x2x2xf32>
}

// CHECK-LABEL: func.func @compose_constant_identity
//  CHECK-SAME:   (%[[G:.*]]: tensor<3x2x2xf64>)
//   CHECK-NOT:   lie.compose
//       CHECK:   return %[[G]]
func.func @compose_constant_identity(%g: tensor<3x2x2xf64>) -> tensor<3x2x2xf64> {
  %e = arith.constant dense<[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]]> : tensor<3x2x2xf64>
  %a = lie.compose %g, %e {group = #lie.group<so2>} : tensor<3x2x2xf64>
  return %a : tensor<3x2x2xf64>
}

// A constant that is not the identity stays.
// CHECK-LABEL: func.func @no_fold_compose_rotation
//       CHECK:   lie.compose
func.func @no_fold_compose_rotation(%g: tensor<1x2x2xf64>) -> tensor<1x2x2xf64> {
  %r = arith.constant dense<[[[0.0, -1.0], [1.0, 0.0]]]> : tensor<1x2x2xf64>
  %a = lie.compose %g, %r {group = #lie.group<so2>} : tensor<1x2x2xf64>
  return %a : tensor<1x2x2xf64>
}

// -----

// exp(log(g)) -> g
// CHECK-LABEL: func.func @exp_log
//  CHECK-SAME:   (%[[G:.*]]: tensor<?x2x2xf32>)
//   CHECK-NOT:   lie.exp
//       CHECK:   return %[[G]]
func.func @exp_log(%g: tensor<?x2x2xf32>) -> tensor<?x2x2xf32> {
  %w = lie.log %g {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?x1xf32>
  %r = lie.exp %w {group = #lie.group<so2>} : tensor<?x1xf32> -> tensor<?x2x2xf32>
  return %r : tensor<?x2x2xf32>
}

// -----

// log(exp(v)) -> v only inside the chart (|θ| < π for SO(2)).
// CHECK-LABEL: func.func @log_exp_inside_chart
//       CHECK:   %[[V:.*]] = arith.constant dense<{{\[\[}}1.5{{.*}}
//   CHECK-NOT:   lie.log
//       CHECK:   return %[[V]]
func.func @log_exp_inside_chart() -> tensor<2x1xf64> {
  %v = arith.constant dense<[[1.5], [-3.0]]> : tensor<2x1xf64>
  %g = lie.exp %v {group = #lie.group<so2>} : tensor<2x1xf64> -> tensor<2x2x2xf64>
  %w = lie.log %g {group = #lie.group<so2>} : tensor<2x2x2xf64> -> tensor<2x1xf64>
  return %w : tensor<2x1xf64>
}

// CHECK-LABEL: func.func @no_fold_log_exp_outside_chart
//       CHECK:   lie.exp
//       CHECK:   lie.log
func.func @no_fold_log_exp_outside_chart() -> tensor<2x1xf64> {
  %v = arith.constant dense<[[1.5], [4.0]]> : tensor<2x1xf64>
  %g = lie.exp %v {group = #lie.group<so2>} : tensor<2x1xf64> -> tensor<2x2x2xf64>
  %w = lie.log %g {group = #lie.group<so2>} : tensor<2x2x2xf64> -> tensor<2x1xf64>
  return %w : tensor<2x1xf64>
}

// CHECK-LABEL: func.func @no_fold_log_exp_unknown
//       CHECK:   lie.exp
//       CHECK:   lie.log
func.func @no_fold_log_exp_unknown(%v: tensor<?x1xf32>) -> tensor<?x1xf32> {
  %g = lie.exp %v {group = #lie.group<so2>} : tensor<?x1xf32> -> tensor<?x2x2xf32>
  %w = lie.log %g {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?x1xf32>
  return %w : tensor<?x1xf32>
}

// -----

// dist2(a, a) -> 0
// CHECK-LABEL: func.func @dist2_self
//  CHECK-SAME:   (%[[A:.*]]: tensor<?x2x2xf32>)
//   CHECK-DAG:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
//   CHECK-DAG:   %[[C0:.*]] = arith.constant 0 : index
//       CHECK:   %[[N:.*]] = tensor.dim %[[A]], %[[C0]]
//       CHECK:   %[[S:.*]] = tensor.splat %[[ZERO]][%[[N]]] : tensor<?xf32>
//   CHECK-NOT:   lie.dist2
//       CHECK:   return %[[S]]
func.func @dist2_self(%a: tensor<?x2x2xf32>) -> tensor<?xf32> {
  %d = lie.dist2 %a, %a {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?xf32>
  return %d : tensor<?xf32>
}

// CHECK-LABEL: func.func @no_fold_dist2_distinct
//       CHECK:   lie.dist2
func.func @no_fold_dist2_distinct(%a: tensor<?x2x2xf32>, %b: tensor<?x2x2xf32>) -> tensor<?xf32> {
  %d = lie.dist2 %a, %b {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?xf32>
  return %d : tensor<?xf32>
}
