// RUN: torsor-opt %s --split-input-file --torsor-tile-dense | FileCheck %s

// pack_panels: the right operand is packed once, before the tasks, into
// panels of one register tile's 32 columns, [ceil(N / 32), K, 32], and
// every register tile reads its k rows from one panel (a contiguous
// stream) instead of rows 1000 floats apart. 1000 = 31 · 32 + 8 columns:
// the packing is one generic that zero-fills the last panel's 24 missing
// columns (marked for torsor-hoist-packed-params); the ragged columns'
// peeled tile reads 8 columns of the last panel.

// CHECK-LABEL: func.func @matmul_panels
//  CHECK-SAME:   %[[B:[a-z0-9]+]]: tensor<256x1000xf32>
//       CHECK:   %[[P:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<32x256x32xf32>) attrs = {torsor.packed_operand}
//       CHECK:     tensor.extract %[[B]]
//       CHECK:     arith.select
//       CHECK:   scf.forall
//   CHECK-NOT:     tensor.extract_slice %[[B]][
//       CHECK:     tensor.extract_slice %[[P]][%{{.*}}, 0, 0] [1, 256, 32] [1, 1, 1] : tensor<32x256x32xf32> to tensor<256x32xf32>
//       CHECK:     vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
//       CHECK:     scf.for
//       CHECK:       vector.transfer_read {{.*}} : tensor<1x32xf32>, vector<1x32xf32>
// CHECK-COUNT-8:     vector.fma {{.*}} : vector<32xf32>
//   CHECK-NOT:       vector.fma
//       CHECK:       scf.yield
//       CHECK:     tensor.extract_slice %[[P]][%{{.*}}, 0, 0] [1, 256, %{{.*}}] [1, 1, 1] : tensor<32x256x32xf32> to tensor<256x?xf32>
module attributes {torsor.strategy = #strategy.dense<vector_bits = 512, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 8, register_vectors = 2, pack_transposed = true, row_task_rows = 16, pack_panels = true>} {
  func.func @matmul_panels(%a: tensor<?x256xf32>, %b: tensor<256x1000xf32>,
                           %c: tensor<?x1000xf32>) -> tensor<?x1000xf32> {
    %r = linalg.matmul ins(%a, %b : tensor<?x256xf32>, tensor<256x1000xf32>)
                       outs(%c : tensor<?x1000xf32>) -> tensor<?x1000xf32>
    return %r : tensor<?x1000xf32>
  }
}

// -----

// W stored [out, in] (`x Wᵀ`) with 64 = 16 · 4 columns: the panels are a
// reshape and one transpose (no per-call transpose to [in, out] first);
// 128-bit f64 tiles of 4 x 4.

// CHECK-LABEL: func.func @linear_panels
//  CHECK-SAME:   %[[W:[a-z0-9]+]]: tensor<64x16xf64>
//       CHECK:   %[[W3:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2]] output_shape [16, 4, 16] : tensor<64x16xf64> into tensor<16x4x16xf64>
//       CHECK:   %[[P:.*]] = linalg.transpose ins(%[[W3]] : tensor<16x4x16xf64>) outs(%{{.*}} : tensor<16x16x4xf64>) permutation = [0, 2, 1]  {torsor.packed_operand}
//   CHECK-NOT:   linalg.transpose
//       CHECK:   scf.forall
//       CHECK:     tensor.extract_slice %[[P]][%{{.*}}, 0, 0] [1, 16, 4] [1, 1, 1] : tensor<16x16x4xf64> to tensor<16x4xf64>
//       CHECK:     vector.transfer_read {{.*}} : tensor<4x4xf64>, vector<4x4xf64>
// CHECK-COUNT-4:   vector.fma {{.*}} : vector<4xf64>
#x = affine_map<(i, o, c) -> (i, c)>
#w = affine_map<(i, o, c) -> (o, c)>
#y = affine_map<(i, o, c) -> (i, o)>
module attributes {torsor.strategy = #strategy.dense<vector_bits = 128, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 4, register_vectors = 2, pack_transposed = true, row_task_rows = 16, pack_panels = true>} {
  func.func @linear_panels(%x: tensor<?x16xf64>, %w: tensor<64x16xf64>,
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

// A right operand with a batch dim of its own (attention's per-head
// values) is not packed: its tiles read it in place.

// CHECK-LABEL: func.func @batched_right_operand
//   CHECK-NOT:   torsor.packed_operand
//       CHECK:   scf.forall
//       CHECK:     vector.fma
#a3 = affine_map<(b, m, n, k) -> (b, m, k)>
#b3 = affine_map<(b, m, n, k) -> (b, k, n)>
#c3 = affine_map<(b, m, n, k) -> (b, m, n)>
module attributes {torsor.strategy = #strategy.dense<vector_bits = 512, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 8, register_vectors = 2, pack_transposed = true, row_task_rows = 16, pack_panels = true>} {
  func.func @batched_right_operand(%a: tensor<3x?x32xf32>, %b: tensor<3x32x64xf32>,
                                   %c: tensor<3x?x64xf32>) -> tensor<3x?x64xf32> {
    %r = linalg.generic {indexing_maps = [#a3, #b3, #c3],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<3x?x32xf32>, tensor<3x32x64xf32>) outs(%c : tensor<3x?x64xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<3x?x64xf32>
    return %r : tensor<3x?x64xf32>
  }
}
