// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 avx512bf16=true" --torsor-lower-dense-bf16 | FileCheck %s --check-prefix=DOT
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 amx=true" --torsor-lower-dense-bf16 | FileCheck %s --check-prefix=AMX

// A's bf16 packing moved into the AVX512-BF16 kernel's tasks
// (PackBF16Rows.h). torsor-tile-dense left one generic that rounds the
// f32 rows of x [?, 64] into tiles [Mp/16, 2, 16, 32] of a fresh buffer
// before the product (K = 64 = 2 tiles of 32). Lowered, each task packs,
// per depth block [k0, kEnd), the rows [row, min(rowEnd, M)) and depth
// [32·k0, min(32·kEnd, K)) of x into the corner of a stack buffer of
// task_rows / 16 = 8 row tiles × cache_depth / 32 = 8 depth tiles, with
// the same generic on subviews; the kernel reads its A pairs there, at
// row tile (i - row) / 16 and depth tile k - k0. The whole-matrix generic
// and its buffer go. The AMX kernel keeps the whole-matrix tiles.

#b = affine_map<(mo, mi, no, ni, ko, ai, p) -> (no, ko, ai, ni, p)>
#a = affine_map<(mo, mi, no, ni, ko, ai, p) -> (mo, ko, mi, ai, p)>
#c = affine_map<(mo, mi, no, ni, ko, ai, p) -> (mo, mi, no, ni)>
#rows = affine_map<(m, ko, e) -> (m, ko * 32 + e)>
#tiles = affine_map<(m, ko, e) -> (m floordiv 16, ko, m mod 16, e)>

// DOT-LABEL: func.func @pack_in_task
//   DOT-NOT:   memref.alloc(
//       DOT:   %[[M:.*]] = memref.dim %[[X:[^,]*]], %{{c0[_0-9]*}} : memref<?x64xf32>
//       DOT:   %[[K:.*]] = memref.dim %[[X]], %{{c1[_0-9]*}} : memref<?x64xf32>
//       DOT:   scf.parallel (%[[T:[^)]*]]) =
//       DOT:     %[[END:.*]] = arith.minui
//       DOT:     %[[BUF:.*]] = memref.alloca() {alignment = 64 : i64} : memref<8x8x16x32xbf16>
//       DOT:     scf.for %[[K0:[^ ]*]] =
//       DOT:       %[[KEND:.*]] = arith.minui
//       DOT:       %[[LAST:.*]] = arith.minui %[[END]], %[[M]]
//       DOT:       %[[ROWS:.*]] = arith.subi %[[LAST]], %[[T]]
//       DOT:       %[[KFIRST:.*]] = arith.muli %[[K0]], %{{c32[_0-9]*}}
//       DOT:       %[[KTILES:.*]] = arith.subi %[[KEND]], %[[K0]]
//       DOT:       %[[KLAST0:.*]] = arith.muli %[[KEND]], %{{c32[_0-9]*}}
//       DOT:       %[[KLAST:.*]] = arith.minui %[[KLAST0]], %[[K]]
//       DOT:       %[[KCOUNT:.*]] = arith.subi %[[KLAST]], %[[KFIRST]]
//       DOT:       %[[IN:.*]] = memref.subview %[[X]][%[[T]], %[[KFIRST]]] [%[[ROWS]], %[[KCOUNT]]] [1, 1]
//       DOT:       %[[RT:.*]] = arith.ceildivui %[[ROWS]], %{{c16[_0-9]*}}
//       DOT:       %[[OUT:.*]] = memref.subview %[[BUF]][0, 0, 0, 0] [%[[RT]], %[[KTILES]], 16, 32] [1, 1, 1, 1]
//   DOT-NOT:       linalg.fill
//       DOT:       linalg.generic {{.*}} ins(%[[IN]] : {{.*}}) outs(%[[OUT]] : {{.*}})
//       DOT:         arith.truncf
//       DOT:       scf.for
//       DOT:         scf.for %[[I:[^ ]*]] = %[[T]] to %[[END]]
//       DOT:           %[[LOCAL:.*]] = arith.subi %[[I]], %[[T]]
//       DOT:           %[[RTILE:.*]] = arith.divui %[[LOCAL]], %{{c16[_0-9]*}}
//       DOT:           scf.for %[[KK:[^ ]*]] = %[[K0]] to %[[KEND]]
//       DOT:             %[[KA:.*]] = arith.subi %[[KK]], %[[K0]]
//       DOT:             vector.load %[[BUF]][%[[RTILE]], %[[KA]], %{{.*}}, %{{.*}}] : memref<8x8x16x32xbf16>, vector<2xbf16>
//       DOT:             x86vector.avx512.dot
//   DOT-NOT:   linalg.generic
//   DOT-NOT:   memref.dealloc
//       DOT:   return

// AMX-LABEL: func.func @pack_in_task
//       AMX:   memref.alloc(
//       AMX:   linalg.generic
//       AMX:   scf.parallel
//   AMX-NOT:     linalg.generic
//       AMX:     amx.tile_mulf
func.func @pack_in_task(%x: memref<?x64xf32>, %b: memref<4x2x16x16x2xbf16>, %c: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %tiles = affine.apply affine_map<()[s0] -> ((s0 ceildiv 32) * 2)>()[%m]
  %buf = memref.alloc(%tiles) {alignment = 64 : i64} : memref<?x2x16x32xbf16>
  linalg.generic {indexing_maps = [#rows, #tiles], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<?x64xf32>) outs(%buf : memref<?x2x16x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  %a = memref.expand_shape %buf [[0], [1], [2], [3, 4]] output_shape [%tiles, 2, 16, 16, 2] : memref<?x2x16x32xbf16> into memref<?x2x16x16x2xbf16>
  %cv = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [%tiles, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%cv : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%p: bf16, %q: bf16, %acc: f32):
    %pe = arith.extf %p : bf16 to f32
    %qe = arith.extf %q : bf16 to f32
    %pq = arith.mulf %pe, %qe : f32
    %s = arith.addf %acc, %pq : f32
    linalg.yield %s : f32
  }
  memref.dealloc %buf : memref<?x2x16x32xbf16>
  return
}

// K = 40, not a whole number of depth tiles: the generic runs over (m, k)
// and writes (m floordiv 16, k floordiv 32, m mod 16, k mod 32) after a
// zero fill of the padding. Per task, the subview of x holds the depth
// [32·k0, min(32·kEnd, 40)), and the fill zeroes the buffer's corner first.

#rows40 = affine_map<(m, k) -> (m, k)>
#tiles40 = affine_map<(m, k) -> (m floordiv 16, k floordiv 32, m mod 16, k mod 32)>

// DOT-LABEL: func.func @ragged_depth
//       DOT:   %[[K:.*]] = memref.dim %[[X:[^,]*]], %{{c1[_0-9]*}} : memref<?x40xf32>
//       DOT:   scf.parallel
//       DOT:     memref.alloca() {{.*}} : memref<8x8x16x32xbf16>
//       DOT:       arith.minui %{{.*}}, %[[K]]
//       DOT:       %[[IN:.*]] = memref.subview %[[X]]
//       DOT:       %[[OUT:.*]] = memref.subview
//       DOT:       linalg.fill ins(%{{.*}} : bf16) outs(%[[OUT]] :
//       DOT:       linalg.generic {{.*}} ins(%[[IN]] : {{.*}}) outs(%[[OUT]] : {{.*}})
//       DOT:       x86vector.avx512.dot
//   DOT-NOT:   linalg.
//       DOT:   return
func.func @ragged_depth(%x: memref<?x40xf32>, %b: memref<4x2x16x16x2xbf16>, %c: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : bf16
  %m = memref.dim %x, %c0 : memref<?x40xf32>
  %tiles = affine.apply affine_map<()[s0] -> ((s0 ceildiv 32) * 2)>()[%m]
  %buf = memref.alloc(%tiles) {alignment = 64 : i64} : memref<?x2x16x32xbf16>
  linalg.fill ins(%zero : bf16) outs(%buf : memref<?x2x16x32xbf16>)
  linalg.generic {indexing_maps = [#rows40, #tiles40], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x40xf32>) outs(%buf : memref<?x2x16x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  %a = memref.expand_shape %buf [[0], [1], [2], [3, 4]] output_shape [%tiles, 2, 16, 16, 2] : memref<?x2x16x32xbf16> into memref<?x2x16x16x2xbf16>
  %cv = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [%tiles, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%cv : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%p: bf16, %q: bf16, %acc: f32):
    %pe = arith.extf %p : bf16 to f32
    %qe = arith.extf %q : bf16 to f32
    %pq = arith.mulf %pe, %qe : f32
    %s = arith.addf %acc, %pq : f32
    linalg.yield %s : f32
  }
  memref.dealloc %buf : memref<?x2x16x32xbf16>
  return
}

// Negative cases: the whole-matrix packing stays (and the kernel reads its
// tiles) where x is written between the packing and the product (the
// per-task copy would read the new values), where the packed tiles have
// another reader, and where the packing body reads linalg.index.

// DOT-LABEL: func.func @input_written_between
//       DOT:   memref.alloc(
//       DOT:   linalg.generic
//       DOT:   linalg.fill
//       DOT:   scf.parallel
//   DOT-NOT:     memref.alloca
//   DOT-NOT:     linalg.generic
//       DOT:     x86vector.avx512.dot
func.func @input_written_between(%x: memref<?x64xf32>, %b: memref<4x2x16x16x2xbf16>, %c: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %tiles = affine.apply affine_map<()[s0] -> ((s0 ceildiv 32) * 2)>()[%m]
  %buf = memref.alloc(%tiles) {alignment = 64 : i64} : memref<?x2x16x32xbf16>
  linalg.generic {indexing_maps = [#rows, #tiles], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<?x64xf32>) outs(%buf : memref<?x2x16x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.fill ins(%one : f32) outs(%x : memref<?x64xf32>)
  %a = memref.expand_shape %buf [[0], [1], [2], [3, 4]] output_shape [%tiles, 2, 16, 16, 2] : memref<?x2x16x32xbf16> into memref<?x2x16x16x2xbf16>
  %cv = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [%tiles, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%cv : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%p: bf16, %q: bf16, %acc: f32):
    %pe = arith.extf %p : bf16 to f32
    %qe = arith.extf %q : bf16 to f32
    %pq = arith.mulf %pe, %qe : f32
    %s = arith.addf %acc, %pq : f32
    linalg.yield %s : f32
  }
  memref.dealloc %buf : memref<?x2x16x32xbf16>
  return
}

// DOT-LABEL: func.func @tiles_read_elsewhere
//       DOT:   memref.alloc(
//       DOT:   linalg.generic
//       DOT:   scf.parallel
//   DOT-NOT:     memref.alloca
//       DOT:     x86vector.avx512.dot
//       DOT:   memref.copy
func.func @tiles_read_elsewhere(%x: memref<?x64xf32>, %b: memref<4x2x16x16x2xbf16>, %c: memref<?x64xf32>, %keep: memref<?x2x16x32xbf16>) {
  %c0 = arith.constant 0 : index
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %tiles = affine.apply affine_map<()[s0] -> ((s0 ceildiv 32) * 2)>()[%m]
  %buf = memref.alloc(%tiles) {alignment = 64 : i64} : memref<?x2x16x32xbf16>
  linalg.generic {indexing_maps = [#rows, #tiles], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<?x64xf32>) outs(%buf : memref<?x2x16x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  %a = memref.expand_shape %buf [[0], [1], [2], [3, 4]] output_shape [%tiles, 2, 16, 16, 2] : memref<?x2x16x32xbf16> into memref<?x2x16x16x2xbf16>
  %cv = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [%tiles, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%cv : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%p: bf16, %q: bf16, %acc: f32):
    %pe = arith.extf %p : bf16 to f32
    %qe = arith.extf %q : bf16 to f32
    %pq = arith.mulf %pe, %qe : f32
    %s = arith.addf %acc, %pq : f32
    linalg.yield %s : f32
  }
  memref.copy %buf, %keep : memref<?x2x16x32xbf16> to memref<?x2x16x32xbf16>
  memref.dealloc %buf : memref<?x2x16x32xbf16>
  return
}

// DOT-LABEL: func.func @reads_index
//       DOT:   memref.alloc(
//       DOT:   linalg.generic
//       DOT:     linalg.index
//       DOT:   scf.parallel
//   DOT-NOT:     memref.alloca
//       DOT:     x86vector.avx512.dot
func.func @reads_index(%x: memref<?x64xf32>, %b: memref<4x2x16x16x2xbf16>, %c: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %tiles = affine.apply affine_map<()[s0] -> ((s0 ceildiv 32) * 2)>()[%m]
  %buf = memref.alloc(%tiles) {alignment = 64 : i64} : memref<?x2x16x32xbf16>
  linalg.generic {indexing_maps = [#rows, #tiles], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<?x64xf32>) outs(%buf : memref<?x2x16x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %if = arith.sitofp %ii : i32 to f32
    %v = arith.addf %in, %if : f32
    %r = arith.truncf %v : f32 to bf16
    linalg.yield %r : bf16
  }
  %a = memref.expand_shape %buf [[0], [1], [2], [3, 4]] output_shape [%tiles, 2, 16, 16, 2] : memref<?x2x16x32xbf16> into memref<?x2x16x16x2xbf16>
  %cv = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [%tiles, 16, 4, 16] : memref<?x64xf32> into memref<?x16x4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %b : memref<?x2x16x16x2xbf16>, memref<4x2x16x16x2xbf16>) outs(%cv : memref<?x16x4x16xf32>)
      attrs = {torsor.bf16_product} {
  ^bb0(%p: bf16, %q: bf16, %acc: f32):
    %pe = arith.extf %p : bf16 to f32
    %qe = arith.extf %q : bf16 to f32
    %pq = arith.mulf %pe, %qe : f32
    %s = arith.addf %acc, %pq : f32
    linalg.yield %s : f32
  }
  memref.dealloc %buf : memref<?x2x16x32xbf16>
  return
}
