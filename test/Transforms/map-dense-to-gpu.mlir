// RUN: torsor-opt %s --split-input-file --torsor-map-dense-to-gpu --canonicalize | FileCheck %s

// A plain matmul: grid (⌈N/64⌉, ⌈M/64⌉, 1) of 256 threads; A [64][16] and
// B [16][64] tiles in 16-byte aligned workgroup globals, filled between two
// barriers; a thread's 4 × 4 accumulators start from the output and are
// carried through the depth loop; the op's own body (mulf, addf) is applied
// per (row, column); stores are guarded by the output's bounds.
// CHECK-DAG: memref.global "private" @__torsor_dense_tile_a : memref<1024xf32, #gpu.address_space<workgroup>> {alignment = 16 : i64}
// CHECK-DAG: memref.global "private" @__torsor_dense_tile_b : memref<1024xf32, #gpu.address_space<workgroup>> {alignment = 16 : i64}
// CHECK-LABEL: func.func @matmul
//  CHECK-SAME:   (%[[A:[^:]*]]: memref<?x?xf32>, %[[B:[^:]*]]: memref<?x?xf32>, %[[C:[^:]*]]: memref<?x?xf32>)
//   CHECK-NOT:   linalg.matmul
//       CHECK:   %[[GX:.*]] = arith.ceildivui %{{.*}}, %c64
//       CHECK:   %[[GY:.*]] = arith.ceildivui %{{.*}}, %c64
//       CHECK:   scf.if
//       CHECK:     gpu.launch blocks({{.*}}) in ({{.*}} = %[[GX]], {{.*}} = %[[GY]], {{.*}} = %c1{{.*}}) threads(%[[TID:[^,]*]], {{.*}}) in ({{.*}} = %c256{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
//       CHECK:       %[[AT:.*]] = memref.get_global @__torsor_dense_tile_a
//       CHECK:       %[[BT:.*]] = memref.get_global @__torsor_dense_tile_b
// 16 accumulators loaded from C:
//  CHECK-COUNT-16:   memref.load %[[C]]
//       CHECK:       scf.for %[[K0:.*]] = %c0{{.*}} to %{{.*}} step %c16{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
//  CHECK-NEXT:         gpu.barrier
//  CHECK-NEXT:         scf.for %{{.*}} = %[[TID]] to %c1024{{.*}} step %c256
//       CHECK:           memref.load %[[A]]
//       CHECK:           memref.store %{{.*}}, %[[AT]]
//       CHECK:         scf.for %{{.*}} = %[[TID]] to %c1024{{.*}} step %c256
//       CHECK:           memref.load %[[B]]
//       CHECK:           memref.store %{{.*}}, %[[BT]]
//       CHECK:         gpu.barrier
//       CHECK:         arith.minui %{{.*}}, %c16
//       CHECK:         scf.for
//  CHECK-COUNT-4:        memref.load %[[AT]]
//  CHECK-COUNT-4:        memref.load %[[BT]]
//       CHECK:           arith.mulf
//  CHECK-NEXT:           arith.addf
//       CHECK:       arith.cmpi ult
//       CHECK:       scf.if
//  CHECK-NEXT:         memref.store %{{.*}}, %[[C]]
//       CHECK:       gpu.terminator
func.func @matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

// -----

// `x Wᵀ` with a batch dim, as convert-geo-to-linalg writes it: the grid's
// z is the batch; W is [n, k], so its tile is copied with k fastest
// (coalesced reads of W's rows: the loop index's remainder is the k
// offset, its quotient the column).
// CHECK-LABEL: func.func @batched_transposed
//  CHECK-SAME:   (%[[X:[^:]*]]: memref<?x?x?xf64>, %[[W:[^:]*]]: memref<?x?xf64>, %[[Y:[^:]*]]: memref<?x?x?xf64>)
//       CHECK:   %[[BATCH:.*]] = memref.dim %[[X]], %c0
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}}, {{.*}} = %[[BATCH]])
//       CHECK:         scf.for %[[I:.*]] = %{{.*}} to %c1024{{.*}} step %c256
//       CHECK:           memref.load %[[X]]
//       CHECK:         scf.for %[[J:.*]] = %{{.*}} to %c1024{{.*}} step %c256
//  CHECK-NEXT:           %[[KK:.*]] = arith.remui %[[J]], %c16
//  CHECK-NEXT:           %[[COL:.*]] = arith.divui %[[J]], %c16
//       CHECK:           memref.load %[[W]]
//       CHECK:           arith.muli %[[KK]], %c64
//       CHECK:           memref.store
#x = affine_map<(b, m, n, k) -> (b, m, k)>
#w = affine_map<(b, m, n, k) -> (n, k)>
#y = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @batched_transposed(%x: memref<?x?x?xf64>, %w: memref<?x?xf64>, %y: memref<?x?x?xf64>) {
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x?x?xf64>, memref<?x?xf64>) outs(%y : memref<?x?x?xf64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %p = arith.mulf %a, %b : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// Not contractions of one m, n and k (an element-wise op, a matvec, integer
// data): left for the generic mapping.
// CHECK-LABEL: func.func @left_alone
//   CHECK-NOT:   gpu.launch
//       CHECK:   linalg.matvec
//       CHECK:   linalg.matmul
//       CHECK:   linalg.add
func.func @left_alone(%a: memref<?x?xf32>, %x: memref<?xf32>, %y: memref<?xf32>, %i: memref<4x4xi32>, %c: memref<?x?xf32>) {
  linalg.matvec ins(%a, %x : memref<?x?xf32>, memref<?xf32>) outs(%y : memref<?xf32>)
  linalg.matmul ins(%i, %i : memref<4x4xi32>, memref<4x4xi32>) outs(%i : memref<4x4xi32>)
  linalg.add ins(%a, %a : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}
