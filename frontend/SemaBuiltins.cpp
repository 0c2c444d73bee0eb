//===- SemaBuiltins.cpp - Torsor semantic analysis: built-ins -------------===//
//
// Argument and shape rules of every built-in function: dense layers
// (activations, softmax, norms, concat, heads), group operations (compose,
// inverse, log, exp, act, dist2) and the geometric layers (lie_attention,
// grassmann_mix, relational_attention, relational_norm). Each check fills
// CallExpr::constants with the constant arguments, defaults included, so
// MLIRGen never re-derives them. docs/language.md documents the same rules.
//
//===----------------------------------------------------------------------===//

#include "frontend/Builtins.h"
#include "frontend/Sema.h"
#include "frontend/Suggest.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <set>

using namespace torsor::frontend;
using llvm::SMLoc;
using llvm::StringRef;
using llvm::Twine;

/// Checks every positional argument; false if any is invalid.
static bool allValid(const CallExpr &call) {
  return llvm::all_of(call.args,
                      [](const ExprPtr &e) { return !e->type.isInvalid(); });
}

/// Normalises an axis in [-rank, rank) to [0, rank); reports otherwise.
static bool normalizeAxis(DiagnosticEngine &diags, const CallExpr &call,
                          double axis, unsigned rank, double &result) {
  int64_t a = 0;
  bool exact = exactInt64(axis, a);
  if (!exact || a < -int64_t(rank) || a >= int64_t(rank)) {
    const KeywordArg *kw = call.getKeyword("axis");
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%g", axis);
    diags.emitError(kw ? kw->value->getLoc() : call.getLoc(),
                    "axis " + (exact ? Twine(a) : Twine(text)) +
                        " is out of range for a rank-" + Twine(rank) +
                        " tensor");
    return false;
  }
  result = double(a < 0 ? a + rank : a);
  return true;
}

/// PyTorch/NumPy spellings users bring along, with the Torsor way.
static std::string habitHint(StringRef name) {
  return llvm::StringSwitch<std::string>(name)
      .Cases({"matmul", "mm", "bmm"}, "; write 'a @ b'")
      .Cases({"pow", "square"}, "; Torsor has no power: write 'x * x'")
      .Cases({"t", "permute"}, "; use 'transpose(x)' (swaps the last two dims)")
      .Case("cat", "; did you mean 'concat'?")
      .Case("silu", "; use 'x * sigmoid(x)'")
      .Case("linear", "; write 'x @ W + b' with W of shape [in, out]")
      .Default("");
}

std::string Sema::suggestFunction(StringRef name) const {
  std::string habit = habitHint(name);
  if (!habit.empty())
    return habit;
  Suggester s(name);
#define BUILTIN(NAME, KIND, POSES) s.add(#NAME);
#include "frontend/Builtins.def"
  for (const auto &scope : scopes)
    for (const auto &entry : scope)
      if (entry.second.kind == Symbol::BlockSym)
        s.add(entry.getKey());
  return s.hint();
}

Type Sema::checkBuiltin(CallExpr &call) {
  StringRef name = call.callee;
  for (ExprPtr &arg : call.args)
    checkExpr(*arg);
  for (KeywordArg &kw : call.kwargs)
    checkExpr(*kw.value);
  // The family comes from the one registry of built-ins (Builtins.def).
  BuiltinKind kind = builtinKind(name, call.getKeyword("group") != nullptr);
  if (kind == BuiltinKind::GROUP)
    return checkGroupOp(call);
  if (kind == BuiltinKind::LAYER)
    return checkGeoLayer(call);

  static const char *const unary[] = {"relu", "gelu", "sigmoid", "tanh", "exp"};
  if (llvm::is_contained(unary, name)) {
    if (!checkKeywords(call, {}) || !checkArgCount(call, 1, 1) ||
        !expectFloatTensor(*call.args[0], "the argument of '" + name + "'"))
      return Type();
    return call.args[0]->type;
  }
  if (name == "softmax") {
    if (!checkKeywords(call, {"axis"}) || !checkArgCount(call, 1, 1) ||
        !expectFloatTensor(*call.args[0], "the argument of 'softmax'"))
      return Type();
    const Type &x = call.args[0]->type;
    double axis = -1;
    if (const KeywordArg *kw = call.getKeyword("axis"))
      if (!getNumber(*kw, axis))
        return Type();
    if (x.rank() == 0) {
      diags.emitError(call.args[0]->getLoc(), "'softmax' needs a tensor of "
                                              "rank 1 or more");
      return Type();
    }
    if (!normalizeAxis(diags, call, axis, x.rank(), axis))
      return Type();
    call.constants["axis"] = {axis};
    return x;
  }
  if (name == "layer_norm" || name == "rms_norm") {
    bool isLayer = name == "layer_norm";
    unsigned n = isLayer ? 3 : 2;
    if (!checkKeywords(call, {"eps"}) || !checkArgCount(call, n, n) ||
        !allValid(call))
      return Type();
    for (unsigned i = 0; i < n; ++i)
      if (!expectFloatTensor(*call.args[i], Twine("argument ") + Twine(i + 1) +
                                                " of '" + name + "'"))
        return Type();
    const Type &x = call.args[0]->type;
    if (x.rank() == 0) {
      diags.emitError(call.args[0]->getLoc(),
                      "'" + name + "' needs a tensor of rank 1 or more");
      return Type();
    }
    Type want = Type::tensor(x.dtype, {x.shape.back()});
    const char *names[] = {"x", "gamma", "beta"};
    for (unsigned i = 1; i < n; ++i)
      if (call.args[i]->type != want) {
        diags.emitError(call.args[i]->getLoc(),
                        "'" + name + "' " + names[i] + " must have type " +
                            want.str() + " (the last dim of x), got " +
                            call.args[i]->type.str());
        return Type();
      }
    if (!getPositiveEps(call, isLayer ? 1e-5 : 1e-6))
      return Type();
    return x;
  }
  if (name == "concat") {
    if (!checkKeywords(call, {"axis"}) || !checkArgCount(call, 2, 64) ||
        !allValid(call))
      return Type();
    for (const ExprPtr &arg : call.args)
      if (!expectFloatTensor(*arg, "each argument of 'concat'"))
        return Type();
    Type result = call.args[0]->type;
    double axis = -1;
    if (const KeywordArg *kw = call.getKeyword("axis"))
      if (!getNumber(*kw, axis))
        return Type();
    if (result.rank() == 0 ||
        !normalizeAxis(diags, call, axis, result.rank(), axis)) {
      if (result.rank() == 0)
        diags.emitError(call.args[0]->getLoc(),
                        "'concat' needs tensors of rank 1 or more");
      return Type();
    }
    unsigned ax = unsigned(axis);
    for (size_t i = 0; i < call.args.size(); ++i) {
      const Type &t = call.args[i]->type;
      bool same = t.rank() == result.rank() && t.dtype == result.dtype;
      for (unsigned d = 0; same && d < t.rank(); ++d)
        same = d == ax || t.shape[d] == result.shape[d];
      if (!same) {
        diags.emitError(call.args[i]->getLoc(),
                        "'concat' arguments must agree except along axis " +
                            Twine(ax) + ": " + call.args[0]->type.str() +
                            " vs " + t.str());
        return Type();
      }
      if (t.shape[ax].symbolic) {
        diags.emitError(call.args[i]->getLoc(),
                        "'concat' along symbolic dim '" + t.shape[ax].name +
                            "' is not supported; concatenate along a fixed "
                            "dim");
        return Type();
      }
      if (i)
        result.shape[ax].value += t.shape[ax].value;
    }
    call.constants["axis"] = {axis};
    return result;
  }
  if (name == "heads") {
    if (!checkKeywords(call, {}) || !checkArgCount(call, 2, 2) ||
        !expectFloatTensor(*call.args[0], "the first argument of 'heads'"))
      return Type();
    const Type &x = call.args[0]->type;
    int64_t n;
    if (!getInteger(*call.args[1], n, "the head count of 'heads'"))
      return Type();
    if (x.rank() != 2 || x.shape[1].symbolic || n <= 0 ||
        x.shape[1].value % n != 0) {
      diags.emitError(call.args[0]->getLoc(),
                      "'heads' splits a [L, D] tensor with a fixed D "
                      "divisible by the head count " +
                          Twine(n) + ", got " + x.str());
      return Type();
    }
    call.constants["heads"] = {double(n)};
    return Type::tensor(
        x.dtype, {Dim::fixed(n), x.shape[0], Dim::fixed(x.shape[1].value / n)});
  }
  if (name == "merge_heads") {
    if (!checkKeywords(call, {}) || !checkArgCount(call, 1, 1) ||
        !expectFloatTensor(*call.args[0], "the argument of 'merge_heads'"))
      return Type();
    const Type &x = call.args[0]->type;
    if (x.rank() != 3 || x.shape[0].symbolic || x.shape[2].symbolic) {
      diags.emitError(call.args[0]->getLoc(),
                      "'merge_heads' expects a [H, L, Dh] tensor with fixed "
                      "H and Dh, got " +
                          x.str());
      return Type();
    }
    // H and Dh are each at most 2^32: their product can overflow int64,
    // so compare by division.
    int64_t h = x.shape[0].value, dh = x.shape[2].value;
    if (h > kMaxDimSize / std::max<int64_t>(dh, 1)) {
      diags.emitError(call.args[0]->getLoc(),
                      "'merge_heads' of " + x.str() +
                          " makes a dim of H * Dh = " + Twine(h) + " * " +
                          Twine(dh) + "; the limit is 2^32");
      return Type();
    }
    return Type::tensor(x.dtype, {x.shape[1], Dim::fixed(h * dh)});
  }
  if (name == "transpose") {
    if (!checkKeywords(call, {}) || !checkArgCount(call, 1, 1) ||
        !expectFloatTensor(*call.args[0], "the argument of 'transpose'"))
      return Type();
    Type x = call.args[0]->type;
    if (x.rank() < 2) {
      diags.emitError(call.args[0]->getLoc(),
                      "'transpose' needs a tensor of rank 2 or more, got " +
                          x.str());
      return Type();
    }
    std::swap(x.shape[x.rank() - 1], x.shape[x.rank() - 2]);
    return x;
  }
  diags.emitError(call.getLoc(),
                  "unknown function '" + name + "'" + suggestFunction(name));
  return Type();
}

//===----------------------------------------------------------------------===//
// Group operations
//===----------------------------------------------------------------------===//

const Type *torsor::frontend::expectGroup(DiagnosticEngine &diags,
                                          const Expr &expr, const Twine &what) {
  if (expr.type.isInvalid())
    return nullptr;
  if (expr.type.isGroup())
    return &expr.type;
  diags.emitError(expr.getLoc(), what + " must be group elements, got " +
                                     (expr.type.weak ? std::string("a number")
                                                     : expr.type.str()));
  return nullptr;
}

/// Reads `lambda` (one weight per block, or per head per block) into
/// `call.constants`; `heads` rows are allowed when heads > 1.
bool torsor::frontend::getLambda(Sema &sema, DiagnosticEngine &diags,
                                 CallExpr &call, const GroupInfo &group,
                                 int64_t heads) {
  std::vector<double> lambda(group.blocks.size() * heads, 1.0);
  if (const KeywordArg *kw = call.getKeyword("lambda")) {
    std::vector<double> values;
    if (!sema.getNumberList(*kw, values))
      return false;
    size_t nb = group.blocks.size();
    if (values.size() == nb) {
      for (int64_t h = 0; h < heads; ++h)
        std::copy(values.begin(), values.end(), lambda.begin() + h * nb);
    } else if (values.size() == nb * heads) {
      lambda = values;
    } else {
      std::string blocks;
      for (const NormBlock &b : group.blocks)
        blocks += (blocks.empty() ? "" : ", ") + b.name;
      diags.emitError(kw->value->getLoc(),
                      "'lambda' needs one weight per algebra block of " +
                          group.name + " (" + blocks + ")" +
                          (heads > 1 ? ", or one row of them per head" : "") +
                          "; got " + Twine(values.size()) + " values");
      return false;
    }
    for (double v : lambda)
      if (v < 0) {
        diags.emitError(kw->value->getLoc(), "'lambda' weights must be "
                                             "non-negative");
        return false;
      }
  }
  call.constants["lambda"] = lambda;
  return true;
}

Type Sema::checkGroupOp(CallExpr &call) {
  StringRef name = call.callee;
  if (!allValid(call))
    return Type();
  if (name == "exp") {
    if (!checkKeywords(call, {"group"}) || !checkArgCount(call, 1, 1) ||
        !expectFloatTensor(*call.args[0], "the argument of 'exp'"))
      return Type();
    const KeywordArg *kw = call.getKeyword("group");
    const Type &g = kw->value->type;
    if (g.isInvalid())
      return Type();
    if (g.kind != Type::GroupName) {
      diags.emitError(kw->value->getLoc(), "'group' must name a group, e.g. "
                                           "'group = SE3'");
      return Type();
    }
    const Type &v = call.args[0]->type;
    if (v.dtype != DType::F32 && v.dtype != DType::F64) {
      diags.emitError(call.args[0]->getLoc(),
                      "group elements must be f32 or f64, got " + v.str());
      return Type();
    }
    if (v.rank() == 0 || v.shape.back() != Dim::fixed(g.group->algebraDim)) {
      diags.emitError(call.args[0]->getLoc(), "'exp' for " + g.group->name +
                                                  " needs coordinates with "
                                                  "last dim " +
                                                  Twine(g.group->algebraDim) +
                                                  ", got " + v.str());
      return Type();
    }
    call.group = g.group;
    return Type::groupSeq(g.group, v.dtype,
                          std::vector<Dim>(v.shape.begin(), v.shape.end() - 1));
  }
  bool binary = name == "compose" || name == "act" || name == "dist2";
  llvm::SmallVector<StringRef> kws;
  if (name == "dist2")
    kws = {"lambda", "pairwise"};
  if (!checkKeywords(call, kws) ||
      !checkArgCount(call, binary ? 2 : 1, binary ? 2 : 1))
    return Type();
  const Type *a =
      expectGroup(diags, *call.args[0], "the first argument of '" + name + "'");
  if (!a)
    return Type();
  call.group = a->group;
  if (name == "inverse")
    return *a;
  if (name == "membership_residual")
    return Type::tensor(a->dtype, a->shape);
  if (name == "log") {
    Type result = Type::tensor(a->dtype, a->shape);
    result.shape.push_back(Dim::fixed(a->group->algebraDim));
    return result;
  }
  if (name == "act") {
    const Type &p = call.args[1]->type;
    std::vector<Dim> want = a->shape;
    want.push_back(Dim::fixed(a->group->pointDim));
    if (!p.isTensor() || p.dtype != a->dtype || p.shape != want) {
      diags.emitError(call.args[1]->getLoc(),
                      "'act' of " + a->str() + " needs points of type " +
                          Type::tensor(a->dtype, want).str() + ", got " +
                          (p.weak ? std::string("a number") : p.str()));
      return Type();
    }
    return p;
  }
  const Type *b = expectGroup(diags, *call.args[1],
                              "the second argument of '" + name + "'");
  if (!b)
    return Type();
  if (b->group != a->group || b->dtype != a->dtype) {
    diags.emitError(call.args[1]->getLoc(),
                    "'" + name +
                        "' needs elements of the same group and "
                        "dtype: " +
                        a->str() + " vs " + b->str());
    return Type();
  }
  bool pairwise = false;
  if (const KeywordArg *kw = call.getKeyword("pairwise"))
    if (!getBool(*kw, pairwise))
      return Type();
  if (pairwise) {
    if (a->rank() != 1 || b->rank() != 1) {
      diags.emitError(call.getLoc(), "pairwise 'dist2' needs two sequences "
                                     "G[L] and G[M], got " +
                                         a->str() + " and " + b->str());
      return Type();
    }
  } else if (a->shape != b->shape) {
    diags.emitError(call.args[1]->getLoc(),
                    "'" + name + "' needs elements of the same shape: " +
                        a->str() + " vs " + b->str() +
                        (name == "dist2" ? "; use 'pairwise = true' for all "
                                           "pairs"
                                         : ""));
    return Type();
  }
  if (name == "compose")
    return *a;
  if (!getLambda(*this, diags, call, *a->group, 1))
    return Type();
  call.constants["pairwise"] = {pairwise ? 1.0 : 0.0};
  std::vector<Dim> shape = a->shape;
  if (pairwise)
    shape.push_back(b->shape[0]);
  return Type::tensor(a->dtype, shape);
}
