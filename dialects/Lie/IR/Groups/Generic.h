//===- Generic.h - The model of a group declared by generators --*- C++ -*-===//
//
// A user-declared matrix Lie group (`group Heis3 { ... }` in a .tsr model,
// `#lie.group<"Heis3", n = 3, generators = ..., blocks = ...>` in IR) has no
// hand-written closed forms: GenericGroupModel derives everything from the
// generators (coordinates through the dual basis, nilpotency, the affine
// structure) and builds exp and log from the generic matrix functions of
// MatrixFunctions.h. When the algebra is a built-in's in another basis, or
// a subalgebra of one (GroupStructure.h), the builders are the built-in's
// closed forms composed with the coordinate maps instead; when the
// generators are exactly a built-in's basis, they are the built-in's.
//
// Models are cached per declaration (by content, so that they outlive any
// MLIRContext) in a process-wide registry guarded by a mutex.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_GENERIC_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_GENERIC_H

#include "dialects/Lie/IR/GroupModel.h"
#include "dialects/Lie/IR/Groups/GroupStructure.h"

#include <string>
#include <vector>

namespace torsor::lie {

/// One λ block of a declaration: its name and how many generators it holds.
struct DeclaredBlock {
  std::string name;
  unsigned size;
};

/// The group model of a declared group; see the file comment.
class GenericGroupModel final : public GroupModel {
public:
  /// The checked, cached model of a declaration, or null with `error` set
  /// to a message naming what is wrong (sizes, dependent generators, a
  /// bracket outside the span). `generic` disables built-in specialisation.
  static const GenericGroupModel *get(llvm::StringRef name, unsigned n,
                                      llvm::ArrayRef<double> generators,
                                      llvm::ArrayRef<DeclaredBlock> blocks,
                                      bool generic, std::string &error);

  llvm::StringRef getName() const override { return name; }
  llvm::StringRef getDisplayName() const override { return name; }
  unsigned getMatrixSize() const override { return n; }
  unsigned getAlgebraDim() const override { return dim; }
  unsigned getPointDim() const override { return affine ? n - 1 : n; }
  llvm::ArrayRef<AlgebraBlock> getBlocks() const override { return blocks; }
  bool isInsideChart(llvm::ArrayRef<double> v) const override;

  Scalars buildCompose(ScalarBuilder &m, mlir::ValueRange a,
                       mlir::ValueRange b) const override;
  Scalars buildInverse(ScalarBuilder &m, mlir::ValueRange g) const override;
  Scalars buildLog(ScalarBuilder &m, mlir::ValueRange g) const override;
  Scalars buildExp(ScalarBuilder &m, mlir::ValueRange v) const override;
  /// ‖X − Σ_a w_a E_a‖_F for X the principal matrix log: the part of the
  /// log outside the algebra's span (the built-in residual if specialised).
  mlir::Value buildMembershipResidual(ScalarBuilder &m,
                                      mlir::ValueRange g) const override;
  Scalars buildAct(ScalarBuilder &m, mlir::ValueRange g,
                   mlir::ValueRange p) const override;
  mlir::Value buildDist2(ScalarBuilder &m, mlir::ValueRange a,
                         mlir::ValueRange b,
                         mlir::ValueRange lambda) const override;
  // The pairwise form: the specialised model's when there is one, else
  // the default (inverse per query token, compose and log per pair),
  // whose log builds loops and so stays scalar.
  unsigned getQueryFeatureCount() const override;
  unsigned getKeyFeatureCount() const override;
  Scalars buildQueryFeatures(ScalarBuilder &m,
                             mlir::ValueRange a) const override;
  Scalars buildKeyFeatures(ScalarBuilder &m, mlir::ValueRange b) const override;
  Scalars buildPairBlockNorms(ScalarBuilder &m, mlir::ValueRange q,
                              mlir::ValueRange k) const override;
  bool hasStraightLinePairForm() const override {
    if (isProduct() || usesNilpotentPairForm())
      return true;
    const GroupModel *builtin = special ? special : host;
    return builtin && builtin->hasStraightLinePairForm();
  }

  // Tangent spaces from the generators and the dual basis (GenericGrad.cpp).
  Scalars buildTangentPullback(ScalarBuilder &m,
                               mlir::ValueRange entries) const override;
  Scalars buildAlgebraCotangent(ScalarBuilder &m,
                                mlir::ValueRange c) const override;
  /// J_r(w)⁻ᵀ·c with J_r(w) = Σ_k (−ad_w)^k/(k+1)! from the structure
  /// constants of the generators: the exact finite sum when the algebra is
  /// nilpotent, else the top-right block of exp([[−ad_w, I], [0, 0]]).
  std::optional<Scalars>
  buildLogLeftGradient(ScalarBuilder &m, mlir::ValueRange w,
                       mlir::ValueRange c) const override;
  /// J_r(v)ᵀ·η with the same J_r (the gradient of exp).
  std::optional<Scalars>
  buildExpLeftGradient(ScalarBuilder &m, mlir::ValueRange v,
                       mlir::ValueRange eta) const override;

  /// The keyword of the built-in model the builders delegate to ("se3"),
  /// or empty when the generic builders are used.
  llvm::StringRef getSpecialization() const {
    return special ? special->getName() : llvm::StringRef();
  }
  /// What recognition found (GroupStructure.h), for reports.
  const algebra::Recognition &getStructure() const { return structure; }
  /// The built-in whose closed forms serve through a basis change, or null.
  const GroupModel *getHost() const { return host; }
  /// Whether the builders are a direct sum of closed forms
  /// (Recognition::Product, Product.cpp).
  bool isProduct() const {
    return structure.kind == algebra::Recognition::Product;
  }
  /// Whether log, exp and the pair form are closed forms (a built-in's,
  /// a host's or a direct sum of them), not the generic matrix functions.
  bool hasClosedForms() const { return special || host || isProduct(); }
  /// The host model of factor `c` of a direct sum (null for scalings and
  /// nilpotent factors).
  const GroupModel *getFactorHost(unsigned c) const { return factorHosts[c]; }
  /// k > 0 when every product of k generators vanishes (so X^k = 0 on the
  /// algebra and (g − I)^k = 0 on the group); 0 when the algebra is not
  /// nilpotent.
  unsigned getNilpotencyIndex() const { return nilIndex; }
  /// True when every generator's last row is zero: the group is affine and
  /// acts on ℝ^{n−1} through homogeneous coordinates.
  bool isAffine() const { return affine; }

  /// An empty model; only get() fills one in.
  GenericGroupModel() = default;

private:
  /// Σ v_a E_a as n·n scalars (entries no generator touches are constant 0).
  Scalars buildHat(ScalarBuilder &m, mlir::ValueRange v) const;
  /// J_r(w) = Σ_k (−ad_w)^k/(k+1)! as dim·dim row-major scalars.
  Scalars buildRightJacobian(ScalarBuilder &m, mlir::ValueRange w) const;
  /// `g` (n×n) as the host's N×N element diag(g, I).
  Scalars embed(ScalarBuilder &m, mlir::ValueRange g) const;
  /// The top-left n×n block of a host element.
  Scalars extract(mlir::ValueRange big) const;
  /// Declared coordinates T⁺w_B of host coordinates.
  Scalars fromHost(ScalarBuilder &m, mlir::ValueRange wB) const;
  /// Declared block norms Σ_β c_bβ N_β from the host's block norms.
  Scalars mixBlockNorms(ScalarBuilder &m, mlir::ValueRange hostNorms) const;
  /// ‖Σ_i o_i B_i‖_F for o = w_B − T T⁺ w_B, B_i the host basis matrices:
  /// the part of host coordinates w_B outside the declared span, which the
  /// membership residual of a subalgebra adds. `hosts` gives each host's
  /// basis and the offset of its coordinates in w_B (one host, or one per
  /// factor of a direct sum).
  mlir::Value buildOutsideSpan(
      ScalarBuilder &m, mlir::ValueRange wB,
      llvm::ArrayRef<std::pair<const std::vector<algebra::Matrix> *, unsigned>>
          hosts) const;
  // A direct sum of factors (Product.cpp); each builds the whole element
  // from its factors' blocks, identity outside them.
  /// The entries of `g` (n×n) in factor c's rows and columns.
  Scalars restrictToFactor(mlir::ValueRange g, unsigned c) const;
  /// n×n from the factors' blocks, the identity elsewhere (and the fixed
  /// last row of an affine group).
  Scalars scatterFactors(ScalarBuilder &m,
                         llvm::ArrayRef<Scalars> blocksOfFactors) const;
  /// Factor c's host coordinates of its block `gc`.
  Scalars buildFactorLog(ScalarBuilder &m, mlir::ValueRange gc,
                         unsigned c) const;
  Scalars buildProductCompose(ScalarBuilder &m, mlir::ValueRange a,
                              mlir::ValueRange b) const;
  Scalars buildProductInverse(ScalarBuilder &m, mlir::ValueRange g) const;
  Scalars buildProductLog(ScalarBuilder &m, mlir::ValueRange g) const;
  Scalars buildProductExp(ScalarBuilder &m, mlir::ValueRange v) const;
  mlir::Value buildProductResidual(ScalarBuilder &m, mlir::ValueRange g) const;
  bool isProductInsideChart(llvm::ArrayRef<double> v) const;
  /// Query (`query` = true) or key feature count of factor c.
  unsigned getFactorFeatureCount(unsigned c, bool query) const;
  Scalars buildProductFeatures(ScalarBuilder &m, mlir::ValueRange g,
                               bool query) const;
  Scalars buildProductPairBlockNorms(ScalarBuilder &m, mlir::ValueRange q,
                                     mlir::ValueRange k) const;

  /// Whether the pair form is SE(2)'s features and its log of a⁻¹b from
  /// them (PairForms.h, buildPlanarPairLog), mapped through T⁺: an SE(2)
  /// host whose block norms are not a mix of SE(2)'s.
  bool usesPlanarPairLog() const;
  /// Whether the pair form is GL⁺(2)'s log of a⁻¹b without its trace part
  /// (buildGL2Log, traceless): a GL⁺(2) host of traceless generators whose
  /// block norms are not a mix of GL⁺(2)'s (SL(2) in any basis).
  bool usesTracelessLinearPairLog() const;
  /// Whether the pair form is the nilpotent one below: no built-in closed
  /// forms, and the exact series.
  bool usesNilpotentPairForm() const {
    return nilIndex && !special && !host && !isProduct();
  }
  /// The nilpotent pair form's N = a⁻¹b − I on `support` from the features
  /// (a⁻¹ and b on `support`), its exact log and the block norms.
  Scalars buildNilpotentPairBlockNorms(ScalarBuilder &m, mlir::ValueRange q,
                                       mlir::ValueRange k) const;

  /// Inverse of the leading `size`×`size` block of the n×n matrix `g`.
  Scalars buildBlockInverse(ScalarBuilder &m, mlir::ValueRange g,
                            unsigned size) const;

  std::string name;
  unsigned n = 0, dim = 0;
  /// Generators, each n·n row-major.
  std::vector<std::vector<double>> gens;
  /// Dual basis: w_a = ⟨dual[a], X⟩ gives X's coordinates (least squares
  /// through the Gram matrix when the generators are not orthonormal).
  std::vector<std::vector<double>> dual;
  std::vector<std::string> blockNames;
  llvm::SmallVector<AlgebraBlock> blocks;
  unsigned nilIndex = 0;
  bool affine = false;
  /// Nilpotent groups: the entries (row-major indices) where g − I can be
  /// non-zero, the closure of the generators' patterns under products.
  /// Every other entry of an element is the identity's.
  std::vector<unsigned> support;
  /// Whether the linear part of every generator is antisymmetric, so that
  /// the linear part of every element is orthogonal (inverse = transpose).
  bool orthogonal = false;
  /// The built-in model with exactly these generators, if any.
  const GroupModel *special = nullptr;
  /// The built-in model whose algebra contains this one through the basis
  /// change of `structure` (Embedded), if any.
  const GroupModel *host = nullptr;
  /// Product: each factor's host model (null for scalings and nilpotent
  /// factors), in the order of structure.factors.
  std::vector<const GroupModel *> factorHosts;
  algebra::Recognition structure;
};

/// Σ_j a[i·cols + j]·x_j for every row i of a constant row-major matrix
/// `a` (cols = x.size()), without the products by 0 and ±1.
Scalars applyConstant(ScalarBuilder &m, llvm::ArrayRef<double> a, unsigned rows,
                      mlir::ValueRange x);

} // namespace torsor::lie

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_GENERIC_H
