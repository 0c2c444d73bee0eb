// RUN: torsor-opt %s --split-input-file --geo-decompose-attention | FileCheck %s

// Cache blocks (query_block = 16, key_block = 64): an op of 16 rows runs
// as 1-row micro-kernels (query_rows = 1) over one block of 64 keys after
// another, every micro-kernel over a block before the next block, so that
// a block's key features and values come from memory once per 16 rows.
// The rows' state (lane sums [r][lane], accumulators [r][column]) lives in
// stack buffers between blocks, starting from zeros; the probability
// buffer holds one micro-kernel's probabilities (32), its row's query
// features staged at constant slots 32-40 (the pair form's broadcasts
// then need no register for the row), and the 16 rows' query features
// (16 × 9). Blocks are whole key tiles (the block loop's
// tiles are those of the unblocked key loop), and the masked tiles and
// the outputs then run row by row from the same buffers.
// The rows' query features go into the buffer by a loop over the rows,
// one vector per row (not 16 × 9 unrolled scalar copies), and each
// micro-kernel stages its row's with one vector load and store.
// CHECK-LABEL: func.func @blocks
//       CHECK:   %[[PROBS:.*]] = memref.alloca() : memref<185xf32>
//       CHECK:   scf.for %{{.*}} = %{{.*}} to %c16 step %{{.*}} {
//       CHECK:     vector.transfer_read %{{.*}} {in_bounds = [true]} : tensor<16x9xf32>, vector<9xf32>
//       CHECK:     vector.store %{{.*}}, %[[PROBS]][%{{.*}}] : memref<185xf32>, vector<9xf32>
//   CHECK-NOT:   memref.store
//       CHECK:   %[[SUMS:.*]] = memref.alloca() : memref<256xf32>
//       CHECK:   %[[ACCS:.*]] = memref.alloca() : memref<128xf32>
//       CHECK:   scf.for %{{.*}} = %{{.*}} to %c16{{.*}} step %{{.*}} {
//       CHECK:     vector.store %{{.*}}, %[[SUMS]]
//       CHECK:     vector.store %{{.*}}, %[[ACCS]]
//       CHECK:   scf.for %[[FIRST:.*]] = %{{.*}} to %[[END:.*]] step %c64 {
//       CHECK:     %[[LAST:.*]] = arith.minui %{{.*}}, %[[END]]
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %c16{{.*}} step %c1{{.*}} {
//       CHECK:       %[[F:.*]] = vector.load %[[PROBS]]{{.*}} : memref<185xf32>, vector<9xf32>
//       CHECK:       vector.store %[[F]], %[[PROBS]][%c32{{.*}}] : memref<185xf32>, vector<9xf32>
//       CHECK:       vector.load %[[SUMS]]
//       CHECK:       vector.load %[[ACCS]]
//       CHECK:       scf.for %{{.*}} = %[[FIRST]] to %[[LAST]] step %c32{{.*}} -> (vector<16xf32>, vector<8xf32>)
//       CHECK:       vector.store %{{.*}}, %[[SUMS]]
//       CHECK:       vector.store %{{.*}}, %[[ACCS]]
//       CHECK:   scf.for {{.*}} -> (tensor<16x8xf32>)
//       CHECK:     vector.load %[[SUMS]]
//       CHECK:     scf.for %{{.*}} = %[[END]] to
//       CHECK:   return
func.func @blocks(%q: tensor<16x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<16x8xf32>, %off: index) -> tensor<16x8xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, key_tile = 32 : i64, torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32, score_vectors = 2, query_block = 16, key_block = 64>} : (tensor<16x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %o : tensor<16x8xf32>
}

// -----

// 4-row micro-kernels (the AVX-512 strategy): the loop over an op's rows
// steps by 4, and each micro-kernel's key loop carries 4 rows' sums and
// accumulators in registers.
// CHECK-LABEL: func.func @four_row_kernels
//       CHECK:   scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128 {
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %c16{{.*}} step %c4{{.*}} {
//       CHECK:       scf.for {{.*}} step %c64{{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
func.func @four_row_kernels(%q: tensor<16x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x16xf32>, %init: tensor<16x16xf32>, %off: index) -> tensor<16x16xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>, key_tile = 64 : i64, torsor.strategy = #strategy.vector_attention<lanes = 16, query_rows = 4, key_tile = 64, query_block = 16, key_block = 128>} : (tensor<16x9xf32>, tensor<9x?xf32>, tensor<?x16xf32>, index, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %o : tensor<16x16xf32>
}

// -----

// Without key_block, or for an op whose rows are not query_block, the op
// is one micro-kernel of all its rows: no block loop.
// CHECK-LABEL: func.func @no_blocks
//   CHECK-NOT:   step %c64
//       CHECK:   return
// A one-row op under cache blocks (geo-tile-attention's tiles of a
// sequence shorter than a block) runs every key tile masked: one key loop
// from key 0, whose key reads may pass the end (no in_bounds), and no
// unmasked loop (reads marked in_bounds) before it.
// CHECK-LABEL: func.func @tail_rows
//   CHECK-NOT:   step %c64
//   CHECK-NOT:   {in_bounds = [true]} : tensor<9x?xf32>
//       CHECK:   scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c32
//       CHECK:     vector.transfer_read %arg1{{.*}}, %{{.*}} : tensor<9x?xf32>, vector<16xf32>
//   CHECK-NOT:   {in_bounds = [true]} : tensor<9x?xf32>
//       CHECK:   return
func.func @no_blocks(%q: tensor<16x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<16x8xf32>, %off: index) -> tensor<16x8xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, key_tile = 32 : i64, torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32, score_vectors = 2, query_block = 16>} : (tensor<16x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %o : tensor<16x8xf32>
}
func.func @tail_rows(%q: tensor<1x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<1x8xf32>, %off: index) -> tensor<1x8xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, key_tile = 32 : i64, torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32, score_vectors = 2, query_block = 16, key_block = 64>} : (tensor<1x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<1x8xf32>) -> tensor<1x8xf32>
  return %o : tensor<1x8xf32>
}
