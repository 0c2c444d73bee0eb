//===- Passes.td - Reverse-mode differentiation ------------*- tablegen -*-===//
//
// The pass that builds a model's backward function from the rule table
// (VJP.h).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_AUTODIFF_PASSES
#define TORSOR_AUTODIFF_PASSES

include "mlir/Pass/PassBase.td"

def TorsorDifferentiate : Pass<"torsor-differentiate", "::mlir::ModuleOp"> {
  let summary = "Build the model's reverse-mode backward function";
  let description = [{
    Runs on the tensor-level IR straight after MLIRGen. For the model
    function it adds `@torsor_model_backward`, whose arguments are the
    model's inputs and params followed by one cotangent per output
    (`cot.<output>`), and whose results are the gradients of every float
    input and param (`grad.<name>`), in argument order. Integer inputs get
    no gradient. Group inputs get the left-trivialised gradient in algebra
    coordinates, [..., k]: the ξ-gradient with
    d/dε f(g·exp(ε ξ^)) = ⟨grad, ξ⟩.

    The backward function recomputes the forward pass and then runs the
    reverse sweep over it (recompute, not store: nothing crosses from the
    forward call to the backward one, and peak memory is one forward's
    activations plus their cotangents). Every op on the path from the
    params to the outputs needs a rule in the VJP table; ops without one
    that have an unfused lowering to linalg (the relational geo ops) are
    decomposed first.

    Before:
    ```mlir
    func.func @M(%x: tensor<?x4xf32> {torsor.name = "x", torsor.kind = "input"},
                 %w: tensor<4x4xf32> {torsor.name = "W", torsor.kind = "param"})
        -> (tensor<?x4xf32> {torsor.name = "y"})
    ```
    After (added):
    ```mlir
    func.func @torsor_model_backward(%x: ..., %w: ...,
        %dy: tensor<?x4xf32> {torsor.name = "cot.y", torsor.kind = "cotangent"})
        -> (tensor<?x4xf32> {torsor.name = "grad.x"},
            tensor<4x4xf32> {torsor.name = "grad.W"}) attributes {torsor.backward}
    ```
  }];
  let options = [
    ListOption<"unfused", "unfused", "std::string",
               "geo ops (by name, e.g. geo.grassmann_mix) to differentiate "
               "through their unfused (-O0) lowering even though they have "
               "a rule: the oracle a rule's tests compare with">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // TORSOR_AUTODIFF_PASSES
