// RUN: torsor-opt %s --split-input-file --verify-diagnostics

func.func @features(%q: tensor<?x8xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>) {
  // expected-error @+1 {{expects 9 query and 9 key features for group SO3}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {group = #lie.group<so3>, heads = 1 : i64, tau = array<f64: 1.0>, lambda = array<f64: 1.0>} : (tensor<?x8xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @batch(%q: tensor<2x?x9xf32>, %k: tensor<2x9x?xf32>, %v: tensor<2x?x8xf32>) {
  // expected-error @+1 {{expects rank-2 operands of one element type (no batch dims)}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {group = #lie.group<so3>, heads = 1 : i64, tau = array<f64: 1.0>, lambda = array<f64: 1.0>} : (tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>) -> (tensor<2x?x9xf32>, tensor<2x9x?xf32>, tensor<2x?x8xf32>)
  return
}

// -----

func.func @heads(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>) {
  // expected-error @+1 {{expects 2 tau and 2 lambda values, got 1 and 2}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {group = #lie.group<so3>, heads = 2 : i64, tau = array<f64: 1.0>, lambda = array<f64: 1.0, 1.0>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @result(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>) {
  // expected-error @+1 {{expects results of the types of queries, keys and values}}
  %a:3 = geo.flash_lie_attention_grad %q, %k, %v, %v, %v {group = #lie.group<so3>, heads = 1 : i64, tau = array<f64: 1.0>, lambda = array<f64: 1.0>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<?x9xf32>, tensor<?x8xf32>)
  return
}
