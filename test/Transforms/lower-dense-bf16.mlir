// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 amx=true" --torsor-lower-dense-bf16 | FileCheck %s --check-prefix=AMX
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 avx512bf16=true" --torsor-lower-dense-bf16 | FileCheck %s --check-prefix=DOT
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16" --torsor-lower-dense-bf16 | FileCheck %s --check-prefix=NONE

// The packed product torsor-tile-dense leaves on buffers: tile-contiguous
// A [Mp/16, 2, 16, 16, 2] (K = 64), VNNI B [4, 2, 16, 16, 2] (N = 64), C
// [Mp/16, 16, 4, 16]. The tiles' pairs are collapsed (A [Mp/16, 2, 16, 32],
// B [4, 2, 16, 32]: each tile a contiguous 16 x 64 bytes) and C back to
// [Mp, 64]. On AMX, tasks of 128 rows (task_rows; 32, the f32 kernel's
// task_rows, where C has fewer than 256 rows, so a short sequence still
// spreads over the threads; scf.parallel, the last task cut at Mp) run
// depth blocks of 8 tiles (cache_depth 256), inside them column
// blocks of 32, inside them the task's row blocks of 32; per 32 x 32 block
// of C, 2 x 2 C tiles are loaded, the depth loop carries them while
// loading 2 A and 2 B tiles at [tile, k, 0, 0] and doing 4 tile products,
// and they are stored once. With AVX512-BF16, the same tasks, depth
// blocks and column blocks, then the task's rows by 8: 8 rows x 2 vectors
// of accumulators; per depth tile and VNNI row, two 32 x bf16 loads
// (one B tile row each) and one broadcast A pair per row feeding
// x86vector.avx512.dot. Without a bf16 unit the generic stays (its loops
// compute the same sums).

#a = affine_map<(mo, mi, no, ni, ko, ai, p) -> (mo, ko, mi, ai, p)>
#b = affine_map<(mo, mi, no, ni, ko, ai, p) -> (no, ko, ai, ni, p)>
#c = affine_map<(mo, mi, no, ni, ko, ai, p) -> (mo, mi, no, ni)>

// AMX-LABEL: func.func @product
//   AMX-DAG:   %[[A:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] : memref<?x2x16x16x2xbf16> into memref<?x2x16x32xbf16>
//   AMX-DAG:   %[[B:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] : memref<4x2x16x16x2xbf16> into memref<4x2x16x32xbf16>
//   AMX-DAG:   %[[C:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2, 3]] : memref<?x16x4x16xf32> into memref<?x64xf32>
//   AMX-DAG:   %[[ROWS:.*]] = memref.dim %[[C]], %{{c0[_0-9]*}}
//       AMX:   %[[LONG:.*]] = arith.cmpi uge, %[[ROWS]], %{{c256[_0-9]*}}
//       AMX:   %[[PER:.*]] = arith.select %[[LONG]], %{{c128[_0-9]*}}, %{{c32[_0-9]*}}
//       AMX:   scf.parallel (%[[T:[^)]*]]) = (%{{[^)]*}}) to (%[[ROWS]]) step (%[[PER]])
//       AMX:     %[[NEXT:.*]] = arith.addi %[[T]], %[[PER]]
//       AMX:     %[[END:.*]] = arith.minui %[[NEXT]], %[[ROWS]]
//       AMX:     scf.for %[[K0:[^ ]*]] = %{{c0[_0-9]*}} to %{{.*}} step %{{c8[_0-9]*}}
//       AMX:       %[[KEND:.*]] = arith.minui
//       AMX:       scf.for %{{[^ ]*}} = %{{c0[_0-9]*}} to %{{.*}} step %{{c32[_0-9]*}}
//       AMX:         scf.for %{{[^ ]*}} = %[[T]] to %[[END]] step %{{c32[_0-9]*}}
//   AMX-COUNT-4:       amx.tile_load %[[C]]{{.*}} : memref<?x64xf32> into !amx.tile<16x16xf32>
//       AMX:           scf.for %[[K:[^ ]*]] = %[[K0]] to %[[KEND]] step %{{c1[_0-9]*}} iter_args
//   AMX-COUNT-2:         amx.tile_load %[[A]][%{{[^,]*}}, %[[K]], %[[Z:c0[_0-9]*]], %[[Z]]] : memref<?x2x16x32xbf16> into !amx.tile<16x32xbf16>
//   AMX-COUNT-2:         amx.tile_load %[[B]][%{{[^,]*}}, %[[K]], %[[Z:c0[_0-9]*]], %[[Z]]] : memref<4x2x16x32xbf16> into !amx.tile<16x32xbf16>
//   AMX-COUNT-4:         amx.tile_mulf
//       AMX:             scf.yield
//   AMX-COUNT-4:       amx.tile_store %[[C]]
//   AMX-NOT:   linalg.generic

// DOT-LABEL: func.func @product
//       DOT:   scf.parallel (%[[T:[^)]*]]) =
//       DOT:     %[[END:.*]] = arith.minui
//       DOT:     scf.for %[[K0:[^ ]*]] = {{.*}} step %{{c8[_0-9]*}}
//       DOT:       %[[KEND:.*]] = arith.minui
//       DOT:       scf.for {{.*}} step %{{c32[_0-9]*}}
//       DOT:         scf.for {{.*}} = %[[T]] to %[[END]] step %{{c8[_0-9]*}}
//       DOT:           scf.for {{.*}} = %[[K0]] to %[[KEND]] {{.*}} iter_args
//       DOT:           scf.for {{.*}} to %{{c16[_0-9]*}} step %{{c1[_0-9]*}} iter_args
//  DOT-COUNT-2:          vector.load {{.*}} : memref<4x2x16x32xbf16>, vector<32xbf16>
//       DOT:             vector.load {{.*}} : memref<?x2x16x32xbf16>, vector<2xbf16>
//       DOT:             vector.bitcast {{.*}} : vector<2xbf16> to vector<1xi32>
//       DOT:             vector.broadcast {{.*}} : i32 to vector<16xi32>
//  DOT-COUNT-2:          x86vector.avx512.dot {{.*}} : vector<32xbf16> -> vector<16xf32>
//   DOT-NOT:   linalg.generic

// NONE-LABEL: func.func @product
//       NONE:   linalg.generic
//   NONE-NOT:   amx.
//   NONE-NOT:   x86vector.
func.func @product(%a: memref<?x2x16x16x2xbf16>, %b: memref<4x2x16x16x2xbf16>, %c: memref<?x16x4x16xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%c : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// A batched product (attention heads: C [4, Mp, 32]) whose B has the batch
// dim too, and one (`x @ W` with x [3, L, K]) whose B is shared by every
// batch element. One scf.parallel runs every batch element x task (its
// index split into the head and the task's rows, ceil(Mp / task rows)
// tasks per head); the tile loads take the head as their leading index, and B's
// loads drop it where B has none.

#ha = affine_map<(h, mo, mi, no, ni, ko, ai, p) -> (h, mo, ko, mi, ai, p)>
#hb = affine_map<(h, mo, mi, no, ni, ko, ai, p) -> (h, no, ko, ai, ni, p)>
#hw = affine_map<(h, mo, mi, no, ni, ko, ai, p) -> (no, ko, ai, ni, p)>
#hc = affine_map<(h, mo, mi, no, ni, ko, ai, p) -> (h, mo, mi, no, ni)>

// AMX-LABEL: func.func @heads
//       AMX:   %[[PER:.*]] = arith.select
//       AMX:   %[[TASKS:[^ ]*]] = arith.ceildivui %{{.*}}, %[[PER]]
//       AMX:   scf.parallel (%[[T:[^)]*]]) = ({{.*}}) to ({{.*}}) step ({{.*}})
//       AMX:     %[[R:.*]] = arith.remui %[[T]], %[[TASKS]]
//       AMX:     %[[H:.*]] = arith.divui %[[T]], %[[TASKS]]
//       AMX:     amx.tile_load %{{.*}}[%[[H]], %{{.*}}, %{{.*}}] : memref<4x?x32xf32> into !amx.tile<16x16xf32>
//       AMX:     scf.for {{.*}} iter_args
//       AMX:       amx.tile_load %{{.*}}[%[[H]], %{{.*}}, %{{.*}}, %{{c0[_0-9]*}}, %{{c0[_0-9]*}}] : memref<4x?x1x16x32xbf16> into !amx.tile<16x32xbf16>
//       AMX:       amx.tile_load %{{.*}}[%[[H]], %{{.*}}, %{{.*}}, %{{c0[_0-9]*}}, %{{c0[_0-9]*}}] : memref<4x2x1x16x32xbf16> into !amx.tile<16x32xbf16>
//       AMX:     amx.tile_store %{{.*}}[%[[H]],
//   AMX-NOT:   linalg.generic

// DOT-LABEL: func.func @heads
//       DOT:   scf.parallel
//       DOT:     x86vector.avx512.dot
//   DOT-NOT:   linalg.generic
func.func @heads(%a: memref<4x?x1x16x16x2xbf16>, %b: memref<4x2x1x16x16x2xbf16>, %c: memref<4x?x16x2x16xf32>) {
  linalg.generic {indexing_maps = [#ha, #hb, #hc],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<4x?x1x16x16x2xbf16>, memref<4x2x1x16x16x2xbf16>) outs(%c : memref<4x?x16x2x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// AMX-LABEL: func.func @shared_weight
//       AMX:   scf.parallel (%[[T:[^)]*]]) =
//       AMX:     %[[H:.*]] = arith.divui %[[T]],
//       AMX:     scf.for {{.*}} iter_args
//       AMX:       amx.tile_load %{{.*}}[%[[H]], %{{.*}}, %{{.*}}, %{{c0[_0-9]*}}, %{{c0[_0-9]*}}] : memref<3x?x1x16x32xbf16> into !amx.tile<16x32xbf16>
//       AMX:       amx.tile_load %{{.*}}[%{{[^,]*}}, %{{[^,]*}}, %{{c0[_0-9]*}}, %{{c0[_0-9]*}}] : memref<2x1x16x32xbf16> into !amx.tile<16x32xbf16>
//   AMX-NOT:   linalg.generic
func.func @shared_weight(%a: memref<3x?x1x16x16x2xbf16>, %b: memref<2x1x16x16x2xbf16>, %c: memref<3x?x16x2x16xf32>) {
  linalg.generic {indexing_maps = [#ha, #hw, #hc],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<3x?x1x16x16x2xbf16>, memref<2x1x16x16x2xbf16>) outs(%c : memref<3x?x16x2x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// Tiles that are not the strategy's (here 8 deep) are left to the
// generic's loops.

#sa = affine_map<(mo, mi, no, ni, ko, ai, p) -> (mo, ko, mi, ai, p)>

// AMX-LABEL: func.func @other_tiles
//       AMX:   linalg.generic
//   AMX-NOT:   amx.
// DOT-LABEL: func.func @other_tiles
//       DOT:   linalg.generic
//   DOT-NOT:   x86vector.
func.func @other_tiles(%a: memref<?x2x16x4x2xbf16>, %b: memref<4x2x4x16x2xbf16>, %c: memref<?x16x4x16xf32>) {
  linalg.generic {indexing_maps = [#sa, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x4x2xbf16>, memref<4x2x4x16x2xbf16>) outs(%c : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// C zero-filled just before the product (the matmul's linalg.fill, on the
// expanded view of C's buffer): the fill is dropped and the first depth
// block (k0 = 0) starts from zero accumulators instead of loading C; the
// depth-block loop runs at least once (max(depth, 1)), so that with no
// depth (K = 0) the zeros are still stored.

// AMX-LABEL: func.func @zero_init
//   AMX-NOT:   linalg.fill
//       AMX:   %[[DEPTH:.*]] = arith.maxui %{{.*}}, %{{c1[_0-9]*}}
//       AMX:   scf.for %[[K0:[^ ]*]] = %{{c0[_0-9]*}} to %[[DEPTH]] step %{{c8[_0-9]*}}
//       AMX:     %[[FIRST:.*]] = arith.cmpi eq, %[[K0]], %{{c0[_0-9]*}}
//       AMX:     scf.if %[[FIRST]] -> (!amx.tile<16x16xf32>, !amx.tile<16x16xf32>, !amx.tile<16x16xf32>, !amx.tile<16x16xf32>)
//  AMX-COUNT-4:    amx.tile_zero : !amx.tile<16x16xf32>
//       AMX:     } else {
//  AMX-COUNT-4:    amx.tile_load
//       AMX:     scf.for {{.*}} iter_args
//   AMX-COUNT-4:   amx.tile_store
//   AMX-NOT:   linalg.

// DOT-LABEL: func.func @zero_init
//   DOT-NOT:   linalg.fill
//       DOT:   arith.maxui
//       DOT:   scf.if %{{.*}} -> (vector<16xf32>,
//       DOT:     %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
//       DOT:     scf.yield %[[Z]], %[[Z]],
//       DOT:   } else {
//  DOT-COUNT-16:   vector.load {{.*}} : memref<?x64xf32>, vector<16xf32>
//       DOT:   x86vector.avx512.dot
//   DOT-NOT:   linalg.

// NONE-LABEL: func.func @zero_init
//       NONE:   linalg.fill
//       NONE:   linalg.generic
func.func @zero_init(%a: memref<?x2x16x16x2xbf16>, %b: memref<4x2x16x16x2xbf16>, %n: index) -> memref<?x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc(%n) : memref<?x64xf32>
  %tiles = arith.divui %n, %n : index
  %cv = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [%tiles, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%cv : memref<?x16x4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%cv : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return %c : memref<?x64xf32>
}

// The fill is kept (and C loaded) where C is read between the fill and
// the product, or the fill is not of zeros.

// AMX-LABEL: func.func @fill_kept
//       AMX:   linalg.fill
//       AMX:   memref.copy
//   AMX-NOT:   amx.tile_zero
//       AMX:   linalg.fill ins(%{{.*}} : f32)
//   AMX-NOT:   amx.tile_zero
//       AMX:   return
// DOT-LABEL: func.func @fill_kept
//       DOT:   linalg.fill
//       DOT:   memref.copy
//   DOT-NOT:   scf.if
//       DOT:   linalg.fill
//   DOT-NOT:   scf.if
//       DOT:   return
func.func @fill_kept(%a: memref<?x2x16x16x2xbf16>, %b: memref<4x2x16x16x2xbf16>, %c: memref<?x16x4x16xf32>, %d: memref<?x16x4x16xf32>, %e: memref<?x16x4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x16x4x16xf32>)
  memref.copy %c, %d : memref<?x16x4x16xf32> to memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%c : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%one : f32) outs(%e : memref<?x16x4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%e : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// Bufferization's form of two products whose accumulators start from one
// shared zero fill: the filled buffer is copied into each C. Both copies
// go (zero accumulators, as after a fill of C), and with them the fill,
// which nothing reads any more.

// DOT-LABEL: func.func @zero_copies
//   DOT-NOT:   linalg.fill
//   DOT-NOT:   memref.copy
//       DOT:   arith.constant dense<0.000000e+00> : vector<16xf32>
//       DOT:   x86vector.avx512.dot
//       DOT:   arith.constant dense<0.000000e+00> : vector<16xf32>
//       DOT:   x86vector.avx512.dot
//   DOT-NOT:   memref.copy
//       DOT:   return
// AMX-LABEL: func.func @zero_copies
//   AMX-NOT:   memref.copy
//   AMX-COUNT-4: amx.tile_zero
//   AMX-NOT:   memref.copy
//   AMX-COUNT-4: amx.tile_zero
//   AMX-NOT:   memref.copy
//       AMX:   return
func.func @zero_copies(%a: memref<?x2x16x16x2xbf16>, %b: memref<4x2x16x16x2xbf16>, %n: index) -> (memref<?x16x4x16xf32>, memref<?x16x4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %z = memref.alloc(%n) : memref<?x16x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%z : memref<?x16x4x16xf32>)
  %c = memref.alloc(%n) : memref<?x16x4x16xf32>
  memref.copy %z, %c : memref<?x16x4x16xf32> to memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%c : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %d = memref.alloc(%n) : memref<?x16x4x16xf32>
  memref.copy %z, %d : memref<?x16x4x16xf32> to memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%d : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.dealloc %z : memref<?x16x4x16xf32>
  return %c, %d : memref<?x16x4x16xf32>, memref<?x16x4x16xf32>
}

// The copies stay (and C is loaded) where the source is written between
// its zero fill and the copy, where the source was filled with something
// else, or where the copy writes only part of C (a subview); the fill stays
// where a copy still reads it.

// DOT-LABEL: func.func @copies_kept
//       DOT:   linalg.fill
//       DOT:   memref.copy
//       DOT:   memref.copy
//   DOT-NOT:   scf.if
//       DOT:   x86vector.avx512.dot
//       DOT:   linalg.fill
//       DOT:   memref.copy
//   DOT-NOT:   scf.if
//       DOT:   x86vector.avx512.dot
//       DOT:   linalg.fill
//       DOT:   memref.copy
//   DOT-NOT:   scf.if
//       DOT:   x86vector.avx512.dot
//       DOT:   return
func.func @copies_kept(%a: memref<?x2x16x16x2xbf16>, %b: memref<4x2x16x16x2xbf16>, %w: memref<?x16x4x16xf32>, %n: index) -> (memref<?x16x4x16xf32>, memref<?x16x4x16xf32>, memref<?x16x4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  // The source is overwritten after its fill.
  %z = memref.alloc(%n) : memref<?x16x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%z : memref<?x16x4x16xf32>)
  memref.copy %w, %z : memref<?x16x4x16xf32> to memref<?x16x4x16xf32>
  %c = memref.alloc(%n) : memref<?x16x4x16xf32>
  memref.copy %z, %c : memref<?x16x4x16xf32> to memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%c : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  // The source is filled with ones.
  %o = memref.alloc(%n) : memref<?x16x4x16xf32>
  linalg.fill ins(%one : f32) outs(%o : memref<?x16x4x16xf32>)
  %d = memref.alloc(%n) : memref<?x16x4x16xf32>
  memref.copy %o, %d : memref<?x16x4x16xf32> to memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%d : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  // The copy writes the first rows of C only (after C's own zero fill).
  %src = memref.alloc(%n) : memref<?x16x4x16xf32>
  %e = memref.alloc(%n) : memref<?x16x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%e : memref<?x16x4x16xf32>)
  %part = memref.subview %e[0, 0, 0, 0] [1, 16, 4, 16] [1, 1, 1, 1] : memref<?x16x4x16xf32> to memref<1x16x4x16xf32, strided<[1024, 64, 16, 1]>>
  %ys = memref.subview %src[0, 0, 0, 0] [1, 16, 4, 16] [1, 1, 1, 1] : memref<?x16x4x16xf32> to memref<1x16x4x16xf32, strided<[1024, 64, 16, 1]>>
  memref.copy %ys, %part : memref<1x16x4x16xf32, strided<[1024, 64, 16, 1]>> to memref<1x16x4x16xf32, strided<[1024, 64, 16, 1]>>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%e : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return %c, %d, %e : memref<?x16x4x16xf32>, memref<?x16x4x16xf32>, memref<?x16x4x16xf32>
}

// The padded C is only copied out, its [n, 64] corner into %out (all of its
// 64 columns): the AVX512-BF16 kernel stores into %out directly, its tasks
// end at %out's n rows, rows 1-7 of each register tile are loaded and
// stored only before the task's end, and the copy goes. AMX keeps the
// copy (its tiles store 16 whole rows).

// DOT-LABEL: func.func @into_output
//  DOT-SAME:   %[[OUT:[^:]*]]: memref<?x64xf32>
//       DOT:   %[[ROWS:.*]] = memref.dim %[[OUT]], %{{c0[_0-9]*}}
//       DOT:   scf.parallel (%{{[^)]*}}) = (%{{[^)]*}}) to (%[[ROWS]])
//       DOT:     %[[END:.*]] = arith.minui %{{.*}}, %[[ROWS]]
//       DOT:     %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %[[END]]
//       DOT:     x86vector.avx512.dot
//       DOT:     vector.store %{{.*}}, %[[OUT]]
//       DOT:     scf.if %[[IN]] {
//       DOT:       vector.store %{{.*}}, %[[OUT]]
//   DOT-NOT:   memref.copy
//       DOT:   return
// AMX-LABEL: func.func @into_output
//       AMX:   amx.tile_store
//       AMX:   memref.copy
func.func @into_output(%a: memref<?x2x16x16x2xbf16>, %b: memref<4x2x16x16x2xbf16>, %n: index, %out: memref<?x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %tiles = arith.divui %n, %n : index
  %rows = arith.muli %tiles, %n : index
  %c = memref.alloc(%rows) : memref<?x64xf32>
  %cv = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [%tiles, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%cv : memref<?x16x4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%cv : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %corner = memref.subview %c[0, 0] [%n, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
  memref.copy %corner, %out : memref<?x64xf32, strided<[64, 1]>> to memref<?x64xf32>
  memref.dealloc %c : memref<?x64xf32>
  return
}

// The copy stays where the corner leaves out columns (C's columns are
// padded too), where C is not zeroed first, or where %out is read between
// the product and the copy.

// DOT-LABEL: func.func @copy_out_kept
//  DOT-SAME:   %[[O1:[^:]*]]: memref<?x48xf32>, %[[O2:[^:]*]]: memref<?x64xf32>, %{{[^:]*}}: memref<?x16x4x16xf32>, %[[O3:[^:]*]]: memref<?x64xf32>
//       DOT:   memref.copy %{{.*}}, %[[O1]] :
//       DOT:   memref.copy %{{.*}}, %[[O2]] :
//       DOT:   memref.copy %{{.*}}, %[[O3]] :
//       DOT:   return
func.func @copy_out_kept(%a: memref<?x2x16x16x2xbf16>, %b: memref<4x2x16x16x2xbf16>, %n: index, %out: memref<?x48xf32>, %out2: memref<?x64xf32>, %init: memref<?x16x4x16xf32>, %out3: memref<?x64xf32>, %other: memref<?x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc(%n) : memref<?x64xf32>
  %cv = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [%n, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%cv : memref<?x16x4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%cv : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %corner = memref.subview %c[0, 0] [%n, 48] [1, 1] : memref<?x64xf32> to memref<?x48xf32, strided<[64, 1]>>
  memref.copy %corner, %out : memref<?x48xf32, strided<[64, 1]>> to memref<?x48xf32>
  %d = memref.alloc(%n) : memref<?x64xf32>
  %dv = memref.expand_shape %d [[0, 1], [2, 3]] output_shape [%n, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  memref.copy %init, %dv : memref<?x16x4x16xf32> to memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%dv : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %dcorner = memref.subview %d[0, 0] [%n, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
  memref.copy %dcorner, %out2 : memref<?x64xf32, strided<[64, 1]>> to memref<?x64xf32>
  %e = memref.alloc(%n) : memref<?x64xf32>
  %ev = memref.expand_shape %e [[0, 1], [2, 3]] output_shape [%n, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%ev : memref<?x16x4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%ev : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %out3, %other : memref<?x64xf32> to memref<?x64xf32>
  %ecorner = memref.subview %e[0, 0] [%n, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
  memref.copy %ecorner, %out3 : memref<?x64xf32, strided<[64, 1]>> to memref<?x64xf32>
  return
}
