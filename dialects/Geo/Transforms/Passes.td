//===- Passes.td - Geo transformations ---------------------*- tablegen -*-===//
//
// The fused attention pipeline (docs/compiler.md): fuse → tile → decompose,
// after IREE's online attention. Each step is a pass of its own with its
// own lit test; tile sizes come from the module's torsor.strategy.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_GEO_TRANSFORMS_PASSES
#define TORSOR_GEO_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def GeoFuseAttention : Pass<"geo-fuse-attention"> {
  let summary = "Rewrite geo.lie_attention into pair features and an "
                "online-softmax attention";
  let description = [{
    Replaces every `geo.lie_attention` by the group model's per-token
    pair features (`lie.pair_features`, once per token for the queries and
    once for the keys, the keys transposed feature-major) and one
    `geo.flash_lie_attention` over them. No L × L tensor remains: the
    pairwise block norms are recomputed per tile from the features.

    Before:
    ```mlir
    %o = geo.lie_attention %g, %v {group = #lie.group<so3>, heads = 1 : i64,
           tau = array<f64: 1.0>, lambda = array<f64: 1.0>}
        : (tensor<?x3x3xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
    After:
    ```mlir
    %q = lie.pair_features %g {group = #lie.group<so3>} : tensor<?x3x3xf32> -> tensor<?x9xf32>
    %k = lie.pair_features %g {group = #lie.group<so3>, key} : tensor<?x3x3xf32> -> tensor<?x9xf32>
    %kt = linalg.transpose ins(%k : tensor<?x9xf32>) outs(%e : tensor<9x?xf32>) permutation = [1, 0]
    %o = geo.flash_lie_attention %q, %kt, %v, %c0, %init {...}
    ```
  }];
  let dependentDialects = ["::torsor::lie::LieDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def GeoTileAttention : Pass<"geo-tile-attention"> {
  let summary = "Tile geo.flash_lie_attention into parallel query tiles";
  let description = [{
    Splits each untiled `geo.flash_lie_attention` into query tiles of R
    rows (R from `torsor.strategy`: as many rows as keep the accumulators
    in registers) and sets `key_tile` (keys per online-softmax step). The
    batch dims and the query tiles are flattened into one `scf.for` marked
    `torsor.parallel`, so the tiles run on the runtime's thread pool; the
    rows left over when R does not divide L run as 1-row tiles in a second
    such loop. Each tile reads all keys and values and writes its own rows
    only, so tiles never race.

    After (R = 4, 16 lanes, 2 key vectors):
    ```mlir
    %r = scf.for %t = %c0 to %tiles step %c1 iter_args(%out = %init) {
      %qs = tensor.extract_slice %q[%row, 0] [4, 9] [1, 1]
      %o = geo.flash_lie_attention %qs, %k, %v, %row, %os {..., key_tile = 32 : i64}
      %next = tensor.insert_slice %o into %out[%row, 0] [4, 64] [1, 1]
      scf.yield %next
    } {torsor.parallel}
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def GeoDecomposeAttention : Pass<"geo-decompose-attention"> {
  let summary = "Lower tiled geo.flash_lie_attention to loops over vectors";
  let description = [{
    Turns each tiled `geo.flash_lie_attention` (static rows, `key_tile`
    set) into a loop over key tiles carrying, per row and head, the
    running max, the running sum (one lane each) and the output
    accumulators, all in vector registers:
      1. key features of `lanes` consecutive keys are vector loads;
      2. the group model's pairwise block norms are built on vectors (one
         pair per lane), once per pair for every head;
      3. online softmax: one horizontal max per tile and head, exp of the
         scores, rescaling of sum and accumulators;
      4. P·V as vector FMAs of each value row into the accumulators.
    Keys that no row of the tile may see (causal) are never visited; key
    tiles that need masking (the causal diagonal and the sequence end) run
    in a second, masked loop. For f32, the kernel's atan2 and exp use
    MLIR's polynomial approximations (accuracy in docs/geo.md); f64 keeps
    libm. Models whose pairwise form is not straight-line (declared groups
    with iterative logs) compute it per lane with scalar code.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def GeoDecomposeAttentionGrad : Pass<"geo-decompose-attention-grad"> {
  let summary = "Lower geo.flash_lie_attention_grad to parallel vector loops";
  let description = [{
    The flash-style backward of Lie attention (FlashAttention-2's, without
    atomics). Pass A runs over query tiles (`torsor.parallel`): it
    recomputes each row's log-sum-exp per head from the pair features,
    then, per key vector, P = exp(s − lse), dP = dO·v, dS = P(dP − D) and
    the adjoint of the group model's pair form for dq. Pass B runs over
    key vectors (`torsor.parallel`) and accumulates dk and dv per lane
    from the stored lse and D = ⟨dO, O⟩. Only O(L·heads) statistics are
    stored; no L × L tensor exists.

    Before:
    ```mlir
    %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {...}
    ```
    After (sketch):
    ```mlir
    %a:3 = scf.for %t = %c0 to %tiles step %c1 iter_args(%dq0 = %e0, %lse0 = %e1, %d0 = %e2) {
      %st:8 = scf.for %j = %c0 to %end step %c8 ... // running max and sums
      %g:36 = scf.for %j = %c0 to %end step %c8 ... // dq per lane
      ...
    } {torsor.parallel}
    %b:2 = scf.for %t = %c0 to %kvecs step %c1 iter_args(%dk0 = %z0, %dv0 = %z1) {
      %acc:73 = scf.for %i = %start to %len step %c1 ... // dk, dv per lane
      ...
    } {torsor.parallel}
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // TORSOR_GEO_TRANSFORMS_PASSES
