// RUN: torsor-opt %s --split-input-file --torsor-split-shared-fills | FileCheck %s

// A zero fill of an empty tensor that two reductions share (CSE's form):
// one reduction keeps it, the other gets a fill of its own empty tensor,
// placed right after the original.

// CHECK-LABEL: func.func @shared
//       CHECK:   %[[E1:.*]] = tensor.empty() : tensor<64xf32>
//       CHECK:   %[[Z1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<64xf32>)
//       CHECK:   %[[E2:.*]] = tensor.empty() : tensor<64xf32>
//       CHECK:   %[[Z2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<64xf32>)
//       CHECK:   linalg.reduce ins(%{{.*}} : tensor<?x64xf32>) outs(%[[Z2]] : tensor<64xf32>)
//       CHECK:   linalg.reduce ins(%{{.*}} : tensor<?x64xf32>) outs(%[[Z1]] : tensor<64xf32>)
func.func @shared(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %a = linalg.reduce ins(%x : tensor<?x64xf32>) outs(%z : tensor<64xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %b = linalg.reduce ins(%y : tensor<?x64xf32>) outs(%z : tensor<64xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----

// A dynamic empty tensor is copied with its size; a fill with one use, and
// a fill of a tensor that is not empty (a copy of it would write the same
// tensor again), stay as they are.

// CHECK-LABEL: func.func @kept
//  CHECK-SAME:   %[[N:[^:]*]]: index
//       CHECK:   tensor.empty(%[[N]]) : tensor<?xf32>
//       CHECK:   linalg.fill
//       CHECK:   tensor.empty(%[[N]]) : tensor<?xf32>
//       CHECK:   linalg.fill
//   CHECK-NOT:   tensor.empty
//       CHECK:   %[[ONE:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
//   CHECK-NOT:   linalg.fill
//       CHECK:   return
func.func @kept(%n: index, %t: tensor<4xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  return %z, %z, %f, %f : tensor<?xf32>, tensor<?xf32>, tensor<4xf32>, tensor<4xf32>
}
