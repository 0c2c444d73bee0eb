//===- SemaExpr.cpp - Torsor semantic analysis: expressions ---------------===//
//
// Name lookup, arithmetic with numpy-style broadcasting over fixed and
// symbolic dims, matmul shape rules, block calls and `repeat`, and the
// helpers that read constant keyword arguments. Built-in functions are
// checked in SemaBuiltins.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/Sema.h"
#include "frontend/Suggest.h"
#include "llvm/ADT/STLExtras.h"

using namespace torsor::frontend;
using llvm::SMLoc;
using llvm::StringRef;
using llvm::Twine;

/// Most block instances one model may expand to.
static constexpr uint64_t kMaxBlockInstances = 10000;

Type Sema::checkExpr(Expr &expr) {
  Type result;
  switch (expr.getKind()) {
  case Expr::Number:
    result = Type::tensor(DType::F32, {});
    result.weak = true;
    break;
  case Expr::Bool:
    result = Type::ofKind(Type::Bool);
    break;
  case Expr::List: {
    for (ExprPtr &e : llvm::cast<ListExpr>(expr).elements)
      checkExpr(*e);
    result = Type::ofKind(Type::List);
    break;
  }
  case Expr::Var: {
    auto &var = llvm::cast<VarExpr>(expr);
    const Symbol *sym = lookup(var.name);
    if (!sym) {
      if (const GroupInfo *g = lookupGroup(var.name)) {
        result = Type::ofKind(Type::GroupName);
        result.group = g;
        break;
      }
      if (failedGroups.contains(var.name) || isDropped(var.name))
        break;
      diags.emitError(var.getLoc(), "use of undeclared name '" + var.name +
                                        "'" + suggestName(var.name));
      break;
    }
    switch (sym->kind) {
    case Symbol::DimSym:
      if (!sym->dim->isFixed) {
        diags.emitError(var.getLoc(), "symbolic dim '" + var.name +
                                          "' has no value here; only fixed "
                                          "dims can be used as numbers");
        break;
      }
      var.dim = sym->dim;
      result = Type::tensor(DType::F32, {});
      result.weak = true;
      break;
    case Symbol::BlockSym:
      diags.emitError(var.getLoc(), "block '" + var.name +
                                        "' must be called: '" + var.name +
                                        "(...)'");
      break;
    case Symbol::GroupSym:
      result = Type::ofKind(Type::GroupName);
      result.group = sym->group;
      break;
    case Symbol::Value:
      if (currentBlock && scopes.size() > 1 && !sym->isModelParam &&
          !scopes.back().count(var.name)) {
        diags.emitError(var.getLoc(),
                        "'" + var.name + "' is not visible inside block '" +
                            currentBlock->name + "'; pass it as an argument");
        break;
      }
      result = sym->type;
      break;
    }
    break;
  }
  case Expr::Unary: {
    auto &un = llvm::cast<UnaryExpr>(expr);
    Type operand = checkExpr(*un.operand);
    if (operand.isInvalid())
      break;
    if (!operand.isTensor() || !isFloatDType(operand.dtype)) {
      diags.emitError(un.getLoc(), "unary '-' needs a floating-point tensor, "
                                   "got " +
                                       operand.str());
      break;
    }
    result = operand;
    break;
  }
  case Expr::Binary:
    result = checkBinary(llvm::cast<BinaryExpr>(expr));
    break;
  case Expr::Call: {
    auto &call = llvm::cast<CallExpr>(expr);
    result = checkCall(call);
    if (!result.isInvalid() && &expr != bindValue)
      checkNestedMultiResult(call);
    break;
  }
  }
  if (!result.isInvalid() && !checkShapeLimits(expr.getLoc(), result))
    result = Type();
  expr.type = result;
  return result;
}

void Sema::checkNestedMultiResult(const CallExpr &call) {
  if (call.extraTypes.empty())
    return;
  // lie_attention_grad's results are three different gradients; the
  // two-set lie_attention with offsets is a ring block, whose lse is what
  // the merge needs. Either way an expression would silently see only the
  // first result. (The two-set form without offsets, plain cross-attention,
  // may stand in an expression: it means its output.)
  bool grad = call.bindAll;
  if (!grad && !call.getKeyword("query_offset") &&
      !call.getKeyword("key_offset"))
    return;
  diags.emitError(
      call.getLoc(),
      "'" + call.callee + "' " +
          (grad ? "returns 3 values (dg_q, dg_k, dv)"
                : "with query_offset/key_offset returns 2 values (out, lse)") +
          " and cannot be used inside an expression, which would see only "
          "the first; bind them first with `let " +
          (grad ? "dgq, dgk, dv" : "out, lse") + " = " + call.callee +
          "(...);` and use the names");
}

bool Sema::checkShapeLimits(llvm::SMLoc loc, const Type &type) {
  if (!type.isTensor() && !type.isGroup())
    return true;
  int64_t elements = 1;
  for (const Dim &d : type.shape) {
    if (d.symbolic)
      continue;
    if (d.value > kMaxDimSize) {
      diags.emitError(loc, "this makes a dim of " + Twine(d.value) + " in " +
                               type.str() + "; the limit is 2^32");
      return false;
    }
    // Divide rather than multiply: the product itself could overflow.
    int64_t factor = std::max<int64_t>(d.value, 1);
    if (elements > kMaxStaticElements / factor) {
      diags.emitError(loc, type.str() +
                               " has more than 2^56 elements in its fixed "
                               "dims; the limit keeps every byte size and "
                               "index inside 64 bits");
      return false;
    }
    elements *= factor;
  }
  return true;
}

bool Sema::broadcast(llvm::ArrayRef<Dim> a, llvm::ArrayRef<Dim> b,
                     std::vector<Dim> &result, SMLoc loc, const Twine &what,
                     const Type &lhs, const Type &rhs) {
  size_t rank = std::max(a.size(), b.size());
  result.assign(rank, Dim::fixed(1));
  for (size_t i = 0; i < rank; ++i) {
    const Dim *da = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const Dim *db = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    Dim &out = result[rank - 1 - i];
    if (!da || da->isOne())
      out = db ? *db : Dim::fixed(1);
    else if (!db || db->isOne() || *da == *db)
      out = *da;
    else {
      diags.emitError(loc, "cannot broadcast " + lhs.str() + " and " +
                               rhs.str() + " in " + what + ": dim " +
                               da->str() + " vs " + db->str());
      return false;
    }
  }
  return true;
}

Type Sema::checkBinary(BinaryExpr &expr) {
  Type lhs = checkExpr(*expr.lhs);
  Type rhs = checkExpr(*expr.rhs);
  if (lhs.isInvalid() || rhs.isInvalid())
    return Type();
  std::string opName = std::string("'") + expr.op + "'";
  for (const Type *t : {&lhs, &rhs}) {
    if (t->isGroup()) {
      diags.emitError(expr.getLoc(), "operator " + opName +
                                         " does not apply to group "
                                         "elements (" +
                                         t->str() +
                                         "); use compose, inverse, log or exp");
      return Type();
    }
    if (!t->isTensor()) {
      diags.emitError(expr.getLoc(), "operator " + opName +
                                         " needs tensor operands, got a " +
                                         t->str());
      return Type();
    }
    if (!isFloatDType(t->dtype)) {
      diags.emitError(expr.getLoc(), "operator " + opName +
                                         " needs floating-point operands, "
                                         "got " +
                                         t->str());
      return Type();
    }
  }
  if (!lhs.weak && !rhs.weak && lhs.dtype != rhs.dtype) {
    diags.emitError(expr.getLoc(), "operands of " + opName +
                                       " have different dtypes: " + lhs.str() +
                                       " and " + rhs.str());
    return Type();
  }
  DType dtype = lhs.weak ? rhs.dtype : lhs.dtype;
  if (expr.op != '@') {
    std::vector<Dim> shape;
    if (!broadcast(lhs.shape, rhs.shape, shape, expr.getLoc(), opName, lhs,
                   rhs))
      return Type();
    Type result = Type::tensor(dtype, std::move(shape));
    result.weak = lhs.weak && rhs.weak;
    return result;
  }
  if (lhs.rank() < 2 || rhs.rank() < 2) {
    diags.emitError(expr.getLoc(), "'@' needs operands of rank 2 or more, "
                                   "got " +
                                       lhs.str() + " @ " + rhs.str());
    return Type();
  }
  const Dim &k1 = lhs.shape[lhs.rank() - 1], &k2 = rhs.shape[rhs.rank() - 2];
  if (k1 != k2) {
    diags.emitError(expr.getLoc(),
                    "inner dims of '@' do not match: " + lhs.str() + " @ " +
                        rhs.str() + " (" + k1.str() + " vs " + k2.str() + ")");
    return Type();
  }
  std::vector<Dim> batch;
  if (!broadcast(llvm::ArrayRef<Dim>(lhs.shape).drop_back(2),
                 llvm::ArrayRef<Dim>(rhs.shape).drop_back(2), batch,
                 expr.getLoc(), "the batch dims of '@'", lhs, rhs))
    return Type();
  batch.push_back(lhs.shape[lhs.rank() - 2]);
  batch.push_back(rhs.shape.back());
  return Type::tensor(dtype, std::move(batch));
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

Type Sema::checkCall(CallExpr &call) {
  const Symbol *sym = lookup(call.callee);
  if (sym && sym->kind == Symbol::BlockSym)
    return checkBlockCall(call, *sym->block);
  if (!sym && isDropped(call.callee)) {
    for (ExprPtr &arg : call.args)
      checkExpr(*arg);
    return Type();
  }
  if (call.repeatCount) {
    diags.emitError(call.repeatLoc, "'repeat' applies to blocks, and '" +
                                        call.callee + "' is not a block");
    return Type();
  }
  if (!call.prefix.empty()) {
    diags.emitError(call.prefixLoc, "'as' applies to block calls, and '" +
                                        call.callee + "' is not a block");
    return Type();
  }
  if (sym) {
    diags.emitError(call.getLoc(),
                    "'" + call.callee + "' is not a function or block");
    return Type();
  }
  return checkBuiltin(call);
}

Type Sema::checkBlockCall(CallExpr &call, const BlockDecl &block) {
  call.block = &block;
  if (!call.kwargs.empty()) {
    diags.emitError(call.kwargs.front().loc,
                    "block '" + block.name + "' takes no keyword arguments");
    return Type();
  }
  if (call.args.size() != block.args.size()) {
    diags.emitError(call.getLoc(), "block '" + block.name + "' expects " +
                                       Twine(block.args.size()) +
                                       " arguments, got " +
                                       Twine(call.args.size()));
    return Type();
  }
  bool ok = true;
  for (size_t i = 0; i < call.args.size(); ++i) {
    Type arg = checkExpr(*call.args[i]);
    const Type &want = block.args[i].type;
    if (arg.isInvalid() || want.isInvalid()) {
      ok = false;
      continue;
    }
    if (arg != want) {
      diags.emitError(call.args[i]->getLoc(),
                      "argument '" + block.args[i].name + "' of block '" +
                          block.name + "' has type " + want.str() + ", got " +
                          arg.str());
      ok = false;
    }
  }
  if (call.repeatCount) {
    if (call.repeatCount < 1 || call.repeatCount > 1024) {
      diags.emitError(call.repeatLoc,
                      "repeat count must be between 1 and 1024, got " +
                          Twine(call.repeatCount));
      return Type();
    }
    if (block.args.empty() || block.args[0].type != block.resultType) {
      diags.emitError(call.repeatLoc,
                      "'repeat' needs block '" + block.name +
                          "' to return the type of its first argument" +
                          (block.args.empty()
                               ? std::string()
                               : " (" + block.args[0].type.str() + ")") +
                          ", but it returns " + block.resultType.str());
      return Type();
    }
  }
  // Every use is inlined with its own params: bound the expansion so
  // nested repeats cannot make MLIRGen run for ever.
  if (block.instances > kMaxBlockInstances)
    return Type(); // Reported inside the block already.
  uint64_t uses = call.repeatCount ? uint64_t(call.repeatCount) : 1;
  uint64_t before = instanceCount;
  instanceCount = std::min<uint64_t>(kMaxBlockInstances + 1,
                                     instanceCount + uses * block.instances);
  if (instanceCount > kMaxBlockInstances && before <= kMaxBlockInstances) {
    diags.emitError(call.getLoc(), "this use of block '" + block.name +
                                       "' expands the model to more than " +
                                       Twine(kMaxBlockInstances) +
                                       " block instances");
    return Type();
  }
  if (!ok)
    return Type();
  return block.resultType;
}

//===----------------------------------------------------------------------===//
// Argument helpers
//===----------------------------------------------------------------------===//

bool Sema::checkArgCount(const CallExpr &call, unsigned min, unsigned max) {
  unsigned n = call.args.size();
  if (n >= min && n <= max)
    return true;
  std::string expected = std::to_string(min);
  if (min != max)
    expected += " to " + std::to_string(max);
  diags.emitError(call.getLoc(), "'" + call.callee + "' expects " + expected +
                                     " positional argument" +
                                     (max == 1 ? "" : "s") + ", got " +
                                     Twine(n));
  return false;
}

bool Sema::checkKeywords(const CallExpr &call,
                         llvm::ArrayRef<StringRef> allowed) {
  bool ok = true;
  for (size_t i = 0; i < call.kwargs.size(); ++i) {
    const KeywordArg &kw = call.kwargs[i];
    if (!llvm::is_contained(allowed, kw.name)) {
      std::string list;
      Suggester s(kw.name);
      for (StringRef a : allowed) {
        list += (list.empty() ? "'" : ", '") + a.str() + "'";
        s.add(a);
      }
      // PyTorch's `dim=` is Torsor's `axis =`.
      std::string hint = kw.name == "dim" && llvm::is_contained(allowed, "axis")
                             ? "; Torsor calls it 'axis' (PyTorch's 'dim')"
                             : s.hint();
      diags.emitError(kw.loc, "unknown keyword argument '" + kw.name +
                                  "' for '" + call.callee + "'" +
                                  (list.empty()   ? "; it takes none"
                                   : hint.empty() ? "; expected one of " + list
                                                  : hint));
      ok = false;
      continue;
    }
    for (size_t j = 0; j < i; ++j)
      if (call.kwargs[j].name == kw.name) {
        diags.emitError(kw.loc,
                        "keyword argument '" + kw.name + "' is given twice");
        ok = false;
      }
  }
  return ok;
}

/// Evaluates `1`, `-2.5` or a fixed dim name to a double.
static bool evalScalar(const Expr &e, double &value) {
  if (auto *num = llvm::dyn_cast<NumberExpr>(&e)) {
    value = num->value;
    return true;
  }
  if (auto *var = llvm::dyn_cast<VarExpr>(&e)) {
    if (!var->dim)
      return false;
    value = double(var->dim->value);
    return true;
  }
  if (auto *un = llvm::dyn_cast<UnaryExpr>(&e)) {
    if (!evalScalar(*un->operand, value))
      return false;
    value = -value;
    return true;
  }
  return false;
}

/// True if `e` or any list element in it failed to type-check (and so
/// was reported already).
static bool hasInvalid(const Expr &e) {
  if (auto *list = llvm::dyn_cast<ListExpr>(&e))
    return llvm::any_of(list->elements,
                        [](const ExprPtr &x) { return hasInvalid(*x); });
  return e.type.isInvalid();
}

bool Sema::getNumber(const KeywordArg &kw, double &value) {
  if (hasInvalid(*kw.value))
    return false;
  if (evalScalar(*kw.value, value))
    return true;
  diags.emitError(kw.value->getLoc(),
                  "keyword argument '" + kw.name + "' must be a number");
  return false;
}

bool Sema::getPositiveEps(CallExpr &call, double defaultEps) {
  double eps = defaultEps;
  const KeywordArg *kw = call.getKeyword("eps");
  if (kw && !getNumber(*kw, eps))
    return false;
  if (eps <= 0) {
    diags.emitError(kw->value->getLoc(), "eps must be positive");
    return false;
  }
  call.constants["eps"] = {eps};
  return true;
}

bool Sema::getNumberList(const KeywordArg &kw, std::vector<double> &values) {
  values.clear();
  if (hasInvalid(*kw.value))
    return false;
  double v;
  if (evalScalar(*kw.value, v)) {
    values.push_back(v);
    return true;
  }
  // One level of nesting is allowed (per-head lambda rows); it flattens.
  auto *list = llvm::dyn_cast<ListExpr>(kw.value.get());
  for (size_t i = 0; list && i < list->elements.size(); ++i) {
    const Expr &e = *list->elements[i];
    if (evalScalar(e, v)) {
      values.push_back(v);
      continue;
    }
    auto *row = llvm::dyn_cast<ListExpr>(&e);
    for (size_t j = 0; row && j < row->elements.size(); ++j) {
      if (!evalScalar(*row->elements[j], v)) {
        row = nullptr;
        break;
      }
      values.push_back(v);
    }
    if (!row)
      list = nullptr;
  }
  if (list && !list->elements.empty())
    return true;
  diags.emitError(kw.value->getLoc(), "keyword argument '" + kw.name +
                                          "' must be a number or a "
                                          "non-empty list of numbers");
  return false;
}

bool Sema::getBool(const KeywordArg &kw, bool &value) {
  if (hasInvalid(*kw.value))
    return false;
  if (auto *b = llvm::dyn_cast<BoolExpr>(kw.value.get())) {
    value = b->value;
    return true;
  }
  diags.emitError(kw.value->getLoc(), "keyword argument '" + kw.name +
                                          "' must be 'true' or 'false'");
  return false;
}

bool Sema::getInteger(const Expr &expr, int64_t &value, const Twine &what) {
  if (hasInvalid(expr))
    return false;
  double v;
  int64_t i;
  if (evalScalar(expr, v) && exactInt64(v, i) &&
      (llvm::isa<VarExpr>(expr) || !llvm::isa<NumberExpr>(expr) ||
       llvm::cast<NumberExpr>(expr).isInteger)) {
    value = i;
    return true;
  }
  diags.emitError(expr.getLoc(), what + " must be an integer or a fixed dim");
  return false;
}

bool Sema::expectFloatTensor(const Expr &expr, const Twine &what) {
  const Type &t = expr.type;
  if (t.isInvalid())
    return false;
  if (t.isTensor() && isFloatDType(t.dtype) && !t.weak)
    return true;
  diags.emitError(expr.getLoc(),
                  what +
                      " must be a floating-point tensor, "
                      "got " +
                      (t.weak ? std::string("a number") : t.str()));
  return false;
}
