//===- Passes.td - Torsor conversion passes ----------------*- tablegen -*-===//
//
// One def per conversion; each lives in compiler/Conversion/<A>To<B>/.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_CONVERSION_PASSES
#define TORSOR_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// LieToArith
//===----------------------------------------------------------------------===//

def ConvertLieToArith : Pass<"convert-lie-to-arith"> {
  let summary = "Lower lie ops to loops of scalar arith/math code";
  let description = [{
    Each lie op on tensors becomes a loop nest over its batch dims (scf.for
    carrying the result tensor) whose body extracts one element's scalars,
    runs the group model's closed-form builder, and inserts the result.
    Element type f32 or f64 selects the series cut-offs.

    Before:
    ```mlir
    %w = lie.log %g {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?x1xf32>
    ```
    After (schematically):
    ```mlir
    %w = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> tensor<?x1xf32> {
      %a = tensor.extract %g[%i, %c0, %c0] : tensor<?x2x2xf32>
      ...
      %t = math.atan2 %y, %x : f32
      %r = tensor.insert %t into %acc[%i, %c0] : tensor<?x1xf32>
      scf.yield %r : tensor<?x1xf32>
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

//===----------------------------------------------------------------------===//
// GeoToLinalg
//===----------------------------------------------------------------------===//

def ConvertGeoToLinalg : Pass<"convert-geo-to-linalg"> {
  let summary = "Lower geo ops to unfused linalg/tensor/arith/math/scf (the -O0 oracle)";
  let description = [{
    Every geo op becomes a chain of linalg.generic / named linalg ops on
    tensors that materialises each intermediate of its formula (docs/math.md §1,
    §3, §4): pairwise algebra coordinates, per-head scores, a stable masked
    softmax, Plücker coordinates, gates. Nothing is fused; this is the
    reference the fused kernels are tested against. Group math in
    geo.lie_attention is emitted as lie ops (lie.inverse, lie.compose,
    lie.log on one query row of poses at a time) for convert-lie-to-arith.

    Before:
    ```mlir
    %y = geo.relational_norm %x {eps = 1.0e-05 : f64} : tensor<?x8xf32>
    ```
    After (schematically):
    ```mlir
    %ss = linalg.generic {iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<?x8xf32>) outs(%zeros : tensor<?xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %sq = arith.mulf %a, %a : f32
        %s = arith.addf %acc, %sq : f32
        linalg.yield %s : f32
    } -> tensor<?xf32>
    %y = linalg.generic {iterator_types = ["parallel", "parallel"]}
        ins(%x, %ss : tensor<?x8xf32>, tensor<?xf32>) outs(%e : tensor<?x8xf32>) {
      ...   // x / sqrt(ss / 8 + eps)
    } -> tensor<?x8xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::torsor::lie::LieDialect"
  ];
}

#endif // TORSOR_CONVERSION_PASSES
