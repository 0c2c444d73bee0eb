// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=512 --geo-tile-attention | FileCheck %s
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=256 --geo-tile-attention | FileCheck %s --check-prefix=AVX2

// D = 64 f32 with AVX-512: 4 rows per micro-kernel (16 accumulators), key
// tile of 4 × 16 lanes, and cache blocks of 16 rows: a parallel loop of
// ceil(L / 16) 16-row tiles, the last one moved back to end at row L (it
// recomputes rows of its neighbour; no remainder tiles of 4 rows), and,
// for L < 16 only, a loop of 1-row tiles. The query offset of a tile is
// its first row. Each 16-row tile computes into a tile of its own and
// inserts only the rows from its nominal first row on (all 16, or for the
// moved tile the 16 − skip rows its neighbour did not write): no two
// iterations of the parallel loop write the same row.
// CHECK-LABEL: func.func @tiles
//       CHECK:   %[[LONG:.*]] = arith.cmpi uge, %[[L:.*]], %c16
//       CHECK:   %[[BLOCKS:.*]] = arith.ceildivui %[[L]], %c16
//       CHECK:   %[[LASTROW:.*]] = arith.subi %[[L]], %c16
//       CHECK:   %[[FULL:.*]] = arith.select %[[LONG]], %[[BLOCKS]], %c0
//       CHECK:   scf.for %{{.*}} = %{{.*}} to %[[FULL]]
//   CHECK-NOT:     arith.shrui
//       CHECK:     %[[NOMINAL:.*]] = arith.addi %{{.*}}, %{{.*}} : index
//       CHECK:     %[[ROW:.*]] = arith.minui %[[NOMINAL]], %[[LASTROW]]
//       CHECK:     %[[SKIP:.*]] = arith.subi %[[NOMINAL]], %[[ROW]]
//       CHECK:     tensor.extract_slice %{{.*}}[%[[ROW]], 0] [16, 9] [1, 1] : tensor<?x9xf32> to tensor<16x9xf32>
//       CHECK:     %[[OWN:.*]] = tensor.empty() : tensor<16x64xf32>
//       CHECK:     %[[OFF:.*]] = arith.addi %{{.*}}, %[[ROW]] : index
//       CHECK:     %[[TILE:.*]] = geo.flash_lie_attention %{{.*}}, %{{.*}}, %{{.*}}, %[[OFF]], %[[OWN]] {{{.*}}key_tile = 64 : i64{{.*}}query_block = 16, key_block = 768>} : (tensor<16x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<16x64xf32>) -> tensor<16x64xf32>
//       CHECK:     %[[COUNT:.*]] = arith.subi %c16{{.*}}, %[[SKIP]]
//       CHECK:     %[[NEW:.*]] = tensor.extract_slice %[[TILE]][%[[SKIP]], 0] [%[[COUNT]], 64] [1, 1] : tensor<16x64xf32> to tensor<?x64xf32>
//       CHECK:     %[[ROWS:.*]] = tensor.extract_slice %{{.*}}[%[[NOMINAL]], 0] [%[[COUNT]], 64]
//       CHECK:     %[[COPIED:.*]] = linalg.copy ins(%[[NEW]] : tensor<?x64xf32>) outs(%[[ROWS]] : tensor<?x64xf32>)
//       CHECK:     tensor.insert_slice %[[COPIED]] into %{{.*}}[%[[NOMINAL]], 0] [%[[COUNT]], 64]
//   CHECK-NOT:     tensor.insert_slice
//       CHECK:   } {torsor.parallel}
//       CHECK:   %[[SHORT:.*]] = arith.select %[[LONG]], %c0{{.*}}, %[[L]]
//       CHECK:   scf.for %{{.*}} = %{{.*}} to %[[SHORT]]
//   CHECK-NOT:     tensor<4x64xf32>
//       CHECK:     geo.flash_lie_attention {{.*}} -> tensor<1x64xf32>
//       CHECK:   } {torsor.parallel}
//   CHECK-NOT:   geo.flash_lie_attention
// With AVX2 (16 registers of 8 lanes) one row's 8 accumulators are the
// budget: 1-row micro-kernels, key tile of 4 × 8 lanes; 16-row tiles,
// then 1-row tiles for L < 16.
// AVX2-LABEL: func.func @tiles
//       AVX2:   geo.flash_lie_attention {{.*}}key_tile = 32 : i64{{.*}} -> tensor<16x64xf32>
//       AVX2:   geo.flash_lie_attention {{.*}}key_tile = 32 : i64{{.*}} -> tensor<1x64xf32>
//   AVX2-NOT:   geo.flash_lie_attention
//      AVX2:   return
func.func @tiles(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %o : tensor<?x64xf32>
}

// -----

// A batch dim is flattened into the same loop (batch index = t div tiles),
// and the slices are rank-reduced to rank 2. Causal: tile t mod tiles of
// the zigzag order 0, n−1, 1, n−2, … (i/2 or n−1−i/2), so that contiguous
// chunks of the loop get equal work.
// CHECK-LABEL: func.func @batch
//       CHECK:   %[[N:.*]] = arith.select %{{.*}}, %{{.*}}, %c0
//       CHECK:   scf.for %[[T:[^ ]*]] =
//       CHECK:     %[[I:.*]] = arith.remui %[[T]], %[[N]]
//       CHECK:     %[[HALF:.*]] = arith.shrui %[[I]], %[[ONE:[^ ]*]]
//       CHECK:     %[[BIT:.*]] = arith.andi %[[I]], %[[ONE]]
//       CHECK:     %[[ODD:.*]] = arith.cmpi ne, %[[BIT]]
//       CHECK:     %[[LAST:.*]] = arith.subi %[[N]], %[[ONE]]
//       CHECK:     %[[MIRROR:.*]] = arith.subi %[[LAST]], %[[HALF]]
//       CHECK:     %[[TILE:.*]] = arith.select %[[ODD]], %[[MIRROR]], %[[HALF]]
//       CHECK:     arith.muli %[[TILE]], %c16
//       CHECK:     tensor.extract_slice %{{.*}}[%{{.*}}, %{{.*}}, 0] [1, 16, 12] [1, 1, 1] : tensor<3x?x12xf64> to tensor<16x12xf64>
//       CHECK:     geo.flash_lie_attention {{.*}}key_tile = 32 : i64{{.*}} -> tensor<16x16xf64>
func.func @batch(%q: tensor<3x?x12xf64>, %k: tensor<3x12x?xf64>, %v: tensor<3x?x16xf64>, %init: tensor<3x?x16xf64>) -> tensor<3x?x16xf64> {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<se3>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, 1.0, 1.0, 1.0], causal>} : (tensor<3x?x12xf64>, tensor<3x12x?xf64>, tensor<3x?x16xf64>, index, tensor<3x?x16xf64>) -> tensor<3x?x16xf64>
  return %o : tensor<3x?x16xf64>
}

// -----

// Already tiled ops are left alone.
// CHECK-LABEL: func.func @tiled
//   CHECK-NOT:   scf.for
//       CHECK:   geo.flash_lie_attention {{.*}}key_tile = 8 : i64
func.func @tiled(%q: tensor<2x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x4xf32>, %init: tensor<2x4xf32>, %off: index) -> tensor<2x4xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, key_tile = 8 : i64} : (tensor<2x9xf32>, tensor<9x?xf32>, tensor<?x4xf32>, index, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %o : tensor<2x4xf32>
}

// -----

// With an lse result (a gradient asked for it): the tile loops carry the
// lse tensor too; each tile writes its rows of both, a 16-row tile only
// the rows it owns (from its nominal first row on).
// CHECK-LABEL: func.func @with_lse
//       CHECK:   scf.for {{.*}} -> (tensor<?x64xf32>, tensor<?x2xf32>)
//       CHECK:     %[[NOMINAL:.*]] = arith.addi %{{.*}}, %{{.*}} : index
//       CHECK:     %[[ROW:.*]] = arith.minui %[[NOMINAL]], %{{.*}}
//       CHECK:     %[[SKIP:.*]] = arith.subi %[[NOMINAL]], %[[ROW]]
//       CHECK:     %[[LSEDEST:.*]] = tensor.empty() : tensor<16x2xf32>
//       CHECK:     %[[O:.*]], %[[LSE:.*]] = geo.flash_lie_attention {{.*}} lse %[[LSEDEST]] {{.*}} -> (tensor<16x64xf32>, tensor<16x2xf32>)
//       CHECK:     %[[ONEW:.*]] = tensor.extract_slice %[[O]][%[[SKIP]], 0] [%[[COUNT:.*]], 64]
//       CHECK:     %[[OCOPY:.*]] = linalg.copy ins(%[[ONEW]] {{.*}}) outs
//       CHECK:     tensor.insert_slice %[[OCOPY]] into %{{.*}}[%[[NOMINAL]], 0] [%[[COUNT]], 64]
//       CHECK:     %[[LNEW:.*]] = tensor.extract_slice %[[LSE]][%[[SKIP]], 0] [%[[LCOUNT:.*]], 2]
//       CHECK:     %[[LCOPY:.*]] = linalg.copy ins(%[[LNEW]] {{.*}}) outs
//       CHECK:     tensor.insert_slice %[[LCOPY]] into %{{.*}}[%[[NOMINAL]], 0] [%[[LCOUNT]], 2]
//       CHECK:   } {torsor.parallel}
// 1-row tiles never move: each writes its own row of the output in place.
//       CHECK:   scf.for {{.*}} -> (tensor<?x64xf32>, tensor<?x2xf32>)
//   CHECK-NOT:     tensor.empty
//       CHECK:     geo.flash_lie_attention {{.*}} -> (tensor<1x64xf32>, tensor<1x2xf32>)
//       CHECK:   } {torsor.parallel}
// AVX2-LABEL: func.func @with_lse
//       AVX2:   geo.flash_lie_attention {{.*}} -> (tensor<16x64xf32>, tensor<16x2xf32>)
//       AVX2:   geo.flash_lie_attention {{.*}} -> (tensor<1x64xf32>, tensor<1x2xf32>)
func.func @with_lse(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x64xf32>, %init: tensor<?x64xf32>, %lse0: tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<?x2xf32>) {
  %c0 = arith.constant 0 : index
  %o, %lse = geo.flash_lie_attention %q, %k, %v, %c0, %init lse %lse0 {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, 1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<?x64xf32>, tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<?x2xf32>)
  return %o, %lse : tensor<?x64xf32>, tensor<?x2xf32>
}
