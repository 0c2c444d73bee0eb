// RUN: torsor-opt %s --split-input-file --geo-decompose-attention | FileCheck %s

// products = bf16_dot (--compute=bf16 on AVX512-BF16): V is rounded to
// bf16 once and packed in pairs of keys (two value rows interleaved into
// one row of 2·D bf16) before the kernel; the probabilities are rounded
// into a bf16 buffer as they are stored; P·V steps over pairs of keys:
// one packed row per pair, and per row and head the pair's two bf16
// probabilities loaded as one i32 and broadcast into an
// x86vector.avx512.dot (vdpbf16ps) per 16-column chunk. Scores, exp and
// the sums stay f32; the masked loop clamps the pair index like the key.
// CHECK-LABEL: func.func @so3_bf16
//       CHECK:   %[[PACKED:.*]] = scf.for {{.*}} -> (tensor<?x128xbf16>)
//       CHECK:     arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
//       CHECK:     vector.interleave {{.*}} : vector<16xbf16> -> vector<32xbf16>
//       CHECK:     vector.transfer_write {{.*}} : vector<32xbf16>, tensor<?x128xbf16>
//       CHECK:   %[[PBF:.*]] = memref.alloca() : memref<128xbf16>
//       CHECK:   scf.for
//       CHECK:     math.fma {{.*}} : vector<16xf32>
//       CHECK:     arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
//       CHECK:     vector.store {{.*}}, %[[PBF]]
//       CHECK:     scf.for {{.*}} step %c2
//       CHECK:       arith.divui
//       CHECK:       vector.transfer_read %[[PACKED]]{{.*}} : tensor<?x128xbf16>, vector<32xbf16>
//       CHECK:       vector.load %[[PBF]]{{.*}} : memref<128xbf16>, vector<2xbf16>
//       CHECK:       vector.bitcast {{.*}} : vector<2xbf16> to vector<1xi32>
//       CHECK:       vector.broadcast {{.*}} : i32 to vector<16xi32>
//       CHECK:       x86vector.avx512.dot {{.*}} : vector<32xbf16> -> vector<16xf32>
//       CHECK:   scf.for
//       CHECK:       arith.minui
//       CHECK:       x86vector.avx512.dot
//   CHECK-NOT:   geo.flash_lie_attention
//       CHECK:   return
func.func @so3_bf16(%q: tensor<2x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x64xf32>, %init: tensor<2x64xf32>, %off: index) -> tensor<2x64xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>, key_tile = 64 : i64, torsor.strategy = #strategy.vector_attention<lanes = 16, query_rows = 2, key_tile = 64, products = bf16_dot>} : (tensor<2x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<2x64xf32>) -> tensor<2x64xf32>
  return %o : tensor<2x64xf32>
}

// -----

// Without products = bf16_dot: f32 P·V (FMAs), nothing in bf16.
// CHECK-LABEL: func.func @so3_f32
//   CHECK-NOT:   bf16
//       CHECK:   math.fma {{.*}} : vector<16xf32>
//   CHECK-NOT:   x86vector
//   CHECK-NOT:   bf16
//       CHECK:   return
func.func @so3_f32(%q: tensor<2x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x64xf32>, %init: tensor<2x64xf32>, %off: index) -> tensor<2x64xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>, key_tile = 64 : i64, torsor.strategy = #strategy.vector_attention<lanes = 16, query_rows = 2, key_tile = 64>} : (tensor<2x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<2x64xf32>) -> tensor<2x64xf32>
  return %o : tensor<2x64xf32>
}

// -----

// 4 heads of 8 columns take the 256-bit dot (vector<16xbf16> pairs into
// vector<8xf32>); 3 columns per head have no vdpbf16ps form: f32 FMAs.
// CHECK-LABEL: func.func @heads_bf16
//       CHECK:   x86vector.avx512.dot {{.*}} : vector<16xbf16> -> vector<8xf32>
// CHECK-LABEL: func.func @narrow_heads_f32
//   CHECK-NOT:   x86vector
//       CHECK:   return
func.func @heads_bf16(%q: tensor<1x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x32xf32>, %init: tensor<1x32xf32>, %off: index) -> tensor<1x32xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 4, tau = [1.0, 1.0, 1.0, 1.0], lambda = [1.0, 1.0, 1.0, 1.0]>, key_tile = 32 : i64, torsor.strategy = #strategy.vector_attention<lanes = 16, query_rows = 1, key_tile = 32, products = bf16_dot>} : (tensor<1x9xf32>, tensor<9x?xf32>, tensor<?x32xf32>, index, tensor<1x32xf32>) -> tensor<1x32xf32>
  return %o : tensor<1x32xf32>
}
func.func @narrow_heads_f32(%q: tensor<1x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x12xf32>, %init: tensor<1x12xf32>, %off: index) -> tensor<1x12xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 4, tau = [1.0, 1.0, 1.0, 1.0], lambda = [1.0, 1.0, 1.0, 1.0]>, key_tile = 32 : i64, torsor.strategy = #strategy.vector_attention<lanes = 16, query_rows = 1, key_tile = 32, products = bf16_dot>} : (tensor<1x9xf32>, tensor<9x?xf32>, tensor<?x12xf32>, index, tensor<1x12xf32>) -> tensor<1x12xf32>
  return %o : tensor<1x12xf32>
}
