// RUN: torsor-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @roundtrip
//       CHECK:   lie.pullback log(%{{.*}}), %{{.*}} {group = #lie.group<so3>, wrt = 0 : i64}
//       CHECK:   lie.pullback compose(%{{.*}}, %{{.*}}), %{{.*}} {group = #lie.group<se3>, wrt = 1 : i64}
//       CHECK:   lie.pullback left_trivialize
func.func @roundtrip(%g: tensor<?x3x3xf64>, %w: tensor<?x3xf64>, %a: tensor<?x4x4xf32>, %c: tensor<?x4x4xf32>) -> (tensor<?x3x3xf64>, tensor<?x4x4xf32>, tensor<?x3xf64>) {
  %0 = lie.pullback "log"(%g), %w {group = #lie.group<so3>, wrt = 0 : i64} : (tensor<?x3x3xf64>, tensor<?x3xf64>) -> tensor<?x3x3xf64>
  %1 = lie.pullback compose(%a, %a), %c {group = #lie.group<se3>, wrt = 1 : i64} : (tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
  %2 = lie.pullback "left_trivialize"(%g), %0 {group = #lie.group<so3>, wrt = 0 : i64} : (tensor<?x3x3xf64>, tensor<?x3x3xf64>) -> tensor<?x3xf64>
  return %0, %1, %2 : tensor<?x3x3xf64>, tensor<?x4x4xf32>, tensor<?x3xf64>
}

// -----

func.func @kind(%g: tensor<?x3x3xf64>, %w: tensor<?x3xf64>) {
  // expected-error @+1 {{lie.pullback differentiates compose, inverse, log, exp, act, dist2, query_features, key_features or left_trivialize, got 'sqrt'}}
  %0 = lie.pullback sqrt(%g), %w {group = #lie.group<so3>, wrt = 0 : i64} : (tensor<?x3x3xf64>, tensor<?x3xf64>) -> tensor<?x3x3xf64>
  return
}

// -----

func.func @arity(%g: tensor<?x3x3xf64>) {
  // expected-error @+1 {{expects 2 operands of the forward 'compose', got 1}}
  %0 = lie.pullback "compose"(%g), %g {group = #lie.group<so3>, wrt = 0 : i64} : (tensor<?x3x3xf64>, tensor<?x3x3xf64>) -> tensor<?x3x3xf64>
  return
}

// -----

func.func @cotangent(%g: tensor<?x3x3xf64>, %w: tensor<?x6xf64>) {
  // expected-error @+1 {{expects cotangent of shape [?x3] and element type 'f64'}}
  %0 = lie.pullback "log"(%g), %w {group = #lie.group<so3>, wrt = 0 : i64} : (tensor<?x3x3xf64>, tensor<?x6xf64>) -> tensor<?x3x3xf64>
  return
}

// -----

func.func @wrt(%g: tensor<?x3x3xf64>, %w: tensor<?x3xf64>) {
  // expected-error @+1 {{expects wrt in [0, 1), got 1}}
  %0 = lie.pullback "log"(%g), %w {group = #lie.group<so3>, wrt = 1 : i64} : (tensor<?x3x3xf64>, tensor<?x3xf64>) -> tensor<?x3x3xf64>
  return
}
