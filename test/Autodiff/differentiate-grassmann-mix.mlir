// RUN: torsor-opt %s --torsor-differentiate | FileCheck %s
// RUN: torsor-opt %s --torsor-differentiate | FileCheck %s --check-prefix=NOPAIR
// RUN: torsor-opt %s --torsor-differentiate=unfused=geo.grassmann_mix | FileCheck %s --check-prefix=UNFUSED

// geo.grassmann_mix's VJP (compiler/Autodiff/GrassmannRules.cpp) on the
// bilinear form: the forward op is kept (recomputed, lowered later), the
// rule rebuilds the fused forward's pieces (z, pair scalars [L, 3] in
// f64, q = z ∧ w [L, C(r,2)]) and contracts the cotangent back through
// them. The only [L, C(r,2)] tensors are q and its cotangent q̄ = ḡSum W_plu;
// W̄_plu = ḡSumᵀ q; P̄ (the antisymmetric matrix of q̄) is read out of q̄
// through an r×r index table, never formed.

// CHECK-LABEL: func.func @torsor_model_backward
//       CHECK:   geo.grassmann_mix
//       CHECK:   %[[Z:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<?x8xf32>, tensor<4x8xf32>)
//       CHECK:   %[[N2:.*]] = linalg.generic {{.*}} ins(%[[Z]] : tensor<?x4xf32>) outs(%{{.*}} : tensor<?xf64>)
//       CHECK:   %[[DOT:.*]] = linalg.generic {{.*}} ins(%[[Z]], %{{.*}} : tensor<?x4xf32>, tensor<3xindex>) outs(%{{.*}} : tensor<?x3xf64>)
//       CHECK:   %[[C:.*]]:2 = linalg.generic {{.*}} ins(%[[DOT]], %[[N2]]
//       CHECK:   %[[W:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x4xf64>)
//       CHECK:   %[[Q:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x6xf32>)
// The gate's backward: three outputs (α ȳ, (1 − α) ȳ, p̄re) from h, g, the
// two pre-activations and the cotangent.
//       CHECK:   %[[GATE:.*]]:3 = linalg.generic {{.*}} ins(%arg0, {{.*}}, %arg7 :
//       CHECK:   tensor.insert_slice {{.*}} into {{.*}}[0, 0] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<8x16xf32>
//       CHECK:   tensor.insert_slice {{.*}} into {{.*}}[0, 8] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<8x16xf32>
// The mean's backward, then W̄_plu = ḡSumᵀ q (a contraction over tokens).
//       CHECK:   %[[MEAN:.*]]:2 = linalg.generic
//       CHECK:   %[[WPLU:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[MEAN]]#1, %[[Q]] : tensor<?x8xf32>, tensor<?x6xf32>) outs(%{{.*}} : tensor<8x6xf32>)
//       CHECK:   %[[QBAR:.*]] = linalg.generic {{.*}} ins(%[[MEAN]]#1, %{{.*}} : tensor<?x8xf32>, tensor<6x8xf32>) outs(%{{.*}} : tensor<?x6xf32>)
// y = P̄ z and P̄ w through the index and sign tables.
//       CHECK:   %[[Y:.*]]:2 = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[Z]], %[[W]] : tensor<4x4xindex>, tensor<4x4xf64>, tensor<?x4xf32>, tensor<?x4xf64>)
//       CHECK:     tensor.extract %[[QBAR]]
// c̄ per pair, then the pair scalars (Lagrange norm again, f64).
//       CHECK:   %[[CBAR:.*]] = linalg.generic {{.*}} ins(%[[Y]]#0, %[[Z]], {{.*}}) outs(%{{.*}} : tensor<?x3xf64>)
//       CHECK:   %[[PAIR:.*]]:3 = linalg.generic {{.*}} ins(%[[CBAR]], %[[DOT]], %[[N2]], %[[C]]#0
//       CHECK:     math.sqrt
// z̄ starts at P̄ w and gathers the own and the partners' pair terms.
//       CHECK:   %[[ZBAR:.*]] = linalg.generic {{.*}} ins(%[[PAIR]]#0, %[[PAIR]]#1, %[[C]]#1, %[[Y]]#0, %[[Z]], %{{.*}}) outs(%[[Y]]#1 : tensor<?x4xf64>)
//       CHECK:   return
// No tensor pairs an offset dim with a Plücker dim, and no Plücker tensor
// is built per offset: the only [L, C(r,2)] values are q and q̄.
//  NOPAIR-NOT:   x3x6x
//      NOPAIR:   func.func @torsor_model_backward
//  NOPAIR-NOT:   x3x6x
//      NOPAIR:   } -> tensor<?x6xf32>
//  NOPAIR-NOT:   x3x6x
//      NOPAIR:   } -> tensor<?x6xf32>
//  NOPAIR-NOT:   -> tensor<?x6xf32>
//  NOPAIR-NOT:   x3x6x
//      NOPAIR:   return
// The oracle (torsor-differentiate's `unfused` option) lowers the op with
// its -O0 form instead: one Plücker tensor per offset.
//    UNFUSED:   func.func @torsor_model_backward
//  UNFUSED-NOT:   geo.grassmann_mix
//    UNFUSED-COUNT-3:   } -> tensor<?x6xf32>
func.func @mix(%h: tensor<?x8xf32> {torsor.dims = ["L", 8], torsor.kind = "input", torsor.name = "h"},
               %wr: tensor<4x8xf32> {torsor.dims = [4, 8], torsor.kind = "param", torsor.name = "w_red"},
               %br: tensor<4xf32> {torsor.dims = [4], torsor.kind = "param", torsor.name = "b_red"},
               %wp: tensor<8x6xf32> {torsor.dims = [8, 6], torsor.kind = "param", torsor.name = "w_plu"},
               %bp: tensor<8xf32> {torsor.dims = [8], torsor.kind = "param", torsor.name = "b_plu"},
               %wg: tensor<8x16xf32> {torsor.dims = [8, 16], torsor.kind = "param", torsor.name = "w_gate"},
               %bg: tensor<8xf32> {torsor.dims = [8], torsor.kind = "param", torsor.name = "b_gate"})
    -> (tensor<?x8xf32> {torsor.dims = ["L", 8], torsor.name = "y"}) {
  %r = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg
      {offsets = array<i64: 1, 2, 4>, eps = 1.0e-06 : f64, causal}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
