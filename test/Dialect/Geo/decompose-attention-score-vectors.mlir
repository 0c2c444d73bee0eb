// RUN: torsor-opt %s --split-input-file --geo-decompose-attention | FileCheck %s

// score_vectors = 2 on 8 lanes (the AVX2 strategy at one query row): the
// score loop's operations cover 16 keys (two machine vectors: the key
// loads, the pair form, the 4 heads' scores and exps, the row sums and
// the probability stores are vector<16xf32>), while P·V keeps 8-column
// chunks (16 columns per head: two chunks each). The 4 heads share one
// evaluation of the pair form (one sqrt per key loop: the unmasked one
// and the masked row's). The known max (every score ≤ 0) gives the exps
// the flags for arguments ≤ 0: one flush-to-zero select below −86.9 and
// no overflow test, where the plain exp tests −80, −104 and 88.72.
// CHECK-LABEL: func.func @se2_four_heads
//       CHECK:   scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
//       CHECK:     scf.for {{.*}} step %c16{{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//       CHECK:       vector.transfer_read {{.*}} : tensor<4x?xf32>, vector<16xf32>
//       CHECK:       math.sqrt {{.*}} : vector<16xf32>
//       CHECK:       arith.constant dense<-8.690000e+01> : vector<16xf32>
//   CHECK-NOT:       arith.constant dense<-8.000000e+01> : vector<16xf32>
//   CHECK-NOT:       arith.constant dense<8.872284e+01> : vector<16xf32>
//       CHECK:       vector.store {{.*}} : memref<{{.*}}xf32>, vector<16xf32>
//       CHECK:     scf.for
//       CHECK:       math.fma {{.*}} : vector<8xf32>
//       CHECK:   return
// COUNT-LABEL: func.func @se2_four_heads
// RUN: torsor-opt %s --split-input-file --geo-decompose-attention | FileCheck %s --check-prefix=COUNT
//  COUNT-COUNT-2: math.sqrt
//    COUNT-NOT: math.sqrt
//        COUNT: return
func.func @se2_four_heads(%q: tensor<1x4xf32>, %k: tensor<4x?xf32>, %v: tensor<?x64xf32>, %init: tensor<1x64xf32>, %off: index) -> tensor<1x64xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<se2>, heads = 4, tau = [0.5, 1.0, 2.0, 4.0], lambda = [1.0, 0.1, 1.0, 0.5, 1.0, 1.0, 0.5, 2.0]>, key_tile = 32 : i64, torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32, score_vectors = 2>} : (tensor<1x4xf32>, tensor<4x?xf32>, tensor<?x64xf32>, index, tensor<1x64xf32>) -> tensor<1x64xf32>
  return %o : tensor<1x64xf32>
}

// -----

// score_vectors = 1 (the default): 8-key score operations, as before.
// CHECK-LABEL: func.func @se2_one_vector
//       CHECK:     scf.for {{.*}} step %c8{{.*}} -> (vector<8xf32>)
//       CHECK:       vector.transfer_read {{.*}} : tensor<4x?xf32>, vector<8xf32>
//       CHECK:       math.sqrt {{.*}} : vector<8xf32>
// COUNT-LABEL: func.func @se2_one_vector
func.func @se2_one_vector(%q: tensor<1x4xf32>, %k: tensor<4x?xf32>, %v: tensor<?x8xf32>, %init: tensor<1x8xf32>, %off: index) -> tensor<1x8xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<se2>, heads = 1, tau = [1.0], lambda = [1.0, 1.0]>, key_tile = 32 : i64, torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32>} : (tensor<1x4xf32>, tensor<4x?xf32>, tensor<?x8xf32>, index, tensor<1x8xf32>) -> tensor<1x8xf32>
  return %o : tensor<1x8xf32>
}

// -----

// A cross form (a key offset) keeps the running max: its exps e^{s − m'}
// carry afn (flush below −86.9) but keep the overflow test on masked
// lanes (−∞ reaches them); the unmasked tiles' exps drop it.
// CHECK-LABEL: func.func @cross_running_max
//       CHECK:   vector.reduction <maximumf>
//       CHECK:   arith.constant dense<-8.690000e+01> : vector<16xf32>
// COUNT-LABEL: func.func @cross_running_max
func.func @cross_running_max(%q: tensor<1x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<1x8xf32>, %qo: index, %ko: index) -> tensor<1x8xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %qo key_offset %ko, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>, key_tile = 32 : i64, torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32, score_vectors = 2>} : (tensor<1x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, index, tensor<1x8xf32>) -> tensor<1x8xf32>
  return %o : tensor<1x8xf32>
}
