// RUN: torsor-opt %s --torsor-differentiate | FileCheck %s
// RUN: torsor-opt %s --torsor-differentiate --torsor-select-strategy=vector-bits=256 --geo-decompose-attention-grad | FileCheck %s --check-prefix=KERNEL

// lie_attention over a declared group whose log is iterative (Sim(2)
// with `generic`, which keeps the generic model: without it, Sim(2) runs
// on Aff(2)'s closed forms, see declared-attention-grad-recognized.mlir):
// its gradient is the flash backward on the pair features, like a built-in
// group's, and no tensor of the backward has two sequence dims (the
// unfused all-pairs form, L x L x 3 x 3, is gone).
// CHECK-LABEL: func.func @torsor_model_backward
//       CHECK:   lie.pair_features
//       CHECK:   geo.flash_lie_attention_grad
//  CHECK-SAME:     group = #lie.group<"Sim2"
//       CHECK:   lie.pullback query_features
//       CHECK:   lie.pullback key_features
//   CHECK-NOT:   tensor<?x?x
//   CHECK-NOT:   lie.log
//       CHECK:   return

// Lowered: the pair form and its adjoint run per lane (4 lanes of f64)
// as calls of one private function each (the row statistics, then the
// one-pass loop over key chunks, a query row at a time), which holds the log's loops and
// J_r: (9 + 9 features) -> 2 block norms and the 4 log coordinates, and
// (18 features, the 4 log coordinates, 2 norm cotangents) -> 18 feature
// gradients; still nothing L x L.
// KERNEL-LABEL: func.func @torsor_model_backward
//   KERNEL-NOT:   tensor<?x?x
//       KERNEL:   scf.for
//       KERNEL:     func.call @torsor_pair_norms_Sim2_f64
//       KERNEL:     vector.insert {{.*}} : f64 into vector<4xf64>
//       KERNEL:   } {torsor.parallel}
//       KERNEL:   scf.for
//       KERNEL:     memref.alloca
//       KERNEL:     func.call @torsor_pair_norms_Sim2_f64
//       KERNEL:     scf.if
//       KERNEL:       func.call @torsor_pair_norms_vjp_Sim2_f64
//       KERNEL:   } {torsor.parallel}
//   KERNEL-NOT:   tensor<?x?x
//   KERNEL-NOT:   geo.flash_lie_attention_grad
//       KERNEL: func.func private @torsor_pair_norms_Sim2_f64
//  KERNEL-SAME:   %arg17: f64) -> (f64, f64, f64, f64, f64, f64)
//       KERNEL:   scf.while
//       KERNEL: func.func private @torsor_pair_norms_vjp_Sim2_f64
//  KERNEL-SAME:   %arg23: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)
func.func @SimilarityAttention(%g: tensor<?x3x3xf64> {torsor.dims = ["L", 3, 3], torsor.group = "Sim2", torsor.kind = "input", torsor.name = "g"},
                               %x: tensor<?x4xf64> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"})
    -> (tensor<?x4xf64> {torsor.dims = ["L", 4], torsor.name = "y"}) {
  %y = geo.lie_attention %g, %x {scores = #geo.scores<group = #lie.group<"Sim2", n = 3, generators = array<f64: 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0>, blocks = [["rotscale", 0, 1], ["trans", 2, 3]], generic>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, 0.5, 1.0, 0.5], causal>} : (tensor<?x3x3xf64>, tensor<?x4xf64>) -> tensor<?x4xf64>
  return %y : tensor<?x4xf64>
}
