// RUN: torsor-opt %s --split-input-file --verify-diagnostics

func.func @features(%q: tensor<?x8xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>) {
  // expected-error @+1 {{expects 9 query and 9 key features for group SO3}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x8xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @batch(%q: tensor<2x?x9xf32>, %k: tensor<3x9x?xf32>, %v: tensor<2x?x8xf32>) {
  // expected-error @+1 {{expects the operands to agree on batch dims}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<2x?x9xf32>, tensor<3x9x?xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>) -> (tensor<2x?x9xf32>, tensor<3x9x?xf32>, tensor<2x?x8xf32>)
  return
}

// -----

func.func @rank(%q: tensor<2x?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<2x?x8xf32>) {
  // expected-error @+1 {{expects operands of one rank >= 2 and one element type}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<2x?x9xf32>, tensor<9x?xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>) -> (tensor<2x?x9xf32>, tensor<9x?xf32>, tensor<2x?x8xf32>)
  return
}

// -----

func.func @lse(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %lse: tensor<?x1xf32>) {
  // expected-error @+1 {{expects lse of [batch...] x L x heads (2), got 'tensor<?x1xf32>'}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v lse %lse {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, 1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @heads(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>) {
  // expected-error @+1 {{expects `tau` with one entry per head (2), got 1; give one temperature per head}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0], lambda = [1.0, 1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @result(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>) {
  // expected-error @+1 {{expects results of the types of queries, keys and values}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<?x9xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @forward_lse(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %lse0: tensor<?x3xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{expects lse_init and lse of [batch...] x rows x heads (2), got 'tensor<?x3xf32>'}}
  %o, %lse = geo.flash_lie_attention %q, %k, %v, %c0, %v lse %lse0 {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, 1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<?x8xf32>, tensor<?x3xf32>) -> (tensor<?x8xf32>, tensor<?x3xf32>)
  return
}

// -----

func.func @one_offset(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %i: index) {
  // expected-error @+1 {{expects both offsets or neither}}
  %a:3 = "geo.flash_lie_attention_grad"(%q, %k, %v, %v, %v, %i) {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 1, 0>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @cross_lengths(%q: tensor<4x9xf32>, %k: tensor<9x5xf32>, %v: tensor<5x8xf32>, %o: tensor<3x8xf32>, %i: index) {
  // expected-error @+1 {{expects out and out_grad of one type, [batch...] x rows x D of the queries and values, got 'tensor<3x8xf32>' and 'tensor<3x8xf32>'}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %o, %o offsets(%i, %i) {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<4x9xf32>, tensor<9x5xf32>, tensor<5x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, index, index) -> (tensor<4x9xf32>, tensor<9x5xf32>, tensor<5x8xf32>)
  return
}

// -----

// λ ≥ 0 on the backward as on the forward (one verifier, #geo.scores): every
// score is then ≤ 0, which the kernels rely on.
func.func @grad_negative_lambda(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>) {
  // expected-error @+1 {{expects non-negative, finite `lambda` entries, got -5.000000e-01 at index 0 (head 0)}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [-0.5]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return
}
