// RUN: torsor-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the geo ops.

//===----------------------------------------------------------------------===//
// geo.lie_attention
//===----------------------------------------------------------------------===//

func.func @lie_attention_rank(%g: tensor<2x2xf32>, %v: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{expects group elements of rank >= 3 ([batch...] x L x n x n), got 'tensor<2x2xf32>'}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<2x2xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %o : tensor<8xf32>
}

// -----

func.func @lie_attention_matrix_size(%g: tensor<?x3x3xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects group elements with trailing dims 2x2 for group SO2, got 'tensor<?x3x3xf32>'}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<?x3x3xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @lie_attention_values_rank(%g: tensor<?x2x2xf32>, %v: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
  // expected-error @+1 {{expects values of rank 2 (one less than the group elements), got 'tensor<2x?x8xf32>'}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<?x2x2xf32>, tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  return %o : tensor<2x?x8xf32>
}

// -----

func.func @lie_attention_length(%g: tensor<5x2x2xf32>, %v: tensor<6x8xf32>) -> tensor<6x8xf32> {
  // expected-error @+1 {{expects values and group elements to agree on batch and sequence dims, got 'tensor<6x8xf32>' and 'tensor<5x2x2xf32>'}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<5x2x2xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  return %o : tensor<6x8xf32>
}

// -----

func.func @lie_attention_element_type(%g: tensor<?x2x2xf64>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects values and group elements of the same element type, got 'f32' and 'f64'}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<?x2x2xf64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @lie_attention_result(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{expects result type 'tensor<?x8xf32>' (the values type), got 'tensor<?x4xf32>'}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}

// -----

func.func @lie_attention_heads(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects a positive number of heads, got 0}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 0, tau = [], lambda = []>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @lie_attention_dynamic_dim(%g: tensor<?x2x2xf32>, %v: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{expects a static value feature dim, got 'tensor<?x?xf32>'}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

func.func @lie_attention_head_split(%g: tensor<?x2x2xf32>, %v: tensor<?x10xf32>) -> tensor<?x10xf32> {
  // expected-error @+1 {{expects the value feature dim (10) to be divisible by heads (4)}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 4, tau = [1.0, 1.0, 1.0, 1.0], lambda = [1.0, 1.0, 1.0, 1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  return %o : tensor<?x10xf32>
}

// -----

func.func @lie_attention_tau_count(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects `tau` with one entry per head (2), got 3}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 2, tau = [1.0, 1.0, 1.0], lambda = [1.0, 1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @lie_attention_tau_sign(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects positive, finite `tau` entries, got 0.000000e+00 for head 1}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 2, tau = [1.0, 0.0], lambda = [1.0, 1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @lie_attention_lambda_count(%g: tensor<?x3x3xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects `lambda` with heads x blocks = 2 x 2 = 4 entries (row-major; blocks of SE2: rot, trans), got 3}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<se2>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, 1.0, 1.0]>}
      : (tensor<?x3x3xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @lie_attention_lambda_sign(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects non-negative, finite `lambda` entries, got -1.000000e+00 at index 1 (head 1)}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, -1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

// #geo.scores is checked where it is parsed, on every attention op alike.

func.func @scores_tau_infinite(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects positive, finite `tau` entries, got INF for head 0}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [0x7FF0000000000000], lambda = [1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @scores_lambda_nan(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{expects non-negative, finite `lambda` entries, got nan at index 1 (head 1)}}
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, 0x7FF8000000000000]>}
      : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @scores_missing_field(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects `tau = ...` here (#geo.scores<group = #lie.group<...>, heads = H, tau = [...], lambda = [...][, causal]>)}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, lambda = [1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @scores_trailing(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects `causal` or `>` after `lambda`}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [1.0], lambda = [1.0], casual>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @scores_integer_literal(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+2 {{unexpected decimal integer literal for a floating point value}}
  // expected-note @+1 {{add a trailing dot to make the literal a float}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<so2>, heads = 1, tau = [1], lambda = [1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @scores_not_a_group(%g: tensor<?x2x2xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{invalid kind of attribute specified}}
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = 1.0, heads = 1, tau = [1.0], lambda = [1.0]>}
      : (tensor<?x2x2xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// geo.plucker
//===----------------------------------------------------------------------===//

func.func @plucker_rank(%u: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{expects operands of rank >= 1 ([...] x r), got 'tensor<f32>'}}
  %p = geo.plucker %u, %u : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %p : tensor<f32>
}

// -----

func.func @plucker_operands(%u: tensor<?x4xf32>, %v: tensor<?x5xf32>) -> tensor<?x6xf32> {
  // expected-error @+1 {{expects operands of the same shape and element type, got 'tensor<?x4xf32>' and 'tensor<?x5xf32>'}}
  %p = geo.plucker %u, %v : (tensor<?x4xf32>, tensor<?x5xf32>) -> tensor<?x6xf32>
  return %p : tensor<?x6xf32>
}

// -----

func.func @plucker_r(%u: tensor<?x1xf32>) -> tensor<?x0xf32> {
  // expected-error @+1 {{expects a static vector dim r >= 2, got 'tensor<?x1xf32>'}}
  %p = geo.plucker %u, %u : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x0xf32>
  return %p : tensor<?x0xf32>
}

// -----

func.func @plucker_result(%u: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{expects result of shape ?x6 (last dim C(r,2) for r = 4) and element type 'f32', got 'tensor<?x4xf32>'}}
  %p = geo.plucker %u, %u : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %p : tensor<?x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// geo.grassmann_mix
//===----------------------------------------------------------------------===//

func.func @grassmann_rank(%h: tensor<8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                          %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                          %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{expects input of rank >= 2 ([batch...] x L x d), got 'tensor<8xf32>'}}
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg {offsets = array<i64: 1>, eps = 1.0e-6 : f64}
      : (tensor<8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @grassmann_dynamic_d(%h: tensor<?x?xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                               %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                               %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{expects a static feature dim d, got 'tensor<?x?xf32>'}}
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg {offsets = array<i64: 1>, eps = 1.0e-6 : f64}
      : (tensor<?x?xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

func.func @grassmann_w_red(%h: tensor<?x8xf32>, %wr: tensor<?x8xf32>, %br: tensor<4xf32>,
                           %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                           %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects W_red of shape r x 8 with static r >= 2, got 'tensor<?x8xf32>'}}
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg {offsets = array<i64: 1>, eps = 1.0e-6 : f64}
      : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @grassmann_w_plu(%h: tensor<?x8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                           %wp: tensor<8x5xf32>, %bp: tensor<8xf32>,
                           %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects W_plu of shape 8x6 (d x C(r,2)), got 'tensor<8x5xf32>'}}
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg {offsets = array<i64: 1>, eps = 1.0e-6 : f64}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x5xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @grassmann_element_type(%h: tensor<?x8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                                  %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                                  %wg: tensor<8x16xf64>, %bg: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects W_gate with element type 'f32' (that of the input), got 'f64'}}
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg {offsets = array<i64: 1>, eps = 1.0e-6 : f64}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf64>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @grassmann_result(%h: tensor<?x8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                            %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                            %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<?x8xf64> {
  // expected-error @+1 {{expects result type 'tensor<?x8xf32>' (the input type), got 'tensor<?x8xf64>'}}
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg {offsets = array<i64: 1>, eps = 1.0e-6 : f64}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}

// -----

func.func @grassmann_no_offsets(%h: tensor<?x8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                                %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                                %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects at least one offset}}
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg {offsets = array<i64>, eps = 1.0e-6 : f64}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @grassmann_offset_sign(%h: tensor<?x8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                                 %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                                 %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects positive offsets, got 0}}
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg {offsets = array<i64: 1, 0>, eps = 1.0e-6 : f64}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @grassmann_eps(%h: tensor<?x8xf32>, %wr: tensor<4x8xf32>, %br: tensor<4xf32>,
                         %wp: tensor<8x6xf32>, %bp: tensor<8xf32>,
                         %wg: tensor<8x16xf32>, %bg: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects positive eps, got 0.000000e+00}}
  %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg {offsets = array<i64: 1>, eps = 0.0 : f64}
      : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// geo.relational_attention
//===----------------------------------------------------------------------===//

func.func @relational_attention_heads(%x: tensor<?x8xf32>, %g: tensor<2x8x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects a positive number of heads, got -1}}
  %y = geo.relational_attention %x, %g, %g {heads = -1 : i64, scale = 1.0 : f64}
      : (tensor<?x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @relational_attention_form(%x: tensor<?x8xf32>, %qk: tensor<2x8x8xf32>, %vo: tensor<2x8x4xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects G_VO of shape 2x8x8 (heads x d x d), got 'tensor<2x8x4xf32>'}}
  %y = geo.relational_attention %x, %qk, %vo {heads = 2 : i64, scale = 1.0 : f64}
      : (tensor<?x8xf32>, tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// geo.relational_norm
//===----------------------------------------------------------------------===//

func.func @relational_norm_rank(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{expects input of rank >= 1, got 'tensor<f32>'}}
  %y = geo.relational_norm %x {eps = 1.0e-5 : f64} : tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @relational_norm_eps(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expects positive eps, got -1.000000e+00}}
  %y = geo.relational_norm %x {eps = -1.0 : f64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// geo.lie_cross_attention
//===----------------------------------------------------------------------===//

func.func @cross_groups(%gq: tensor<?x3x3xf32>, %gk: tensor<?x4x4xf32>, %v: tensor<?x8xf32>, %o: index) {
  // expected-error @+1 {{expects key group elements with trailing dims 3x3 for group SO3, got 'tensor<?x4x4xf32>'}}
  %out, %lse = geo.lie_cross_attention %gq, %gk, %v, %o, %o {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x3x3xf32>, tensor<?x4x4xf32>, tensor<?x8xf32>, index, index) -> (tensor<?x8xf32>, tensor<?x1xf32>)
  return
}

// -----

func.func @cross_values(%gq: tensor<?x3x3xf32>, %gk: tensor<5x3x3xf32>, %v: tensor<4x8xf32>, %o: index) {
  // expected-error @+1 {{expects one value per key, got 'tensor<5x3x3xf32>' and 'tensor<4x8xf32>'}}
  %out, %lse = geo.lie_cross_attention %gq, %gk, %v, %o, %o {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x3x3xf32>, tensor<5x3x3xf32>, tensor<4x8xf32>, index, index) -> (tensor<?x8xf32>, tensor<?x1xf32>)
  return
}

// -----

func.func @cross_result(%gq: tensor<3x3x3xf32>, %gk: tensor<?x3x3xf32>, %v: tensor<?x8xf32>, %o: index) {
  // expected-error @+1 {{expects a result of [batch...] x Lq x D ('tensor<3x8xf32>'), got 'tensor<4x8xf32>'}}
  %out, %lse = geo.lie_cross_attention %gq, %gk, %v, %o, %o {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<3x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>, index, index) -> (tensor<4x8xf32>, tensor<?x1xf32>)
  return
}

// -----

func.func @cross_lse(%gq: tensor<?x3x3xf32>, %gk: tensor<?x3x3xf32>, %v: tensor<?x8xf32>, %o: index) {
  // expected-error @+1 {{expects an lse of [batch...] x Lq x heads ('tensor<?x2xf32>'), got 'tensor<?x1xf32>'}}
  %out, %lse = geo.lie_cross_attention %gq, %gk, %v, %o, %o {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, 1.0]>} : (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>, index, index) -> (tensor<?x8xf32>, tensor<?x1xf32>)
  return
}

// -----

func.func @cross_grad_out(%g: tensor<?x3x3xf32>, %v: tensor<?x8xf32>, %o: tensor<?x4xf32>, %lse: tensor<?x1xf32>, %i: index) {
  // expected-error @+1 {{expects out of [batch...] x Lq x D ('tensor<?x8xf32>'), got 'tensor<?x4xf32>'}}
  %a:3 = geo.lie_cross_attention_grad %g, %g, %v, %o, %lse, %o, %i, %i {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x1xf32>, tensor<?x4xf32>, index, index) -> (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>)
  return
}
