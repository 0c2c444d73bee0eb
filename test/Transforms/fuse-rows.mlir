// RUN: torsor-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(torsor-fuse-rows))' | FileCheck %s

// LayerNorm as the frontend emits it (torsorc --emit=mlir): a row sum, the
// centred rows, a row sum of squares and the normalisation, four passes
// over [L, 48]. After: one scf.forall over blocks of row_task_rows (16)
// rows holding all four generics once each (tile-and-fuse fuses the
// centred rows once per reader; CSE merges the copies) and one fill, the
// sums with reassociable adds; nothing left outside.

// CHECK-LABEL: func.func @layer_norm
// CHECK-NOT:   linalg.generic
// CHECK:       scf.forall (%{{.*}}) = (0) to (%{{.*}}) step (16)
// CHECK:         linalg.fill
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           arith.addf {{.*}} fastmath<reassoc>
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:           arith.subf
// CHECK-NOT:     linalg.fill
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           arith.addf {{.*}} fastmath<reassoc>
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:           math.rsqrt
// CHECK:         scf.forall.in_parallel
// CHECK-NOT:   linalg.generic
// CHECK:       return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d1)>
module attributes {torsor.strategy = #strategy.dense<vector_bits = 512, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 8, register_vectors = 2, pack_transposed = true, row_task_rows = 16>} {
  func.func @layer_norm(%arg0: tensor<?x48xf32>, %arg1: tensor<48xf32>, %arg2: tensor<48xf32>) -> (tensor<?x48xf32>) {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x48xf32>
    %cst = arith.constant 0.020833334 : f32
    %cst_0 = arith.constant 9.99999974E-6 : f32
    %0 = tensor.empty(%dim) : tensor<?xf32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %1 = linalg.fill ins(%cst_1 : f32) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x48xf32>) outs(%1 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %10 = arith.addf %out, %in : f32
      linalg.yield %10 : f32
    } -> tensor<?xf32>
    %3 = tensor.empty(%dim) : tensor<?x48xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<?x48xf32>, tensor<?xf32>) outs(%3 : tensor<?x48xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %10 = arith.mulf %in_3, %cst : f32
      %11 = arith.subf %in, %10 : f32
      linalg.yield %11 : f32
    } -> tensor<?x48xf32>
    %5 = tensor.empty(%dim) : tensor<?xf32>
    %cst_2 = arith.constant 0.000000e+00 : f32
    %6 = linalg.fill ins(%cst_2 : f32) outs(%5 : tensor<?xf32>) -> tensor<?xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%4 : tensor<?x48xf32>) outs(%6 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %10 = arith.mulf %in, %in : f32
      %11 = arith.addf %out, %10 : f32
      linalg.yield %11 : f32
    } -> tensor<?xf32>
    %8 = tensor.empty(%dim) : tensor<?x48xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map1, #map2, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%4, %7, %arg1, %arg2 : tensor<?x48xf32>, tensor<?xf32>, tensor<48xf32>, tensor<48xf32>) outs(%8 : tensor<?x48xf32>) {
    ^bb0(%in: f32, %in_3: f32, %in_4: f32, %in_5: f32, %out: f32):
      %10 = arith.mulf %in_3, %cst : f32
      %11 = arith.addf %10, %cst_0 : f32
      %12 = math.rsqrt %11 : f32
      %13 = arith.mulf %in, %12 : f32
      %14 = arith.mulf %13, %in_4 : f32
      %15 = arith.addf %14, %in_5 : f32
      linalg.yield %15 : f32
    } -> tensor<?x48xf32>
    return %9 : tensor<?x48xf32>
  }
}

// -----

// RMS norm as the frontend emits it (torsorc --emit=mlir): one row sum of
// squares and the scaling generic that reads it; one task loop, the sum
// reassociated so that it vectorizes.

// CHECK-LABEL: func.func @rms_norm
// CHECK-NOT:   linalg.generic
// CHECK:       scf.forall (%{{.*}}) = (0) to (%{{.*}}) step (16)
// CHECK:         linalg.fill
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           arith.mulf
// CHECK:           arith.addf {{.*}} fastmath<reassoc>
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:           math.rsqrt
// CHECK:         scf.forall.in_parallel
// CHECK-NOT:   linalg.generic
// CHECK:       return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @rms_norm(%arg0: tensor<?x64xf32>, %arg1: tensor<64xf32>) -> tensor<?x64xf32> {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
    %cst = arith.constant 1.562500e-02 : f32
    %cst_0 = arith.constant 9.99999997E-7 : f32
    %0 = tensor.empty(%dim) : tensor<?xf32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %1 = linalg.fill ins(%cst_1 : f32) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x64xf32>) outs(%1 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %5 = arith.mulf %in, %in : f32
      %6 = arith.addf %out, %5 : f32
      linalg.yield %6 : f32
    } -> tensor<?xf32>
    %3 = tensor.empty(%dim) : tensor<?x64xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2, %arg1 : tensor<?x64xf32>, tensor<?xf32>, tensor<64xf32>) outs(%3 : tensor<?x64xf32>) {
    ^bb0(%in: f32, %in_2: f32, %in_3: f32, %out: f32):
      %5 = arith.mulf %in_2, %cst : f32
      %6 = arith.addf %5, %cst_0 : f32
      %7 = math.rsqrt %6 : f32
      %8 = arith.mulf %in, %7 : f32
      %9 = arith.mulf %8, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<?x64xf32>
    return %4 : tensor<?x64xf32>
  }
}

// -----

// Softmax (upstream's decomposition): row max, exp of the shifted rows,
// row sum, division; one task loop.

// CHECK-LABEL: func.func @softmax
// CHECK-NOT:   linalg.generic
// CHECK:       scf.forall
// CHECK:         arith.maxnumf {{.*}} fastmath<reassoc>
// CHECK:         math.exp
// CHECK:         arith.addf {{.*}} fastmath<reassoc>
// CHECK:         arith.divf
// CHECK:         scf.forall.in_parallel
// CHECK-NOT:   linalg.generic
// CHECK:       return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
module attributes {torsor.strategy = #strategy.dense<vector_bits = 512, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 8, register_vectors = 2, pack_transposed = true, row_task_rows = 16>} {
  func.func @softmax(%arg0: tensor<?x48xf32>) -> (tensor<?x48xf32>) {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x48xf32>
    %0 = tensor.empty(%dim) : tensor<?x48xf32>
    %c0_0 = arith.constant 0 : index
    %dim_1 = tensor.dim %arg0, %c0_0 : tensor<?x48xf32>
    %1 = tensor.empty(%dim_1) : tensor<?xf32>
    %cst = arith.constant 0xFFC00000 : f32
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<?xf32>) -> tensor<?xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x48xf32>) outs(%2 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.maxnumf %in, %out : f32
      linalg.yield %8 : f32
    } -> tensor<?xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %3 : tensor<?x48xf32>, tensor<?xf32>) outs(%0 : tensor<?x48xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %8 = arith.subf %in, %in_3 : f32
      %9 = math.exp %8 : f32
      linalg.yield %9 : f32
    } -> tensor<?x48xf32>
    %cst_2 = arith.constant 0.000000e+00 : f32
    %5 = linalg.fill ins(%cst_2 : f32) outs(%1 : tensor<?xf32>) -> tensor<?xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%4 : tensor<?x48xf32>) outs(%5 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.addf %in, %out : f32
      linalg.yield %8 : f32
    } -> tensor<?xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%4, %6 : tensor<?x48xf32>, tensor<?xf32>) outs(%0 : tensor<?x48xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %8 = arith.divf %in, %in_3 : f32
      linalg.yield %8 : f32
    } -> tensor<?x48xf32>
    return %7 : tensor<?x48xf32>
  }
}

// -----

// Negative cases. A row reduction with no elementwise consumer stays as it
// is (nothing to fuse it with). A centred tensor that is also returned is
// read outside the chain: it is not fused (that would compute it twice),
// but the reduction and normalisation reading it still form a task.

// CHECK-LABEL: func.func @no_consumer
// CHECK-NOT:   scf.forall
// CHECK:       linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-NOT:   fastmath
// CHECK:       return

// CHECK-LABEL: func.func @shared_producer
// CHECK:       %[[XC:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:       %[[Y:.*]] = scf.forall
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:       return %[[XC]], %[[Y]]
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
module attributes {torsor.strategy = #strategy.dense<vector_bits = 512, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 8, register_vectors = 2, pack_transposed = true, row_task_rows = 16>} {
  func.func @no_consumer(%x: tensor<?x48xf32>) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %x, %c0 : tensor<?x48xf32>
    %e = tensor.empty(%dim) : tensor<?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    %s = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x48xf32>) outs(%f : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %a = arith.addf %out, %in : f32
      linalg.yield %a : f32
    } -> tensor<?xf32>
    return %s : tensor<?xf32>
  }
  func.func @shared_producer(%x: tensor<?x48xf32>) -> (tensor<?x48xf32>, tensor<?x48xf32>) {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %x, %c0 : tensor<?x48xf32>
    %e = tensor.empty(%dim) : tensor<?x48xf32>
    %xc = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x48xf32>) outs(%e : tensor<?x48xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<?x48xf32>
    %er = tensor.empty(%dim) : tensor<?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    %f = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
    %s = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%xc : tensor<?x48xf32>) outs(%f : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %a = arith.addf %out, %in : f32
      linalg.yield %a : f32
    } -> tensor<?xf32>
    %e2 = tensor.empty(%dim) : tensor<?x48xf32>
    %y = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%xc, %s : tensor<?x48xf32>, tensor<?xf32>) outs(%e2 : tensor<?x48xf32>) {
    ^bb0(%in: f32, %in2: f32, %out: f32):
      %d = arith.divf %in, %in2 : f32
      linalg.yield %d : f32
    } -> tensor<?x48xf32>
    return %xc, %y : tensor<?x48xf32>, tensor<?x48xf32>
  }
}
