//===- Derivatives.h - Reverse-mode derivatives of group models -*- C++ -*-===//
//
// Gradients reuse the group models' own formulas: a VJP is the adjoint of
// the straight-line IR a model's builder emits (buildFormulaVJP), so each
// closed form, with its series and its branches, is written once, for the
// forward and for the backward, for scalars and for vectors.
//
// Conventions (docs/lie-gradients.md):
//   - The gradient of a group input a user sees is left-trivialised, in
//     algebra coordinates: η ∈ ℝᵏ with  d/dε f(g·exp(ε ξ^)) = ⟨η, ξ⟩.
//   - Inside a backward program (and for lie.pullback) a group-valued
//     quantity carries an ambient n×n cotangent Ḡ paired with tangents by
//     the Frobenius product; pullbacks project it to η first and return the
//     canonical ambient form g⁻ᵀ·Σ_k η_k D_k (D_k the dual basis of the
//     generators), so components normal to the group never leak in.
//   - Cotangents of everything else (algebra coordinates, points, features,
//     scalars) are ordinary gradients.
//
// Singular points. Every local partial derivative that can be non-finite
// (those of div, sqrt, log, log1p, atanh, atan2, and of any factor that
// depends on one of them) is replaced by 0 where it is not finite. This
// gives, for valid inputs and without NaN:
//   - the untaken side of a select (a series branch's exact twin at θ = 0,
//     say) contributes exactly 0, as it should;
//   - the derivative of √x at x = 0 is taken as 0, so the gradient of a
//     Euclidean norm at 0 is 0, the minimum-norm element of its
//     subdifferential;
//   - at θ = 0 exactly the series branches give the true derivative;
//   - at θ = π exactly, where θ = atan2(½‖a‖, cos θ) has a cone point in a
//     (θ² ≈ π² − π‖a‖ has no derivative there), the part through ‖a‖ is 0,
//     again the minimum-norm Clarke subgradient; at any θ < π the true,
//     bounded derivative (|∂θ²/∂a| ≤ π) is returned.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_DERIVATIVES_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_DERIVATIVES_H

#include "dialects/Lie/IR/GroupModel.h"
#include "dialects/Lie/IR/LieEnums.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace torsor::lie {

/// A straight-line formula: result scalars from input scalars.
using Formula =
    llvm::function_ref<Scalars(ScalarBuilder &, mlir::ValueRange inputs)>;

/// Builds `f(inputs)` and then its vector-Jacobian product with
/// `cotangents` (one per result): Σ_o c_o ∂f_o/∂x_i for every input x_i.
/// Fails when `f` builds an op the adjoint does not know (ops with regions,
/// e.g. the loops of a declared group's iterative log). `results`, if
/// given, receives f's results.
mlir::FailureOr<Scalars> buildFormulaVJP(ScalarBuilder &m,
                                         mlir::ValueRange inputs,
                                         mlir::ValueRange cotangents, Formula f,
                                         Scalars *results = nullptr);

/// ⟨Ē, hat(e_k)⟩ for k < dim: the algebra coordinates of an n×n entry
/// cotangent Ē at the identity (dispatches to the model's virtual).
Scalars buildTangentPullback(const GroupModel &model, ScalarBuilder &m,
                             mlir::ValueRange entries);
/// An n×n entry cotangent at the identity that pairs with hat(ξ) as c·ξ.
Scalars buildAlgebraCotangent(const GroupModel &model, ScalarBuilder &m,
                              mlir::ValueRange c);

/// Left-trivialised gradient at g of an entry cotangent Ḡ:
/// ξ̄_k = ⟨Ḡ, g·hat(e_k)⟩ = ⟨gᵀḠ, hat(e_k)⟩.
Scalars buildLeftTrivialGradient(const GroupModel &model, ScalarBuilder &m,
                                 mlir::ValueRange g, mlir::ValueRange gbar);
/// The entry cotangent at y of a left-trivialised cotangent ȳ:
/// Ȳ = y⁻ᵀ·C(ȳ), so that ⟨Ȳ, y·hat(ξ)⟩ = ȳ·ξ.
Scalars buildGroupCotangent(const GroupModel &model, ScalarBuilder &m,
                            mlir::ValueRange y, mlir::ValueRange ybar);

/// How many operands the forward op of `kind` has.
unsigned getPullbackArity(PullbackKind kind);
/// Whether operand `index` of `kind`'s forward op is a group element.
bool isGroupOperand(PullbackKind kind, unsigned index);
/// Whether `kind`'s forward op returns a group element.
bool hasGroupResult(PullbackKind kind);

/// The cotangent of operand `wrt` of one element of `kind`'s forward op,
/// given its operands (entries of group elements, coordinates, points) and
/// the result's cotangent (ambient n×n when the result is a group
/// element). Group operands get canonical ambient cotangents (see the
/// conventions above); LeftTrivialize returns η. `lambda` is dist2's
/// weights.
mlir::FailureOr<Scalars> buildPullback(const GroupModel &model,
                                       ScalarBuilder &m, PullbackKind kind,
                                       llvm::ArrayRef<Scalars> operands,
                                       mlir::ValueRange cotangent, unsigned wrt,
                                       mlir::ValueRange lambda = {});

/// The VJP of the pair block norms N_b(q, k) with cotangents n̄_b:
/// (q̄, k̄), the gradients of the query and key features. Straight-line
/// (and so vectorisable) whenever the model's pair form is; otherwise
/// (a declared group's iterative log) it builds the log's loops and takes
/// the log's derivative from the model (J_r⁻ᵀ), for scalar code per pair.
/// `pairLog`, if given, is buildPairLog(q, k), which is then not built again.
mlir::FailureOr<std::pair<Scalars, Scalars>>
buildPairBlockNormsVJP(const GroupModel &model, ScalarBuilder &m,
                       mlir::ValueRange q, mlir::ValueRange k,
                       mlir::ValueRange normBars, Scalars *norms = nullptr,
                       mlir::ValueRange pairLog = {});

/// For a pair form that builds loops (GroupModel::hasStraightLinePairForm
/// false, so the default form): the pair's log coordinates w = log(q·k).
/// Its block norms are model.buildBlockNorms(w), and
/// buildPairBlockNormsVJP takes w instead of building the log again (the
/// attention backward evaluates norms and adjoint of a pair one after the
/// other). Empty for a straight-line pair form.
Scalars buildPairLog(const GroupModel &model, ScalarBuilder &m,
                     mlir::ValueRange q, mlir::ValueRange k);

} // namespace torsor::lie

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_DERIVATIVES_H
