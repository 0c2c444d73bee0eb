//===- GeoOps.td - Geo dialect operations ------------------*- tablegen -*-===//
//
// Sequence-level ops. Token tensors are `[batch...] x L x features` with `L`
// usually dynamic; weights are static-shaped. Semantics are docs/math.md §1, §3,
// §4; the reference lowering is compiler/Conversion/GeoToLinalg.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_GEO_OPS
#define TORSOR_GEO_OPS

include "dialects/Geo/IR/GeoAttrs.td"
include "dialects/Geo/IR/GeoDialect.td"
include "dialects/Lie/IR/LieAttrs.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

/// Any ranked f32/f64 tensor; ranks and shapes are checked by the verifiers,
/// which can say what was expected.
def Geo_FloatTensor : RankedTensorOf<[F32, F64]>;

/// The fields of an attention op's `#geo.scores` under the names they had as
/// separate attributes, so that passes read `op.getHeads()`, `op.getTau()`,
/// `op.getCausal()`, `op.getGroup()` (and the `...Attr()` forms) unchanged.
defvar Geo_ScoresAccessors = [{
    ::torsor::lie::GroupAttr getGroup() { return getScores().getGroup(); }
    int64_t getHeads() { return getScores().getHeads(); }
    ::llvm::ArrayRef<double> getTau() {
      return getScores().getTau().asArrayRef();
    }
    ::llvm::ArrayRef<double> getLambda() {
      return getScores().getLambda().asArrayRef();
    }
    bool getCausal() { return getScores().getCausal(); }
    ::mlir::IntegerAttr getHeadsAttr() {
      return ::mlir::IntegerAttr::get(
          ::mlir::IntegerType::get(getContext(), 64), getHeads());
    }
    ::mlir::DenseF64ArrayAttr getTauAttr() { return getScores().getTau(); }
    ::mlir::DenseF64ArrayAttr getLambdaAttr() {
      return getScores().getLambda();
    }
    ::mlir::UnitAttr getCausalAttr() {
      return getCausal() ? ::mlir::UnitAttr::get(getContext())
                         : ::mlir::UnitAttr();
    }
}];

/// The parameters of a builder that takes the score fields one by one (the
/// call shape from before `#geo.scores`), and the attribute they make.
defvar Geo_ScoresBuilderArgs = (ins "::torsor::lie::GroupAttr":$group,
    "::mlir::IntegerAttr":$heads, "::mlir::DenseF64ArrayAttr":$tau,
    "::mlir::DenseF64ArrayAttr":$lambda, "::mlir::UnitAttr":$causal);
defvar Geo_ScoresFromArgs = [{
    ::torsor::geo::ScoresAttr::get($_builder.getContext(), group,
                                   heads.getInt(), tau, lambda,
                                   static_cast<bool>(causal))
}];

//===----------------------------------------------------------------------===//
// LieAttentionOp
//===----------------------------------------------------------------------===//

def Geo_LieAttentionOp : Geo_Op<"lie_attention", [Pure]> {
  let summary = "multi-head attention scored by Lie-algebra distance";
  let description = [{
    Tokens are group elements `g_i` (`[batch...] x L x n x n`, the group's
    homogeneous matrices) with already-projected values `v_i`
    (`[batch...] x L x D`). The D features split into `heads` contiguous
    slices of D/heads. For head h (docs/math.md §1):

        s_ij   = −‖log(g_i⁻¹ g_j)‖²_λh / τ_h
        out_i  = Σ_j softmax_j(s_ij) · v_j        (on head h's slice)

    `scores` (`#geo.scores`) names the group, the heads, `tau` (one
    temperature per head) and `lambda` (one weight per head per algebra
    block of the group, blocks in the group model's order, row-major:
    `lambda[h * blocks + b]`). With `causal`, token i attends to
    j ≤ i only. Scores depend on relative poses only, so the op is invariant
    under g_i ↦ h·g_i.

    ```mlir
    %out = geo.lie_attention %g, %v {scores = #geo.scores<
             group = #lie.group<se3>, heads = 2, tau = [1.0, 2.0],
             lambda = [1.0, 0.5, 1.0, 0.25], causal>}
        : (tensor<?x4x4xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Geo_FloatTensor:$elements, Geo_FloatTensor:$values,
                       Geo_ScoresAttr:$scores);
  let results = (outs Geo_FloatTensor:$result);
  let assemblyFormat = [{
    $elements `,` $values attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<!con((ins "::mlir::Type":$result, "::mlir::Value":$elements,
                        "::mlir::Value":$values), Geo_ScoresBuilderArgs), !strconcat([{
      build($_builder, $_state, result, elements, values, }],
      Geo_ScoresFromArgs, [{);
    }])>
  ];
  let extraClassDeclaration = Geo_ScoresAccessors;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// LieCrossAttentionOp
//===----------------------------------------------------------------------===//

def Geo_LieCrossAttentionOp : Geo_Op<"lie_cross_attention", [Pure]> {
  let summary = "Lie attention of one token set against another, with lse";
  let description = [{
    `geo.lie_attention` with queries and keys from two token sets: query
    group elements `g_q` (`[batch...] x Lq x n x n`) against key group
    elements `g_k` (`[batch...] x Lk x n x n`) and their values `v`
    (`[batch...] x Lk x D`). Query row i sits at position
    `query_offset + i` of a global sequence and key j at `key_offset + j`
    (runtime `index` values), so one block of a longer sequence masks as
    the whole would. For head h (docs/math.md §1):

        s_ij   = −‖log(g_q,i⁻¹ g_k,j)‖²_λh / τ_h
        out_i  = Σ_j softmax_j(s_ij) · v_j        (on head h's slice)
        lse_ih = log Σ_j exp(s_ij)

    With `causal`, key j is live for row i iff
    key_offset + j ≤ query_offset + i. A row with no live key has out = 0
    and lse = −∞. The second result (`[batch...] x Lq x heads`) is the
    row log-sum-exp per head: the statistics two blocks of keys merge by
    (out = Σ_b e^{lse_b − lse} out_b, lse = log Σ_b e^{lse_b}) and the
    block backward (`geo.lie_cross_attention_grad`) takes. Self-attention
    is `g_q = g_k` with both offsets 0.

    ```mlir
    %out, %lse = geo.lie_cross_attention %gq, %gk, %v, %qo, %ko {
          scores = #geo.scores<group = #lie.group<so3>, heads = 1,
                               tau = [1.0], lambda = [1.0], causal>}
        : (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>, index,
           index) -> (tensor<?x8xf32>, tensor<?x1xf32>)
    ```
  }];
  let arguments = (ins Geo_FloatTensor:$queries, Geo_FloatTensor:$keys,
                       Geo_FloatTensor:$values, Index:$query_offset,
                       Index:$key_offset,
                       Geo_ScoresAttr:$scores);
  let results = (outs Geo_FloatTensor:$result, Geo_FloatTensor:$lse);
  let assemblyFormat = [{
    $queries `,` $keys `,` $values `,` $query_offset `,` $key_offset attr-dict
    `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<!con((ins "::mlir::Type":$result, "::mlir::Type":$lse,
                        "::mlir::Value":$queries, "::mlir::Value":$keys,
                        "::mlir::Value":$values, "::mlir::Value":$query_offset,
                        "::mlir::Value":$key_offset), Geo_ScoresBuilderArgs), !strconcat([{
      build($_builder, $_state, result, lse, queries, keys, values,
            query_offset, key_offset, }], Geo_ScoresFromArgs, [{);
    }])>
  ];
  let extraClassDeclaration = Geo_ScoresAccessors;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// LieCrossAttentionGradOp
//===----------------------------------------------------------------------===//

def Geo_LieCrossAttentionGradOp : Geo_Op<"lie_cross_attention_grad", [Pure]> {
  let summary = "block backward of Lie cross attention from the global lse";
  let description = [{
    The reverse-mode derivative of one block of `geo.lie_cross_attention`
    (FlashAttention-2's backward), on group elements: `queries` g_q
    (`[batch...] x Lq x n x n`), `keys` g_k (`[batch...] x Lk x n x n`),
    `values` (`[batch...] x Lk x D`), and `out` (`[batch...] x Lq x D`),
    `lse` (`[batch...] x Lq x heads`) and `out_grad` (like `out`): `out`
    and `lse` are those of the attention over *all* keys (the merged
    result of every block), so that with per head h

        P_ij  = exp(s_ij − lse_i),   D_i = ⟨dO_i, O_i⟩_h
        dS_ij = P_ij (⟨dO_i, v_j⟩_h − D_i)

    the block's gradients are exact parts of the whole's: summed over the
    key blocks, they are the gradients of the full attention. Keys are
    masked as in the forward (`causal` with the two offsets). Results:
    the ambient cotangents of `queries` and `keys` (their types, n × n per
    token, as `lie.pullback` returns) and the gradient of `values`.
    `geo-decompose-attention-grad` expands it into `lie.pair_features`,
    `geo.flash_lie_attention_grad` (with the offsets and the given lse)
    and the features' pullbacks.

    ```mlir
    %dgq, %dgk, %dv = geo.lie_cross_attention_grad %gq, %gk, %v, %o, %lse,
          %do, %qo, %ko {scores = #geo.scores<group = #lie.group<so3>,
          heads = 1, tau = [1.0], lambda = [1.0], causal>}
        : (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>,
           tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x8xf32>, index, index)
          -> (tensor<?x3x3xf32>, tensor<?x3x3xf32>, tensor<?x8xf32>)
    ```
  }];
  let arguments = (ins Geo_FloatTensor:$queries, Geo_FloatTensor:$keys,
                       Geo_FloatTensor:$values, Geo_FloatTensor:$out,
                       Geo_FloatTensor:$lse, Geo_FloatTensor:$out_grad,
                       Index:$query_offset, Index:$key_offset,
                       Geo_ScoresAttr:$scores);
  let results = (outs Geo_FloatTensor:$queries_grad,
                      Geo_FloatTensor:$keys_grad,
                      Geo_FloatTensor:$values_grad);
  let assemblyFormat = [{
    $queries `,` $keys `,` $values `,` $out `,` $lse `,` $out_grad `,`
    $query_offset `,` $key_offset attr-dict
    `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<!con((ins "::mlir::TypeRange":$resultTypes,
                        "::mlir::Value":$queries, "::mlir::Value":$keys,
                        "::mlir::Value":$values, "::mlir::Value":$out,
                        "::mlir::Value":$lse, "::mlir::Value":$out_grad,
                        "::mlir::Value":$query_offset,
                        "::mlir::Value":$key_offset), Geo_ScoresBuilderArgs), !strconcat([{
      build($_builder, $_state, resultTypes, queries, keys, values, out, lse,
            out_grad, query_offset, key_offset, }], Geo_ScoresFromArgs, [{);
    }])>
  ];
  let extraClassDeclaration = Geo_ScoresAccessors;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// FlashLieAttentionOp
//===----------------------------------------------------------------------===//

def Geo_FlashLieAttentionOp : Geo_Op<"flash_lie_attention",
                                     [Pure, AttrSizedOperandSegments]> {
  let summary = "Lie attention from pair features with an online softmax";
  let description = [{
    The fused form of `geo.lie_attention` that `geo-fuse-attention`
    produces, tiled by `geo-tile-attention` and turned into loops and
    vectors by `geo-decompose-attention` (docs/compiler.md). Instead of
    group elements it takes the group model's per-token pair features
    (`lie.pair_features`): `queries` (`[batch...] x R x Fq`, rows
    `query_offset`, …, `query_offset + R − 1` of the sequence) and `keys`
    (`[batch...] x Fk x L`, feature-major so that consecutive keys are
    contiguous), with `values` (`[batch...] x L x D`). For each head h,

        s_rj   = −Σ_b λ_hb · N_b(q_r, k_j) / τ_h
        out_r  = Σ_j softmax_j(s_rj) · v_j        (on head h's slice)

    with N_b the model's pairwise block norms, and j ≤ query_offset + r
    when `causal`. With `key_offset` (the cross form that
    `geo.lie_cross_attention` fuses into) keys sit at positions
    `key_offset + j` and queries and keys are two token sets: row r sees
    key j when key_offset + j ≤ query_offset + r (the difference may be
    negative), a row may see no key at all (out = 0, lse = −∞), and no
    self pair bounds the row max. It computes what `geo.lie_attention` computes, row for
    row, with O(R·D) state: a running max, a running sum and an
    accumulator per row and head, never an R × L tensor. `init` is the
    destination. `key_tile` (keys per step of the online softmax) is set
    by tiling, from the target strategy; decomposition needs it and a
    static R.

    With `lse_init` (`[batch...] x R x heads`) the op also returns each
    row's log-sum-exp per head, lse_rh = log Σ_j exp(s_rj) (the softmax
    statistics the backward needs, so that it does not recompute them):
    `geo-fuse-attention` asks for it when a `geo.flash_lie_attention_grad`
    of the same attention uses the result.

    ```mlir
    %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {
           scores = #geo.scores<group = #lie.group<so3>, heads = 1,
                                tau = [1.0], lambda = [1.0]>,
           key_tile = 32 : i64}
        : (tensor<4x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index,
           tensor<4x64xf32>) -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins Geo_FloatTensor:$queries, Geo_FloatTensor:$keys,
                       Geo_FloatTensor:$values, Index:$query_offset,
                       Optional<Index>:$key_offset,
                       Geo_FloatTensor:$init,
                       Optional<Geo_FloatTensor>:$lse_init,
                       Geo_ScoresAttr:$scores, OptionalAttr<I64Attr>:$key_tile);
  let results = (outs Geo_FloatTensor:$result,
                      Optional<Geo_FloatTensor>:$lse);
  let assemblyFormat = [{
    $queries `,` $keys `,` $values `,` $query_offset
    (`key_offset` $key_offset^)? `,` $init
    (`lse` $lse_init^)? attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<!con((ins "::mlir::Type":$result, "::mlir::Type":$lse,
                        "::mlir::Value":$queries, "::mlir::Value":$keys,
                        "::mlir::Value":$values, "::mlir::Value":$query_offset,
                        "::mlir::Value":$key_offset, "::mlir::Value":$init,
                        "::mlir::Value":$lse_init), Geo_ScoresBuilderArgs,
                   (ins "::mlir::IntegerAttr":$key_tile)), !strconcat([{
      build($_builder, $_state, result, lse, queries, keys, values,
            query_offset, key_offset, init, lse_init, }],
      Geo_ScoresFromArgs, [{, key_tile);
    }])>
  ];
  let extraClassDeclaration = Geo_ScoresAccessors;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// FlashLieAttentionGradOp
//===----------------------------------------------------------------------===//

def Geo_FlashLieAttentionGradOp : Geo_Op<"flash_lie_attention_grad",
                                         [Pure, AttrSizedOperandSegments]> {
  let summary = "backward of Lie attention from pair features, O(L) memory";
  let description = [{
    The reverse-mode derivative of `geo.flash_lie_attention` over a whole
    sequence (query offset 0), with the same `queries` (`[batch...] x L x
    Fq`), `keys` (`[batch...] x Fk x L`, feature-major), `values`
    (`[batch...] x L x D`) and attributes; `out` is the forward result and
    `out_grad` its cotangent. `lse` (optional, `[batch...] x L x heads`) is
    the forward's per-row log-sum-exp (`geo.flash_lie_attention` with
    `lse_init`); without it the kernel recomputes it. With
    s_ij = Σ_b c_hb N_b(q_i, k_j), c_hb = −λ_hb / τ_h, and per head h:

        P_ij  = exp(s_ij − lse_i),        lse_i = log Σ_j exp(s_ij)
        dP_ij = ⟨dO_i, v_j⟩_h,            D_i  = ⟨dO_i, O_i⟩_h
        dS_ij = P_ij (dP_ij − D_i)
        dv_j  = Σ_i P_ij dO_i
        dq_i  = Σ_j Σ_h Σ_b dS_ij c_hb ∂N_b/∂q (q_i, k_j)
        dk_j  = Σ_i Σ_h Σ_b dS_ij c_hb ∂N_b/∂k (q_i, k_j)

    Results: the gradients of `queries` (`L x Fq`), `keys` (feature-major,
    `Fk x L`) and `values` (`L x D`). `geo-decompose-attention-grad` lowers
    it flash-style: scores are recomputed per tile from the pair features;
    only per-row statistics (lse_i and D_i per head) are stored, never an
    L × L tensor. ∂N/∂q and ∂N/∂k are the adjoints of the group model's
    pair form (Groups/Derivatives.h). Batch elements are independent
    sequences.

    With `offsets(%qo, %ko)` (the block backward of
    `geo.lie_cross_attention_grad`) queries (`Lq` rows) and keys (`Lk`)
    are two token sets at global positions qo + i and ko + j, masked as
    the forward's cross form, and `out`, `out_grad` and `lse` are
    `[batch...] x Lq x ...`: `out` and `lse` are then the attention's over
    all key blocks, and the results are this block's parts of the
    gradients.

    ```mlir
    %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {
           scores = #geo.scores<group = #lie.group<so3>, heads = 1,
                                tau = [1.0], lambda = [1.0]>}
        : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>,
           tensor<?x64xf32>, tensor<?x64xf32>)
          -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>)
    ```
  }];
  let arguments = (ins Geo_FloatTensor:$queries, Geo_FloatTensor:$keys,
                       Geo_FloatTensor:$values, Geo_FloatTensor:$out,
                       Geo_FloatTensor:$out_grad,
                       Optional<Geo_FloatTensor>:$lse,
                       Optional<Index>:$query_offset,
                       Optional<Index>:$key_offset,
                       Geo_ScoresAttr:$scores);
  let results = (outs Geo_FloatTensor:$queries_grad,
                      Geo_FloatTensor:$keys_grad,
                      Geo_FloatTensor:$values_grad);
  let assemblyFormat = [{
    $queries `,` $keys `,` $values `,` $out `,` $out_grad (`lse` $lse^)?
    (`offsets` `(` $query_offset^ `,` $key_offset `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<!con((ins "::mlir::TypeRange":$resultTypes,
                        "::mlir::Value":$queries, "::mlir::Value":$keys,
                        "::mlir::Value":$values, "::mlir::Value":$out,
                        "::mlir::Value":$out_grad, "::mlir::Value":$lse,
                        "::mlir::Value":$query_offset,
                        "::mlir::Value":$key_offset), Geo_ScoresBuilderArgs), !strconcat([{
      build($_builder, $_state, resultTypes, queries, keys, values, out,
            out_grad, lse, query_offset, key_offset, }],
      Geo_ScoresFromArgs, [{);
    }])>
  ];
  let extraClassDeclaration = Geo_ScoresAccessors;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// PluckerOp
//===----------------------------------------------------------------------===//

def Geo_PluckerOp : Geo_Op<"plucker", [Pure]> {
  let summary = "Plücker coordinates of the plane spanned by two vectors";
  let description = [{
    Row-wise exterior product `u ∧ v` of r-vectors, in lexicographic order
    of the pairs a < b (C(r,2) = r(r−1)/2 coordinates):

        p_ab = u_a v_b − u_b v_a

    Leading dims are element-wise.

    ```mlir
    %p = geo.plucker %u, %v
        : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x6xf32>
    ```
    For r = 4 the coordinates are ordered p01, p02, p03, p12, p13, p23.
  }];
  let arguments = (ins Geo_FloatTensor:$lhs, Geo_FloatTensor:$rhs);
  let results = (outs Geo_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GrassmannMixOp
//===----------------------------------------------------------------------===//

def Geo_GrassmannMixOp : Geo_Op<"grassmann_mix", [Pure]> {
  let summary = "attention-free Grassmann (Plücker) token mixing";
  let description = [{
    docs/math.md §3 with h `[batch...] x L x d`, W_red `r x d`, b_red `r`,
    W_plu `d x C(r,2)`, b_plu `d`, W_gate `d x 2d`, b_gate `d`:

        z_t   = W_red h_t + b_red
        p_t^Δ = z_t ∧ z_{t+Δ}   (z_t ∧ z_{t−Δ} with `causal`)
        g_t^Δ = W_plu p_t^Δ / max(‖p_t^Δ‖, eps) + b_plu
        g_t   = mean of g_t^Δ over the offsets Δ whose partner index lies
                inside [0, L); g_t = 0 when none does
        α_t   = σ(W_gate [h_t; g_t] + b_gate)
        out_t = α_t ⊙ h_t + (1 − α_t) ⊙ g_t

    `offsets` are positive. LayerNorm, FFN and the residual around the mixer
    are not part of the op. The result has the type of h.

    ```mlir
    %y = geo.grassmann_mix %h, %wr, %br, %wp, %bp, %wg, %bg
           {offsets = array<i64: 1, 2, 4>, eps = 1.0e-06 : f64, causal}
        : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x6xf32>,
           tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Geo_FloatTensor:$input, Geo_FloatTensor:$w_red,
                       Geo_FloatTensor:$b_red, Geo_FloatTensor:$w_plu,
                       Geo_FloatTensor:$b_plu, Geo_FloatTensor:$w_gate,
                       Geo_FloatTensor:$b_gate, DenseI64ArrayAttr:$offsets,
                       F64Attr:$eps, UnitAttr:$causal);
  let results = (outs Geo_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $w_red `,` $b_red `,` $w_plu `,` $b_plu `,` $w_gate `,` $b_gate
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RelationalAttentionOp
//===----------------------------------------------------------------------===//

def Geo_RelationalAttentionOp : Geo_Op<"relational_attention", [Pure]> {
  let summary = "attention written in the O(d)-invariants G_QK and G_VO";
  let description = [{
    docs/math.md §4. With x `[batch...] x L x d` and per-head bilinear forms
    G_QK = W_Q W_Kᵀ and G_VO = W_V W_O (each `heads x d x d`):

        score_ij^h = scale · x_i G_QK^h x_jᵀ
        out_i      = Σ_h Σ_j softmax_j(score^h)_ij · x_j G_VO^h

    With `causal`, j ≤ i. The result has the type of x. Using the products
    instead of the factors removes the GL(d_h) gauge per head.

    ```mlir
    %y = geo.relational_attention %x, %gqk, %gvo
           {heads = 2 : i64, scale = 0.25 : f64, causal}
        : (tensor<?x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>)
          -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Geo_FloatTensor:$input, Geo_FloatTensor:$g_qk,
                       Geo_FloatTensor:$g_vo, I64Attr:$heads, F64Attr:$scale,
                       UnitAttr:$causal);
  let results = (outs Geo_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $g_qk `,` $g_vo attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RelationalNormOp
//===----------------------------------------------------------------------===//

def Geo_RelationalNormOp : Geo_Op<"relational_norm",
                                  [Pure, SameOperandsAndResultType]> {
  let summary = "gain-free RMS normalisation (O(d)-invariant)";
  let description = [{
    Normalises each row (last dim, size d) to unit RMS:

        out = x / sqrt(mean_k(x_k²) + eps)

    No centering and no per-channel gain: both would break the O(d)
    symmetry relational models rely on (docs/math.md §4).

    ```mlir
    %y = geo.relational_norm %x {eps = 1.0e-05 : f64} : tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Geo_FloatTensor:$input, F64Attr:$eps);
  let results = (outs Geo_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // TORSOR_GEO_OPS
