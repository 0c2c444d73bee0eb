// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=256 --geo-decompose-attention-grad --verify-diagnostics | FileCheck %s

// A causal SO(3) backward, 2 heads of 4 features, f32 (8 lanes). Pass A
// runs over query tiles (parallel): a stats loop (running max and vector
// sums) then a gradient loop that reads keys and values feature-major and
// accumulates dq per lane; pass B runs over key vectors (parallel) with an
// inner loop over the queries accumulating dk (9) and dv (8) per lane.
// Every tensor the kernel creates has at most one sequence-length dim:
// nothing is L × L.
// CHECK-LABEL: func.func @so3_causal
//       CHECK:   linalg.transpose
//       CHECK:   scf.for
//       CHECK:     scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, vector<8xf32>
//       CHECK:       vector.reduction <maximumf>
//       CHECK:     scf.for
//       CHECK:       vector.transfer_read {{.*}} : tensor<8x?xf32>, vector<8xf32>
//       CHECK:       math.sqrt {{.*}} : vector<8xf32>
//       CHECK:   } {torsor.parallel}
//       CHECK:   scf.for
//       CHECK:     scf.for
//       CHECK:       vector.step
//       CHECK:     vector.transfer_write {{.*}} : vector<8xf32>, tensor<9x?xf32>
//       CHECK:   } {torsor.parallel}
//   CHECK-NOT:   tensor<?x?x
//   CHECK-NOT:   geo.flash_lie_attention_grad
//   CHECK-NOT:   math.atan2
//       CHECK:   return
func.func @so3_causal(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %o: tensor<?x8xf32>, %do: tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {group = #lie.group<so3>, heads = 2 : i64, tau = array<f64: 1.0, 2.0>, lambda = array<f64: 1.0, 0.5>, causal} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return %dq, %dk, %dv : tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>
}

// -----

// SE(3) in f64 (4 lanes), not causal: two blocks, so the adjoint of the
// pair form takes two norm cotangents; dk has 12 features.
// CHECK-LABEL: func.func @se3_full
//       CHECK:   scf.for
//       CHECK:     vector.transfer_read {{.*}} : tensor<12x?xf64>, vector<4xf64>
//       CHECK:   } {torsor.parallel}
//       CHECK:   vector.transfer_write {{.*}} : vector<4xf64>, tensor<12x?xf64>
//   CHECK-NOT:   tensor<?x?x
//       CHECK:   return
func.func @se3_full(%q: tensor<?x12xf64>, %k: tensor<12x?xf64>, %v: tensor<?x4xf64>, %o: tensor<?x4xf64>, %do: tensor<?x4xf64>) -> (tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x4xf64>) {
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {group = #lie.group<se3>, heads = 1 : i64, tau = array<f64: 1.0>, lambda = array<f64: 1.0, 0.25>} : (tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x4xf64>, tensor<?x4xf64>, tensor<?x4xf64>) -> (tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x4xf64>)
  return %dq, %dk, %dv : tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x4xf64>
}
