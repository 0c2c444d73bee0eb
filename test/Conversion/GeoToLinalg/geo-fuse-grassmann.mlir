// RUN: torsor-opt %s --geo-fuse-grassmann | FileCheck %s

// The fused lowering of geo.grassmann_mix: per-pair scalars [L, |offsets|]
// in f64 (dot products, then 1/max(‖p‖, eps) by Lagrange and the
// projection coefficient), one weighted partner sum w [L, r], one Plücker
// vector z_t ∧ w_t per token [L, C(r,2)] and one contraction with W_plü:
// no tensor has both an offset and a Plücker dim.

// CHECK-LABEL: func.func @mix
// CHECK-NOT:   geo.grassmann_mix
// CHECK:       %[[Z:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<?x8xf32>, tensor<4x8xf32>)
// CHECK:       %[[N2:.*]] = linalg.generic {{.*}} ins(%[[Z]] : tensor<?x4xf32>)
// CHECK:       } -> tensor<?xf64>
// CHECK:       %[[DOT:.*]] = linalg.generic {{.*}} ins(%[[Z]], %{{.*}} : tensor<?x4xf32>, tensor<3xindex>)
// CHECK:       } -> tensor<?x3xf64>
// CHECK:       %[[C:.*]]:2 = linalg.generic {{.*}} ins(%[[DOT]], %[[N2]], %{{.*}} : tensor<?x3xf64>, tensor<?xf64>, tensor<3xindex>)
// CHECK:         math.sqrt
// CHECK:       } -> (tensor<?x3xf64>, tensor<?x3xf64>)
// CHECK:       %[[W:.*]] = linalg.generic {{.*}} ins(%[[C]]#0, %[[C]]#1, %[[Z]], %{{.*}} : tensor<?x3xf64>, tensor<?x3xf64>, tensor<?x4xf32>, tensor<3xindex>)
// CHECK:       %[[WF:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<?x4xf64>) outs(%{{.*}} : tensor<?x4xf32>)
// CHECK:       %[[Q:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x6xf32>)
// CHECK:         tensor.extract %[[Z]]
// CHECK:         tensor.extract %[[WF]]
// CHECK:       linalg.generic {{.*}} ins(%[[Q]], %arg3 : tensor<?x6xf32>, tensor<8x6xf32>)
// CHECK-NOT:   x6xf32>
// The gate: two linear layers with a bias and a zero init, summed in the
// gate's own generic (so torsor-tile-dense can make it an epilogue).
// CHECK:       %[[BIAS:.*]] = linalg.broadcast ins(%arg6
// CHECK:       %[[PH:.*]] = linalg.generic {{.*}} ins(%arg0, %{{.*}} : tensor<?x8xf32>, tensor<8x8xf32>) outs(%[[BIAS]]
// CHECK:       %[[ZERO:.*]] = linalg.fill
// CHECK:       %[[PG:.*]] = linalg.generic {{.*}} : tensor<?x8xf32>, tensor<8x8xf32>) outs(%[[ZERO]]
// CHECK:       linalg.generic {{.*}} ins(%arg0, %{{.*}}, %[[PH]], %[[PG]] :
// CHECK:         arith.addf
// CHECK:         math.exp
// CHECK-NOT:   geo.
// CHECK:       return
func.func @mix(%h: tensor<?x8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
               %wp: tensor<8x6xf32>, %bp: tensor<8xf32>, %wg: tensor<8x16xf32>,
               %bg: tensor<8xf32>) -> tensor<?x8xf32> {
  %r = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg
      {offsets = array<i64: 1, 2, 4>, eps = 1.0e-06 : f64, causal}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// Other geo ops are left for convert-geo-to-linalg.
// CHECK-LABEL: func.func @other
// CHECK:       geo.relational_norm
func.func @other(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = geo.relational_norm %x {eps = 1.0e-05 : f64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
