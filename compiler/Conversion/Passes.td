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

def GeoFuseGrassmann : Pass<"geo-fuse-grassmann"> {
  let summary = "Fused lowering of geo.grassmann_mix (no per-offset Plücker tensor)";
  let description = [{
    Lowers geo.grassmann_mix (docs/math.md §3) without the L × |offsets| × C(r,2)
    Plücker tensor, for -O1 and above (convert-geo-to-linalg stays the -O0
    oracle). The norms come from the Lagrange identity
    ‖u ∧ v‖² = ‖u‖²‖v‖² − (u·v)²; the bilinear form W_plü (u ∧ v) = B(u) v
    applies B(z_t) once per token to the offsets' weighted sum
    w_t = Σ_Δ (z_Δ − s_Δ z_t) / max(‖z_t ∧ z_Δ‖, ε) (each partner projected
    off z_t, scalars and w_t in f64, so near-parallel pairs do not amplify
    rounding), as W_plü (z_t ∧ w_t). Cost O(L (d r² / 2 + |offsets| r));
    every step is parallel over tokens, and the gate follows as two linear
    layers and one elementwise op. Other geo ops are left alone.

    After (schematically, r = 4, offsets [1, 2]):
    ```mlir
    %z = linalg.generic ...                       // h W_redᵀ + b_red : ?x4
    %dot = linalg.generic ... -> tensor<?x2xf64>  // z_t · z_{t−Δ}
    %cv, %cu = linalg.generic ... -> tensor<?x2xf64>, tensor<?x2xf64>
    %w = linalg.generic ... -> tensor<?x4xf64>    // Σ_Δ cv z_{t−Δ} − cu z_t
    %q = linalg.generic ... -> tensor<?x6xf32>    // z_t ∧ w_t
    %g = linalg.generic ...                       // q W_plüᵀ, mean, bias
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // TORSOR_CONVERSION_PASSES
