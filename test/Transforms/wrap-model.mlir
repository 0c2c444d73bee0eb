// RUN: torsor-opt %s --torsor-wrap-model --split-input-file --verify-diagnostics | FileCheck %s

// The model becomes private and a destination-passing wrapper takes one
// memref per input, param and output, in that order.
// CHECK-LABEL: func.func private @Model
// CHECK-LABEL: func.func @torsor_model
//  CHECK-SAME:   (%[[X:.*]]: memref<?x8xf32>, %[[W:.*]]: memref<8x8xf32>, %[[Y:.*]]: memref<?x8xf32>)
//  CHECK-SAME:   attributes {llvm.emit_c_interface, torsor.param_args = array<i64: 1, 2>}
//   CHECK-DAG:   %[[XT:.*]] = bufferization.to_tensor %[[X]] restrict : memref<?x8xf32> to tensor<?x8xf32>
//   CHECK-DAG:   %[[WT:.*]] = bufferization.to_tensor %[[W]] restrict : memref<8x8xf32> to tensor<8x8xf32>
//       CHECK:   %[[R:.*]] = call @Model(%[[XT]], %[[WT]])
//       CHECK:   bufferization.materialize_in_destination %[[R]] in restrict writable %[[Y]]
//       CHECK:   return
func.func @Model(%x: tensor<?x8xf32> {torsor.name = "x", torsor.kind = "input"},
                 %w: tensor<8x8xf32> {torsor.name = "W", torsor.kind = "param"})
    -> (tensor<?x8xf32> {torsor.name = "y"}) {
  return %x : tensor<?x8xf32>
}

// -----

// Plain MLIR without a model function is left alone.
// CHECK-LABEL: func.func @helper
//   CHECK-NOT:   torsor_model
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

func.func @A(%x: tensor<4xf32> {torsor.name = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{more than one model function: 'A' and 'B'}}
func.func @B(%x: tensor<4xf32> {torsor.name = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{model arguments and results must be ranked tensors at the runtime ABI, got 'f32'}}
func.func @Scalar(%x: f32 {torsor.name = "x"}) -> f32 {
  return %x : f32
}

// -----

// Inputs in a declared group also get `torsor_group_residual`'s wrapper:
// one memref per such input, then one residual memref each (the input's
// shape without its n×n dims), filled by lie.membership_residual. Built-in
// groups (checked by the runtime itself) get none.
// CHECK-LABEL: func.func private @HeisModel
// CHECK-LABEL: func.func @torsor_residual
//  CHECK-SAME:   (%[[G:.*]]: memref<?x3x3xf32>, %[[R:.*]]: memref<?xf32>)
//  CHECK-SAME:   attributes {llvm.emit_c_interface}
//       CHECK:   %[[GT:.*]] = bufferization.to_tensor %[[G]] restrict
//       CHECK:   %[[RES:.*]] = lie.membership_residual %[[GT]] {group = #lie.group<"Heis3"
//       CHECK:   bufferization.materialize_in_destination %[[RES]] in restrict writable %[[R]]
// CHECK-LABEL: func.func @torsor_model
//  CHECK-SAME:   (%{{.*}}: memref<?x3x3xf32>, %{{.*}}: memref<?x4x4xf32>, %{{.*}}: memref<?x3x3xf32>)
func.func @HeisModel(%g: tensor<?x3x3xf32> {torsor.name = "g", torsor.kind = "input", torsor.group = "Heis3"},
                     %p: tensor<?x4x4xf32> {torsor.name = "p", torsor.kind = "input", torsor.group = "SE3"})
    -> (tensor<?x3x3xf32> {torsor.name = "y"}) {
  %i = lie.inverse %g {group = #lie.group<"Heis3", n = 3, generators = array<f64: 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, blocks = [["all", 0, 1, 2]]>} : tensor<?x3x3xf32>
  %q = lie.inverse %p {group = #lie.group<se3>} : tensor<?x4x4xf32>
  return %i : tensor<?x3x3xf32>
}
