// RUN: torsor-opt %s --torsor-tile-dense | FileCheck %s

// The frontend's `gelu(x @ W1 + b1) @ W2 + b2` (torsorc --emit=mlir) becomes
// two matmul kernels and nothing else: bias and GELU are fused into one
// elementwise generic (elementwise fusion), and that generic, the
// accumulator's fill and the matmul's register kernel share one task loop
// (scf.forall over 32-row blocks), so the epilogue runs on the task's block
// while it is in cache. No elementwise op is left outside a task. The f32
// erf of GELU becomes MLIR's polynomial (FMAs, no libm call), so that the
// epilogue loop vectorizes.

// CHECK-LABEL: func.func @mlp
// CHECK-NOT:   linalg.generic
// CHECK:       scf.forall
// CHECK:         linalg.fill
// CHECK:         vector.fma
// CHECK:         linalg.generic
// CHECK:           arith.addf
// CHECK-NOT:       math.erf
// CHECK:           math.fma
// CHECK:         scf.forall.in_parallel
// CHECK-NOT:   linalg.generic
// CHECK:       scf.forall
// CHECK:         linalg.fill
// CHECK:         vector.fma
// CHECK:         linalg.generic
// CHECK:           arith.addf
// CHECK:         scf.forall.in_parallel
// CHECK-NOT:   linalg.generic
// CHECK-NOT:   scf.forall
// CHECK:       return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
module attributes {torsor.strategy = #strategy.dense<vector_bits = 512, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 8, register_vectors = 2, pack_transposed = true, row_task_rows = 16>} {
  func.func @mlp(%arg0: tensor<?x64xf32>, %arg1: tensor<64x128xf32>, %arg2: tensor<128xf32>, %arg3: tensor<128x64xf32>, %arg4: tensor<64xf32>) -> (tensor<?x64xf32>) {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
    %0 = tensor.empty(%dim) : tensor<?x128xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x128xf32>) -> tensor<?x128xf32>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x64xf32>, tensor<64x128xf32>) outs(%1 : tensor<?x128xf32>) -> tensor<?x128xf32>
    %3 = tensor.empty(%dim) : tensor<?x128xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%2, %arg2 : tensor<?x128xf32>, tensor<128xf32>) outs(%3 : tensor<?x128xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %12 = arith.addf %in, %in_1 : f32
      linalg.yield %12 : f32
    } -> tensor<?x128xf32>
    %5 = tensor.empty(%dim) : tensor<?x128xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<?x128xf32>) outs(%5 : tensor<?x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst_1 = arith.constant 0.707106769 : f32
      %12 = arith.mulf %in, %cst_1 : f32
      %13 = math.erf %12 : f32
      %cst_2 = arith.constant 5.000000e-01 : f32
      %14 = arith.mulf %in, %cst_2 : f32
      %cst_3 = arith.constant 1.000000e+00 : f32
      %15 = arith.addf %cst_3, %13 : f32
      %16 = arith.mulf %14, %15 : f32
      linalg.yield %16 : f32
    } -> tensor<?x128xf32>
    %7 = tensor.empty(%dim) : tensor<?x64xf32>
    %cst_0 = arith.constant 0.000000e+00 : f32
    %8 = linalg.fill ins(%cst_0 : f32) outs(%7 : tensor<?x64xf32>) -> tensor<?x64xf32>
    %9 = linalg.matmul ins(%6, %arg3 : tensor<?x128xf32>, tensor<128x64xf32>) outs(%8 : tensor<?x64xf32>) -> tensor<?x64xf32>
    %10 = tensor.empty(%dim) : tensor<?x64xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%9, %arg4 : tensor<?x64xf32>, tensor<64xf32>) outs(%10 : tensor<?x64xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %12 = arith.addf %in, %in_1 : f32
      linalg.yield %12 : f32
    } -> tensor<?x64xf32>
    return %11 : tensor<?x64xf32>
  }
}
