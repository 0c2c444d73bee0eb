// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=256 --geo-decompose-attention --verify-diagnostics | FileCheck %s
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=256 --geo-decompose-attention --verify-diagnostics | FileCheck %s --check-prefix=COPIES

// A causal 2-row SO(3) tile, 2 heads of 4 features, 8 lanes: the key loop
// carries per row and head a vector sum and the accumulators, and no max
// (every score is ≤ 0 and the self pair's is 0: the row max is 0, no
// horizontal max); keys are vector loads; the pair form is vector FMAs;
// the f32 atan2 and exp are polynomials (no math.atan2 or math.exp
// remains; exp adds 2^k to the exponent bits with an integer shift); a loop over the tile's key vectors carries the sums and stores
// each key vector's probabilities as soon as they are scored; P·V is an
// inner loop over the tile's keys. The masked tiles (the diagonal) and
// the outputs run one row at a time: the state goes into stack buffers,
// and a loop over the rows loads a row's state, runs the masked key loop
// for that row alone (one copy of the pair form, not one per row) and
// writes its output row, the accumulators over the lane sums.
// The probabilities share a stack buffer with the rows' query features
// (2 × (2 heads × 8 keys) + 2 × 9), which the score loop broadcasts from
// memory; a loop over the rows copies them there, one vector per row.
// CHECK-LABEL: func.func @so3_causal
//       CHECK:   %[[P:.*]] = memref.alloca() : memref<50xf32>
//       CHECK:   scf.for
//       CHECK:     vector.transfer_read %{{.*}} {in_bounds = [true]} : tensor<2x9xf32>, vector<9xf32>
//       CHECK:     vector.store %{{.*}}, %[[P]][%{{.*}}] : memref<50xf32>, vector<9xf32>
//   CHECK-NOT:   memref.store
//       CHECK:   %[[S:.*]]:8 = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
//       CHECK:     scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
//       CHECK:     vector.transfer_read %{{.*}} {in_bounds = [true]} : tensor<9x?xf32>, vector<8xf32>
//       CHECK:     memref.load %[[P]]
//       CHECK:     vector.broadcast {{.*}} : f32 to vector<8xf32>
//       CHECK:     math.fma {{.*}} : vector<8xf32>
//       CHECK:     math.sqrt {{.*}} : vector<8xf32>
//       CHECK:     arith.shli {{.*}} : vector<8xi32>
//       CHECK:     vector.store %{{.*}}, %[[P]]
//   CHECK-NOT:     vector.reduction <maximumf>
//       CHECK:     scf.for
//       CHECK:       memref.load %[[P]]
//       CHECK:       math.fma {{.*}} : vector<4xf32>
//       CHECK:   %[[SUMS:.*]] = memref.alloca() : memref<32xf32>
//       CHECK:   %[[ACC:.*]] = memref.alloca() : memref<16xf32>
//       CHECK:   vector.store %[[S]]#0, %[[SUMS]]
//       CHECK:   vector.store %[[S]]#4, %[[ACC]]
//       CHECK:   scf.for %[[ROW:.*]] = {{.*}} iter_args({{.*}}) -> (tensor<2x8xf32>)
//       CHECK:     vector.load %[[SUMS]]
//       CHECK:     vector.load %[[ACC]]
//       CHECK:     scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<4xf32>, vector<4xf32>)
//       CHECK:       vector.transfer_read {{.*}} : tensor<9x?xf32>, vector<8xf32>
//       CHECK:       arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : vector<8xindex>
//       CHECK:       arith.cmpi sle
//       CHECK:       memref.load %[[P]]
//       CHECK:     vector.reduction <add>
//       CHECK:     vector.transfer_write {{.*}}[%[[ROW]], %{{.*}}] {{.*}} : vector<4xf32>, tensor<2x8xf32>
//   CHECK-NOT:   geo.flash_lie_attention
//   CHECK-NOT:   math.atan2
//   CHECK-NOT:   math.exp
//       CHECK:   return
// The pair form (one sqrt each) three times: once per row unmasked, once
// for the masked row loop.
// COPIES-LABEL: func.func @so3_causal
// COPIES-COUNT-3: math.sqrt
//   COPIES-NOT: math.sqrt
//       COPIES: return
func.func @so3_causal(%q: tensor<2x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<2x8xf32>, %off: index) -> tensor<2x8xf32> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5], causal>, key_tile = 8 : i64} : (tensor<2x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %o : tensor<2x8xf32>
}

// -----

// f64 keeps libm's atan2 and exp (on vectors, scalarized later).
// CHECK-LABEL: func.func @se2_f64
//       CHECK:   math.atan2 {{.*}} : vector<4xf64>
//       CHECK:   math.exp {{.*}} : vector<4xf64>
func.func @se2_f64(%q: tensor<1x4xf64>, %k: tensor<4x?xf64>, %v: tensor<?x4xf64>, %init: tensor<1x4xf64>, %off: index) -> tensor<1x4xf64> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<se2>, heads = 1, tau = [1.0], lambda = [1.0, 1.0]>, key_tile = 4 : i64} : (tensor<1x4xf64>, tensor<4x?xf64>, tensor<?x4xf64>, index, tensor<1x4xf64>) -> tensor<1x4xf64>
  return %o : tensor<1x4xf64>
}

// -----

// An untiled op is an error: decomposition needs static rows and key_tile.
func.func @untiled(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<?x8xf32>, %off: index) -> tensor<?x8xf32> {
  // expected-error @+1 {{must be tiled (geo-tile-attention) before it is decomposed}}
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

// With an lse result: per row and head, log(Σ lanes) (the row max is 0)
// is inserted into the lse destination next to the output.
// CHECK-LABEL: func.func @with_lse
//  CHECK-SAME:   %[[LSE0:[^:]*]]: tensor<2x2xf32>
//       CHECK:   vector.reduction <add>
//       CHECK:   %[[LOG:.*]] = math.log
//       CHECK:   tensor.insert %[[LOG]] into %{{.*}}[%{{.*}}, %{{.*}}] : tensor<2x2xf32>
//       CHECK:   return
func.func @with_lse(%q: tensor<2x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<2x8xf32>, %lse0: tensor<2x2xf32>) -> (tensor<2x8xf32>, tensor<2x2xf32>) {
  %c0 = arith.constant 0 : index
  %o, %lse = geo.flash_lie_attention %q, %k, %v, %c0, %init lse %lse0 {scores = #geo.scores<group = #lie.group<so3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5]>, key_tile = 8 : i64} : (tensor<2x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<2x8xf32>, tensor<2x2xf32>) -> (tensor<2x8xf32>, tensor<2x2xf32>)
  return %o, %lse : tensor<2x8xf32>, tensor<2x2xf32>
}

// -----

// A declared group whose log is iterative (Sim(2), generic): the pair form
// runs per lane as calls of one private function (the log's loops emitted
// once), in both key loops.
// CHECK-LABEL: func.func @declared_per_lane
//       CHECK:   scf.for
//       CHECK:     scf.for
//       CHECK:       func.call @torsor_pair_norms_Sim2_f64
//       CHECK:       vector.insert {{.*}} : f64 into vector<4xf64>
//       CHECK:   scf.for
//       CHECK:       func.call @torsor_pair_norms_Sim2_f64
//       CHECK:   return
//       CHECK: func.func private @torsor_pair_norms_Sim2_f64
//       CHECK:   scf.while
func.func @declared_per_lane(%q: tensor<1x9xf64>, %k: tensor<9x?xf64>, %v: tensor<?x4xf64>, %init: tensor<1x4xf64>, %off: index) -> tensor<1x4xf64> {
  %o = geo.flash_lie_attention %q, %k, %v, %off, %init {scores = #geo.scores<group = #lie.group<"Sim2", n = 3, generators = array<f64: 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0>, blocks = [["rotscale", 0, 1], ["trans", 2, 3]], generic>, heads = 1, tau = [1.0], lambda = [1.0, 0.5], causal>, key_tile = 4 : i64} : (tensor<1x9xf64>, tensor<9x?xf64>, tensor<?x4xf64>, index, tensor<1x4xf64>) -> tensor<1x4xf64>
  return %o : tensor<1x4xf64>
}

// -----

// The cross form (key_offset): the causal diagonal is query_offset −
// key_offset and may be negative, so the key range clamps signed to
// [0, L] (a row block before every key visits none) and the lane mask
// compares signed.
// CHECK-LABEL: func.func @cross_offsets
//  CHECK-SAME:   %[[QO:[^:]*]]: index, %[[KO:[^:]*]]: index
//       CHECK:   %[[DIAG:.*]] = arith.subi %[[QO]], %[[KO]] : index
//       CHECK:   arith.minsi
//       CHECK:   arith.maxsi
//       CHECK:   scf.for
//       CHECK:   scf.for
//       CHECK:     arith.cmpi sle
//       CHECK:   arith.cmpf ogt
//       CHECK:   arith.select
//   CHECK-NOT:   geo.flash_lie_attention
func.func @cross_offsets(%q: tensor<2x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<2x8xf32>, %lse0: tensor<2x1xf32>, %qo: index, %ko: index) -> (tensor<2x8xf32>, tensor<2x1xf32>) {
  %o, %lse = geo.flash_lie_attention %q, %k, %v, %qo key_offset %ko, %init lse %lse0 {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>, key_tile = 8 : i64} : (tensor<2x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, index, tensor<2x8xf32>, tensor<2x1xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>)
  return %o, %lse : tensor<2x8xf32>, tensor<2x1xf32>
}
