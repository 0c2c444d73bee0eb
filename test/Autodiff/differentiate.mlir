// RUN: torsor-opt %s --torsor-differentiate --split-input-file --verify-diagnostics | FileCheck %s

// y = x @ W: dx = dy·Wᵀ and dW = xᵀ·dy as named matmuls, after the
// recomputed forward product.
// CHECK-LABEL: func.func @torsor_model_backward
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x4xf32> {{.*}}"x"}, %[[W:.*]]: tensor<4x3xf32> {{.*}}"W"}, %[[DY:.*]]: tensor<?x3xf32> {torsor.dims = ["L", 3], torsor.kind = "cotangent", torsor.name = "cot.y"})
//  CHECK-SAME:   -> (tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.grad_of = "x", torsor.name = "grad.x"}, tensor<4x3xf32> {torsor.dims = [4, 3], torsor.grad_of = "W", torsor.name = "grad.W"})
//  CHECK-SAME:   attributes {torsor.backward}
//       CHECK:   linalg.matmul ins(%[[X]], %[[W]]
//       CHECK:   %[[WT:.*]] = linalg.transpose ins(%[[W]]
//       CHECK:   %[[GX:.*]] = linalg.matmul ins(%[[DY]], %[[WT]]
//       CHECK:   %[[XT:.*]] = linalg.transpose ins(%[[X]]
//       CHECK:   %[[GW:.*]] = linalg.matmul ins(%[[XT]], %[[DY]]
//       CHECK:   return %[[GX]], %[[GW]]
func.func @matmul(%x: tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"},
                  %w: tensor<4x3xf32> {torsor.dims = [4, 3], torsor.kind = "param", torsor.name = "W"})
    -> (tensor<?x3xf32> {torsor.dims = ["L", 3], torsor.name = "y"}) {
  %c0 = arith.constant 0 : index
  %l = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%l) : tensor<?x3xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x3xf32>) -> tensor<?x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x4xf32>, tensor<4x3xf32>) outs(%f : tensor<?x3xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// A broadcast add: the bias gradient sums the cotangent over the broadcast
// dim (a reduction loop in the backward generic); integer inputs get no
// gradient.
// CHECK-LABEL: func.func @torsor_model_backward
//  CHECK-SAME:   -> (tensor<?x4xf32> {{.*}}"grad.x"}, tensor<4xf32> {{.*}}"grad.b"})
//       CHECK:   linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
//  CHECK-SAME:     outs(%{{.*}} : tensor<4xf32>)
//   CHECK-NOT:   grad.n
func.func @bias(%x: tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"},
                %n: tensor<?xi64> {torsor.dims = ["L"], torsor.kind = "input", torsor.name = "n"},
                %b: tensor<4xf32> {torsor.dims = [4], torsor.kind = "param", torsor.name = "b"})
    -> (tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.name = "y"}) {
  %c0 = arith.constant 0 : index
  %l = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%l) : tensor<?x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<?x4xf32>, tensor<4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// An op on the gradient path without a rule is an error at that op.
func.func @no_rule(%x: tensor<4xf32> {torsor.dims = [4], torsor.kind = "input", torsor.name = "x"})
    -> (tensor<4xf32> {torsor.dims = [4], torsor.name = "y"}) {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    // expected-error @+1 {{no gradient rule for 'math.tan' (torsor-differentiate)}}
    %t = math.tan %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Products are not among the differentiable reductions.
func.func @product(%x: tensor<4xf32> {torsor.dims = [4], torsor.kind = "input", torsor.name = "x"})
    -> (tensor<f32> {torsor.dims = [], torsor.name = "y"}) {
  %e = tensor.empty() : tensor<f32>
  %one = arith.constant 1.0 : f32
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-error @+1 {{no gradient for this reduction: only sums and max/min reductions are differentiable}}
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %o, %a : f32
    linalg.yield %p : f32
  } -> tensor<f32>
  return %y : tensor<f32>
}
