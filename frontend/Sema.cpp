//===- Sema.cpp - Torsor semantic analysis: declarations ------------------===//
//
// Scopes, types, statements, blocks and `group` declarations. Expressions
// are in SemaExpr.cpp and built-ins in SemaBuiltins.cpp. Every check
// reports a located error and carries on with an Invalid type, which later
// checks accept silently, so one mistake produces one message.
//
//===----------------------------------------------------------------------===//

#include "frontend/Sema.h"
#include "frontend/Parser.h"
#include "frontend/Suggest.h"

#include "dialects/Lie/IR/Groups/GroupAlgebra.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>
#include <cstdio>

using namespace torsor::frontend;
namespace algebra = torsor::lie::algebra;
using llvm::SMLoc;
using llvm::StringRef;
using llvm::Twine;

/// Largest fixed dim (keeps products of dims far from overflow).
/// Largest rank of a written type.
static constexpr size_t kMaxRank = 8;

std::unique_ptr<Module>
torsor::frontend::parseAndCheck(const llvm::SourceMgr &srcMgr,
                                unsigned bufferId, DiagnosticEngine &diags) {
  std::unique_ptr<Module> module = parseTorsor(srcMgr, bufferId, diags);
  // Sema still runs after parse errors: the parser dropped the broken
  // statements, and the rest may hold independent mistakes.
  Sema sema(diags);
  sema.check(*module);
  if (diags.getNumErrors())
    return nullptr;
  return module;
}

bool Sema::check(Module &mod) {
  module = &mod;
  unsigned before = diags.getNumErrors();
  for (auto &group : mod.groups) {
    checkGroup(*group);
    if (!lookupGroup(group->name))
      failedGroups.insert(group->name);
  }
  llvm::StringMap<SMLoc> modelNames;
  for (auto &model : mod.models) {
    if (!modelNames.insert({model->name, model->loc}).second)
      diags.emitError(model->loc,
                      "redefinition of model '" + model->name + "'");
    unsigned modelErrors = diags.getNumErrors();
    checkModel(*model);
    // Sema stays quiet about statements that failed to parse, so a clean
    // check does not mean well-formed calls unless the parse was clean too.
    if (diags.getNumErrors() == modelErrors && !model->hadParseError)
      analyzeLeftInvariance(*model);
  }
  return diags.getNumErrors() == before;
}

//===----------------------------------------------------------------------===//
// Scopes and types
//===----------------------------------------------------------------------===//

bool Sema::declare(StringRef name, SMLoc loc, Symbol symbol) {
  symbol.loc = loc;
  if (lookupGroup(name)) {
    diags.emitError(loc, "'" + name + "' is a group and cannot be redefined");
    return false;
  }
  for (auto &scope : scopes) {
    auto it = scope.find(name);
    if (it == scope.end())
      continue;
    // Block bodies may reuse names of model values they cannot see anyway.
    bool visible = &scope == &scopes.back() ||
                   it->second.kind != Symbol::Value || it->second.isModelParam;
    if (visible) {
      diags.emitError(loc, "redefinition of '" + name + "'");
      return false;
    }
  }
  scopes.back()[name] = std::move(symbol);
  return true;
}

const Symbol *Sema::lookup(StringRef name) const {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end())
      return &found->second;
  }
  return nullptr;
}

const GroupInfo *Sema::lookupGroup(StringRef name) const {
  if (const GroupInfo *g = lookupBuiltinGroup(name))
    return g;
  auto it = groups.find(name);
  return it == groups.end() ? nullptr : it->second;
}

std::string Sema::suggestGroup(StringRef name) const {
  Suggester s(name);
  for (const GroupInfo &g : getBuiltinGroups())
    s.add(g.name);
  for (const auto &entry : groups)
    s.add(entry.getKey());
  return s.hint();
}

std::string Sema::suggestName(StringRef name) const {
  Suggester s(name);
  for (const auto &scope : scopes)
    for (const auto &entry : scope)
      if (entry.second.kind == Symbol::Value ||
          (entry.second.kind == Symbol::DimSym && entry.second.dim->isFixed))
        s.add(entry.getKey());
  return s.hint();
}

/// "SO2, SE2, ..." for messages.
static std::string builtinGroupList() {
  std::string s;
  for (const GroupInfo &g : getBuiltinGroups())
    s += (s.empty() ? "" : ", ") + g.name;
  return s;
}

Type Sema::resolveType(const TypeExpr &t) {
  if (t.dims.size() > kMaxRank) {
    diags.emitError(t.loc, "type has rank " + Twine(t.dims.size()) +
                               "; the limit is " + Twine(kMaxRank));
    return Type();
  }
  std::vector<Dim> shape;
  bool ok = true;
  for (const DimExpr &d : t.dims) {
    if (d.name.empty()) {
      if (d.value <= 0 || d.value > kMaxDimSize) {
        diags.emitError(d.loc, "dim size must be between 1 and 2^32, got " +
                                   Twine(d.value));
        ok = false;
      }
      shape.push_back(Dim::fixed(d.value));
      continue;
    }
    const Symbol *sym = lookup(d.name);
    if (!sym && isDropped(d.name)) {
      ok = false;
      continue;
    }
    if (!sym || sym->kind != Symbol::DimSym) {
      Suggester s(d.name);
      for (const auto &scope : scopes)
        for (const auto &entry : scope)
          if (entry.second.kind == Symbol::DimSym)
            s.add(entry.getKey());
      std::string hint = s.hint();
      diags.emitError(
          d.loc, "unknown dim '" + d.name + "'" +
                     (hint.empty() ? "; declare it with 'dim " + d.name + ";'"
                                   : hint));
      ok = false;
      continue;
    }
    shape.push_back(sym->dim->isFixed ? Dim::fixed(sym->dim->value)
                                      : Dim::sym(d.name));
  }
  if (!ok)
    return Type();
  if (std::optional<DType> dt = parseDType(t.base)) {
    if (!t.elemDType.empty()) {
      diags.emitError(t.elemDTypeLoc, "an element dtype '<" + t.elemDType +
                                          ">' is only allowed on group "
                                          "types");
      return Type();
    }
    Type result = Type::tensor(*dt, std::move(shape));
    return checkShapeLimits(t.loc, result) ? result : Type();
  }
  const GroupInfo *group = lookupGroup(t.base);
  if (!group) {
    if (failedGroups.contains(t.base))
      return Type();
    std::string hint = suggestGroup(t.base);
    if (hint.empty() && !llvm::isUpper(t.base.empty() ? 'a' : t.base[0])) {
      Suggester s(t.base);
      for (StringRef dt : {"f16", "bf16", "f32", "f64", "i32", "i64"})
        s.add(dt);
      hint = s.hint();
    }
    if (!t.base.empty() && llvm::isUpper(t.base[0]))
      diags.emitError(t.loc,
                      "unknown group '" + t.base + "'" +
                          (hint.empty() ? "; expected " + builtinGroupList() +
                                              " or a declared group"
                                        : hint));
    else
      diags.emitError(t.loc,
                      "unknown type '" + t.base + "'" +
                          (hint.empty() ? "; expected a dtype (f16, bf16, f32, "
                                          "f64, i32, i64) or a group"
                                        : hint));
    return Type();
  }
  DType dt = DType::F32;
  if (!t.elemDType.empty()) {
    std::optional<DType> elem = parseDType(t.elemDType);
    if (!elem || (*elem != DType::F32 && *elem != DType::F64)) {
      diags.emitError(t.elemDTypeLoc, "group elements must be f32 or f64, "
                                      "got '" +
                                          t.elemDType + "'");
      return Type();
    }
    dt = *elem;
  }
  if (shape.size() + 2 > kMaxRank) {
    diags.emitError(t.loc, "group type has too many sequence dims");
    return Type();
  }
  Type result = Type::groupSeq(group, dt, std::move(shape));
  return checkShapeLimits(t.loc, result) ? result : Type();
}

//===----------------------------------------------------------------------===//
// Models and statements
//===----------------------------------------------------------------------===//

void Sema::checkModel(ModelDecl &model) {
  currentModel = &model;
  instanceCount = 0;
  scopes.clear();
  scopes.emplace_back();
  bool hasOutput = false;
  for (StmtPtr &stmt : model.body) {
    checkStmt(*stmt);
    hasOutput |= stmt->getKind() == Stmt::Output;
  }
  if (!hasOutput && !model.hadParseError)
    diags.emitError(model.loc, "model '" + model.name +
                                   "' has no outputs; add 'output NAME = "
                                   "EXPR;'");
  scopes.clear();
}

void Sema::checkStmt(Stmt &stmt) {
  Symbol sym;
  switch (stmt.getKind()) {
  case Stmt::Dim: {
    auto &dim = llvm::cast<DimDecl>(stmt);
    if (dim.isFixed && (dim.value <= 0 || dim.value > kMaxDimSize))
      diags.emitError(dim.valueLoc, "dim '" + dim.name +
                                        "' must be between 1 and 2^32, got " +
                                        Twine(dim.value));
    sym.kind = Symbol::DimSym;
    sym.dim = &dim;
    declare(dim.name, dim.getLoc(), sym);
    return;
  }
  case Stmt::Input:
  case Stmt::Param: {
    auto &decl = llvm::cast<ValueDecl>(stmt);
    decl.type = resolveType(decl.typeExpr);
    if (stmt.getKind() == Stmt::Param && decl.type.isGroup()) {
      diags.emitError(decl.typeExpr.loc,
                      "params must be tensors; group elements are inputs");
      decl.type = Type();
    }
    if (decl.type.isTensor() && stmt.getKind() == Stmt::Param &&
        !isFloatDType(decl.type.dtype)) {
      diags.emitError(decl.typeExpr.loc, "params must have a floating-point "
                                         "dtype, got " +
                                             decl.type.str());
      decl.type = Type();
    }
    sym.type = decl.type;
    sym.isModelParam = stmt.getKind() == Stmt::Param && !currentBlock;
    declare(decl.name, decl.getLoc(), sym);
    return;
  }
  case Stmt::Block:
    checkBlock(llvm::cast<BlockDecl>(stmt));
    return;
  case Stmt::Let:
  case Stmt::Output:
  case Stmt::Return: {
    auto &bind = llvm::cast<BindStmt>(stmt);
    // Block bodies are checked from inside call expressions: restore the
    // enclosing statement's value afterwards.
    const Expr *outerBind = bindValue;
    bindValue = bind.value.get();
    Type type = checkExpr(*bind.value);
    bindValue = outerBind;
    if (!type.isInvalid() && type.kind != Type::Tensor &&
        type.kind != Type::Group) {
      diags.emitError(bind.value->getLoc(),
                      Twine("a ") + type.str() +
                          " cannot be bound to a name; only tensors and "
                          "group elements can");
      type = Type();
    }
    if (type.weak)
      type.weak = false;
    if (bind.hasType) {
      Type declared = resolveType(bind.typeExpr);
      if (!declared.isInvalid() && !type.isInvalid() && declared != type)
        diags.emitError(bind.typeExpr.loc,
                        "'" + bind.name + "' is declared as " + declared.str() +
                            " but its value has type " + type.str());
    }
    if (stmt.getKind() == Stmt::Return) {
      sawReturn = true;
      if (!type.isInvalid() && !currentBlock->resultType.isInvalid() &&
          type != currentBlock->resultType)
        diags.emitError(bind.value->getLoc(),
                        "block '" + currentBlock->name + "' returns " +
                            currentBlock->resultType.str() +
                            " but this value has type " + type.str());
      return;
    }
    sym.type = type;
    declare(bind.name, bind.getLoc(), sym);
    checkMultiBind(bind, type);
    return;
  }
  }
}

void Sema::checkMultiBind(BindStmt &bind, const Type &first) {
  auto *call = llvm::dyn_cast<CallExpr>(bind.value.get());
  size_t extra = call ? call->extraTypes.size() : 0;
  if (first.isInvalid())
    extra = bind.extraNames.size(); // declare the names, report nothing
  else if (bind.extraNames.size() > extra ||
           (call && call->bindAll && bind.extraNames.size() != extra)) {
    if (extra == 0)
      diags.emitError(bind.extraLocs.front(),
                      "'" + bind.name +
                          "' is bound to a value with one result; only "
                          "lie_attention(g_q, g_k, v, ...) (out, lse) and "
                          "lie_attention_grad (dg_q, dg_k, dv) return several");
    else
      diags.emitError(bind.value->getLoc(),
                      "'" + call->callee + "' returns " + Twine(extra + 1) +
                          " values here; bind them all: `let " +
                          (call->callee == "lie_attention_grad" ? "dgq, dgk, dv"
                                                                : "out, lse") +
                          " = " + call->callee + "(...)`");
  }
  for (size_t i = 0; i < bind.extraNames.size(); ++i) {
    Symbol more;
    more.kind = Symbol::Value;
    more.type = i < extra && !first.isInvalid() ? call->extraTypes[i] : Type();
    declare(bind.extraNames[i], bind.extraLocs[i], more);
  }
}

void Sema::checkBlock(BlockDecl &block) {
  Symbol blockSym;
  blockSym.kind = Symbol::BlockSym;
  blockSym.block = &block;
  // Resolve the signature in the model scope, then check the body in a
  // scope of its own that sees the model's dims and params only.
  for (BlockArg &arg : block.args)
    arg.type = resolveType(arg.typeExpr);
  block.resultType = resolveType(block.resultTypeExpr);
  scopes.emplace_back();
  currentBlock = &block;
  sawReturn = false;
  uint64_t outerInstances = instanceCount;
  instanceCount = 0;
  for (BlockArg &arg : block.args) {
    Symbol sym;
    sym.type = arg.type;
    declare(arg.name, arg.loc, sym);
  }
  for (size_t i = 0; i < block.body.size(); ++i) {
    Stmt &stmt = *block.body[i];
    if (sawReturn) {
      diags.emitError(stmt.getLoc(),
                      "statement after 'return' in block '" + block.name + "'");
      break;
    }
    checkStmt(stmt);
  }
  if (!sawReturn)
    diags.emitError(block.getLoc(),
                    "block '" + block.name + "' has no 'return' statement");
  block.instances = 1 + instanceCount;
  instanceCount = outerInstances;
  currentBlock = nullptr;
  scopes.pop_back();
  declare(block.name, block.getLoc(), blockSym);
}

//===----------------------------------------------------------------------===//
// Declared groups
//===----------------------------------------------------------------------===//

/// Evaluates a literal number, allowing a leading minus.
static bool evalNumber(const Expr &e, double &value) {
  if (auto *num = llvm::dyn_cast<NumberExpr>(&e)) {
    value = num->value;
    return true;
  }
  if (auto *un = llvm::dyn_cast<UnaryExpr>(&e)) {
    if (!evalNumber(*un->operand, value))
      return false;
    value = -value;
    return true;
  }
  return false;
}

void Sema::checkGroup(GroupDecl &group) {
  GroupInfo &info = group.info;
  info.name = group.name;
  info.mnemonic = group.name;
  info.builtin = false;
  if (lookupBuiltinGroup(group.name)) {
    diags.emitError(group.loc, "group '" + group.name +
                                   "' is built in and cannot be redeclared");
    return;
  }
  if (groups.count(group.name)) {
    diags.emitError(group.loc, "redefinition of group '" + group.name + "'");
    return;
  }
  int64_t n = group.matrixSize;
  if (n == 0) {
    diags.emitError(group.loc,
                    "group '" + group.name + "' needs a 'matrix N;' line");
    return;
  }
  if (n < algebra::kMinMatrixSize || n > algebra::kMaxMatrixSize) {
    diags.emitError(group.matrixLoc,
                    "matrix size must be between " +
                        Twine(algebra::kMinMatrixSize) + " and " +
                        Twine(algebra::kMaxMatrixSize) + ", got " + Twine(n));
    return;
  }
  info.matrixSize = n;
  if (group.generators.empty()) {
    diags.emitError(group.loc,
                    "group '" + group.name + "' declares no generators");
    return;
  }
  llvm::StringMap<unsigned> genIndex;
  bool ok = true;
  for (GeneratorDecl &gen : group.generators) {
    if (!genIndex.insert({gen.name, genIndex.size()}).second) {
      diags.emitError(gen.loc, "redefinition of generator '" + gen.name + "'");
      ok = false;
      continue;
    }
    auto *rows = llvm::dyn_cast<ListExpr>(gen.matrix.get());
    bool shapeOk = rows && rows->elements.size() == size_t(n);
    for (size_t r = 0; shapeOk && r < rows->elements.size(); ++r) {
      auto *row = llvm::dyn_cast<ListExpr>(rows->elements[r].get());
      shapeOk = row && row->elements.size() == size_t(n);
      for (size_t c = 0; shapeOk && c < row->elements.size(); ++c) {
        double v;
        if (!evalNumber(*row->elements[c], v)) {
          diags.emitError(row->elements[c]->getLoc(),
                          "generator entries must be number literals");
          ok = false;
          shapeOk = false;
          gen.values.clear();
          break;
        }
        gen.values.push_back(v);
      }
    }
    if (!shapeOk) {
      if (ok)
        diags.emitError(gen.matrix->getLoc(),
                        "generator '" + gen.name + "' must be a " + Twine(n) +
                            "x" + Twine(n) + " matrix (a list of " + Twine(n) +
                            " rows of " + Twine(n) + " numbers)");
      ok = false;
      continue;
    }
    info.generators.push_back(gen.values);
    info.generatorNames.push_back(gen.name);
  }
  if (!ok)
    return;
  // Independence and closure: the one analysis the Lie dialect's model of
  // declared groups runs too, so both accept the same declarations.
  algebra::Facts facts;
  algebra::Problem problem =
      algebra::analyze(unsigned(n), info.generators, facts);
  if (problem.kind == algebra::Problem::Dependent) {
    // The first generator has none before it: it can only be zero.
    bool zero = llvm::all_of(info.generators[problem.a],
                             [](double x) { return x == 0; });
    diags.emitError(group.generators[problem.a].loc,
                    zero ? "generator '" + info.generatorNames[problem.a] +
                               "' is the zero matrix; a generator must be "
                               "nonzero"
                         : "generator '" + info.generatorNames[problem.a] +
                               "' is linearly dependent on the generators "
                               "before it");
    return;
  }
  if (problem.kind == algebra::Problem::NotClosed) {
    diags.emitError(group.generators[problem.b].loc,
                    "generators do not form a Lie algebra: [" +
                        info.generatorNames[problem.a] + ", " +
                        info.generatorNames[problem.b] + "] = " +
                        algebra::formatMatrix(problem.bracket, unsigned(n)) +
                        " is not in their span; add it as a generator");
    return;
  }
  if (problem) {
    diags.emitError(group.loc, "group '" + group.name + "' " +
                                   algebra::describe(problem, unsigned(n),
                                                     info.generatorNames));
    return;
  }
  size_t k = info.generators.size();
  // Norm blocks: consecutive generators, each generator in exactly one.
  std::vector<int> owner(k, -1);
  size_t next = 0;
  for (size_t bi = 0; bi < group.norms.size(); ++bi) {
    NormBlockDecl &norm = group.norms[bi];
    for (const NormBlock &prev : info.blocks)
      if (prev.name == norm.name) {
        diags.emitError(norm.loc,
                        "redefinition of norm block '" + norm.name + "'");
        return;
      }
    for (const auto &[loc, name] : norm.generators) {
      auto it = genIndex.find(name);
      if (it == genIndex.end()) {
        diags.emitError(loc, "unknown generator '" + name +
                                 "' in norm block '" + norm.name + "'");
        return;
      }
      unsigned idx = it->second;
      if (owner[idx] >= 0) {
        // The owner may be this very block, which is not in info.blocks
        // until its list is done.
        StringRef ownerName = size_t(owner[idx]) < info.blocks.size()
                                  ? StringRef(info.blocks[owner[idx]].name)
                                  : StringRef(norm.name);
        diags.emitError(loc, "generator '" + name +
                                 "' is already in norm "
                                 "block '" +
                                 ownerName + "'");
        return;
      }
      if (idx != next) {
        diags.emitError(loc, "norm blocks must list the generators in "
                             "declaration order; expected '" +
                                 info.generatorNames[next] +
                                 "' here (a block weights a contiguous run "
                                 "of log coordinates, which follow the "
                                 "generator order: reorder the generators "
                                 "or the blocks)");
        return;
      }
      owner[idx] = info.blocks.size();
      ++next;
    }
    info.blocks.push_back({norm.name, unsigned(norm.generators.size())});
  }
  if (group.norms.empty()) {
    info.blocks.push_back({"all", unsigned(k)});
  } else if (next != k) {
    diags.emitError(group.generators[next].loc, "generator '" +
                                                    info.generatorNames[next] +
                                                    "' is in no norm block");
    return;
  }
  info.algebraDim = k;
  // A zero last row in every generator means the group fixes the
  // homogeneous coordinate and acts on points of dimension n − 1.
  info.pointDim = facts.getPointDim();
  groups[group.name] = &info;
}
