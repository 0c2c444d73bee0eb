//===- LieOps.td - Lie dialect operations ------------------*- tablegen -*-===//
//
// Ops on tensors of group elements (last two dims n×n) and on tensors of
// algebra coordinate vectors (last dim = algebra dimension). Leading dims are
// batch dims and must agree between operands and results.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_LIE_OPS
#define TORSOR_LIE_OPS

include "dialects/Lie/IR/LieDialect.td"
include "dialects/Lie/IR/LieAttrs.td"
include "dialects/Lie/IR/LieEnums.td"
include "dialects/Lie/IR/LieInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"

def Lie_FloatTensor : RankedTensorOf<[F32, F64]>;
def Lie_GroupTensor : RankedTensorOf<[F32, F64], [HasAnyRankOfPred<[2, 3, 4, 5, 6, 7, 8]>],
                                     "ranked float tensor of group elements">;
def Lie_AlgebraTensor : RankedTensorOf<[F32, F64], [HasAnyRankOfPred<[1, 2, 3, 4, 5, 6, 7]>],
                                       "ranked float tensor of algebra coordinates">;

//===----------------------------------------------------------------------===//
// IdentityOp
//===----------------------------------------------------------------------===//

def Lie_IdentityOp : Lie_Op<"identity", [Pure,
    DeclareOpInterfaceMethods<Lie_ElementOpInterface, ["getDynamicBatchSizes"]>]> {
  let summary = "a tensor filled with the group identity";
  let description = [{
    One operand per dynamic batch dimension, as in `tensor.empty`.
    ```mlir
    %e = lie.identity %L {group = #lie.group<se3>} : tensor<?x4x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamicSizes, Lie_GroupAttr:$group);
  let results = (outs Lie_GroupTensor:$result);
  let assemblyFormat = "$dynamicSizes attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ComposeOp
//===----------------------------------------------------------------------===//

def Lie_ComposeOp : Lie_Op<"compose", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Lie_ElementOpInterface>]> {
  let summary = "group product `a · b`";
  let description = [{
    Element-wise over the batch dims. Associative, not commutative.
    ```mlir
    %c = lie.compose %a, %b {group = #lie.group<se3>} : tensor<?x4x4xf32>
    ```
  }];
  let arguments = (ins Lie_GroupTensor:$lhs, Lie_GroupTensor:$rhs,
                       Lie_GroupAttr:$group);
  let results = (outs Lie_GroupTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;      // compose(x, e) -> x, compose(e, x) -> x
}

//===----------------------------------------------------------------------===//
// InverseOp
//===----------------------------------------------------------------------===//

def Lie_InverseOp : Lie_Op<"inverse", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Lie_ElementOpInterface>]> {
  let summary = "group inverse `g⁻¹`";
  let description = [{
    Uses the group's structure (e.g. `[Rᵀ, −Rᵀt]` for SE(3)), never a
    general matrix inverse.
    ```mlir
    %i = lie.inverse %g {group = #lie.group<so3>} : tensor<?x3x3xf64>
    ```
  }];
  let arguments = (ins Lie_GroupTensor:$input, Lie_GroupAttr:$group);
  let results = (outs Lie_GroupTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;      // inverse(e) -> e
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// LogOp
//===----------------------------------------------------------------------===//

def Lie_LogOp : Lie_Op<"log", [Pure, DeclareOpInterfaceMethods<Lie_ElementOpInterface>]> {
  let summary = "logarithm map to algebra coordinates";
  let description = [{
    Principal logarithm in the group's chart, as coordinates in the model's
    orthonormal algebra basis (docs/math.md §2). The result replaces the trailing
    n×n dims with one dim of the algebra's dimension.
    ```mlir
    %w = lie.log %g {group = #lie.group<se3>} : tensor<?x4x4xf32> -> tensor<?x6xf32>
    ```
  }];
  let arguments = (ins Lie_GroupTensor:$input, Lie_GroupAttr:$group);
  let results = (outs Lie_AlgebraTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;      // log(exp(v)) -> v for constant v inside the chart
}

//===----------------------------------------------------------------------===//
// PairFeaturesOp
//===----------------------------------------------------------------------===//

def Lie_PairFeaturesOp : Lie_Op<"pair_features", [Pure,
    DeclareOpInterfaceMethods<Lie_ElementOpInterface>]> {
  let summary = "per-token features of the factored pairwise dist2";
  let description = [{
    The group model's factored pairwise form of `dist2(a, b)`: features of
    each element computed once, from which the fused attention kernels
    form every pair's block norms with dot products (docs/math.md §1,
    docs/geo.md). Query (left, `a`) features by default, key (right, `b`)
    features with `key`. The trailing n×n dims become one dim of the
    model's feature count, e.g. 12 for SE(3) (R row-major, then t).
    ```mlir
    %q = lie.pair_features %g {group = #lie.group<se3>} : tensor<?x4x4xf32> -> tensor<?x12xf32>
    %k = lie.pair_features %g {group = #lie.group<se3>, key} : tensor<?x4x4xf32> -> tensor<?x12xf32>
    ```
  }];
  let arguments = (ins Lie_GroupTensor:$input, Lie_GroupAttr:$group,
                       UnitAttr:$key);
  let results = (outs Lie_AlgebraTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Features per element on this op's side of the pair.
    unsigned getFeatureCount();
  }];
}

//===----------------------------------------------------------------------===//
// ExpOp
//===----------------------------------------------------------------------===//

def Lie_ExpOp : Lie_Op<"exp", [Pure, DeclareOpInterfaceMethods<Lie_ElementOpInterface>]> {
  let summary = "exponential map from algebra coordinates";
  let description = [{
    ```mlir
    %g = lie.exp %w {group = #lie.group<so3>} : tensor<?x3xf64> -> tensor<?x3x3xf64>
    ```
  }];
  let arguments = (ins Lie_AlgebraTensor:$input, Lie_GroupAttr:$group);
  let results = (outs Lie_GroupTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// ActOp
//===----------------------------------------------------------------------===//

def Lie_ActOp : Lie_Op<"act", [Pure, DeclareOpInterfaceMethods<Lie_ElementOpInterface>]> {
  let summary = "group action on points `g · p`";
  let description = [{
    Affine groups act on points of dimension n − 1 through the homogeneous
    matrix; linear groups (SO(2), SO(3)) act on n-dimensional points.
    ```mlir
    %q = lie.act %g, %p {group = #lie.group<se3>}
        : tensor<?x4x4xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
    ```
  }];
  let arguments = (ins Lie_GroupTensor:$element, Lie_FloatTensor:$point,
                       Lie_GroupAttr:$group);
  let results = (outs Lie_FloatTensor:$result);
  let assemblyFormat = [{
    $element `,` $point attr-dict `:` type($element) `,` type($point)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dist2Op
//===----------------------------------------------------------------------===//

def Lie_Dist2Op : Lie_Op<"dist2", [Pure, AllTypesMatch<["lhs", "rhs"]>,
    DeclareOpInterfaceMethods<Lie_ElementOpInterface>]> {
  let summary = "squared weighted log distance `‖log(a⁻¹ b)‖²_λ`";
  let description = [{
    `lambda` holds one weight per algebra block of the group (in the order
    the group model lists its blocks); it defaults to all ones. The result
    drops the trailing n×n dims. Left-invariant: dist2(h·a, h·b) = dist2(a, b).
    ```mlir
    %d = lie.dist2 %a, %b {group = #lie.group<se3>, lambda = array<f64: 1.0, 0.25>}
        : tensor<?x4x4xf32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Lie_GroupTensor:$lhs, Lie_GroupTensor:$rhs,
                       Lie_GroupAttr:$group,
                       OptionalAttr<DenseF64ArrayAttr>:$lambda);
  let results = (outs Lie_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;   // dist2(a, a) -> 0
  let extraClassDeclaration = [{
    /// The λ weights, one per block, with the all-ones default filled in.
    ::llvm::SmallVector<double> getLambdaOrDefault();
  }];
}

//===----------------------------------------------------------------------===//
// MembershipResidualOp
//===----------------------------------------------------------------------===//

def Lie_MembershipResidualOp : Lie_Op<"membership_residual", [Pure,
    DeclareOpInterfaceMethods<Lie_ElementOpInterface>]> {
  let summary = "how far a matrix is from being an element of the group";
  let description = [{
    Zero (up to rounding) for elements of the group inside the chart of
    `lie.log`; positive for matrices off the group. For a group declared by
    generators it is the part of the principal matrix log outside the
    algebra's span, ‖log g − Σ_a w_a E_a‖_F with w the least-squares
    coordinates; for a built-in group it is the round trip
    ‖exp(log g) − g‖_F / max(1, ‖g‖_F), since each built-in log reads only
    the entries a group element has. NaN outside the chart (no principal
    log). The result drops the trailing n×n dims.
    ```mlir
    %r = lie.membership_residual %g {group = #lie.group<se3>}
        : tensor<?x4x4xf32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Lie_GroupTensor:$input, Lie_GroupAttr:$group);
  let results = (outs Lie_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// PullbackOp
//===----------------------------------------------------------------------===//

def Lie_PullbackOp : Lie_Op<"pullback", [Pure,
    DeclareOpInterfaceMethods<Lie_ElementOpInterface, ["verifyElementLowering"]>]> {
  let summary = "vector-Jacobian product of a lie op for one operand";
  let description = [{
    The reverse-mode derivative of one element-wise lie op (`of`, an enum:
    `compose`, `inverse`, `log`, `exp`, `act`, `dist2`, `query_features`,
    `key_features` — the last two are `lie.pair_features` without and with
    `key`; the parser also takes the quoted form `"log"`) with respect to its
    operand `wrt`. `inputs` are the forward
    op's operands; `cotangent` is the cotangent of its result.
    Group-valued quantities carry ambient n×n cotangents (Frobenius
    pairing); the result for a group operand is the canonical one,
    g⁻ᵀ·Σ_k η_k D_k, with η the left-trivialised gradient
    (d/dε f(g·exp(ε ξ^)) = ⟨η, ξ⟩) and D_k the dual basis of the
    generators. `left_trivialize` (one input g, an ambient cotangent)
    returns η itself (`[batch...] x k`). Everything else has ordinary
    gradients of its own shape. The group model builds the derivative from
    its own formulas (docs/lie-gradients.md: values at θ = 0 and θ = π).
    ```mlir
    %gbar = lie.pullback log(%g), %wbar {group = #lie.group<so3>, wrt = 0 : i64}
        : (tensor<?x3x3xf64>, tensor<?x3xf64>) -> tensor<?x3x3xf64>
    %eta = lie.pullback left_trivialize(%g), %gbar {group = #lie.group<so3>, wrt = 0 : i64}
        : (tensor<?x3x3xf64>, tensor<?x3x3xf64>) -> tensor<?x3xf64>
    ```
  }];
  let arguments = (ins Lie_PullbackKind:$of, Variadic<Lie_FloatTensor>:$inputs,
                       Lie_FloatTensor:$cotangent, Lie_GroupAttr:$group,
                       I64Attr:$wrt, OptionalAttr<DenseF64ArrayAttr>:$lambda);
  let results = (outs Lie_FloatTensor:$result);
  let assemblyFormat = [{
    custom<PullbackKind>($of) `(` $inputs `)` `,` $cotangent attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TORSOR_LIE_OPS
