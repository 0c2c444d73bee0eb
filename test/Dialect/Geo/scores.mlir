// RUN: torsor-opt %s | FileCheck %s
// RUN: torsor-opt %s | torsor-opt | FileCheck %s
// RUN: torsor-opt %s --mlir-print-op-generic | torsor-opt | FileCheck %s

// #geo.scores prints its weights as the shortest decimals that read back
// exactly, and round-trips through the custom and the generic op forms.

// CHECK-LABEL: func.func @weights
//       CHECK:   geo.lie_attention %{{.*}}, %{{.*}} {scores = #geo.scores<group = #lie.group<se3>, heads = 2, tau = [0.1, 1.0e-06], lambda = [1.0e+300, 0.0, 0.3333333333333333, 2.5], causal>}
func.func @weights(%g: tensor<?x4x4xf64>, %v: tensor<?x8xf64>) -> tensor<?x8xf64> {
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<se3>, heads = 2, tau = [0.1, 1.0e-6], lambda = [1.0e300, 0.0, 0.33333333333333331, 2.50], causal>}
      : (tensor<?x4x4xf64>, tensor<?x8xf64>) -> tensor<?x8xf64>
  return %o : tensor<?x8xf64>
}

// A declared group sits inside the scores whole; its blocks set the λ count.
// CHECK-LABEL: func.func @declared
//       CHECK:   geo.lie_attention %{{.*}}, %{{.*}} {scores = #geo.scores<group = #lie.group<"Heis3", n = 3, generators = array<f64: {{.*}}>, blocks = {{\[\[}}"plane", 0, 1], ["center", 2]]>, heads = 1, tau = [1.0], lambda = [1.0, 0.5]>}
func.func @declared(%g: tensor<?x3x3xf32>, %v: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %o = geo.lie_attention %g, %v {scores = #geo.scores<group = #lie.group<"Heis3", n = 3, generators = array<f64: 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, blocks = [["plane", 0, 1], ["center", 2]]>, heads = 1, tau = [1.0], lambda = [1.0, 0.5]>}
      : (tensor<?x3x3xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}

// The tiling attributes stay beside the scores.
// CHECK-LABEL: func.func @flash
//       CHECK:   geo.flash_lie_attention {{.*}} {key_tile = 16 : i64, scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [2.0], lambda = [1.0]>}
func.func @flash(%q: tensor<4x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [2.0], lambda = [1.0]>, key_tile = 16 : i64}
      : (tensor<4x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}
