// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 amx=true" --torsor-tile-dense | FileCheck %s --check-prefix=PACK
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 avx512bf16=true" --torsor-tile-dense | FileCheck %s --check-prefix=PACK
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16" --torsor-tile-dense | FileCheck %s --check-prefix=ROUND
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512" --torsor-tile-dense | FileCheck %s --check-prefix=F32

// `--compute=bf16` in torsor-tile-dense. With a bf16 unit (AMX or
// AVX512-BF16) the operands are rounded to bf16 and packed: A padded to
// [Mp, Kp] (rows to 32, depth 40 → 64) in 16 x 32 tiles [Mp/16, 2, 16, 32]:
// the rounding generic writes them directly (element (m, k) at (m / 16,
// k / 32, m % 16, k % 32)) into a zero-filled tensor (depth padding), with
// no padded copy, and they are viewed as [Mp/16, 2, 16, 16, 2]; B padded
// to [64, 64] (the rounding writes the corner of a zero-filled tensor in
// place, no tensor.pad copy) and reordered into VNNI tiles
// [4, 2, 16, 16, 2] (panel of 16 columns, depth tile, pair row, column,
// pair); C padded to [Mp, 64] and viewed as [Mp/16, 16, 4, 16]. The
// product is one generic marked torsor.bf16_product that accumulates in
// f32, and its [L, 48] slice is the result. Without one, the operands are
// rounded to bf16 on their bits and the f32 kernel runs on them. f32 is
// untouched.

// PACK-DAG: #[[AROW:.*]] = affine_map<(d0, d1, d2) -> (d0, d1 * 32 + d2)>
// PACK-DAG: #[[ATILE:.*]] = affine_map<(d0, d1, d2) -> (d0 floordiv 16, d1, d0 mod 16, d2)>
// PACK-DAG: #[[AWRITE:.*]] = affine_map<(d0, d1) -> (d0 floordiv 16, d1 floordiv 32, d0 mod 16, d1 mod 32)>
// PACK-DAG: #[[BREAD:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1 * 32 + d2 * 2 + d4, d0 * 16 + d3)>
// PACK-DAG: #[[XT:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// PACK-LABEL: func.func @matmul
//       PACK:   %[[AZ:.*]] = linalg.fill ins(%{{.*}} : bf16) outs(%{{.*}} : tensor<?x2x16x32xbf16>)
//       PACK:   %[[AR:.*]] = linalg.generic {indexing_maps = [#{{[^,]*}}, #[[AWRITE]]]{{.*}} ins(%{{.*}} : tensor<?x40xf32>) outs(%[[AZ]] : tensor<?x2x16x32xbf16>)
//       PACK:     arith.truncf {{.*}} : f32 to bf16
//       PACK:   %[[AT:.*]] = tensor.expand_shape %[[AR]] {{\[\[}}0], [1], [2], [3, 4]] {{.*}} into tensor<?x2x16x16x2xbf16>
//       PACK:   linalg.fill ins(%{{.*}} : bf16) outs(%{{.*}} : tensor<64x64xbf16>)
//       PACK:   tensor.insert_slice {{.*}} : tensor<40x48xbf16> into tensor<64x64xbf16>
//   PACK-NOT:   tensor.pad
//       PACK:   %[[BT:.*]] = linalg.generic {indexing_maps = [#[[BREAD]], {{.*}}]{{.*}} outs(%{{.*}} : tensor<4x2x16x16x2xbf16>) attrs = {torsor.packed_operand}
//       PACK:   tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2, 3]] {{.*}} : tensor<?x64xf32> into tensor<?x16x4x16xf32>
//       PACK:   %[[P:.*]] = linalg.generic {{.*}} ins(%[[AT]], %[[BT]] : tensor<?x2x16x16x2xbf16>, tensor<4x2x16x16x2xbf16>) outs(%{{.*}} : tensor<?x16x4x16xf32>) attrs = {torsor.bf16_product}
//       PACK:     arith.extf {{.*}} : bf16 to f32
//       PACK:     arith.mulf
//       PACK:     arith.addf
//       PACK:   %[[CF:.*]] = tensor.collapse_shape %[[P]] {{\[\[}}0, 1], [2, 3]] : tensor<?x16x4x16xf32> into tensor<?x64xf32>
//       PACK:   tensor.extract_slice %[[CF]][0, 0] [%{{.*}}, 48] [1, 1] : tensor<?x64xf32> to tensor<?x48xf32>
//   PACK-NOT:   vector.fma

// ROUND-LABEL: func.func @matmul
//   ROUND-NOT:   torsor.bf16_product
//       ROUND:   arith.bitcast {{.*}} : f32 to i32
//       ROUND:   arith.andi {{.*}} %c-65536_i32
//       ROUND:   vector.fma

// F32-LABEL: func.func @matmul
//   F32-NOT:   bf16
//       F32:   vector.fma
//   F32-NOT:   bf16
func.func @matmul(%x: tensor<?x40xf32>, %w: tensor<40x48xf32>) -> tensor<?x48xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %l = tensor.dim %x, %c0 : tensor<?x40xf32>
  %init = tensor.empty(%l) : tensor<?x48xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<?x48xf32>) -> tensor<?x48xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x40xf32>, tensor<40x48xf32>)
                     outs(%fill : tensor<?x48xf32>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}

// Contractions with batch dims pack per batch element: QKᵀ of 4 heads
// (B read as [h, n, k], transposed in the packing), and `x @ W` with x
// [3, L, 40] whose W is shared (packed once, without the batch dim).

// PACK-LABEL: func.func @heads
//       PACK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<4x?x1x16x32xbf16>)
//       PACK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<4x?x1x16x16x2xbf16>) attrs = {torsor.packed_operand}
//       PACK:   %[[P:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x?x1x16x16x2xbf16>, tensor<4x?x1x16x16x2xbf16>) outs(%{{.*}} : tensor<4x?x16x?x16xf32>) attrs = {torsor.bf16_product}
//       PACK:   %[[CF:.*]] = tensor.collapse_shape %[[P]] {{\[\[}}0], [1, 2], [3, 4]] : tensor<4x?x16x?x16xf32> into tensor<4x?x?xf32>
//       PACK:   tensor.extract_slice %[[CF]][0, 0, 0] [4, %{{.*}}, %{{.*}}] [1, 1, 1] : tensor<4x?x?xf32> to tensor<4x?x?xf32>
//   PACK-NOT:   vector.fma

// ROUND-LABEL: func.func @heads
//   ROUND-NOT:   torsor.bf16_product
//       ROUND:   arith.andi {{.*}} %c-65536_i32
//       ROUND:   vector.fma
func.func @heads(%q: tensor<4x?x16xf32>, %k: tensor<4x?x16xf32>) -> tensor<4x?x?xf32> {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %l = tensor.dim %q, %c1 : tensor<4x?x16xf32>
  %s = tensor.dim %k, %c1 : tensor<4x?x16xf32>
  %init = tensor.empty(%l, %s) : tensor<4x?x?xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<4x?x?xf32>) -> tensor<4x?x?xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(h, m, n, k) -> (h, m, k)>,
                                        affine_map<(h, m, n, k) -> (h, n, k)>,
                                        affine_map<(h, m, n, k) -> (h, m, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<4x?x16xf32>, tensor<4x?x16xf32>) outs(%fill : tensor<4x?x?xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %p = arith.mulf %x, %w : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x?x?xf32>
  return %y : tensor<4x?x?xf32>
}

// PACK-LABEL: func.func @shared_weight
//       PACK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<3x?x2x16x32xbf16>)
//       PACK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<4x2x16x16x2xbf16>) attrs = {torsor.packed_operand}
//       PACK:   linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3x?x2x16x16x2xbf16>, tensor<4x2x16x16x2xbf16>) outs(%{{.*}} : tensor<3x?x16x4x16xf32>) attrs = {torsor.bf16_product}
//   PACK-NOT:   vector.fma
func.func @shared_weight(%x: tensor<3x?x40xf32>, %w: tensor<40x48xf32>) -> tensor<3x?x48xf32> {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %l = tensor.dim %x, %c1 : tensor<3x?x40xf32>
  %init = tensor.empty(%l) : tensor<3x?x48xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<3x?x48xf32>) -> tensor<3x?x48xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                                        affine_map<(b, m, n, k) -> (k, n)>,
                                        affine_map<(b, m, n, k) -> (b, m, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<3x?x40xf32>, tensor<40x48xf32>) outs(%fill : tensor<3x?x48xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<3x?x48xf32>
  return %y : tensor<3x?x48xf32>
}

// Depth a multiple of the tile's 32: A's tiles need no zero fill (its row
// padding only reaches C's rows past L, which are sliced off), and the
// rounding loops over (m, ko, e) with k = 32·ko + e, so its innermost loop
// runs along one tile row in both A and the tiles.

// PACK-LABEL: func.func @depth64
//   PACK-NOT:   linalg.fill ins(%{{.*}} : bf16) outs(%{{.*}} : tensor<?x2x16x32xbf16>)
//       PACK:   %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x2x16x32xbf16>
//       PACK:   linalg.generic {indexing_maps = [#[[AROW]], #[[ATILE]]]{{.*}} ins(%{{.*}} : tensor<?x64xf32>) outs(%[[E]] : tensor<?x2x16x32xbf16>)
//       PACK:   attrs = {torsor.bf16_product}
func.func @depth64(%x: tensor<?x64xf32>, %w: tensor<64x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %l = tensor.dim %x, %c0 : tensor<?x64xf32>
  %init = tensor.empty(%l) : tensor<?x32xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<?x32xf32>) -> tensor<?x32xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x64xf32>, tensor<64x32xf32>)
                     outs(%fill : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// The backward's dW = xᵀ·dy (autodiff's linalg.transpose into a fresh
// tensor, then a named matmul): the packing reads x [L, 40] itself through
// the permuted map (element (k, l) of xᵀ at x[l, k]), writing A's tiles
// [4, Lp/32, 16, 32] (rows k padded to 64, depth l) directly; the
// transposed copy is left dead and erased.

// PACK-LABEL: func.func @transposed_left
//   PACK-NOT:   linalg.transpose
//       PACK:   linalg.generic {indexing_maps = [#[[XT]], #[[AWRITE]]]{{.*}} ins(%{{.*}} : tensor<?x40xf32>) outs(%{{.*}} : tensor<4x?x16x32xbf16>)
//   PACK-NOT:   linalg.transpose
//       PACK:   torsor.bf16_product
//   PACK-NOT:   linalg.transpose
// ROUND-LABEL: func.func @transposed_left
//       ROUND:   linalg.transpose
func.func @transposed_left(%x: tensor<?x40xf32>, %dy: tensor<?x48xf32>) -> tensor<40x48xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %l = tensor.dim %x, %c0 : tensor<?x40xf32>
  %t0 = tensor.empty(%l) : tensor<40x?xf32>
  %xt = linalg.transpose ins(%x : tensor<?x40xf32>) outs(%t0 : tensor<40x?xf32>) permutation = [1, 0]
  %init = tensor.empty() : tensor<40x48xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<40x48xf32>) -> tensor<40x48xf32>
  %dw = linalg.matmul ins(%xt, %dy : tensor<40x?xf32>, tensor<?x48xf32>)
                      outs(%fill : tensor<40x48xf32>) -> tensor<40x48xf32>
  return %dw : tensor<40x48xf32>
}
