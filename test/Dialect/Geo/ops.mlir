// RUN: torsor-opt %s | torsor-opt | FileCheck %s

// Round trip of every geo op, with and without optional attributes and
// batch dims.

// CHECK-LABEL: func.func @lie_attention
//  CHECK-SAME:   (%[[G:.*]]: tensor<?x4x4xf32>, %[[V:.*]]: tensor<?x8xf32>)
//       CHECK:   %[[OUT:.*]] = geo.lie_attention %[[G]], %[[V]]
//  CHECK-SAME:     {scores = #geo.scores<group = #lie.group<se3>, heads = 2,
//  CHECK-SAME:     tau = [1.0, 2.0], lambda = [1.0, 0.5, 1.0, 0.25], causal>}
//  CHECK-SAME:     : (tensor<?x4x4xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
//       CHECK:   return %[[OUT]]
func.func @lie_attention(%g: tensor<?x4x4xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %out = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<se3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5, 1.0, 0.25], causal>}
      : (tensor<?x4x4xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %out : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @lie_attention_batched
//       CHECK:   geo.lie_attention
//   CHECK-NOT:     causal
//  CHECK-SAME:     group = #lie.group<so2>
//  CHECK-SAME:     : (tensor<3x?x2x2xf64>, tensor<3x?x4xf64>) -> tensor<3x?x4xf64>
func.func @lie_attention_batched(%g: tensor<3x?x2x2xf64>, %v: tensor<3x?x4xf64>) -> tensor<3x?x4xf64> {
  %out = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [0.5], lambda = [1.0]>}
      : (tensor<3x?x2x2xf64>, tensor<3x?x4xf64>) -> tensor<3x?x4xf64>
  return %out : tensor<3x?x4xf64>
}

// CHECK-LABEL: func.func @plucker
//  CHECK-SAME:   (%[[U:.*]]: tensor<?x4xf32>, %[[W:.*]]: tensor<?x4xf32>)
//       CHECK:   %[[P:.*]] = geo.plucker %[[U]], %[[W]] : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x6xf32>
//       CHECK:   return %[[P]]
func.func @plucker(%u: tensor<?x4xf32>, %w: tensor<?x4xf32>) -> tensor<?x6xf32> {
  %p = geo.plucker %u, %w : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x6xf32>
  return %p : tensor<?x6xf32>
}

// CHECK-LABEL: func.func @grassmann_mix
//  CHECK-SAME:   (%[[H:[^:]*]]: tensor<?x8xf32>, %[[WR:[^:]*]]: tensor<4x8xf32>, %[[BR:[^:]*]]: tensor<4xf32>, %[[WP:[^:]*]]: tensor<8x6xf32>, %[[BP:[^:]*]]: tensor<8xf32>, %[[WG:[^:]*]]: tensor<8x16xf32>, %[[BG:[^:]*]]: tensor<8xf32>)
//       CHECK:   %[[Y:.*]] = geo.grassmann_mix %[[H]], %[[WR]], %[[BR]], %[[WP]], %[[BP]], %[[WG]], %[[BG]]
//  CHECK-SAME:     causal
//  CHECK-SAME:     eps = 9.9999999999999995E-7 : f64
//  CHECK-SAME:     offsets = array<i64: 1, 2, 4>
//       CHECK:   return %[[Y]]
func.func @grassmann_mix(%h: tensor<?x8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                         %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                         %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<?x8xf32> {
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg
         {offsets = array<i64: 1, 2, 4>, eps = 1.0e-6 : f64, causal}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @relational_attention
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x?x8xf64>, %[[QK:.*]]: tensor<2x8x8xf64>, %[[VO:.*]]: tensor<2x8x8xf64>)
//       CHECK:   %[[Y:.*]] = geo.relational_attention %[[X]], %[[QK]], %[[VO]]
//  CHECK-SAME:     heads = 2 : i64
//  CHECK-SAME:     scale = 2.500000e-01 : f64
//  CHECK-SAME:     : (tensor<2x?x8xf64>, tensor<2x8x8xf64>, tensor<2x8x8xf64>) -> tensor<2x?x8xf64>
//       CHECK:   return %[[Y]]
func.func @relational_attention(%x: tensor<2x?x8xf64>, %gqk: tensor<2x8x8xf64>,
                                %gvo: tensor<2x8x8xf64>) -> tensor<2x?x8xf64> {
  %y = geo.relational_attention %x, %gqk, %gvo {heads = 2 : i64, scale = 0.25 : f64}
      : (tensor<2x?x8xf64>, tensor<2x8x8xf64>, tensor<2x8x8xf64>) -> tensor<2x?x8xf64>
  return %y : tensor<2x?x8xf64>
}

// CHECK-LABEL: func.func @relational_norm
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x8xf32>)
//       CHECK:   %[[Y:.*]] = geo.relational_norm %[[X]] {eps = 1.000000e-05 : f64} : tensor<?x8xf32>
//       CHECK:   return %[[Y]]
func.func @relational_norm(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = geo.relational_norm %x {eps = 1.0e-5 : f64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// The fused forward with its optional log-sum-exp, and the flash backward
// taking it, with a batch dim.
// CHECK-LABEL: func.func @flash_with_lse
//       CHECK:   %[[O:.*]], %[[LSE:.*]] = geo.flash_lie_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lse %{{.*}} {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>}
//       CHECK:   geo.flash_lie_attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %{{.*}} lse %[[LSE]] {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>}
func.func @flash_with_lse(%q: tensor<2x?x9xf32>, %k: tensor<2x9x?xf32>, %v: tensor<2x?x8xf32>,
                          %do: tensor<2x?x8xf32>, %lse0: tensor<2x?x1xf32>)
    -> (tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>) {
  %c0 = arith.constant 0 : index
  %o, %lse = geo.flash_lie_attention %q, %k, %v, %c0, %v lse %lse0 {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>, index, tensor<2x?x8xf32>, tensor<2x?x1xf32>) -> (tensor<2x?x8xf32>, tensor<2x?x1xf32>)
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do lse %lse {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x1xf32>) -> (tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>)
  return %dq, %dk, %dv : tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>
}

// CHECK-LABEL: func.func @lie_cross_attention
//  CHECK-SAME:   (%[[GQ:.*]]: tensor<?x3x3xf32>, %[[GK:.*]]: tensor<?x3x3xf32>, %[[V:.*]]: tensor<?x8xf32>, %[[QO:.*]]: index, %[[KO:.*]]: index)
//       CHECK:   %[[OUT:.*]], %[[LSE:.*]] = geo.lie_cross_attention %[[GQ]], %[[GK]], %[[V]], %[[QO]], %[[KO]]
//  CHECK-SAME:     causal
//  CHECK-SAME:     : (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>, index, index) -> (tensor<?x8xf32>, tensor<?x2xf32>)
//       CHECK:   return %[[OUT]], %[[LSE]]
func.func @lie_cross_attention(%gq: tensor<?x3x3xf32>, %gk: tensor<?x3x3xf32>,
                               %v: tensor<?x8xf32>, %qo: index, %ko: index)
    -> (tensor<?x8xf32>, tensor<?x2xf32>) {
  %out, %lse = geo.lie_cross_attention %gq, %gk, %v, %qo, %ko {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5], causal>}
      : (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>, index, index)
        -> (tensor<?x8xf32>, tensor<?x2xf32>)
  return %out, %lse : tensor<?x8xf32>, tensor<?x2xf32>
}

// CHECK-LABEL: func.func @lie_cross_attention_grad
//       CHECK:   geo.lie_cross_attention_grad
//  CHECK-SAME:     : (tensor<2x?x4x4xf64>, tensor<2x?x4x4xf64>, tensor<2x?x4xf64>, tensor<2x?x4xf64>, tensor<2x?x1xf64>, tensor<2x?x4xf64>, index, index) -> (tensor<2x?x4x4xf64>, tensor<2x?x4x4xf64>, tensor<2x?x4xf64>)
func.func @lie_cross_attention_grad(%gq: tensor<2x?x4x4xf64>, %gk: tensor<2x?x4x4xf64>,
    %v: tensor<2x?x4xf64>, %o: tensor<2x?x4xf64>, %lse: tensor<2x?x1xf64>,
    %do: tensor<2x?x4xf64>, %qo: index, %ko: index)
    -> (tensor<2x?x4x4xf64>, tensor<2x?x4x4xf64>, tensor<2x?x4xf64>) {
  %dgq, %dgk, %dv = geo.lie_cross_attention_grad %gq, %gk, %v, %o, %lse, %do,
      %qo, %ko {scores = #geo.scores<group = #lie.group<se3>, heads = 1, tau = [1.0], lambda = [1.0, 1.0]>}
      : (tensor<2x?x4x4xf64>, tensor<2x?x4x4xf64>, tensor<2x?x4xf64>,
         tensor<2x?x4xf64>, tensor<2x?x1xf64>, tensor<2x?x4xf64>, index, index)
        -> (tensor<2x?x4x4xf64>, tensor<2x?x4x4xf64>, tensor<2x?x4xf64>)
  return %dgq, %dgk, %dv : tensor<2x?x4x4xf64>, tensor<2x?x4x4xf64>, tensor<2x?x4xf64>
}

// CHECK-LABEL: func.func @flash_cross
//       CHECK:   geo.flash_lie_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} key_offset %{{.*}}, %{{.*}} lse %{{.*}}
//       CHECK:   geo.flash_lie_attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lse %{{.*}} offsets(%{{.*}}, %{{.*}})
func.func @flash_cross(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>,
                       %qo: index, %ko: index, %init: tensor<?x8xf32>,
                       %lseInit: tensor<?x1xf32>, %do: tensor<?x8xf32>)
    -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
  %o, %lse = geo.flash_lie_attention %q, %k, %v, %qo key_offset %ko, %init lse %lseInit {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>}
      : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, index,
         tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>)
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do lse %lse
      offsets(%qo, %ko) {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>}
      : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>,
         tensor<?x8xf32>, tensor<?x1xf32>, index, index)
        -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return %dq, %dk, %dv : tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>
}
