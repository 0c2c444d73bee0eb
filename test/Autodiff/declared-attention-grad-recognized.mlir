// RUN: torsor-opt %s --torsor-differentiate --torsor-select-strategy=vector-bits=256 --geo-decompose-attention-grad | FileCheck %s

// Sim(2) declared by generators is a subalgebra of aff(2) (GroupStructure.h):
// its pair form and the adjoint of the pair form are Aff(2)'s closed forms,
// straight-line code on vectors (4 lanes of f64), differentiated formula by
// formula like a built-in's. No per-lane call, no loop of the iterative log.
// CHECK-LABEL: func.func @torsor_model_backward
//   CHECK-NOT:   tensor<?x?x
//   CHECK-NOT:   func.call @torsor_pair_norms
//       CHECK:   math.atan2 {{.*}} : vector<4xf64>
//       CHECK:   } {torsor.parallel}
//   CHECK-NOT:   func.call @torsor_pair_norms
//   CHECK-NOT:   scf.while
//   CHECK-NOT:   func.func private @torsor_pair_norms
func.func @SimilarityAttention(%g: tensor<?x3x3xf64> {torsor.dims = ["L", 3, 3], torsor.group = "Sim2", torsor.kind = "input", torsor.name = "g"},
                               %x: tensor<?x4xf64> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"})
    -> (tensor<?x4xf64> {torsor.dims = ["L", 4], torsor.name = "y"}) {
  %y = geo.lie_attention %g, %x {scores = #geo.scores<group = #lie.group<"Sim2", n = 3, generators = array<f64: 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0>, blocks = [["rotscale", 0, 1], ["trans", 2, 3]]>, heads = 2, tau = [1.0, 1.0], lambda = [1.0, 0.5, 1.0, 0.5], causal>} : (tensor<?x3x3xf64>, tensor<?x4xf64>) -> tensor<?x4xf64>
  return %y : tensor<?x4xf64>
}
