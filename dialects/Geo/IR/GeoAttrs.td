//===- GeoAttrs.td - Geo dialect attributes ----------------*- tablegen -*-===//
//
// `#geo.scores<...>`: the score function of a Lie attention op (group,
// heads, temperatures, block weights, causality), carried as one attribute
// by every attention op so that it is stated, verified and passed on in one
// place.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_GEO_ATTRS
#define TORSOR_GEO_ATTRS

include "dialects/Geo/IR/GeoDialect.td"
include "dialects/Lie/IR/LieAttrs.td"
include "mlir/IR/AttrTypeBase.td"

def Geo_ScoresAttr : AttrDef<Geo_Dialect, "Scores"> {
  let mnemonic = "scores";
  let summary = "the scores of a Lie attention: group, heads, τ, λ, causality";
  let description = [{
    The pair scores of every Lie attention op (docs/math.md §1): for head h
    and tokens i, j,

        s_ij = −Σ_b λ_hb · N_b(g_i, g_j) / τ_h

    with N_b the group's block norms of log(g_i⁻¹ g_j) (the blocks in the
    group model's order). `heads` ≥ 1; `tau` has one positive, finite
    temperature per head; `lambda` has heads × blocks non-negative, finite
    weights, row-major (`lambda[h * blocks + b]`). With `causal`, token i
    sees keys j ≤ i only (the cross forms compare global positions).

    ```mlir
    #geo.scores<group = #lie.group<se3>, heads = 2, tau = [1.0, 2.0],
                lambda = [1.0, 0.5, 1.0, 0.25], causal>
    ```

    The group is part of the attribute because λ is indexed by its blocks:
    the attribute verifies on its own, wherever it appears.
  }];
  let parameters = (ins "::torsor::lie::GroupAttr":$group,
                        "int64_t":$heads,
                        "::mlir::DenseF64ArrayAttr":$tau,
                        "::mlir::DenseF64ArrayAttr":$lambda,
                        DefaultValuedParameter<"bool", "false">:$causal);
  let builders = [
    AttrBuilderWithInferredContext<(ins "::torsor::lie::GroupAttr":$group,
                                        "int64_t":$heads,
                                        "::llvm::ArrayRef<double>":$tau,
                                        "::llvm::ArrayRef<double>":$lambda,
                                        CArg<"bool", "false">:$causal), [{
      ::mlir::MLIRContext *ctx = group.getContext();
      return $_get(ctx, group, heads, ::mlir::DenseF64ArrayAttr::get(ctx, tau),
                   ::mlir::DenseF64ArrayAttr::get(ctx, lambda), causal);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The number of algebra blocks of the group (λ entries per head).
    int64_t getNumBlocks() const;
    /// λ of head `h`, one entry per block.
    ::llvm::ArrayRef<double> getHeadLambda(int64_t h) const {
      int64_t blocks = getNumBlocks();
      return getLambda().asArrayRef().slice(h * blocks, blocks);
    }
  }];
}

#endif // TORSOR_GEO_ATTRS
