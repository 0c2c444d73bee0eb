//===- GroupStructure.h - Built-in closed forms for declared groups -*- C++-*-//
//
// A declared group's generators E_a span a matrix Lie algebra 𝔤 ⊂ gl(n).
// When 𝔤, placed in the top-left corner of an N×N matrix (N ≥ n, zeros
// elsewhere), lies inside the algebra of a built-in group B with N×N
// elements, every element of the declared group is, after the same
// embedding g ↦ diag(g, I), an element of B; B's closed-form log, exp,
// inverse and pairwise form then compute the declared group's, and a fixed
// linear map turns B's coordinates into the declared ones:
//
//   E_a = Σ_i T_ia B_i      (T: dim B × dim 𝔤, the declared generators in
//                            B's basis; full column rank)
//   w_B = T w               (coordinates of one algebra element)
//   w   = T⁺ w_B            (T⁺ = (TᵀT)⁻¹Tᵀ, exact on the image of T)
//
// This covers a built-in's algebra in any basis (permuted, scaled, sheared:
// T square) and subalgebras of a built-in (T tall): rotation × scale of ℝ³
// in Sim(3), similarities Sim(2) and SL(2, ℝ) in Aff(2), SO(2) × ℝ⁺ in
// GL⁺(2), and so on.
//
// dist2's λ-weighted norm Σ_b λ_b Σ_{a∈b} w_a² is a quadratic form in w.
// When for every declared block b its projector P_b (diagonal, ones on b)
// is a combination Σ_β c_bβ T_βᵀT_β of the built-in blocks' Gram matrices
// (T_β: T's rows of block β), the declared block norms are
// N_b = Σ_β c_bβ N_β(w_B): the built-in's factored pair form serves as is
// ("block-isotropic"). Otherwise (a sheared basis inside one built-in
// block, say) the pair form evaluates B's closed-form log per pair and maps
// it through T⁺ — straight-line code still, but no dot-product shortcut;
// for B = SE(2) that log comes from SE(2)'s own per-token features
// (PairForms.h, buildPlanarPairLog), without forming a⁻¹b.
//
// Direct sums (Recognition::Product). When the generators are block
// diagonal up to a permutation of the matrix coordinates (for an affine
// group: of the linear coordinates, the homogeneous one shared), the
// algebra lies in the direct sum of its restrictions 𝔤_c to the blocks; when
// their dimensions add up to k it is that direct sum, each 𝔤_c is an ideal,
// and every element is the block-diagonal product of its factors'. Each
// factor is then recognised on its own (a host built-in as above, a 1×1
// block of scalings e^{f·u}, or a nilpotent block with its exact series),
// and T stacks the factors' maps: w_B is the concatenation of the factors'
// host coordinates. The pair form concatenates the factors' features, and
// the block-norm mix is solved over all the factors' host blocks at once.
// A generator that couples two blocks (its parts on them span more than
// one dimension of the sum, e.g. a rotation and a scaling that only turn
// together) makes the sum too big: refused, with the reason.
//
// Recognition is exact or refused: containment is tested against the same
// span tolerance as closure (GroupAlgebra.h), and each identification is
// then verified numerically on fixed pseudo-random algebra elements (the
// round trip through B's coordinates, and the block-norm identity for
// random λ). Nilpotent algebras are not recognised: their exact finite
// series is already a closed form.
//
// Plain C++17, like GroupAlgebra.h, so that it is unit-tested without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_GROUPSTRUCTURE_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_GROUPSTRUCTURE_H

#include "dialects/Lie/IR/Groups/GroupAlgebra.h"

#include <string>
#include <vector>

namespace torsor::lie::algebra {

/// A built-in group's algebra as its model's coordinates define it: log's
/// coordinates w_B satisfy log g = Σ_i w_B,i basis[i].
struct BuiltinAlgebra {
  /// The keyword, e.g. "se3".
  std::string name;
  /// Matrix size N.
  unsigned n;
  /// The basis, each N·N row-major.
  std::vector<Matrix> basis;
  /// The sizes of the model's λ blocks, in order.
  std::vector<unsigned> blockSizes;
  /// A closed form that is not a `#lie.group<...>` keyword (sim2, se2x): it
  /// only hosts declared groups, and is never an Exact specialisation.
  bool hostOnly = false;
};

/// The built-in algebras, in the order recognition tries them (smaller
/// matrices and algebras first).
const std::vector<BuiltinAlgebra> &getBuiltinAlgebras();

/// One ideal of a direct sum (Recognition::Product): the declared algebra
/// restricted to a block of matrix coordinates, and the closed form that
/// computes that block of every element.
struct Factor {
  enum Kind {
    /// A built-in (or host-only) algebra's closed forms on diag(g_c, I).
    Host,
    /// A 1×1 block of scalings: g_c = e^u, host coordinate u = ln g_c.
    Scalar,
    /// A nilpotent block: the exact finite series; the host coordinates are
    /// those in the ideal's basis `hostBasis`.
    Nilpotent,
  };
  Kind kind = Host;
  /// The rows and columns of the declared matrix that the ideal acts on,
  /// ascending; for an affine group with translations in this block the
  /// homogeneous coordinate n − 1 is among them (last).
  std::vector<unsigned> indices;
  /// Host: the built-in's keyword ("so3"); Scalar: "gl1"; Nilpotent: "nil".
  std::string host;
  /// The host's matrix size (≥ indices.size()) and algebra dimension, the
  /// length of this factor's part of w_B.
  unsigned hostN = 0, hostDim = 0;
  /// The host coordinates' basis, each hostN·hostN row-major: log g_c =
  /// Σ_i w_B,offset+i hostBasis[i] (Host: the built-in's; Scalar: [1];
  /// Nilpotent: the ideal's basis).
  std::vector<Matrix> hostBasis;
  /// The host's λ block sizes (Scalar: {1}; Nilpotent: 1 per coordinate).
  std::vector<unsigned> hostBlockSizes;
  /// Nilpotent: the dual basis of hostBasis and the nilpotency index.
  std::vector<Matrix> dual;
  unsigned nilpotencyIndex = 0;
  /// Where this factor's coordinates start in w_B.
  unsigned offset = 0;
};

/// What recognition found for one declaration.
struct Recognition {
  enum Kind {
    /// No built-in closed form: the generic model's builders are used.
    None,
    /// The generators are exactly the built-in's basis, with its block
    /// sizes: every builder is the built-in's (bit for bit).
    Exact,
    /// A basis change of a built-in's algebra or of a subalgebra of it.
    Embedded,
    /// A direct sum of ideals on disjoint blocks of matrix coordinates,
    /// each with its own closed form (`factors`).
    Product,
  };
  Kind kind = None;
  /// The built-in's keyword (Exact, Embedded); Product: the factors'
  /// hosts joined by " + " ("so3 + so2").
  std::string builtin;
  /// The built-in's matrix size N and algebra dimension (Product: N = 0,
  /// the dimension is the sum of the factors' host dimensions).
  unsigned builtinN = 0, builtinDim = 0;
  /// Product: the ideals, in the order of their first matrix coordinate.
  std::vector<Factor> factors;
  /// T (builtinDim × k, row-major): the generators in the built-in basis
  /// (Product: in the factors' host bases, stacked).
  Matrix toBuiltin;
  /// T⁺ (k × builtinDim, row-major).
  Matrix fromBuiltin;
  /// c (declared blocks × built-in blocks, row-major) when the block norms
  /// are combinations of the built-in's; empty otherwise.
  std::vector<double> blockMix;
  /// The largest relative error of the numerical verification.
  double verifyError = 0;
  /// Why the declaration was not recognised, or what limits the result.
  std::string reason;

  /// Whether the built-in's factored pair form serves (block-isotropic).
  bool isBlockIsotropic() const { return !blockMix.empty(); }
};

/// Recognises the algebra of valid generators (`facts`, from analyze())
/// with declared block sizes `blockSizes`. `allowed` = false (the
/// attribute's `generic` keyword) disables recognition entirely.
Recognition recognize(const Facts &facts,
                      const std::vector<unsigned> &blockSizes,
                      bool allowed = true);

/// One paragraph for `torsorc --report=groups`: what was recognised (the
/// built-in, the basis map, the pair form and its feature counts are
/// added by the caller) or why nothing was. `names` names the generators.
std::string describe(const Recognition &r, const Facts &facts,
                     const std::vector<std::string> &names = {});

} // namespace torsor::lie::algebra

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_GROUPSTRUCTURE_H
