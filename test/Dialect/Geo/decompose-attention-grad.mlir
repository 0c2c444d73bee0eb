// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=256 --geo-decompose-attention-grad --verify-diagnostics | FileCheck %s
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=256 --geo-decompose-attention-grad --cse | FileCheck %s --check-prefix=ONCE
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=target=nvptx --geo-decompose-attention-grad | FileCheck %s --check-prefix=GPU

// A causal SO(3) backward, 2 heads of 4 features, f32 (8 lanes), on the
// CPU: one pass over key blocks. First the row statistics over query
// tiles (parallel): λ ≥ 0 and τ > 0, so every score is ≤ 0 and the row
// max is the self pair's 0: without the forward's lse, the stats loop
// carries only per-lane sums of exp(s) (4 rows × 2 heads, no running max,
// no max reduction). Then one parallel loop over the 8 key chunks: each
// has a stack scratch (4 key vectors × (9 + 8) features × 8 lanes of dk
// and dv, as many of the block's keys and values packed per key vector,
// then per row P, dq per lane, the query features, dO, lse and D: 1524
// floats),
// takes key blocks chunk and 15 − chunk of every 16 (mirrored pairs:
// balanced under the causal mask), packs the block's keys (masked reads
// of the feature-major keys) and values (per lane, zero past the end)
// into the scratch (the values in a loop over the features that LLVM
// keeps rolled: no unrolling, no vectorisation), where no packed copy of
// K or V ([⌈L/8⌉, F, 8]) exists
// outside it, runs row blocks of 4 rows from the block's first key on,
// and in them the block's key vectors (their keys read from the scratch;
// the pair form, its adjoint, dP, dv and dk once per pair): per head a
// rolled loop over its features for dP (4 rows' chains), a rolled loop over
// the 4 rows that builds the pair form and its adjoint once (one lane mask;
// divisions that may take a reciprocal, `arcp`), and per head a
// rolled loop over its features for dv; each row block adds its dq to the chunk's
// partial, [8, L, 9]; dk is written out feature-major and dv row-major per
// block (per key a rolled loop over its 8 values).
// Last, a parallel loop over the rows sums the 8 partials. Every tensor
// the kernel creates has at most one sequence-length dim: nothing is
// L × L.
// CHECK-LABEL: func.func @so3_causal
//   CHECK-NOT:   linalg.transpose
//       CHECK:   scf.for
//       CHECK:     scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
//   CHECK-NOT:       vector.reduction <maximumf>
//       CHECK:       arith.shli {{.*}} : vector<8xi32>
//   CHECK-NOT:       vector.reduction <maximumf>
//       CHECK:     vector.reduction <add>
//       CHECK:     math.log
//       CHECK:   } {torsor.parallel}
//   CHECK-NOT:   tensor<?x9x8xf32>
//   CHECK-NOT:   tensor<?x8x8xf32>
//       CHECK:   linalg.fill {{.*}} -> tensor<8x?x9xf32>
//   CHECK-NOT:   tensor<?x9x8xf32>
//   CHECK-NOT:   tensor<?x8x8xf32>
//       CHECK:   scf.for {{.*}} -> (tensor<8x?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
//       CHECK:     memref.alloca() {alignment = 64 : i64} : memref<1524xf32>
//       CHECK:     arith.subi %c15{{.*}}, %[[CHUNK:.*]] : index
//       CHECK:     scf.for {{.*}} -> (tensor<8x?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
//       CHECK:       arith.select %{{.*}}, %{{.*}}, %[[CHUNK]] : index
//       CHECK:       scf.if {{.*}} -> (tensor<8x?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
//       CHECK:       arith.minui
//       CHECK:       scf.for
//       CHECK:         vector.transfer_read {{.*}} : tensor<9x?xf32>, vector<8xf32>
//       CHECK:         vector.store {{.*}} : memref<1524xf32>, vector<8xf32>
//       CHECK:         scf.for
//       CHECK:           scf.for
//       CHECK:             tensor.extract {{.*}} : tensor<?x8xf32>
//       CHECK:             arith.select
//       CHECK:             memref.store {{.*}} : memref<1524xf32>
//       CHECK:           } {loop_annotation = #[[ROLLED:.*]]}
//       CHECK:       scf.for {{.*}} step %c4{{.*}} -> (tensor<8x?x9xf32>) {
//       CHECK:         scf.for
//       CHECK:           vector.load {{.*}} : memref<1524xf32>, vector<8xf32>
//       CHECK:           scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
//       CHECK:             math.fma
//       CHECK:           } {loop_annotation = #[[ROLLED]]}
//       CHECK:           scf.for %{{.*}} = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
//       CHECK:             arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : vector<8xindex>
//   CHECK-NOT:             arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : vector<8xindex>
//       CHECK:             math.sqrt {{.*}} : vector<8xf32>
//   CHECK-NOT:             arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : vector<8xindex>
//       CHECK:             arith.divf {{.*}} fastmath<arcp> : vector<8xf32>
//   CHECK-NOT:             arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : vector<8xindex>
//       CHECK:           } {loop_annotation = #[[ROLLED]]}
//       CHECK:           scf.for
//       CHECK:             math.fma
//       CHECK:             vector.store {{.*}} : memref<1524xf32>, vector<8xf32>
//       CHECK:           } {loop_annotation = #[[ROLLED]]}
//       CHECK:         vector.reduction <add>
//       CHECK:         tensor.insert {{.*}} : tensor<8x?x9xf32>
//       CHECK:       vector.transfer_write {{.*}} : vector<8xf32>, tensor<9x?xf32>
//       CHECK:       tensor.insert {{.*}} : tensor<?x8xf32>
//       CHECK:       } {loop_annotation = #[[ROLLED]]}
//       CHECK:   } {torsor.parallel}
//       CHECK:   scf.for
//       CHECK:     tensor.extract {{.*}} : tensor<8x?x9xf32>
//       CHECK:   } {torsor.parallel}
//   CHECK-NOT:   tensor<?x?x
//   CHECK-NOT:   geo.flash_lie_attention_grad
//   CHECK-NOT:   math.atan2
//       CHECK:   return
func.func @so3_causal(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %o: tensor<?x8xf32>, %do: tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5], causal>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return %dq, %dk, %dv : tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>
}

// -----

// With the forward's log-sum-exp there is no stats loop: the row pass
// reads lse (one scalar per row and head) and D = ⟨dO, O⟩, and visits no
// key; the one-pass loop alone evaluates the pair form, once per pair and
// row: after CSE, one square root (the angle's) in the key-vector loop's
// rolled loop over the 4 rows of a row block, none elsewhere: the last row block's rows past the
// end repeat the last row (clamped) with dO = 0 and D = 0 (they add
// nothing), so there is no single-row copy of the loop. With the known max 0,
// P = e^s · e^{−lse}: the row block computes e^{−lse}.
// CHECK-LABEL: func.func @so3_given_lse
//  CHECK-SAME:   %[[LSE:[^:]*]]: tensor<?x2xf32>
//       CHECK:   scf.for
//       CHECK:     tensor.extract %[[LSE]]
//   CHECK-NOT:     math.log
//   CHECK-NOT:     math.sqrt
//       CHECK:   } {torsor.parallel}
//       CHECK:   memref.alloca
//       CHECK:   } {torsor.parallel}
//       CHECK:   return
// ONCE-LABEL: func.func @so3_given_lse
//  ONCE-NOT:   math.sqrt
//      ONCE:   memref.alloca
//      ONCE:   scf.for %[[ROW0:.*]] = %{{.*}} to %[[LQ:[^ ]*]] step %c4
//      ONCE:     %[[LAST:.*]] = arith.subi %[[LQ]], %c1
//      ONCE:     arith.negf {{.*}} : f32
//      ONCE:     %[[ROW1:.*]] = arith.addi %[[ROW0]], %c1
//      ONCE:     arith.minui %[[ROW1]], %[[LAST]]
//      ONCE:     %[[IN:.*]] = arith.cmpi ult, %[[ROW1]], %[[LQ]]
//      ONCE:     arith.select %[[IN]], %{{.*}}, %cst : f32
//      ONCE:     scf.for
//      ONCE:       scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args
//      ONCE:         math.sqrt {{.*}} : vector<8xf32>
//      ONCE:       } {loop_annotation =
//  ONCE-NOT:   math.sqrt
//      ONCE:   return
// On the GPU's strategy (vectors of one lane, a thread per key) the
// backward keeps two passes: pass A over query tiles (dq per row), pass B
// over keys (dk and dv per key), each evaluating the pair form.
// GPU-LABEL: func.func @so3_given_lse
//   GPU-NOT:   memref.alloca
//       GPU:   scf.for
//       GPU:     scf.for
//       GPU:       math.sqrt {{.*}} : vector<1xf32>
//       GPU:   } {torsor.parallel}
//       GPU:   scf.for
//       GPU:     scf.for
//       GPU:       math.sqrt {{.*}} : vector<1xf32>
//       GPU:     vector.transfer_write {{.*}} : vector<1xf32>, tensor<9x?xf32>
//       GPU:   } {torsor.parallel}
//   GPU-NOT:   memref.alloca
//       GPU:   return
func.func @so3_given_lse(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %o: tensor<?x8xf32>, %do: tensor<?x8xf32>, %lse: tensor<?x2xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>) {
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do lse %lse {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x2xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>)
  return %dq, %dk, %dv : tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>
}

// -----

// Two batch dims: each parallel loop runs over (batch element, tile or
// key chunk) pairs, its index split into the two batch indices and the
// tile; every access takes the batch indices first, the dq partials are
// [2, ?, 8, L, 9]. No reshape, nothing L × L.
// CHECK-LABEL: func.func @so3_batched
//       CHECK:   tensor.dim %{{.*}}, %{{.*}} : tensor<2x?x9x?xf32>
//       CHECK:   %[[B1:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<2x?x9x?xf32>
//       CHECK:   scf.for
//       CHECK:     arith.remui %{{.*}}, %[[B1]]
//       CHECK:     tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : tensor<2x?x?x9xf32>
//       CHECK:   } {torsor.parallel}
//       CHECK:   scf.for {{.*}} -> (tensor<2x?x8x?x9xf32>, tensor<2x?x9x?xf32>, tensor<2x?x?x8xf32>)
//       CHECK:     tensor.insert {{.*}} : tensor<2x?x8x?x9xf32>
//       CHECK:     vector.transfer_write {{.*}} : vector<8xf32>, tensor<2x?x9x?xf32>
//       CHECK:     tensor.insert {{.*}} : tensor<2x?x?x8xf32>
//       CHECK:   } {torsor.parallel}
//   CHECK-NOT:   linalg.transpose
//   CHECK-NOT:   tensor<2x?x?x?x
//   CHECK-NOT:   tensor.collapse_shape
//   CHECK-NOT:   geo.flash_lie_attention_grad
//       CHECK:   return
func.func @so3_batched(%q: tensor<2x?x?x9xf32>, %k: tensor<2x?x9x?xf32>, %v: tensor<2x?x?x8xf32>, %o: tensor<2x?x?x8xf32>, %do: tensor<2x?x?x8xf32>) -> (tensor<2x?x?x9xf32>, tensor<2x?x9x?xf32>, tensor<2x?x?x8xf32>) {
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5], causal>} : (tensor<2x?x?x9xf32>, tensor<2x?x9x?xf32>, tensor<2x?x?x8xf32>, tensor<2x?x?x8xf32>, tensor<2x?x?x8xf32>) -> (tensor<2x?x?x9xf32>, tensor<2x?x9x?xf32>, tensor<2x?x?x8xf32>)
  return %dq, %dk, %dv : tensor<2x?x?x9xf32>, tensor<2x?x9x?xf32>, tensor<2x?x?x8xf32>
}

// -----

// SE(3) in f64 (4 lanes), not causal: two blocks, so the adjoint of the
// pair form takes two norm cotangents; dk has 12 features.
// CHECK-LABEL: func.func @se3_full
//       CHECK:   scf.for
//       CHECK:     vector.transfer_read {{.*}} : tensor<12x?xf64>, vector<4xf64>
//       CHECK:   } {torsor.parallel}
//       CHECK:   vector.transfer_write {{.*}} : vector<4xf64>, tensor<12x?xf64>
//   CHECK-NOT:   tensor<?x?x
//       CHECK:   return
func.func @se3_full(%q: tensor<?x12xf64>, %k: tensor<12x?xf64>, %v: tensor<?x4xf64>, %o: tensor<?x4xf64>, %do: tensor<?x4xf64>) -> (tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x4xf64>) {
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {scores = #geo.scores<group = #lie.group<se3>, heads = 1, tau = [1.0], lambda = [1.0, 0.25]>} : (tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x4xf64>, tensor<?x4xf64>, tensor<?x4xf64>) -> (tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x4xf64>)
  return %dq, %dk, %dv : tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x4xf64>
}

// -----

// The block backward on group elements expands into pair features, the
// flash backward with offsets and the given lse (two token sets: the row
// pass over the Lq query rows; the one-pass loop over the Lk keys' blocks
// from the first query row that sees them, clamped signed, with
// P = e^{s − lse}: no known max), and the features' pullbacks to ambient
// cotangents.
// CHECK-LABEL: func.func @cross_block
//  CHECK-SAME:   %[[QO:[^:]*]]: index, %[[KO:[^:]*]]: index)
//   CHECK-DAG:   lie.pair_features %{{.*}} {group = #lie.group<so3>}
//   CHECK-DAG:   lie.pair_features %{{.*}} {group = #lie.group<so3>, key}
//       CHECK:   arith.subi %[[QO]], %[[KO]] : index
// The target's 8 lanes (the stamp torsor-select-strategy put on the block
// backward), not the portable 4:
//       CHECK:   vector<8xf32>
//       CHECK:   } {torsor.parallel}
//       CHECK:   scf.for
//       CHECK:     scf.for
//       CHECK:       arith.maxsi
//       CHECK:       scf.for
//       CHECK:         scf.for
//       CHECK:           arith.cmpi sle
//       CHECK:   } {torsor.parallel}
//   CHECK-DAG:   lie.pullback query_features
//   CHECK-DAG:   lie.pullback key_features
//   CHECK-NOT:   geo.lie_cross_attention_grad
//   CHECK-NOT:   geo.flash_lie_attention_grad
//       CHECK:   return
func.func @cross_block(%gq: tensor<?x3x3xf32>, %gk: tensor<?x3x3xf32>, %v: tensor<?x8xf32>,
                       %o: tensor<?x8xf32>, %lse: tensor<?x2xf32>, %do: tensor<?x8xf32>,
                       %qo: index, %ko: index)
    -> (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>) {
  %dgq, %dgk, %dv = geo.lie_cross_attention_grad %gq, %gk, %v, %o, %lse, %do, %qo, %ko {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5], causal>}
      : (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>, tensor<?x8xf32>,
         tensor<?x2xf32>, tensor<?x8xf32>, index, index)
        -> (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>)
  return %dgq, %dgk, %dv : tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>
}
