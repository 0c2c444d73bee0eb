//===- SemaGeo.cpp - Torsor semantic analysis: geometric layers -----------===//
//
// Argument rules of the sequence-level layers that map to the `geo`
// dialect: lie_attention (docs/math.md §1), grassmann_mix (§3) and the
// relational layers (§4). Weight layouts follow dialects/Geo/IR/GeoOps.td
// so MLIRGen can pass the params through unchanged.
//
//===----------------------------------------------------------------------===//

#include "frontend/Sema.h"
#include "llvm/ADT/STLExtras.h"
#include <cmath>
#include <set>

using namespace torsor::frontend;
using llvm::SMLoc;
using llvm::StringRef;
using llvm::Twine;

/// Reports unless `t` is an f32/f64 tensor: the geo ops take only those.
static bool expectGeoDType(DiagnosticEngine &diags, const Expr &e,
                           const Twine &what) {
  DType dt = e.type.dtype;
  if (dt == DType::F32 || dt == DType::F64)
    return true;
  diags.emitError(e.getLoc(),
                  what + " must be f32 or f64, got " + e.type.str());
  return false;
}

/// Checks a required keyword weight against `want`.
static bool checkWeight(Sema &sema, DiagnosticEngine &diags, CallExpr &call,
                        StringRef name, const Type &want, SMLoc callLoc) {
  const KeywordArg *kw = call.getKeyword(name);
  if (!kw) {
    diags.emitError(callLoc, "'" + call.callee + "' needs keyword argument '" +
                                 name + "' of type " + want.str());
    return false;
  }
  (void)sema;
  if (kw->value->type.isInvalid())
    return false;
  if (kw->value->type != want) {
    diags.emitError(kw->value->getLoc(), "'" + name + "' of '" + call.callee +
                                             "' must have type " + want.str() +
                                             ", got " + kw->value->type.str());
    return false;
  }
  return true;
}

/// Reads an offset keyword of the cross form: an i64 scalar (rank 0).
static bool checkOffset(DiagnosticEngine &diags, const CallExpr &call,
                        StringRef kw) {
  const KeywordArg *arg = call.getKeyword(kw);
  if (!arg)
    return true; // 0
  if (arg->value->type.isInvalid())
    return false; // already reported
  const Type &t = arg->value->type;
  if (t.isTensor() && t.dtype == DType::I64 && t.rank() == 0 && !t.weak)
    return true;
  diags.emitError(arg->value->getLoc(),
                  "'" + kw + "' of '" + call.callee +
                      "' must be an i64 scalar (declare it as an input, "
                      "`input " +
                      kw + ": i64;`), got " +
                      (t.weak ? std::string("a number") : t.str()));
  return false;
}

Type Sema::checkLieAttention(CallExpr &call) {
  StringRef name = call.callee;
  bool grad = name == "lie_attention_grad";
  if (!checkKeywords(call, {"heads", "tau", "lambda", "causal", "query_offset",
                            "key_offset"}) ||
      !checkArgCount(call, grad ? 6 : 2, grad ? 6 : 3))
    return Type();
  // lie_attention(g, v): self-attention; lie_attention(g_q, g_k, v) and
  // lie_attention_grad(g_q, g_k, v, out, lse, dout): two token sets.
  bool cross = call.args.size() > 2;
  const Type *g =
      expectGroup(diags, *call.args[0], "the first argument of '" + name + "'");
  if (!g)
    return Type();
  const Type *gk = g;
  if (cross) {
    gk = expectGroup(diags, *call.args[1],
                     "the key elements (second argument) of '" + name + "'");
    if (!gk)
      return Type();
    if (gk->group != g->group || gk->dtype != g->dtype ||
        gk->rank() != g->rank() ||
        !std::equal(g->shape.begin(), g->shape.end() - 1, gk->shape.begin())) {
      std::vector<Dim> shown = g->shape;
      shown.back() = Dim::sym("Lk");
      diags.emitError(call.args[1]->getLoc(),
                      "the key elements of '" + name +
                          "' must be the query elements' group, dtype and "
                          "leading dims (" +
                          Type::groupSeq(g->group, g->dtype, shown).str() +
                          " for queries " + g->str() + "), got " + gk->str());
      return Type();
    }
  } else {
    for (StringRef kw : {"query_offset", "key_offset"})
      if (const KeywordArg *arg = call.getKeyword(kw)) {
        diags.emitError(arg->loc,
                        "'" + kw +
                            "' needs the two-set form lie_attention(g_q, "
                            "g_k, v, ...); with one set use "
                            "lie_attention(g_q, g_q, v, ...)");
        return Type();
      }
  }
  unsigned vi = cross ? 2 : 1;
  if (!expectFloatTensor(*call.args[vi], "the values of '" + name + "'"))
    return Type();
  call.group = g->group;
  const Type &v = call.args[vi]->type;
  std::vector<Dim> want = gk->shape;
  if (v.rank() != want.size() + 1 ||
      !std::equal(want.begin(), want.end(), v.shape.begin()) ||
      v.shape.back().symbolic || v.dtype != g->dtype) {
    std::vector<Dim> shown = want;
    shown.push_back(Dim::sym("D"));
    diags.emitError(call.args[vi]->getLoc(),
                    "'" + name + "' needs values of type " +
                        Type::tensor(g->dtype, shown).str() +
                        " with a fixed D for " + (cross ? "key " : "") +
                        "elements " + gk->str() + ", got " + v.str());
    return Type();
  }
  if (!checkOffset(diags, call, "query_offset") ||
      !checkOffset(diags, call, "key_offset"))
    return Type();
  int64_t heads = 1;
  if (const KeywordArg *kw = call.getKeyword("heads"))
    if (!getInteger(*kw->value, heads, "'heads'"))
      return Type();
  if (heads < 1 || v.shape.back().value % heads != 0) {
    diags.emitError(call.getKeyword("heads")->value->getLoc(),
                    "'heads' must divide the value dim " +
                        Twine(v.shape.back().value) + ", got " + Twine(heads));
    return Type();
  }
  // Every head gets its own τ, λ row and, in the fused kernels, its own
  // unrolled score code: a bound keeps compile time and memory linear in
  // what a real model uses (2^32 heads once aborted with a 32 GB vector).
  if (heads > kMaxAttentionHeads) {
    diags.emitError(call.getKeyword("heads")->value->getLoc(),
                    "'heads' is at most " + Twine(kMaxAttentionHeads) +
                        ", got " + Twine(heads));
    return Type();
  }
  std::vector<double> tau(heads, 1.0);
  if (const KeywordArg *kw = call.getKeyword("tau")) {
    std::vector<double> values;
    if (!getNumberList(*kw, values))
      return Type();
    if (values.size() == 1)
      values.assign(heads, values[0]);
    if (values.size() != size_t(heads)) {
      diags.emitError(kw->value->getLoc(),
                      "'tau' needs one temperature per head (" + Twine(heads) +
                          "), got " + Twine(values.size()));
      return Type();
    }
    if (llvm::any_of(values, [](double t) { return !(t > 0); })) {
      diags.emitError(kw->value->getLoc(), "'tau' temperatures must be "
                                           "positive");
      return Type();
    }
    tau = values;
  }
  if (!getLambda(*this, diags, call, *g->group, heads))
    return Type();
  bool causal = false;
  if (const KeywordArg *kw = call.getKeyword("causal"))
    if (!getBool(*kw, causal))
      return Type();
  call.constants["heads"] = {double(heads)};
  call.constants["tau"] = tau;
  call.constants["causal"] = {causal ? 1.0 : 0.0};
  if (!cross)
    return v;
  // Per query row: out [.., Lq, D] and lse [.., Lq, heads].
  std::vector<Dim> rows = g->shape;
  rows.push_back(v.shape.back());
  Type out = Type::tensor(g->dtype, rows);
  rows.back() = Dim::fixed(heads);
  Type lse = Type::tensor(g->dtype, rows);
  if (!grad) {
    call.extraTypes = {lse};
    return out;
  }
  // The block backward: out, lse and dout of the forward's types.
  for (auto [i, what, type] :
       {std::tuple<unsigned, const char *, const Type *>{3, "out", &out},
        {4, "lse", &lse},
        {5, "dout", &out}}) {
    const Type &t = call.args[i]->type;
    if (t.isInvalid())
      return Type();
    if (t != *type) {
      diags.emitError(call.args[i]->getLoc(),
                      "'" + Twine(what) + "' (argument " + Twine(i + 1) +
                          ") of 'lie_attention_grad' must have type " +
                          type->str() + ", got " + t.str());
      return Type();
    }
  }
  // Gradients of the elements: left-trivialised, k algebra coordinates
  // per token (what --grad returns for group inputs).
  auto algebra = [&](const Type &elems) {
    std::vector<Dim> shape = elems.shape;
    shape.push_back(Dim::fixed(g->group->algebraDim));
    return Type::tensor(g->dtype, shape);
  };
  call.extraTypes = {algebra(*gk), v};
  call.bindAll = true;
  return algebra(*g);
}

Type Sema::checkGeoLayer(CallExpr &call) {
  StringRef name = call.callee;
  if (!llvm::all_of(call.args,
                    [](const ExprPtr &e) { return !e->type.isInvalid(); }))
    return Type();

  if (name == "lie_attention" || name == "lie_attention_grad")
    return checkLieAttention(call);

  if (name == "grassmann_mix") {
    if (!checkKeywords(call,
                       {"w_red", "b_red", "w_plucker", "b_plucker", "w_gate",
                        "b_gate", "offsets", "causal", "r", "eps"}) ||
        !checkArgCount(call, 1, 1) ||
        !expectFloatTensor(*call.args[0], "the input of 'grassmann_mix'") ||
        !expectGeoDType(diags, *call.args[0], "the input of 'grassmann_mix'"))
      return Type();
    const Type &h = call.args[0]->type;
    if (h.rank() < 2 || h.shape.back().symbolic) {
      diags.emitError(call.args[0]->getLoc(),
                      "'grassmann_mix' needs an input [L, d] with a fixed d, "
                      "got " +
                          h.str());
      return Type();
    }
    Dim d = h.shape.back();
    const KeywordArg *wRed = call.getKeyword("w_red");
    if (!wRed) {
      diags.emitError(call.getLoc(), "'grassmann_mix' needs keyword argument "
                                     "'w_red' of type " +
                                         getDTypeName(h.dtype) + "[r, " +
                                         d.str() + "]");
      return Type();
    }
    const Type &wr = wRed->value->type;
    if (wr.isInvalid())
      return Type();
    if (wr.rank() != 2 || wr.shape[0].symbolic || wr.shape[1] != d ||
        wr.dtype != h.dtype || !wr.isTensor()) {
      diags.emitError(wRed->value->getLoc(),
                      "'w_red' of 'grassmann_mix' must have type " +
                          getDTypeName(h.dtype) + "[r, " + d.str() +
                          "] with a fixed r, got " + wr.str());
      return Type();
    }
    int64_t r = wr.shape[0].value;
    if (const KeywordArg *kw = call.getKeyword("r")) {
      int64_t given;
      if (!getInteger(*kw->value, given, "'r'"))
        return Type();
      if (given != r) {
        diags.emitError(kw->value->getLoc(), "'r' is " + Twine(given) +
                                                 " but 'w_red' reduces to " +
                                                 Twine(r) + " dims");
        return Type();
      }
    }
    if (r < 2) {
      diags.emitError(wRed->value->getLoc(), "'grassmann_mix' needs a "
                                             "reduced dim r of at least 2");
      return Type();
    }
    // w_plucker has C(r, 2) columns, a dim like any other (≤ 2^32); the
    // bound also keeps r(r − 1) inside int64.
    if (r > 92682) {
      diags.emitError(wRed->value->getLoc(),
                      "'grassmann_mix' has r(r - 1)/2 Pluecker coordinates, "
                      "at most 2^32, so r is at most 92682; got " +
                          Twine(r));
      return Type();
    }
    DType dt = h.dtype;
    SMLoc loc = call.getLoc();
    if (!checkWeight(*this, diags, call, "b_red",
                     Type::tensor(dt, {Dim::fixed(r)}), loc) ||
        !checkWeight(*this, diags, call, "w_plucker",
                     Type::tensor(dt, {d, Dim::fixed(r * (r - 1) / 2)}), loc) ||
        !checkWeight(*this, diags, call, "b_plucker", Type::tensor(dt, {d}),
                     loc) ||
        !checkWeight(*this, diags, call, "w_gate",
                     Type::tensor(dt, {d, Dim::fixed(2 * d.value)}), loc) ||
        !checkWeight(*this, diags, call, "b_gate", Type::tensor(dt, {d}), loc))
      return Type();
    const KeywordArg *offKw = call.getKeyword("offsets");
    if (!offKw) {
      diags.emitError(loc, "'grassmann_mix' needs keyword argument 'offsets', "
                           "e.g. 'offsets = [1, 2, 4, 8]'");
      return Type();
    }
    std::vector<double> offsets;
    if (!getNumberList(*offKw, offsets))
      return Type();
    // The -O0 oracle unrolls one slice-and-project chain per offset, and
    // bufferization's alias analysis grows faster than quadratically with
    // that chain (100 offsets took minutes): bound it where models live.
    if (offsets.size() > size_t(kMaxGrassmannOffsets)) {
      diags.emitError(offKw->value->getLoc(), "'grassmann_mix' takes at most " +
                                                  Twine(kMaxGrassmannOffsets) +
                                                  " offsets, got " +
                                                  Twine(offsets.size()));
      return Type();
    }
    std::set<double> seen;
    int64_t asInt;
    for (double o : offsets)
      if (o < 1 || o > 1e9 || !exactInt64(o, asInt) || !seen.insert(o).second) {
        diags.emitError(offKw->value->getLoc(),
                        "'offsets' must be distinct positive integers");
        return Type();
      }
    bool causal = false;
    if (const KeywordArg *kw = call.getKeyword("causal"))
      if (!getBool(*kw, causal))
        return Type();
    // eps must be positive, as geo.grassmann_mix's verifier requires
    // (eps = -1 once passed Sema and failed in the verifier).
    if (!getPositiveEps(call, 1e-6))
      return Type();
    call.constants["offsets"] = offsets;
    call.constants["causal"] = {causal ? 1.0 : 0.0};
    call.constants["r"] = {double(r)};
    return h;
  }

  if (name == "relational_attention") {
    if (!checkKeywords(call, {"g_qk", "g_vo", "heads", "scale", "causal"}) ||
        !checkArgCount(call, 1, 1) ||
        !expectFloatTensor(*call.args[0],
                           "the input of 'relational_attention'") ||
        !expectGeoDType(diags, *call.args[0],
                        "the input of 'relational_attention'"))
      return Type();
    const Type &x = call.args[0]->type;
    if (x.rank() < 2 || x.shape.back().symbolic) {
      diags.emitError(call.args[0]->getLoc(),
                      "'relational_attention' needs an input [L, d] with a "
                      "fixed d, got " +
                          x.str());
      return Type();
    }
    Dim d = x.shape.back();
    const KeywordArg *gqk = call.getKeyword("g_qk");
    int64_t heads = 1;
    if (gqk && gqk->value->type.rank() == 3 &&
        !gqk->value->type.shape[0].symbolic)
      heads = gqk->value->type.shape[0].value;
    if (const KeywordArg *kw = call.getKeyword("heads")) {
      int64_t given;
      if (!getInteger(*kw->value, given, "'heads'"))
        return Type();
      if (given != heads && gqk && gqk->value->type.rank() == 3) {
        diags.emitError(kw->value->getLoc(), "'heads' is " + Twine(given) +
                                                 " but 'g_qk' has " +
                                                 Twine(heads) + " heads");
        return Type();
      }
      heads = given;
    }
    Type want = Type::tensor(x.dtype, {Dim::fixed(heads), d, d});
    if (!checkWeight(*this, diags, call, "g_qk", want, call.getLoc()) ||
        !checkWeight(*this, diags, call, "g_vo", want, call.getLoc()))
      return Type();
    double scale = 1.0 / std::sqrt(double(d.value) / double(heads));
    if (const KeywordArg *kw = call.getKeyword("scale"))
      if (!getNumber(*kw, scale))
        return Type();
    bool causal = false;
    if (const KeywordArg *kw = call.getKeyword("causal"))
      if (!getBool(*kw, causal))
        return Type();
    call.constants["heads"] = {double(heads)};
    call.constants["scale"] = {scale};
    call.constants["causal"] = {causal ? 1.0 : 0.0};
    return x;
  }

  // relational_norm
  if (!checkKeywords(call, {"eps"}) || !checkArgCount(call, 1, 1) ||
      !expectFloatTensor(*call.args[0], "the input of 'relational_norm'") ||
      !expectGeoDType(diags, *call.args[0], "the input of 'relational_norm'"))
    return Type();
  if (call.args[0]->type.rank() == 0) {
    diags.emitError(call.args[0]->getLoc(), "'relational_norm' needs a "
                                            "tensor of rank 1 or more");
    return Type();
  }
  if (!getPositiveEps(call, 1e-5))
    return Type();
  return call.args[0]->type;
}
