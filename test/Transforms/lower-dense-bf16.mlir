// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 amx=true" --torsor-lower-dense-bf16 | FileCheck %s --check-prefix=AMX
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 avx512bf16=true" --torsor-lower-dense-bf16 | FileCheck %s --check-prefix=DOT
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16" --torsor-lower-dense-bf16 | FileCheck %s --check-prefix=NONE

// The packed product torsor-tile-dense leaves (A [Mp, 32, 2], VNNI B
// [32, 64, 2], C [Mp, 64]) on buffers. On AMX, row blocks of 32 are tasks
// (scf.parallel); per 32 x 32 block of C, 2 x 2 C tiles are loaded, the
// depth loop carries them while loading 2 A and 2 B tiles and doing 4 tile
// products, and they are stored once. With AVX512-BF16, 8 rows x 2 vectors of
// accumulators per block, and per VNNI row two 32 x bf16 loads of B and
// one broadcast A pair per row feeding x86vector.avx512.dot. Without a
// bf16 unit the generic stays (its loops compute the same sums).

#a = affine_map<(m, n, a, p) -> (m, a, p)>
#b = affine_map<(m, n, a, p) -> (a, n, p)>
#c = affine_map<(m, n, a, p) -> (m, n)>

// AMX-LABEL: func.func @product
//   AMX-DAG:   %[[A:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : memref<?x32x2xbf16> into memref<?x64xbf16>
//   AMX-DAG:   %[[B:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : memref<32x64x2xbf16> into memref<32x128xbf16>
//       AMX:   scf.parallel
//       AMX:     scf.for
//   AMX-COUNT-4: amx.tile_load %{{.*}} : memref<?x64xf32> into !amx.tile<16x16xf32>
//       AMX:       scf.for {{.*}} iter_args
//   AMX-COUNT-2:     amx.tile_load %[[A]]{{.*}} into !amx.tile<16x32xbf16>
//   AMX-COUNT-2:     amx.tile_load %[[B]]{{.*}} into !amx.tile<16x32xbf16>
//   AMX-COUNT-4:     amx.tile_mulf
//       AMX:         scf.yield
//   AMX-COUNT-4: amx.tile_store
//   AMX-NOT:   linalg.generic

// DOT-LABEL: func.func @product
//       DOT:   scf.parallel
//       DOT:     scf.for
//       DOT:       scf.for
//       DOT:         scf.for {{.*}} iter_args
//  DOT-COUNT-2:        vector.load {{.*}} : memref<32x128xbf16>, vector<32xbf16>
//       DOT:           vector.bitcast {{.*}} : vector<2xbf16> to vector<1xi32>
//       DOT:           vector.broadcast {{.*}} : i32 to vector<16xi32>
//  DOT-COUNT-2:        x86vector.avx512.dot {{.*}} : vector<32xbf16> -> vector<16xf32>
//   DOT-NOT:   linalg.generic

// NONE-LABEL: func.func @product
//       NONE:   linalg.generic
//   NONE-NOT:   amx.
//   NONE-NOT:   x86vector.
func.func @product(%a: memref<?x32x2xbf16>, %b: memref<32x64x2xbf16>, %c: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<?x32x2xbf16>, memref<32x64x2xbf16>) outs(%c : memref<?x64xf32>)
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
// batch element. One scf.parallel runs every batch element x row block
// (its index split into the head and the row block); the tile loads take
// the head as their leading index, and B's loads drop it where B has none.

#ha = affine_map<(h, m, n, a, p) -> (h, m, a, p)>
#hb = affine_map<(h, m, n, a, p) -> (h, a, n, p)>
#hw = affine_map<(h, m, n, a, p) -> (a, n, p)>
#hc = affine_map<(h, m, n, a, p) -> (h, m, n)>

// AMX-LABEL: func.func @heads
//       AMX:   %[[BLOCKS:[^ ]*]] = arith.divui %{{.*}}, %c32
//       AMX:   scf.parallel (%[[T:[^)]*]]) = ({{.*}}) to ({{.*}}) step ({{.*}})
//       AMX:     %[[R:.*]] = arith.remui %[[T]], %[[BLOCKS]]
//       AMX:     %[[H:.*]] = arith.divui %[[T]], %[[BLOCKS]]
//       AMX:     amx.tile_load %{{.*}}[%[[H]], %{{.*}}, %{{.*}}] : memref<4x?x32xf32> into !amx.tile<16x16xf32>
//       AMX:     scf.for {{.*}} iter_args
//       AMX:       amx.tile_load %{{.*}}[%[[H]], %{{.*}}, %{{.*}}] : memref<4x?x64xbf16> into !amx.tile<16x32xbf16>
//       AMX:       amx.tile_load %{{.*}}[%[[H]], %{{.*}}, %{{.*}}] : memref<4x32x64xbf16> into !amx.tile<16x32xbf16>
//       AMX:     amx.tile_store %{{.*}}[%[[H]],
//   AMX-NOT:   linalg.generic

// DOT-LABEL: func.func @heads
//       DOT:   scf.parallel
//       DOT:     x86vector.avx512.dot
//   DOT-NOT:   linalg.generic
func.func @heads(%a: memref<4x?x32x2xbf16>, %b: memref<4x32x32x2xbf16>, %c: memref<4x?x32xf32>) {
  linalg.generic {indexing_maps = [#ha, #hb, #hc],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<4x?x32x2xbf16>, memref<4x32x32x2xbf16>) outs(%c : memref<4x?x32xf32>)
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
//       AMX:       amx.tile_load %{{.*}}[%[[H]], %{{.*}}, %{{.*}}] : memref<3x?x64xbf16> into !amx.tile<16x32xbf16>
//       AMX:       amx.tile_load %{{.*}}[%{{[^,]*}}, %{{[^,]*}}] : memref<32x64xbf16> into !amx.tile<16x32xbf16>
//   AMX-NOT:   linalg.generic
func.func @shared_weight(%a: memref<3x?x32x2xbf16>, %b: memref<32x32x2xbf16>, %c: memref<3x?x32xf32>) {
  linalg.generic {indexing_maps = [#ha, #hw, #hc],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<3x?x32x2xbf16>, memref<32x32x2xbf16>) outs(%c : memref<3x?x32xf32>)
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
