// RUN: torsor-opt %s --split-input-file --geo-fuse-attention | FileCheck %s
// RUN: torsor-opt %s --split-input-file --geo-fuse-attention=lse=false | FileCheck %s --check-prefix=NOLSE

// SO(3): 9 features per token on both sides, keys transposed feature-major,
// one flash op with the attributes of the original; no L × L tensor.
// CHECK-LABEL: func.func @so3
//  CHECK-SAME:   (%[[G:.*]]: tensor<?x3x3xf32>, %[[V:.*]]: tensor<?x64xf32>)
//   CHECK-DAG:   %[[ZERO:.*]] = arith.constant 0 : index
//   CHECK-DAG:   %[[Q:.*]] = lie.pair_features %[[G]] {group = #lie.group<so3>} : tensor<?x3x3xf32> -> tensor<?x9xf32>
//   CHECK-DAG:   %[[K:.*]] = lie.pair_features %[[G]] {group = #lie.group<so3>, key} : tensor<?x3x3xf32> -> tensor<?x9xf32>
//       CHECK:   %[[KT:.*]] = linalg.transpose ins(%[[K]] : tensor<?x9xf32>) outs(%{{.*}} : tensor<9x?xf32>) permutation = [1, 0]
//       CHECK:   %[[O:.*]] = geo.flash_lie_attention %[[Q]], %[[KT]], %[[V]], %[[ZERO]], %{{.*}} {scores = #geo.scores<group = #lie.group<so3>, heads = 2, {{.*}}, causal>}
//   CHECK-NOT:   key_tile
//   CHECK-NOT:   geo.lie_attention
//       CHECK:   return %[[O]]
func.func @so3(%g: tensor<?x3x3xf32>, %v: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5], causal>} : (tensor<?x3x3xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %o : tensor<?x64xf32>
}

// -----

// SE(3) with a batch dim: 12 features (R, t); the transpose swaps only the
// last two dims.
// CHECK-LABEL: func.func @se3_batch
//       CHECK:   lie.pair_features %{{.*}} {group = #lie.group<se3>} : tensor<2x?x4x4xf64> -> tensor<2x?x12xf64>
//       CHECK:   linalg.transpose ins(%{{.*}} : tensor<2x?x12xf64>) outs(%{{.*}} : tensor<2x12x?xf64>) permutation = [0, 2, 1]
//       CHECK:   geo.flash_lie_attention {{.*}} : (tensor<2x?x12xf64>, tensor<2x12x?xf64>, tensor<2x?x8xf64>, index, tensor<2x?x8xf64>) -> tensor<2x?x8xf64>
func.func @se3_batch(%g: tensor<2x?x4x4xf64>, %v: tensor<2x?x8xf64>) -> tensor<2x?x8xf64> {
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<se3>, heads = 1, tau = [1.0], lambda = [1.0, 0.25]>} : (tensor<2x?x4x4xf64>, tensor<2x?x8xf64>) -> tensor<2x?x8xf64>
  return %o : tensor<2x?x8xf64>
}

// -----

// Aff(2): dist2's relative log per pair; the top rows and 1/det A (query)
// or det B (key), 7 features each.
// CHECK-LABEL: func.func @aff2
//       CHECK:   lie.pair_features %{{.*}} {group = #lie.group<aff2>} : tensor<?x3x3xf32> -> tensor<?x7xf32>
//       CHECK:   geo.flash_lie_attention
func.func @aff2(%g: tensor<?x3x3xf32>, %v: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<aff2>, heads = 1, tau = [1.0], lambda = [1.0, 1.0]>} : (tensor<?x3x3xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}

// -----

// A gradient of this very attention (what the rule of geo.lie_attention
// emits: pair features of the same poses, keys transposed, same values
// and attributes) takes the fused forward's log-sum-exp, so the backward
// does not recompute it. Batch dims stay.
// CHECK-LABEL: func.func @with_gradient
//       CHECK:   %[[LSE0:.*]] = tensor.empty({{.*}}) : tensor<2x?x2xf32>
//       CHECK:   %[[O:.*]], %[[LSE:.*]] = geo.flash_lie_attention {{.*}} lse %[[LSE0]] {{.*}} -> (tensor<2x?x8xf32>, tensor<2x?x2xf32>)
//       CHECK:   geo.flash_lie_attention_grad {{.*}}, %[[O]], %{{.*}} lse %[[LSE]]
// With lse=false (the NVPTX pipeline) the gradient recomputes the statistics.
// NOLSE-LABEL: func.func @with_gradient
//   NOLSE-NOT:   lse
//       NOLSE:   return
func.func @with_gradient(%g: tensor<2x?x3x3xf32>, %v: tensor<2x?x8xf32>, %do: tensor<2x?x8xf32>) -> (tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>) {
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5]>} : (tensor<2x?x3x3xf32>, tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  %q = lie.pair_features %g {group = #lie.group<so3>} : tensor<2x?x3x3xf32> -> tensor<2x?x9xf32>
  %k = lie.pair_features %g {group = #lie.group<so3>, key} : tensor<2x?x3x3xf32> -> tensor<2x?x9xf32>
  %c1 = arith.constant 1 : index
  %n = tensor.dim %g, %c1 : tensor<2x?x3x3xf32>
  %e = tensor.empty(%n) : tensor<2x9x?xf32>
  %kt = linalg.transpose ins(%k : tensor<2x?x9xf32>) outs(%e : tensor<2x9x?xf32>) permutation = [0, 2, 1]
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %kt, %v, %o, %do {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5]>} : (tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>) -> (tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>)
  return %dq, %dk, %dv : tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>
}

// -----

// A gradient of a different attention (other τ) gets no lse: its
// statistics are not the forward's.
// CHECK-LABEL: func.func @other_gradient
//       CHECK:   geo.flash_lie_attention {{.*}} -> tensor<?x8xf32>
//   CHECK-NOT:   lse
//       CHECK:   return
func.func @other_gradient(%g: tensor<?x3x3xf32>, %v: tensor<?x8xf32>, %do: tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x3x3xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %q = lie.pair_features %g {group = #lie.group<so3>} : tensor<?x3x3xf32> -> tensor<?x9xf32>
  %k = lie.pair_features %g {group = #lie.group<so3>, key} : tensor<?x3x3xf32> -> tensor<?x9xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %g, %c0 : tensor<?x3x3xf32>
  %e = tensor.empty(%n) : tensor<9x?xf32>
  %kt = linalg.transpose ins(%k : tensor<?x9xf32>) outs(%e : tensor<9x?xf32>) permutation = [1, 0]
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %kt, %v, %o, %do {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [2.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return %dq, %dk, %dv : tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>
}

// -----

// The cross form: query features of g_q, feature-major key features of
// g_k, and the flash op's cross form with both offsets and the lse.
// CHECK-LABEL: func.func @cross
//  CHECK-SAME:   (%[[GQ:[^:]*]]: tensor<?x3x3xf32>, %[[GK:[^:]*]]: tensor<?x3x3xf32>, %[[V:[^:]*]]: tensor<?x8xf32>, %[[QO:[^:]*]]: index, %[[KO:[^:]*]]: index)
//   CHECK-DAG:   %[[Q:.*]] = lie.pair_features %[[GQ]] {group = #lie.group<so3>}
//   CHECK-DAG:   %[[K:.*]] = lie.pair_features %[[GK]] {group = #lie.group<so3>, key}
//       CHECK:   %[[KT:.*]] = linalg.transpose ins(%[[K]]
//       CHECK:   %[[O:.*]], %[[LSE:.*]] = geo.flash_lie_attention %[[Q]], %[[KT]], %[[V]], %[[QO]] key_offset %[[KO]], %{{.*}} lse %{{.*}} {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5], causal>}
//   CHECK-NOT:   geo.lie_cross_attention
//       CHECK:   return %[[O]], %[[LSE]]
// NOLSE-LABEL: func.func @cross
//       NOLSE:   geo.flash_lie_attention {{.*}} key_offset {{.*}} lse
func.func @cross(%gq: tensor<?x3x3xf32>, %gk: tensor<?x3x3xf32>, %v: tensor<?x8xf32>,
                 %qo: index, %ko: index) -> (tensor<?x8xf32>, tensor<?x2xf32>) {
  %out, %lse = geo.lie_cross_attention %gq, %gk, %v, %qo, %ko {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5], causal>}
      : (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>, index, index)
        -> (tensor<?x8xf32>, tensor<?x2xf32>)
  return %out, %lse : tensor<?x8xf32>, tensor<?x2xf32>
}
