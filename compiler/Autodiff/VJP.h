//===- VJP.h - Reverse-mode rules: one VJP per op -----------------*- C++
//-*-===//
//
// The table of vector-Jacobian products the torsor-differentiate pass reads
// (tinygrad's gradient.py is the model: one small rule per op, kept in one
// place). A rule sees one forward op and the cotangents of its results and
// builds the cotangents of its operands. Rules are registered per dialect
// group: registerCoreVJPRules (arith, math, tensor, linalg, the dense geo
// ops; CoreRules.cpp), registerLieGeoVJPRules (lie.*, geo.lie_attention;
// LieGeoRules.cpp) and registerGrassmannVJPRules (geo.grassmann_mix;
// GrassmannRules.cpp).
//
// Conventions every rule keeps (docs/training.md has the user-facing ones):
//   * A cotangent has the type of its primal value. Group-element tensors
//     (n×n matrices) carry the *ambient* matrix cotangent Ḡ, paired with a
//     tangent δg by the Frobenius product ⟨Ḡ, δg⟩. A rule that knows a
//     left-trivialised gradient η (d/dε f(g·exp(ε ξ^)) = ⟨η, ξ⟩) may return
//     Ḡ = g^{-T}·Σ_k η_k E*_k, with E*_k the Frobenius-dual basis of the
//     generators; the pass turns Ḡ back into η at the group inputs through
//     VJPRegistry::groupInputGradient.
//   * `resultCotangents` has one non-null value per result (zeros are
//     materialised for results nothing reads).
//   * `operandCotangents` arrives sized to the operand count and all null;
//     a rule fills the entries of the operands that get a gradient and
//     leaves the others null (integers, indices, constants, shapes).
//   * Rules insert at the builder's insertion point and may read every
//     forward value: the backward function recomputes the forward pass
//     first, so all primal values dominate the backward code.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_AUTODIFF_VJP_H
#define TORSOR_COMPILER_AUTODIFF_VJP_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace torsor::autodiff {

/// Builds the operand cotangents of `op` from its result cotangents.
using VJPBuildFn = mlir::LogicalResult (*)(
    mlir::OpBuilder &b, mlir::Operation *op,
    llvm::ArrayRef<mlir::Value> resultCotangents,
    llvm::SmallVectorImpl<mlir::Value> &operandCotangents);

/// One op's rule.
struct VJPRule {
  VJPBuildFn build = nullptr;
};

/// Turns the ambient cotangent `cot` (shape [..., n, n]) of the group
/// input `g` into its left-trivialised gradient in algebra coordinates
/// ([..., k]). `group` is the input's `torsor.group` name.
using GroupGradientFn = mlir::FailureOr<mlir::Value> (*)(mlir::OpBuilder &b,
                                                         mlir::Location loc,
                                                         mlir::Value g,
                                                         mlir::Value cot,
                                                         mlir::Attribute group);

/// The rule table, keyed by op name ("linalg.generic", "lie.log").
class VJPRegistry {
public:
  /// Registers `rule` for `opName`; a second rule for one op is a bug.
  void add(llvm::StringRef opName, VJPRule rule);
  /// The rule for `op`, or null.
  const VJPRule *lookup(mlir::Operation *op) const;
  /// Every op name with a rule, sorted (for docs and tests).
  llvm::SmallVector<llvm::StringRef> names() const;

  /// Set by registerLieGeoVJPRules; null until then (group inputs are then
  /// an error at differentiation time).
  GroupGradientFn groupInputGradient = nullptr;

private:
  llvm::StringMap<VJPRule> rules;
};

/// arith, math, tensor, linalg and the dense geo ops (CoreRules.cpp).
void registerCoreVJPRules(VJPRegistry &registry);
/// lie.* and the Lie/Grassmann geo layers (LieGeoRules.cpp).
void registerLieGeoVJPRules(VJPRegistry &registry);
/// geo.grassmann_mix on the bilinear form (GrassmannRules.cpp).
void registerGrassmannVJPRules(VJPRegistry &registry);
/// The two halves of registerCoreVJPRules (ScalarRules.cpp,
/// StructuredRules.cpp).
void registerScalarVJPRules(VJPRegistry &registry);
void registerStructuredVJPRules(VJPRegistry &registry);
/// The process-wide table with every group registered, built once.
const VJPRegistry &getVJPRegistry();

//===----------------------------------------------------------------------===//
// Helpers for rules
//===----------------------------------------------------------------------===//

/// Whether `v` can carry a cotangent: a float scalar, vector or tensor.
bool isDifferentiable(mlir::Value v);
/// Whether `t` is a float scalar, vector or tensor type.
bool isDifferentiableType(mlir::Type t);

/// Zeros shaped like `like` (dynamic dims read with tensor.dim).
mlir::Value zerosLike(mlir::OpBuilder &b, mlir::Location loc, mlir::Value like);
/// Elementwise a + c (same type); either may be null (then the other).
mlir::Value addValues(mlir::OpBuilder &b, mlir::Location loc, mlir::Value a,
                      mlir::Value c);
/// A float constant of `type`'s element type, splatted to `type` if shaped
/// with static shape; scalars only for dynamic tensors.
mlir::Value floatConstant(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Type type, double value);
/// An elementwise linalg.generic over tensors of one shape (or the scalar
/// body itself on scalars): `body` gets the scalar operands.
mlir::Value
mapElementwise(mlir::OpBuilder &b, mlir::Location loc,
               mlir::ValueRange operands,
               llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                              mlir::ValueRange)>
                   body);

/// For rules of ops with regions: records the cotangent `cot` of a value
/// `primal` defined outside `op` and read inside it (a captured tensor).
/// The sweep adds it to that value's cotangent after the rule returns.
void addCapturedCotangent(mlir::Value primal, mlir::Value cot);

/// Reverse sweep over `ops` (in forward order, all in one block): for each
/// op whose results have a cotangent in `cotangents`, applies its rule and
/// accumulates the operand cotangents back into `cotangents`. Fails, with
/// an error at the op, on an op that needs a rule and has none.
mlir::LogicalResult
backpropagate(mlir::OpBuilder &b, llvm::ArrayRef<mlir::Operation *> ops,
              llvm::DenseMap<mlir::Value, mlir::Value> &cotangents,
              const VJPRegistry &registry);

} // namespace torsor::autodiff

#endif // TORSOR_COMPILER_AUTODIFF_VJP_H
