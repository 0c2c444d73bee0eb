//===- GroupModel.h - The group model interface -----------------*- C++ -*-===//
//
// Every group Torsor knows implements GroupModel: its sizes, its algebra's
// block structure (the λ weights of dist2), and IR builders for compose,
// inverse, log, exp, act and dist2 on one element written as scalars.
// Lowerings and fusion passes talk only to this interface; adding a group
// means adding one model (dialects/Lie/IR/Groups/) and nothing else in the
// compiler switches on group names.
//
// Builders work on one element: a matrix is its n·n entries as scalar
// Values in row-major order, an algebra element its k coordinates. The
// caller (e.g. convert-lie-to-arith) handles batch dims, loops and tensors.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPMODEL_H
#define TORSOR_DIALECTS_LIE_IR_GROUPMODEL_H

#include "dialects/Lie/IR/ScalarBuilder.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace torsor::lie {

/// A run of algebra coordinates sharing one λ weight in dist2.
struct AlgebraBlock {
  llvm::StringRef name;
  unsigned offset;
  unsigned size;
};

/// Straight-line scalar values: one matrix or one coordinate vector.
using Scalars = llvm::SmallVector<mlir::Value, 16>;

/// The math of one matrix Lie group, as IR builders.
class GroupModel {
public:
  virtual ~GroupModel();

  /// The keyword of `#lie.group<...>`, e.g. "se3".
  virtual llvm::StringRef getName() const = 0;
  /// The name users see, e.g. "SE3".
  virtual llvm::StringRef getDisplayName() const = 0;
  /// n for n×n homogeneous matrices.
  virtual unsigned getMatrixSize() const = 0;
  /// Dimension of the Lie algebra (length of log's coordinate vector).
  virtual unsigned getAlgebraDim() const = 0;
  /// Dimension of the points the group acts on: n − 1 for groups acting
  /// through homogeneous coordinates, n for linear groups.
  virtual unsigned getPointDim() const = 0;
  /// The λ blocks of dist2, in order, covering [0, getAlgebraDim()).
  virtual llvm::ArrayRef<AlgebraBlock> getBlocks() const = 0;
  /// Whether exp is injective at coordinates `v`, i.e. log(exp(v)) = v.
  virtual bool isInsideChart(llvm::ArrayRef<double> v) const = 0;
  /// The identity as n·n row-major doubles.
  llvm::SmallVector<double> getIdentity() const;

  /// a · b. Default: dense n×n product (affine models skip the fixed row).
  virtual Scalars buildCompose(ScalarBuilder &m, mlir::ValueRange a,
                               mlir::ValueRange b) const;
  /// g⁻¹ from the group's structure (never a general matrix inverse).
  virtual Scalars buildInverse(ScalarBuilder &m, mlir::ValueRange g) const = 0;
  /// Principal log as algebra coordinates.
  virtual Scalars buildLog(ScalarBuilder &m, mlir::ValueRange g) const = 0;
  /// exp of algebra coordinates, as an n×n matrix.
  virtual Scalars buildExp(ScalarBuilder &m, mlir::ValueRange v) const = 0;
  /// g · p. Default: homogeneous action when getPointDim() == n − 1,
  /// matrix-vector product when getPointDim() == n.
  virtual Scalars buildAct(ScalarBuilder &m, mlir::ValueRange g,
                           mlir::ValueRange p) const;
  /// ‖log(a⁻¹ b)‖²_λ with one λ value per block. Default: through
  /// buildInverse, buildCompose and buildLog; models override it when a
  /// cheaper exact form exists.
  virtual mlir::Value buildDist2(ScalarBuilder &m, mlir::ValueRange a,
                                 mlir::ValueRange b,
                                 mlir::ValueRange lambda) const;

  //===--------------------------------------------------------------------===//
  // Factored pairwise form of dist2 (fused attention, MATH.md §1)
  //===--------------------------------------------------------------------===//
  //
  // dist2(a, b) = Σ_b λ_b · N_b(q(a), k(b)): per-token features q and k
  // computed once per token, and per-block squared norms N_b computed per
  // pair from the features alone. Every head's score comes from one N per
  // pair. Closed-form models make N mostly dot products of features; the
  // default is exact for every group and costs one compose and one log per
  // pair, with the inverse hoisted into the query features.

  /// Number of query features (default n², the entries of a⁻¹).
  virtual unsigned getQueryFeatureCount() const;
  /// Number of key features (default n², the entries of b).
  virtual unsigned getKeyFeatureCount() const;
  /// Features of a query (left) element. Default: a⁻¹.
  virtual Scalars buildQueryFeatures(ScalarBuilder &m,
                                     mlir::ValueRange a) const;
  /// Features of a key (right) element. Default: b.
  virtual Scalars buildKeyFeatures(ScalarBuilder &m, mlir::ValueRange b) const;
  /// Σ_{k∈block} w_k² for every block, w = log(a⁻¹ b), from the features.
  /// Default: log(compose(q, k)) and sums of squares.
  virtual Scalars buildPairBlockNorms(ScalarBuilder &m, mlir::ValueRange q,
                                      mlir::ValueRange k) const;
  /// Whether buildPairBlockNorms is straight-line arith/math (no regions),
  /// so that it can be built on vectors, one pair per lane. A model whose
  /// pair form builds loops keeps the default form (a⁻¹, b, log of their
  /// product) and gives buildLogLeftGradient, through which
  /// buildPairBlockNormsVJP differentiates it (per pair, scalar code).
  virtual bool hasStraightLinePairForm() const { return true; }
  /// The VJP (q̄, k̄) of buildPairBlockNorms for cotangents `normBars`,
  /// written by hand where the model knows a cheaper adjoint than the
  /// formula's op-by-op one (buildPairBlockNormsVJP); nullopt otherwise.
  virtual std::optional<std::pair<Scalars, Scalars>>
  buildPairBlockNormsAdjoint(ScalarBuilder &m, mlir::ValueRange q,
                             mlir::ValueRange k,
                             mlir::ValueRange normBars) const {
    return std::nullopt;
  }

  /// How far the matrix `g` is from the group (see lie.membership_residual).
  /// Default: the round trip ‖exp(log g) − g‖_F / max(1, ‖g‖_F), right for
  /// every model whose log reads only the entries a group element has.
  virtual mlir::Value buildMembershipResidual(ScalarBuilder &m,
                                              mlir::ValueRange g) const;

  //===--------------------------------------------------------------------===//
  // Tangent spaces (derivatives; Groups/Derivatives.h)
  //===--------------------------------------------------------------------===//

  /// ⟨Ē, hat(e_k)⟩ for every algebra coordinate k: the left-trivialised
  /// gradient at the identity of an n×n entry cotangent Ē. Default: the
  /// adjoint of buildExp at 0 (Derivatives.cpp).
  virtual Scalars buildTangentPullback(ScalarBuilder &m,
                                       mlir::ValueRange entries) const;
  /// An n×n entry cotangent at the identity pairing with hat(ξ) as c·ξ.
  /// Default: the adjoint of buildLog at the identity (Derivatives.cpp).
  virtual Scalars buildAlgebraCotangent(ScalarBuilder &m,
                                        mlir::ValueRange c) const;
  /// The left-trivialised gradient of log at exp(w): J_r(w)⁻ᵀ·c, for the
  /// models whose log builds loops (so that it cannot be differentiated
  /// formula by formula). Default: nullopt, and buildPullback differentiates
  /// buildLog itself.
  virtual std::optional<Scalars>
  buildLogLeftGradient(ScalarBuilder &m, mlir::ValueRange w,
                       mlir::ValueRange c) const {
    return std::nullopt;
  }
  /// The gradient of exp at coordinates v of a left-trivialised cotangent
  /// η of exp(v): J_r(v)ᵀ·η, since exp(v + εδ) = exp(v)·exp(ε J_r(v)δ^) +
  /// O(ε²). For the models whose exp builds loops. Default: nullopt, and
  /// buildPullback differentiates buildExp itself.
  virtual std::optional<Scalars>
  buildExpLeftGradient(ScalarBuilder &m, mlir::ValueRange v,
                       mlir::ValueRange eta) const {
    return std::nullopt;
  }

  /// Σ_{k∈b} w_k² for every block b of algebra coordinates `w`.
  Scalars buildBlockNorms(ScalarBuilder &m, mlir::ValueRange w) const;
  /// Weighted squared norm Σ_b λ_b Σ_{k∈b} w_k² of algebra coordinates.
  mlir::Value buildWeightedNorm2(ScalarBuilder &m, mlir::ValueRange w,
                                 mlir::ValueRange lambda) const;
};

/// The model of a built-in group by its keyword, or null.
const GroupModel *lookupBuiltinGroupModel(llvm::StringRef name);
/// Keywords of every built-in group, for diagnostics.
llvm::ArrayRef<llvm::StringRef> getBuiltinGroupNames();

} // namespace torsor::lie

#endif // TORSOR_DIALECTS_LIE_IR_GROUPMODEL_H
