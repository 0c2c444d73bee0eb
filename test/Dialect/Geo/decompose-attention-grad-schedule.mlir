// RUN: torsor-opt %s --split-input-file --geo-decompose-attention-grad | FileCheck %s
// RUN: torsor-opt %s --split-input-file --geo-decompose-attention-grad --cse | FileCheck %s --check-prefix=CHAINS

// The strategy's `backward` field, not the lane count, picks the
// backward's schedule: each value pinned on an op with the same lanes
// produces its schedule.

// `one_pass`: a row pass (lse and D only), then one parallel loop over
// (batch element, key chunk) with the block's dk and dv in a stack scratch
// and dq into per-chunk partials [8, L, Fq], summed by a last loop over
// rows.
// CHECK-LABEL: func.func @one_pass
//       CHECK:   } {torsor.parallel}
//       CHECK:   linalg.fill {{.*}} -> tensor<8x?x9xf32>
//       CHECK:   scf.for {{.*}} -> (tensor<8x?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
//       CHECK:     memref.alloca() {alignment = 64 : i64} : memref<{{[0-9]+}}xf32>
//       CHECK:   } {torsor.parallel}
//       CHECK:   scf.for
//       CHECK:     tensor.extract {{.*}} : tensor<8x?x9xf32>
//       CHECK:   } {torsor.parallel}
//       CHECK:   return
// One head of 8 features, one row: dP = dO·v runs as 4 FMA chains over
// interleaved features (from zero, in a loop over the head's features, 4
// at a time, that LLVM keeps rolled), summed as a tree into the scratch,
// where one chain of 8 dependent FMAs would leave its latency exposed.
// CHAINS-LABEL: func.func @one_pass
//       CHAINS:   %[[R:[0-9]+]]:4 = scf.for %{{.*}} = %c0 to %c8 step %c4 iter_args(%[[A0:arg[0-9]+]] = %[[ZERO:cst[_0-9]*]], %[[A1:arg[0-9]+]] = %[[ZERO]], %[[A2:arg[0-9]+]] = %[[ZERO]], %[[A3:arg[0-9]+]] = %[[ZERO]]) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
//       CHAINS:     math.fma %{{[0-9]+}}, %{{[0-9]+}}, %[[A0]] : vector<8xf32>
//       CHAINS:     math.fma %{{[0-9]+}}, %{{[0-9]+}}, %[[A1]] : vector<8xf32>
//       CHAINS:     math.fma %{{[0-9]+}}, %{{[0-9]+}}, %[[A2]] : vector<8xf32>
//       CHAINS:     math.fma %{{[0-9]+}}, %{{[0-9]+}}, %[[A3]] : vector<8xf32>
//       CHAINS:   } {loop_annotation =
//       CHAINS:   %[[S0:[0-9]+]] = arith.addf %[[R]]#0, %[[R]]#1 : vector<8xf32>
//       CHAINS:   %[[S1:[0-9]+]] = arith.addf %[[R]]#2, %[[R]]#3 : vector<8xf32>
//       CHAINS:   %[[S:[0-9]+]] = arith.addf %[[S0]], %[[S1]] : vector<8xf32>
//       CHAINS:   vector.store %[[S]], %alloca[%{{.*}}] : memref<{{[0-9]+}}xf32>, vector<8xf32>
func.func @one_pass(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %o: tensor<?x8xf32>, %do: tensor<?x8xf32>, %lse: tensor<?x1xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do lse %lse {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 16, backward = one_pass>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return %dq, %dk, %dv : tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>
}

// -----

// `two_pass` on the same 8 lanes: pass A over query rows carries dq's
// per-lane accumulators (9 vectors) through its key loop; pass B over key
// vectors carries dk's and dv's (9 + 8) through its row loop and writes
// them; no scratch, no partials.
// CHECK-LABEL: func.func @two_pass
//   CHECK-NOT:   memref.alloca
//   CHECK-NOT:   tensor<8x?x9xf32>
//       CHECK:   scf.for
//       CHECK:     scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
//       CHECK:   } {torsor.parallel}
//       CHECK:   scf.for
//       CHECK:     scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
//       CHECK:     vector.transfer_write {{.*}} : vector<8xf32>, tensor<9x?xf32>
//       CHECK:   } {torsor.parallel}
//   CHECK-NOT:   memref.alloca
//   CHECK-NOT:   tensor<8x?x9xf32>
//       CHECK:   return
func.func @two_pass(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %o: tensor<?x8xf32>, %do: tensor<?x8xf32>, %lse: tensor<?x1xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do lse %lse {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 16, backward = two_pass>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return %dq, %dk, %dv : tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>
}

// -----

// Without the field the backward is one pass (the default), also on
// vectors of one lane, which used to imply two passes.
// CHECK-LABEL: func.func @default_one_lane
//       CHECK:   linalg.fill {{.*}} -> tensor<8x?x9xf32>
//       CHECK:   memref.alloca() {alignment = 64 : i64} : memref<{{[0-9]+}}xf32>
//       CHECK:   vector.transfer_read {{.*}} : tensor<9x?xf32>, vector<1xf32>
//       CHECK:   vector.load {{.*}} : memref<{{[0-9]+}}xf32>, vector<1xf32>
//       CHECK:   } {torsor.parallel}
//       CHECK:   tensor.extract {{.*}} : tensor<8x?x9xf32>
//       CHECK:   return
func.func @default_one_lane(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %o: tensor<?x8xf32>, %do: tensor<?x8xf32>, %lse: tensor<?x1xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do lse %lse {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, torsor.strategy = #strategy.vector_attention<lanes = 1, query_rows = 1, key_tile = 4>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return %dq, %dk, %dv : tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>
}
