// RUN: torsor-opt %s | torsor-opt | FileCheck %s

// CHECK-LABEL: func.func @group_ops
//  CHECK-SAME:   (%[[A:.*]]: tensor<?x2x2xf32>, %[[B:.*]]: tensor<?x2x2xf32>, %[[N:.*]]: index)
func.func @group_ops(%a: tensor<?x2x2xf32>, %b: tensor<?x2x2xf32>, %n: index)
    -> (tensor<?x2x2xf32>, tensor<?x2x2xf32>, tensor<?x2x2xf32>) {
  // CHECK: %[[E:.*]] = lie.identity %[[N]] {group = #lie.group<so2>} : tensor<?x2x2xf32>
  %e = lie.identity %n {group = #lie.group<so2>} : tensor<?x2x2xf32>
  // CHECK: %[[C:.*]] = lie.compose %[[A]], %[[B]] {group = #lie.group<so2>} : tensor<?x2x2xf32>
  %c = lie.compose %a, %b {group = #lie.group<so2>} : tensor<?x2x2xf32>
  // CHECK: %[[I:.*]] = lie.inverse %[[C]] {group = #lie.group<so2>} : tensor<?x2x2xf32>
  %i = lie.inverse %c {group = #lie.group<so2>} : tensor<?x2x2xf32>
  // CHECK: return %[[E]], %[[C]], %[[I]]
  return %e, %c, %i : tensor<?x2x2xf32>, tensor<?x2x2xf32>, tensor<?x2x2xf32>
}

// CHECK-LABEL: func.func @chart_ops
func.func @chart_ops(%g: tensor<4x7x2x2xf64>) -> tensor<4x7x2x2xf64> {
  // CHECK: %[[W:.*]] = lie.log %{{.*}} {group = #lie.group<so2>} : tensor<4x7x2x2xf64> -> tensor<4x7x1xf64>
  %w = lie.log %g {group = #lie.group<so2>} : tensor<4x7x2x2xf64> -> tensor<4x7x1xf64>
  // CHECK: lie.exp %[[W]] {group = #lie.group<so2>} : tensor<4x7x1xf64> -> tensor<4x7x2x2xf64>
  %r = lie.exp %w {group = #lie.group<so2>} : tensor<4x7x1xf64> -> tensor<4x7x2x2xf64>
  return %r : tensor<4x7x2x2xf64>
}

// CHECK-LABEL: func.func @act_and_dist2
func.func @act_and_dist2(%g: tensor<?x2x2xf32>, %p: tensor<?x2xf32>, %h: tensor<?x2x2xf32>)
    -> (tensor<?x2xf32>, tensor<?xf32>, tensor<?xf32>) {
  // CHECK: lie.act %{{.*}}, %{{.*}} {group = #lie.group<so2>} : tensor<?x2x2xf32>, tensor<?x2xf32> -> tensor<?x2xf32>
  %q = lie.act %g, %p {group = #lie.group<so2>} : tensor<?x2x2xf32>, tensor<?x2xf32> -> tensor<?x2xf32>
  // CHECK: lie.dist2 %{{.*}}, %{{.*}} {group = #lie.group<so2>, lambda = array<f64: 2.500000e-01>} : tensor<?x2x2xf32> -> tensor<?xf32>
  %d = lie.dist2 %g, %h {group = #lie.group<so2>, lambda = array<f64: 0.25>} : tensor<?x2x2xf32> -> tensor<?xf32>
  // CHECK: lie.dist2 %{{.*}}, %{{.*}} {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?xf32>
  %u = lie.dist2 %g, %h {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?xf32>
  return %q, %d, %u : tensor<?x2xf32>, tensor<?xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @membership
func.func @membership(%g: tensor<?x2x2xf32>) -> tensor<?xf32> {
  // CHECK: lie.membership_residual %{{.*}} {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?xf32>
  %r = lie.membership_residual %g {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?xf32>
  return %r : tensor<?xf32>
}
