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

// -----

// geo.lie_attention with batch dims ([B, C, L] SE(3) poses): the flash
// backward on batched pair features (no unfused fallback), the features'
// pullbacks to the poses, and the left-trivialised gradient. No tensor has
// two sequence-length dims: nothing is L × L.
// CHECK-LABEL: func.func @torsor_model_backward
//       CHECK:   geo.lie_attention
//       CHECK:   lie.pair_features {{.*}} : tensor<2x?x?x4x4xf64> -> tensor<2x?x?x12xf64>
//       CHECK:   linalg.transpose ins(%{{.*}} : tensor<2x?x?x12xf64>) outs(%{{.*}} : tensor<2x?x12x?xf64>) permutation = [0, 1, 3, 2]
//       CHECK:   geo.flash_lie_attention_grad {{.*}} -> (tensor<2x?x?x12xf64>, tensor<2x?x12x?xf64>, tensor<2x?x?x8xf64>)
//       CHECK:   lie.pullback query_features
//       CHECK:   lie.pullback key_features
//       CHECK:   lie.pullback left_trivialize
//   CHECK-NOT:   lie.compose
//   CHECK-NOT:   lie.log
//   CHECK-NOT:   tensor<2x?x?x?x
//       CHECK:   return
func.func @batched_attention(%g: tensor<2x?x?x4x4xf64> {torsor.dims = ["B", "C", "L", 4, 4], torsor.group = "SE3", torsor.kind = "input", torsor.name = "g"},
                             %x: tensor<2x?x?x8xf64> {torsor.dims = ["B", "C", "L", 8], torsor.kind = "input", torsor.name = "x"})
    -> (tensor<2x?x?x8xf64> {torsor.dims = ["B", "C", "L", 8], torsor.name = "y"}) {
  %y = geo.lie_attention %g, %x {scores = #geo.scores<group = #lie.group<se3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5, 0.25, 1.0], causal>} : (tensor<2x?x?x4x4xf64>, tensor<2x?x?x8xf64>) -> tensor<2x?x?x8xf64>
  return %y : tensor<2x?x?x8xf64>
}
