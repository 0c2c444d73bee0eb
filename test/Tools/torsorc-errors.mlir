// RUN: not torsorc %s --emit=mlir 2>&1 | FileCheck %s
// RUN: torsorc %s --emit=mlir --verify-diagnostics

// Errors are located and carry a caret line.
// CHECK: torsorc-errors.mlir:[[@LINE+5]]:8: error: 'lie.log' op expects result with last dim 1 for group SO2, got 'tensor<?x2xf32>'
// CHECK-NEXT: %w = lie.log
// CHECK-NEXT: ^
func.func @bad(%g: tensor<?x2x2xf32>) -> tensor<?x2xf32> {
  // expected-error @+1 {{expects result with last dim 1 for group SO2}}
  %w = lie.log %g {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?x2xf32>
  return %w : tensor<?x2xf32>
}
