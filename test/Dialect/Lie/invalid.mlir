// RUN: torsor-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{unknown group 'se4'; expected one of}}
func.func @unknown_group(%a: tensor<?x4x4xf32>) attributes {g = #lie.group<se4>} {
  return
}

// -----

func.func @compose_wrong_matrix(%a: tensor<?x3x3xf32>) -> tensor<?x3x3xf32> {
  // expected-error @+1 {{'lie.compose' op expects operands with trailing dims 2x2 for group SO2, got 'tensor<?x3x3xf32>'}}
  %c = lie.compose %a, %a {group = #lie.group<so2>} : tensor<?x3x3xf32>
  return %c : tensor<?x3x3xf32>
}

// -----

func.func @inverse_rank1(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 must be ranked float tensor of group elements}}
  %c = lie.inverse %a {group = #lie.group<so2>} : tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

func.func @log_wrong_algebra_dim(%g: tensor<?x2x2xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'lie.log' op expects result with last dim 1 for group SO2, got 'tensor<?x3xf32>'}}
  %w = lie.log %g {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?x3xf32>
  return %w : tensor<?x3xf32>
}

// -----

func.func @log_batch_mismatch(%g: tensor<5x2x2xf32>) -> tensor<6x1xf32> {
  // expected-error @+1 {{'lie.log' op expects input and result to have the same batch dims, got 'tensor<5x2x2xf32>' and 'tensor<6x1xf32>'}}
  %w = lie.log %g {group = #lie.group<so2>} : tensor<5x2x2xf32> -> tensor<6x1xf32>
  return %w : tensor<6x1xf32>
}

// -----

func.func @log_dtype_mismatch(%g: tensor<5x2x2xf32>) -> tensor<5x1xf64> {
  // expected-error @+1 {{'lie.log' op expects input and result to have the same element type, got 'f32' and 'f64'}}
  %w = lie.log %g {group = #lie.group<so2>} : tensor<5x2x2xf32> -> tensor<5x1xf64>
  return %w : tensor<5x1xf64>
}

// -----

func.func @exp_wrong_input(%v: tensor<?x2xf32>) -> tensor<?x2x2xf32> {
  // expected-error @+1 {{'lie.exp' op expects input with last dim 1 for group SO2, got 'tensor<?x2xf32>'}}
  %g = lie.exp %v {group = #lie.group<so2>} : tensor<?x2xf32> -> tensor<?x2x2xf32>
  return %g : tensor<?x2x2xf32>
}

// -----

func.func @exp_wrong_result(%v: tensor<?x1xf32>) -> tensor<?x3x3xf32> {
  // expected-error @+1 {{'lie.exp' op expects result with trailing dims 2x2 for group SO2, got 'tensor<?x3x3xf32>'}}
  %g = lie.exp %v {group = #lie.group<so2>} : tensor<?x1xf32> -> tensor<?x3x3xf32>
  return %g : tensor<?x3x3xf32>
}

// -----

func.func @act_wrong_point(%g: tensor<?x2x2xf32>, %p: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'lie.act' op expects point with last dim 2 for group SO2, got 'tensor<?x3xf32>'}}
  %q = lie.act %g, %p {group = #lie.group<so2>} : tensor<?x2x2xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
  return %q : tensor<?x3xf32>
}

// -----

func.func @act_wrong_result(%g: tensor<?x2x2xf32>, %p: tensor<?x2xf32>) -> tensor<?x2xf64> {
  // expected-error @+1 {{'lie.act' op expects result type 'tensor<?x2xf32>' (the point type), got 'tensor<?x2xf64>'}}
  %q = lie.act %g, %p {group = #lie.group<so2>} : tensor<?x2x2xf32>, tensor<?x2xf32> -> tensor<?x2xf64>
  return %q : tensor<?x2xf64>
}

// -----

func.func @act_batch_mismatch(%g: tensor<3x2x2xf32>, %p: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'lie.act' op expects element and point to have the same batch dims}}
  %q = lie.act %g, %p {group = #lie.group<so2>} : tensor<3x2x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  return %q : tensor<4x2xf32>
}

// -----

func.func @dist2_lambda_count(%a: tensor<?x2x2xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'lie.dist2' op expects 1 lambda weights (one per block of SO2), got 2}}
  %d = lie.dist2 %a, %a {group = #lie.group<so2>, lambda = array<f64: 1.0, 2.0>} : tensor<?x2x2xf32> -> tensor<?xf32>
  return %d : tensor<?xf32>
}

// -----

func.func @dist2_negative_lambda(%a: tensor<?x2x2xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'lie.dist2' op expects non-negative lambda weights, got -1}}
  %d = lie.dist2 %a, %a {group = #lie.group<so2>, lambda = array<f64: -1.0>} : tensor<?x2x2xf32> -> tensor<?xf32>
  return %d : tensor<?xf32>
}

// -----

func.func @dist2_result_batch(%a: tensor<3x2x2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'lie.dist2' op expects operands and result to have the same batch dims, got 'tensor<3x2x2xf32>' and 'tensor<4xf32>'}}
  %d = lie.dist2 %a, %a {group = #lie.group<so2>} : tensor<3x2x2xf32> -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

func.func @identity_sizes(%n: index) -> tensor<?x?x2x2xf32> {
  // expected-error @+1 {{'lie.identity' op expects one size operand per dynamic dim (2), got 1}}
  %e = lie.identity %n {group = #lie.group<so2>} : tensor<?x?x2x2xf32>
  return %e : tensor<?x?x2x2xf32>
}

// -----

func.func @membership_batch(%g: tensor<3x2x2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'lie.membership_residual' op expects input and result to have the same batch dims, got 'tensor<3x2x2xf32>' and 'tensor<4xf32>'}}
  %r = lie.membership_residual %g {group = #lie.group<so2>} : tensor<3x2x2xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @membership_matrix(%g: tensor<3x3x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'lie.membership_residual' op expects input with trailing dims 2x2 for group SO2, got 'tensor<3x3x3xf32>'}}
  %r = lie.membership_residual %g {group = #lie.group<so2>} : tensor<3x3x3xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}
