// RUN: torsor-opt %s --split-input-file --torsor-tile-dense | FileCheck %s

// A 2-D matmul with a dynamic row count: tasks over 32-row blocks, cache
// blocks of 256 columns and depth, 8 x 32 register tiles whose k loop
// carries the accumulator in registers and does one broadcast and one
// 32-lane FMA per row; ragged rows and columns (1000 = 31 · 32 + 8) are
// peeled and become unit-step loops around static scalar contractions
// (a row of 32 columns, a column of 8 rows), with a loop annotation that
// keeps LLVM's loop vectorizer off those loops (they run fewer than 8 or
// 32 times: a vector body would never run).

// CHECK:       #[[NOVEC_V:.*]] = #llvm.loop_vectorize<disable = true>
// CHECK:       #[[NOVEC:.*]] = #llvm.loop_annotation<vectorize = #[[NOVEC_V]]>
// CHECK-LABEL: func.func @matmul
// CHECK:       scf.forall (%{{.*}}) = (0) to (%{{.*}}) step (32)
// CHECK:         scf.for %{{.*}} = %c0 to %c1000 step %c256
// CHECK:           scf.for %{{.*}} step %c8
// CHECK:             scf.for %{{.*}} step %c32
// CHECK:               %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK:               scf.for %{{.*}} = %c0 to %c256 step %c1 iter_args(%{{.*}} = %[[ACC]]) -> (vector<8x32xf32>)
// CHECK-COUNT-8:         vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT:             vector.fma
// CHECK:                 scf.yield
// CHECK:               vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<8x32xf32>
// Ragged columns of full row tiles: a loop over the columns per k.
// CHECK:             scf.for %{{.*}} = %c0 to %c256 step %c1
// CHECK:               scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK:                 linalg.contract {{.*}} -> tensor<8x1xf32>
// CHECK:               } {loop_annotation = #[[NOVEC]]}
// Ragged rows: a loop over the rows per k.
// CHECK:           scf.for %{{.*}} step %c8
// CHECK:             scf.for %{{.*}} step %c32
// CHECK:               scf.for %{{.*}} = %c0 to %c256 step %c1
// CHECK:                 scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK:                   linalg.contract {{.*}} -> tensor<1x32xf32>
// CHECK:                 } {loop_annotation = #[[NOVEC]]}
// The corner: rows and columns both ragged, two annotated loops.
// CHECK:             scf.for %{{.*}} = %c0 to %c256 step %c1
// CHECK:               scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK:                 scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK:                   linalg.contract {{.*}} -> tensor<1x1xf32>
// CHECK:                 } {loop_annotation = #[[NOVEC]]}
// CHECK:               } {loop_annotation = #[[NOVEC]]}
// CHECK-NOT:   linalg.contract {{.*}} -> tensor<{{.*}}?
module attributes {torsor.strategy = #strategy.dense<vector_bits = 512, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 8, register_vectors = 2, pack_transposed = true, row_task_rows = 16>} {
  func.func @matmul(%a: tensor<?x256xf32>, %b: tensor<256x1000xf32>,
                    %c: tensor<?x1000xf32>) -> tensor<?x1000xf32> {
    %r = linalg.matmul ins(%a, %b : tensor<?x256xf32>, tensor<256x1000xf32>)
                       outs(%c : tensor<?x1000xf32>) -> tensor<?x1000xf32>
    return %r : tensor<?x1000xf32>
  }
}

// -----

// The `x Wᵀ` generic of a linear layer (W stored [out, in]): without
// pack_panels (tile-dense-panels.mlir), W is transposed once so the
// kernel reads rows of it. 128-bit strategy: 4 x 4 f64 register tiles.

// CHECK-LABEL: func.func @linear
// CHECK:       %[[WT:.*]] = linalg.transpose ins(%{{.*}} : tensor<64x16xf64>) outs(%{{.*}} : tensor<16x64xf64>) permutation = [1, 0]
// CHECK:       scf.forall
// CHECK:         tensor.extract_slice %[[WT]]
// CHECK:         vector.transfer_read {{.*}} : tensor<4x4xf64>, vector<4x4xf64>
// CHECK-COUNT-4: vector.fma {{.*}} : vector<4xf64>
#x = affine_map<(i, o, c) -> (i, c)>
#w = affine_map<(i, o, c) -> (o, c)>
#y = affine_map<(i, o, c) -> (i, o)>
module attributes {torsor.strategy = #strategy.dense<vector_bits = 128, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 4, register_vectors = 2, pack_transposed = true, row_task_rows = 16>} {
  func.func @linear(%x: tensor<?x16xf64>, %w: tensor<64x16xf64>,
                    %init: tensor<?x64xf64>) -> tensor<?x64xf64> {
    %r = linalg.generic {indexing_maps = [#x, #w, #y],
                         iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w : tensor<?x16xf64>, tensor<64x16xf64>) outs(%init : tensor<?x64xf64>) {
    ^bb0(%a: f64, %b: f64, %acc: f64):
      %p = arith.mulf %a, %b : f64
      %s = arith.addf %acc, %p : f64
      linalg.yield %s : f64
    } -> tensor<?x64xf64>
    return %r : tensor<?x64xf64>
  }
}

// -----

// Batched (one operand broadcast over the batch) contractions tile the
// batch dim into the tasks; a non-contraction is left alone.

// CHECK-LABEL: func.func @batched
// CHECK:       scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (3, %{{.*}}) step (1, 32)
// CHECK:         vector.fma
// CHECK-LABEL: func.func @not_a_contraction
// CHECK-NOT:   scf.forall
// CHECK:       linalg.generic
#a3 = affine_map<(b, m, n, k) -> (b, m, k)>
#b3 = affine_map<(b, m, n, k) -> (k, n)>
#c3 = affine_map<(b, m, n, k) -> (b, m, n)>
#id = affine_map<(i, j) -> (i, j)>
module {
  func.func @batched(%a: tensor<3x?x32xf32>, %b: tensor<32x64xf32>,
                     %c: tensor<3x?x64xf32>) -> tensor<3x?x64xf32> {
    %r = linalg.generic {indexing_maps = [#a3, #b3, #c3],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<3x?x32xf32>, tensor<32x64xf32>) outs(%c : tensor<3x?x64xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<3x?x64xf32>
    return %r : tensor<3x?x64xf32>
  }
  func.func @not_a_contraction(%a: tensor<?x8xf32>, %c: tensor<?x8xf32>) -> tensor<?x8xf32> {
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%a : tensor<?x8xf32>) outs(%c : tensor<?x8xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %acc, %x : f32
      linalg.yield %s : f32
    } -> tensor<?x8xf32>
    return %r : tensor<?x8xf32>
  }
}
