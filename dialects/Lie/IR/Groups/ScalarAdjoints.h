//===- ScalarAdjoints.h - The one table of scalar adjoints ------*- C++ -*-===//
//
// Two reverse-mode differentiators walk elementwise arith/math ops: the
// group models' formula differentiator (Derivatives.cpp, buildFormulaVJP)
// and the compiler's VJP rules for the bodies of linalg.generic
// (compiler/Autodiff/ScalarRules.cpp). Both take each op's local partials
// ∂y/∂x_i from this table, so they agree op for op — on ties of max and
// min, at sqrt(0), on what is zero almost everywhere — and a new op gets
// its derivative in one place.
//
// A partial says how the result's cotangent ȳ reaches one operand: as is,
// negated, scaled by a value d built here, or masked by a condition. The
// consumers differ only in what they do with a scale that can be
// unbounded (1/x at x = 0): buildFormulaVJP replaces a non-finite d by 0
// where the formula's own results stay finite, the VJP rules multiply.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_SCALARADJOINTS_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_SCALARADJOINTS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace torsor::lie {

/// How the cotangent ȳ of an op's result reaches one of its operands.
struct ScalarPartial {
  enum Kind {
    /// Nothing (an i1 condition; a piecewise-constant op).
    None,
    /// ȳ.
    Same,
    /// −ȳ.
    Negated,
    /// ȳ·value.
    Scaled,
    /// value ? ȳ : 0 (value an i1, or a vector/tensor of them).
    Where,
    /// value ? 0 : ȳ.
    WhereNot,
  };
  Kind kind = None;
  mlir::Value value;
  /// Scaled: `value` is unbounded where the op's derivative is (1/x at
  /// x = 0, atanh' at ±1), so it can be ±inf or NaN for finite operands.
  bool unbounded = false;
  /// Scaled: the value `value` grows with (an operand or the result): a
  /// scale that is finite when this is ("ȳ·b" of a product needs b
  /// finite). Null when `unbounded`.
  mlir::Value from;
};

/// The names of the ops the table covers (arith.addf, math.sin, …).
llvm::ArrayRef<llvm::StringRef> getScalarAdjointOpNames();

/// The partials of `op` (one of getScalarAdjointOpNames(), one float
/// result) with respect to each of its operands, in operand order, built
/// with `b` before the current insertion point; false for an op the table
/// does not cover. Max and min send ȳ to the operand the result equals,
/// the first on ties (so max(x, x) = x has derivative 1); sqrt's partial
/// is 0 where the result is 0 (the one-sided +inf, as for a norm clamped
/// from below, so a zero cotangent never becomes 0·inf).
bool buildScalarPartials(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Operation *op,
                         llvm::SmallVectorImpl<ScalarPartial> &partials);

} // namespace torsor::lie

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_SCALARADJOINTS_H
