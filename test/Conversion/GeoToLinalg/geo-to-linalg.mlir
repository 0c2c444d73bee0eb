// RUN: torsor-opt %s --convert-geo-to-linalg | FileCheck %s

// The unfused lowering: every geo op becomes linalg/tensor/arith/math/scf
// (plus lie ops for the group math of lie_attention), and no geo op is left.

// CHECK-NOT: geo.

// Pairwise log coordinates row by row, per-head weighted squared norms from
// a constant coefficient table (−λ/τ), masked stable softmax, and a per-head
// weighted sum of v viewed as [L, heads, D/heads].
// CHECK-LABEL: func.func @lie_attention_causal
//  CHECK-SAME:   (%[[G:.*]]: tensor<?x2x2xf32>, %[[V:.*]]: tensor<?x8xf32>)
//       CHECK:   %[[INV:.*]] = lie.inverse %[[G]] {group = #lie.group<so2>}
//       CHECK:   %[[W:.*]] = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<?x?x1xf32>)
//       CHECK:     %[[ROW:.*]] = tensor.extract_slice %[[INV]][%[[I]], 0, 0] [1, 2, 2] [1, 1, 1] : tensor<?x2x2xf32> to tensor<2x2xf32>
//       CHECK:     %[[ROWS:.*]] = linalg.broadcast ins(%[[ROW]] : tensor<2x2xf32>) outs(%{{.*}} : tensor<?x2x2xf32>) dimensions = [0]
//       CHECK:     %[[REL:.*]] = lie.compose %[[ROWS]], %[[G]]
//       CHECK:     %[[LOG:.*]] = lie.log %[[REL]] {{.*}} -> tensor<?x1xf32>
//       CHECK:     %[[SLAB:.*]] = tensor.extract_slice %[[ACC]][%[[I]], 0, 0]
//       CHECK:     %[[COPY:.*]] = linalg.copy ins(%[[LOG]] : tensor<?x1xf32>) outs(%[[SLAB]] : tensor<?x1xf32>)
//       CHECK:     %[[NEXT:.*]] = tensor.insert_slice %[[COPY]] into %[[ACC]][%[[I]], 0, 0]
//       CHECK:     scf.yield %[[NEXT]]
//       CHECK:   %[[COEF:.*]] = arith.constant dense<{{\[}}[-1.000000e+00], [-2.500000e-01]]> : tensor<2x1xf32>
//       CHECK:   %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[W]], %[[COEF]] : tensor<?x?x1xf32>, tensor<2x1xf32>) outs(%{{.*}} : tensor<2x?x?xf32>)
//       CHECK:     arith.mulf
//       CHECK:     arith.mulf
//       CHECK:     arith.addf
//       CHECK:   %[[MASKED:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<2x?x?xf32>)
//   CHECK-DAG:     %[[QI:.*]] = linalg.index 1
//   CHECK-DAG:     %[[KJ:.*]] = linalg.index 2
//       CHECK:     %[[SEEN:.*]] = arith.cmpi ule, %[[KJ]], %[[QI]]
//       CHECK:     arith.select %[[SEEN]]
//       CHECK:   %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[MASKED]] : tensor<2x?x?xf32>) outs(%{{.*}} : tensor<2x?xf32>)
//       CHECK:     arith.maximumf
//       CHECK:   %[[E:.*]] = linalg.generic {{.*}} ins(%[[MASKED]], %[[MAX]] : tensor<2x?x?xf32>, tensor<2x?xf32>)
//       CHECK:     arith.subf
//       CHECK:     math.exp
//       CHECK:   %[[Z:.*]] = linalg.generic {{.*}} ins(%[[E]] : tensor<2x?x?xf32>) outs(%{{.*}} : tensor<2x?xf32>)
//       CHECK:   %[[P:.*]] = linalg.generic {{.*}} ins(%[[E]], %[[Z]] : tensor<2x?x?xf32>, tensor<2x?xf32>)
//       CHECK:     arith.divf
//       CHECK:   %[[V4:.*]] = tensor.expand_shape %[[V]] {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
//       CHECK:   %[[O4:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[P]], %[[V4]] : tensor<2x?x?xf32>, tensor<?x2x4xf32>) outs(%{{.*}} : tensor<?x2x4xf32>)
//       CHECK:   %[[O:.*]] = tensor.collapse_shape %[[O4]] {{\[}}[0], [1, 2]] : tensor<?x2x4xf32> into tensor<?x8xf32>
//       CHECK:   return %[[O]]
func.func @lie_attention_causal(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %out = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5], causal>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %out : tensor<?x8xf32>
}

// A batch dim rides along in every step; without `causal` there is no mask.
// CHECK-LABEL: func.func @lie_attention_batched
//       CHECK:   scf.for {{.*}} -> (tensor<3x?x?x1xf64>)
//       CHECK:     tensor.extract_slice {{.*}} : tensor<3x?x2x2xf64> to tensor<3x2x2xf64>
//       CHECK:     linalg.broadcast {{.*}} dimensions = [1]
//       CHECK:   arith.constant dense<-2.000000e+00> : tensor<1x1xf64>
//   CHECK-NOT:   arith.cmpi
//       CHECK:   arith.maximumf
//       CHECK:   tensor.expand_shape {{.*}} : tensor<3x?x4xf64> into tensor<3x?x1x4xf64>
//       CHECK:   tensor.collapse_shape {{.*}} : tensor<3x?x1x4xf64> into tensor<3x?x4xf64>
func.func @lie_attention_batched(%g: tensor<3x?x2x2xf64>, %v: tensor<3x?x4xf64>) -> tensor<3x?x4xf64> {
  %out = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [0.5], lambda = [1.0]>}
      : (tensor<3x?x2x2xf64>, tensor<3x?x4xf64>) -> tensor<3x?x4xf64>
  return %out : tensor<3x?x4xf64>
}

// λ is per head per block; the coefficient table repeats each block's
// −λ/τ over the block's coordinates (SE(2): rot = θ, trans = ρ₀, ρ₁).
// CHECK-LABEL: func.func @lie_attention_blocks
//       CHECK:   lie.log {{.*}} : tensor<?x3x3xf32> -> tensor<?x3xf32>
//       CHECK:   arith.constant dense<{{\[}}[-1.000000e+00, -5.000000e-01, -5.000000e-01], [-1.000000e+00, -2.000000e+00, -2.000000e+00]]> : tensor<2x3xf32>
func.func @lie_attention_blocks(%g: tensor<?x3x3xf32>, %v: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %out = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<se2>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5, 2.0, 4.0]>}
      : (tensor<?x3x3xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %out : tensor<?x4xf32>
}

// One generic over the C(r,2) outputs gathering u_a, u_b, v_a, v_b through
// constant pair tables (lexicographic a < b).
// CHECK-LABEL: func.func @plucker
//  CHECK-SAME:   (%[[U:.*]]: tensor<?x4xf32>, %[[W:.*]]: tensor<?x4xf32>)
//   CHECK-DAG:   %[[TA:.*]] = arith.constant dense<[0, 0, 0, 1, 1, 2]> : tensor<6xindex>
//   CHECK-DAG:   %[[TB:.*]] = arith.constant dense<[1, 2, 3, 2, 3, 3]> : tensor<6xindex>
//       CHECK:   %[[P:.*]] = linalg.generic {{.*}} ins(%[[TA]], %[[TB]] : tensor<6xindex>, tensor<6xindex>) outs(%{{.*}} : tensor<?x6xf32>)
//       CHECK:   ^bb0(%[[A:.*]]: index, %[[B:.*]]: index, %{{.*}}: f32):
//       CHECK:     %[[T:.*]] = linalg.index 0
//   CHECK-DAG:     %[[UA:.*]] = tensor.extract %[[U]][%[[T]], %[[A]]]
//   CHECK-DAG:     %[[UB:.*]] = tensor.extract %[[U]][%[[T]], %[[B]]]
//   CHECK-DAG:     %[[WA:.*]] = tensor.extract %[[W]][%[[T]], %[[A]]]
//   CHECK-DAG:     %[[WB:.*]] = tensor.extract %[[W]][%[[T]], %[[B]]]
//   CHECK-DAG:     %[[L:.*]] = arith.mulf %[[UA]], %[[WB]]
//   CHECK-DAG:     %[[R:.*]] = arith.mulf %[[UB]], %[[WA]]
//       CHECK:     %[[D:.*]] = arith.subf %[[L]], %[[R]]
//       CHECK:     linalg.yield %[[D]]
//       CHECK:   return %[[P]]
func.func @plucker(%u: tensor<?x4xf32>, %w: tensor<?x4xf32>) -> tensor<?x6xf32> {
  %p = geo.plucker %u, %w : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x6xf32>
  return %p : tensor<?x6xf32>
}

// z = h W_redᵀ + b_red; per offset (two here) slices of z pair rows t with
// t − Δ, the normalised Plücker coordinates go through W_plu and are added
// into an accumulator; then the mean over valid offsets and the gate.
// CHECK-LABEL: func.func @grassmann_mix_causal
//  CHECK-SAME:   (%[[H:[^:]*]]: tensor<?x8xf32>, %[[WR:[^:]*]]: tensor<4x8xf32>, %[[BR:[^:]*]]: tensor<4xf32>, %[[WP:[^:]*]]: tensor<8x6xf32>, %[[BP:[^:]*]]: tensor<8xf32>, %[[WG:[^:]*]]: tensor<8x16xf32>, %[[BG:[^:]*]]: tensor<8xf32>)
//       CHECK:   %[[ZB:.*]] = linalg.broadcast ins(%[[BR]] : tensor<4xf32>)
//       CHECK:   %[[Z:.*]] = linalg.generic {{.*}} ins(%[[H]], %[[WR]] : tensor<?x8xf32>, tensor<4x8xf32>) outs(%[[ZB]] : tensor<?x4xf32>)
// Offset 1: rows [min(1, L), L) pair with rows [0, L − 1).
//       CHECK:   %[[N1:.*]] = arith.maxsi
//       CHECK:   %[[F1:.*]] = arith.minsi
//       CHECK:   %[[SELF1:.*]] = tensor.extract_slice %[[Z]][%[[F1]], 0] [%[[N1]], 4]
//       CHECK:   %[[PART1:.*]] = tensor.extract_slice %[[Z]][0, 0] [%[[N1]], 4]
//       CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<?x6xf32>)
//       CHECK:     tensor.extract %[[SELF1]]
//       CHECK:     tensor.extract %[[PART1]]
//       CHECK:   math.sqrt
//  CHECK-NEXT:   arith.maximumf
//  CHECK-NEXT:   arith.divf
//       CHECK:   linalg.broadcast ins(%[[BP]] : tensor<8xf32>)
//       CHECK:   %[[G1:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[WP]] : tensor<?x6xf32>, tensor<8x6xf32>)
//       CHECK:   %[[ROWS1:.*]] = tensor.extract_slice %{{.*}}[%[[F1]], 0] [%[[N1]], 8]
//       CHECK:   %[[SUM1:.*]] = linalg.add ins(%[[ROWS1]], %[[G1]] : tensor<?x8xf32>, tensor<?x8xf32>) outs(%[[ROWS1]] : tensor<?x8xf32>)
//       CHECK:   %[[ACC1:.*]] = tensor.insert_slice %[[SUM1]] into %{{.*}}[%[[F1]], 0]
// Offset 3.
//       CHECK:   arith.constant 3 : index
//       CHECK:   linalg.add
//       CHECK:   %[[ACC3:.*]] = tensor.insert_slice %{{.*}} into %[[ACC1]]
// Mean over the valid offsets: count_t = [t ≥ 1] + [t ≥ 3].
//       CHECK:   %[[G:.*]] = linalg.generic {{.*}} ins(%[[ACC3]] : tensor<?x8xf32>)
//       CHECK:     %[[T:.*]] = linalg.index 0
//       CHECK:     arith.cmpi sge, %[[T]]
//       CHECK:     arith.cmpi sge, %[[T]]
//       CHECK:     arith.maximumf
//       CHECK:     arith.divf
// Gate on [h; g] through the two column halves of W_gate.
//   CHECK-DAG:   %[[WGH:.*]] = tensor.extract_slice %[[WG]][0, 0] [8, 8] [1, 1]
//   CHECK-DAG:   %[[WGG:.*]] = tensor.extract_slice %[[WG]][0, 8] [8, 8] [1, 1]
//       CHECK:   %[[PRE0:.*]] = linalg.generic {{.*}} ins(%[[H]], %[[WGH]]
//       CHECK:   %[[PRE:.*]] = linalg.generic {{.*}} ins(%[[G]], %[[WGG]] : {{.*}}) outs(%[[PRE0]]
//       CHECK:   %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[H]], %[[G]], %[[PRE]]
//       CHECK:     arith.negf
//       CHECK:     math.exp
//       CHECK:   return %[[OUT]]
func.func @grassmann_mix_causal(%h: tensor<?x8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                                %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                                %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<?x8xf32> {
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg
         {offsets = array<i64: 1, 3>, eps = 1.0e-6 : f64, causal}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// Looking ahead: rows [0, L − Δ) pair with rows [Δ, L); row t counts the
// offsets with t + Δ < L.
// CHECK-LABEL: func.func @grassmann_mix_ahead
//       CHECK:   %[[F:.*]] = arith.minsi
//       CHECK:   tensor.extract_slice %{{.*}}[0, 0]
//       CHECK:   tensor.extract_slice %{{.*}}[%[[F]], 0]
//       CHECK:   tensor.insert_slice %{{.*}}[0, 0]
//       CHECK:   linalg.generic
//       CHECK:     arith.addi
//       CHECK:     arith.cmpi slt
func.func @grassmann_mix_ahead(%h: tensor<?x8xf64>, %wr: tensor<4x8xf64>, %br: tensor<4xf64>,
                               %wp: tensor<8x6xf64>, %bp: tensor<8xf64>,
                               %wg: tensor<8x16xf64>, %bg: tensor<8xf64>) -> tensor<?x8xf64> {
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg
         {offsets = array<i64: 2>, eps = 1.0e-6 : f64}
      : (tensor<?x8xf64>, tensor<4x8xf64>, tensor<4xf64>, tensor<8x6xf64>,
         tensor<8xf64>, tensor<8x16xf64>, tensor<8xf64>) -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}

// q = x G_QK^h, s = scale · q xᵀ, p = softmax(s), u = x G_VO^h, and
// out = Σ_h p u with heads and keys both reduced in one generic.
// CHECK-LABEL: func.func @relational_attention
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x8xf32>, %[[QK:.*]]: tensor<2x8x8xf32>, %[[VO:.*]]: tensor<2x8x8xf32>)
//       CHECK:   %[[Q:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[QK]] : tensor<?x8xf32>, tensor<2x8x8xf32>) outs(%{{.*}} : tensor<2x?x8xf32>)
//       CHECK:   %[[S:.*]] = linalg.generic {{.*}} ins(%[[Q]], %[[X]] : tensor<2x?x8xf32>, tensor<?x8xf32>) outs(%{{.*}} : tensor<2x?x?xf32>)
//       CHECK:   %[[SCALE:.*]] = arith.constant 2.500000e-01 : f32
//       CHECK:   linalg.generic {{.*}} ins(%[[S]] : tensor<2x?x?xf32>)
//       CHECK:     arith.mulf %{{.*}}, %[[SCALE]]
//   CHECK-NOT:     arith.cmpi
//       CHECK:   arith.maximumf
//       CHECK:   %[[E:.*]] = linalg.generic
//       CHECK:     math.exp
//       CHECK:   %[[Z:.*]] = linalg.generic {{.*}} ins(%[[E]] : tensor<2x?x?xf32>) outs(%{{.*}} : tensor<2x?xf32>)
//       CHECK:   %[[P:.*]] = linalg.generic {{.*}} ins(%[[E]], %[[Z]] : tensor<2x?x?xf32>, tensor<2x?xf32>)
//  CHECK-NEXT:   ^bb0
//  CHECK-NEXT:     arith.divf
//       CHECK:   %[[U:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[VO]] : tensor<?x8xf32>, tensor<2x8x8xf32>) outs(%{{.*}} : tensor<2x?x8xf32>)
//       CHECK:   %[[OUT:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[P]], %[[U]] : tensor<2x?x?xf32>, tensor<2x?x8xf32>) outs(%{{.*}} : tensor<?x8xf32>)
//       CHECK:   return %[[OUT]]
func.func @relational_attention(%x: tensor<?x8xf32>, %gqk: tensor<2x8x8xf32>,
                                %gvo: tensor<2x8x8xf32>) -> tensor<?x8xf32> {
  %y = geo.relational_attention %x, %gqk, %gvo {heads = 2 : i64, scale = 0.25 : f64}
      : (tensor<?x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// Sum of squares per row, then x / sqrt(ss / d + eps): no gain, no centering.
// CHECK-LABEL: func.func @relational_norm
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x8xf32>)
//       CHECK:   %[[SS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<?x8xf32>) outs(%{{.*}} : tensor<?xf32>)
//   CHECK-DAG:   %[[D:.*]] = arith.constant 8.000000e+00 : f32
//   CHECK-DAG:   %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
//       CHECK:   %[[Y:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[SS]] : tensor<?x8xf32>, tensor<?xf32>)
//       CHECK:   ^bb0(%[[XI:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
//       CHECK:     %[[MEAN:.*]] = arith.divf %[[S]], %[[D]]
//       CHECK:     %[[V:.*]] = arith.addf %[[MEAN]], %[[EPS]]
//       CHECK:     %[[RMS:.*]] = math.sqrt %[[V]]
//       CHECK:     arith.divf %[[XI]], %[[RMS]]
//       CHECK:   return %[[Y]]
func.func @relational_norm(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = geo.relational_norm %x {eps = 1.0e-5 : f64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// CHECK-NOT: geo.

// The cross form: log(g_q,i⁻¹ g_k,j) of Lq rows against Lk keys, the
// causal mask at the offsets' diagonal (signed), a softmax whose empty
// rows give p = 0 and lse = −∞ (max taken as 0, p = e/z only for z > 0),
// and the lse transposed to [Lq, heads].
// CHECK-LABEL: func.func @lie_cross_attention
//  CHECK-SAME:   (%[[GQ:[^:]*]]: tensor<?x3x3xf64>, %[[GK:[^:]*]]: tensor<?x3x3xf64>, %[[V:[^:]*]]: tensor<?x4xf64>, %[[QO:[^:]*]]: index, %[[KO:[^:]*]]: index)
//       CHECK:   %[[DIAG:.*]] = arith.subi %[[QO]], %[[KO]] : index
//       CHECK:   %[[INV:.*]] = lie.inverse %[[GQ]]
//       CHECK:   scf.for
//       CHECK:     lie.compose %{{.*}}, %[[GK]]
//       CHECK:   linalg.generic
//       CHECK:     %[[LAST:.*]] = arith.addi %[[DIAG]], %{{.*}} : index
//       CHECK:     arith.cmpi sle, %{{.*}}, %[[LAST]]
//       CHECK:   arith.cmpf oeq
//       CHECK:   math.exp
//       CHECK:   arith.cmpf ogt
//       CHECK:   math.log
//       CHECK:   return %{{.*}}, %{{.*}} : tensor<?x4xf64>, tensor<?x1xf64>
func.func @lie_cross_attention(%gq: tensor<?x3x3xf64>, %gk: tensor<?x3x3xf64>, %v: tensor<?x4xf64>,
                               %qo: index, %ko: index) -> (tensor<?x4xf64>, tensor<?x1xf64>) {
  %out, %lse = geo.lie_cross_attention %gq, %gk, %v, %qo, %ko {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>}
      : (tensor<?x3x3xf64>, tensor<?x3x3xf64>, tensor<?x4xf64>, index, index)
        -> (tensor<?x4xf64>, tensor<?x1xf64>)
  return %out, %lse : tensor<?x4xf64>, tensor<?x1xf64>
}
