// RUN: torsor-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: torsor-opt %s -split-input-file -verify-diagnostics | torsor-opt -split-input-file | FileCheck %s
// RUN: torsor-opt %s -split-input-file -verify-diagnostics --convert-lie-to-arith | FileCheck %s --check-prefix=LOWER

// Groups declared by their generators: #lie.group<"Name", n = N,
// generators = array<f64: k·N·N row-major entries>, blocks = [["name",
// generator indices...], ...] (, generic)?>. Valid cases round-trip and
// lower; each malformed declaration has its own expected/found message.

// Heisenberg H(3): nilpotent, affine; exp/log/inverse are exact finite
// series, so no transcendental function appears in the lowering.
// CHECK-LABEL: func.func @heisenberg
//       CHECK:   lie.log %{{.*}} {group = #lie.group<"Heis3", n = 3, generators = array<f64: 0.000000e+00, 1.000000e+00,
//  CHECK-SAME:     blocks = {{\[\[}}"plane", 0, 1], ["center", 2]]>}
//       CHECK:   lie.dist2
// LOWER-LABEL: func.func @heisenberg
//   LOWER-NOT:   math.sqrt
//   LOWER-NOT:   math.atan2
//       LOWER:   return
func.func @heisenberg(%g: tensor<?x3x3xf64>, %h: tensor<?x3x3xf64>)
    -> (tensor<?x3xf64>, tensor<?xf64>) {
  %w = lie.log %g {group = #lie.group<"Heis3", n = 3, generators = array<f64: 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, blocks = [["plane", 0, 1], ["center", 2]]>} : tensor<?x3x3xf64> -> tensor<?x3xf64>
  %d = lie.dist2 %g, %h {group = #lie.group<"Heis3", n = 3, generators = array<f64: 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, blocks = [["plane", 0, 1], ["center", 2]]>, lambda = array<f64: 1.0, 0.25>} : tensor<?x3x3xf64> -> tensor<?xf64>
  return %w, %d : tensor<?x3xf64>, tensor<?xf64>
}

// -----

// so(3) declared in the built-in basis: the built-in closed forms are used
// (Rodrigues and atan2-based log), unless the keyword 'generic' asks for the
// generic matrix functions.
// CHECK-LABEL: func.func @so3_specialised
//       CHECK:   lie.log %{{.*}} {group = #lie.group<"Rot3", n = 3, generators = array<f64:
//  CHECK-SAME:     blocks = {{\[\[}}"rot", 0, 1, 2]]>}
// LOWER-LABEL: func.func @so3_specialised
//       LOWER:   math.atan2
//       LOWER:   return
func.func @so3_specialised(%g: tensor<?x3x3xf64>) -> tensor<?x3xf64> {
  %w = lie.log %g {group = #lie.group<"Rot3", n = 3, generators = array<f64: 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0>, blocks = [["rot", 0, 1, 2]]>} : tensor<?x3x3xf64> -> tensor<?x3xf64>
  return %w : tensor<?x3xf64>
}

// -----

// CHECK-LABEL: func.func @so3_generic
//       CHECK:   lie.log %{{.*}} {group = #lie.group<"Rot3", {{.*}}, generic>}
// LOWER-LABEL: func.func @so3_generic
//   LOWER-NOT:   math.atan2
//       LOWER:   scf.while
//   LOWER-NOT:   math.atan2
//       LOWER:   return
func.func @so3_generic(%g: tensor<?x3x3xf64>) -> tensor<?x3xf64> {
  %w = lie.log %g {group = #lie.group<"Rot3", n = 3, generators = array<f64: 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0>, blocks = [["rot", 0, 1, 2]], generic>} : tensor<?x3x3xf64> -> tensor<?x3xf64>
  return %w : tensor<?x3xf64>
}

// -----

// The op verifiers use the declared sizes.
func.func @wrong_algebra_dim(%g: tensor<?x3x3xf64>) -> tensor<?x2xf64> {
  // expected-error @+1 {{'lie.log' op expects result with last dim 3 for group Heis3, got 'tensor<?x2xf64>'}}
  %w = lie.log %g {group = #lie.group<"Heis3", n = 3, generators = array<f64: 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, blocks = [["plane", 0, 1], ["center", 2]]>} : tensor<?x3x3xf64> -> tensor<?x2xf64>
  return %w : tensor<?x2xf64>
}

// -----

// expected-error @+1 {{declared group 'G' expects generators as k·4 entries (k ≥ 1 matrices of 2x2), found 3 entries}}
func.func private @f() attributes {g = #lie.group<"G", n = 2, generators = array<f64: 0.0, 1.0, 0.0>, blocks = [["a", 0]]>}

// -----

// expected-error @+1 {{declared group 'G' expects a matrix size n between 2 and 8, found 9}}
func.func private @f() attributes {g = #lie.group<"G", n = 9, generators = array<f64: 0.0>, blocks = [["a", 0]]>}

// -----

// expected-error @+1 {{declared group 'G' expects linearly independent generators, found E1 in the span of the generators before it}}
func.func private @f() attributes {g = #lie.group<"G", n = 2, generators = array<f64: 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0>, blocks = [["a", 0, 1]]>}

// -----

// [X, Y] = Z is missing: not a Lie algebra.
// expected-error @+1 {{declared group 'G' expects generators closed under the bracket, found [E0, E1] = [[0, 0, 1], [0, 0, 0], [0, 0, 0]] outside their span}}
func.func private @f() attributes {g = #lie.group<"G", n = 3, generators = array<f64: 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0>, blocks = [["a", 0, 1]]>}

// -----

// expected-error @+1 {{expects block 'b' to list at least one generator, found none}}
func.func private @f() attributes {g = #lie.group<"G", n = 2, generators = array<f64: 1.0, 0.0, 0.0, 0.0>, blocks = [["a", 0], ["b"]]>}

// -----

// expected-error @+1 {{expects block 'b' to list generator 1 next (blocks cover the generators in order), found 0}}
func.func private @f() attributes {g = #lie.group<"G", n = 2, generators = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0>, blocks = [["a", 0], ["b", 0]]>}

// -----

// expected-error @+1 {{declared group 'G' expects blocks covering all 2 generators once, found 1}}
func.func private @f() attributes {g = #lie.group<"G", n = 2, generators = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0>, blocks = [["a", 0]]>}

// -----

// expected-error @+1 {{expects each block as ["name", generator indices...], found [0]}}
func.func private @f() attributes {g = #lie.group<"G", n = 2, generators = array<f64: 1.0, 0.0, 0.0, 0.0>, blocks = [[0]]>}

// -----

// expected-error @+1 {{unknown group 'se4'; expected one of so2, se2, so3, se3, aff2, sim3, or a declared group with n, generators and blocks}}
func.func private @f() attributes {g = #lie.group<se4>}

// -----

// expected-error @+1 {{expected 'n'}}
func.func private @f() attributes {g = #lie.group<"G", generators = array<f64: 1.0, 0.0, 0.0, 0.0>>}
