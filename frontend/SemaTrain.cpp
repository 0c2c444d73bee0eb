//===- SemaTrain.cpp - Torsor semantic analysis: training built-ins -------===//
//
// Argument rules of the built-ins training needs: `embedding(tokens,
// table)` (integer token ids to rows of a float table) and the losses
// `cross_entropy(logits, targets)` and `mse(a, b)`, which return a scalar
// (the mean over every token or element). docs/language.md documents the
// same rules; test/Frontend/invalid-training.tsr lists every message.
//
//===----------------------------------------------------------------------===//

#include "frontend/Sema.h"

using namespace torsor::frontend;
using llvm::Twine;

/// Reports unless `expr` is an i64 tensor (token ids).
static bool expectTokens(DiagnosticEngine &diags, const Expr &expr,
                         const Twine &what) {
  const Type &t = expr.type;
  if (t.isInvalid())
    return false;
  if (t.kind == Type::Tensor && t.dtype == DType::I64)
    return true;
  diags.emitError(expr.getLoc(), what +
                                     " must be an i64 tensor of token "
                                     "ids, got " +
                                     t.str());
  return false;
}

bool Sema::checkTraining(CallExpr &call, Type &result) {
  llvm::StringRef name = call.callee;
  result = Type();
  if (name == "embedding") {
    if (!checkKeywords(call, {}) || !checkArgCount(call, 2, 2) ||
        !expectTokens(diags, *call.args[0],
                      "the first argument of 'embedding'") ||
        !expectFloatTensor(*call.args[1],
                           "the table (second argument) of 'embedding'"))
      return true;
    const Type &tokens = call.args[0]->type, &table = call.args[1]->type;
    if (table.rank() != 2 || table.shape[0].symbolic) {
      diags.emitError(call.args[1]->getLoc(),
                      "the 'embedding' table must be [V, D] with a fixed "
                      "vocabulary size V, got " +
                          table.str());
      return true;
    }
    std::vector<Dim> shape = tokens.shape;
    shape.push_back(table.shape[1]);
    if (shape.size() > 8) {
      diags.emitError(call.getLoc(), "'embedding' result would have rank " +
                                         Twine(shape.size()) +
                                         "; the limit is 8");
      return true;
    }
    result = Type::tensor(table.dtype, shape);
    return true;
  }
  if (name == "cross_entropy") {
    if (!checkKeywords(call, {}) || !checkArgCount(call, 2, 2) ||
        !expectFloatTensor(*call.args[0],
                           "the logits (first argument) of 'cross_entropy'") ||
        !expectTokens(diags, *call.args[1],
                      "the targets (second argument) of 'cross_entropy'"))
      return true;
    const Type &logits = call.args[0]->type, &targets = call.args[1]->type;
    std::vector<Dim> lead(logits.shape.begin(),
                          logits.shape.end() - (logits.rank() ? 1 : 0));
    if (logits.rank() < 1 || logits.shape.back().symbolic ||
        lead != targets.shape) {
      diags.emitError(call.args[1]->getLoc(),
                      "'cross_entropy' takes logits [..., V] with a fixed V "
                      "and targets of the leading dims [...]; got " +
                          logits.str() + " and " + targets.str());
      return true;
    }
    result = Type::tensor(logits.dtype, {});
    return true;
  }
  if (name == "mse") {
    if (!checkKeywords(call, {}) || !checkArgCount(call, 2, 2) ||
        !expectFloatTensor(*call.args[0], "the first argument of 'mse'") ||
        !expectFloatTensor(*call.args[1], "the second argument of 'mse'"))
      return true;
    const Type &a = call.args[0]->type, &b = call.args[1]->type;
    if (a.shape != b.shape || a.dtype != b.dtype) {
      diags.emitError(call.args[1]->getLoc(),
                      "'mse' needs two tensors of one type, got " + a.str() +
                          " and " + b.str());
      return true;
    }
    result = Type::tensor(a.dtype, {});
    return true;
  }
  return false;
}
