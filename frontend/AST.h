//===- AST.h - Torsor language abstract syntax tree ------------*- C++ -*-===//
//
// The AST of a `.tsr` file: group declarations and models; a model holds
// dims, inputs, params, blocks, lets and outputs. Nodes use LLVM-style RTTI
// (`classof`, `llvm::isa/cast/dyn_cast`) and include no MLIR headers. Sema
// annotates expressions with their semantic Type; MLIRGen reads both.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_AST_H
#define TORSOR_FRONTEND_AST_H

#include "frontend/Types.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace torsor::frontend {

class BlockDecl;
class DimDecl;

//===----------------------------------------------------------------------===//
// Type expressions (syntax)
//===----------------------------------------------------------------------===//

/// One dimension as written: a name (`L`) or an integer (`64`).
struct DimExpr {
  llvm::SMLoc loc;
  std::string name; ///< Empty for an integer.
  int64_t value = 0;
};

/// `f32[L, D]`, `f64`, `SE3[L]`, `SE3<f64>[B, L]` as written.
struct TypeExpr {
  llvm::SMLoc loc;
  std::string base;      ///< A dtype or a group name.
  std::string elemDType; ///< For groups: `<f64>`; empty means f32.
  llvm::SMLoc elemDTypeLoc;
  std::vector<DimExpr> dims;
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// Base of every expression; `type` is filled by Sema.
class Expr {
public:
  enum ExprKind { Number, Bool, Var, List, Unary, Binary, Call };
  Expr(ExprKind kind, llvm::SMLoc loc) : kind(kind), loc(loc) {}
  virtual ~Expr() = default;
  ExprKind getKind() const { return kind; }
  llvm::SMLoc getLoc() const { return loc; }

  /// Semantic type, valid after Sema.
  Type type;
  /// Height of the tree below this node (1 for a leaf). The parser caps it
  /// so recursive walks (Sema, MLIRGen, destructors) stay shallow even for
  /// long operator chains such as `x + x + ... + x`.
  unsigned height = 1;

private:
  const ExprKind kind;
  llvm::SMLoc loc;
};
using ExprPtr = std::unique_ptr<Expr>;

/// `1`, `0.5`, `1e-5`.
class NumberExpr : public Expr {
public:
  NumberExpr(llvm::SMLoc loc, double value, bool isInteger)
      : Expr(Number, loc), value(value), isInteger(isInteger) {}
  double value;
  bool isInteger;
  static bool classof(const Expr *e) { return e->getKind() == Number; }
};

/// `true`, `false` (keyword arguments such as `causal = true`).
class BoolExpr : public Expr {
public:
  BoolExpr(llvm::SMLoc loc, bool value) : Expr(Bool, loc), value(value) {}
  bool value;
  static bool classof(const Expr *e) { return e->getKind() == Bool; }
};

/// A name: a let, input, param, block argument, dim or group.
class VarExpr : public Expr {
public:
  VarExpr(llvm::SMLoc loc, std::string name)
      : Expr(Var, loc), name(std::move(name)) {}
  std::string name;
  /// Set by Sema when the name is a fixed dim used as a number.
  const DimDecl *dim = nullptr;
  static bool classof(const Expr *e) { return e->getKind() == Var; }
};

/// `[a, b, ...]`: per-head taus, per-block lambdas, offsets, matrices.
class ListExpr : public Expr {
public:
  ListExpr(llvm::SMLoc loc, std::vector<ExprPtr> elements)
      : Expr(List, loc), elements(std::move(elements)) {
    for (const ExprPtr &e : this->elements)
      height = std::max(height, e->height + 1);
  }
  std::vector<ExprPtr> elements;
  static bool classof(const Expr *e) { return e->getKind() == List; }
};

/// `-x`.
class UnaryExpr : public Expr {
public:
  UnaryExpr(llvm::SMLoc loc, char op, ExprPtr operand)
      : Expr(Unary, loc), op(op), operand(std::move(operand)) {
    height = this->operand->height + 1;
  }
  char op;
  ExprPtr operand;
  static bool classof(const Expr *e) { return e->getKind() == Unary; }
};

/// `a @ b`, `a + b`, `a - b`, `a * b`, `a / b`; `loc` is the operator's.
class BinaryExpr : public Expr {
public:
  BinaryExpr(llvm::SMLoc loc, char op, ExprPtr lhs, ExprPtr rhs)
      : Expr(Binary, loc), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {
    height = std::max(this->lhs->height, this->rhs->height) + 1;
  }
  char op;
  ExprPtr lhs, rhs;
  static bool classof(const Expr *e) { return e->getKind() == Binary; }
};

/// `name = expr` inside a call.
struct KeywordArg {
  llvm::SMLoc loc;
  std::string name;
  ExprPtr value;
};

/// A built-in call (`softmax(x)`), a block use (`Layer(h, g) as blocks`) or
/// a repeated block (`repeat 6 Layer(h, g)`).
class CallExpr : public Expr {
public:
  CallExpr(llvm::SMLoc loc, std::string callee)
      : Expr(Call, loc), callee(std::move(callee)) {}
  std::string callee;
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> kwargs;
  int64_t repeatCount = 0; ///< 0: a plain call.
  llvm::SMLoc repeatLoc;
  std::string prefix; ///< `as NAME`; empty: the block's name.
  llvm::SMLoc prefixLoc;

  /// Set by Sema when the callee is a block.
  const BlockDecl *block = nullptr;
  /// Set by Sema for group ops and layers: the group they work in.
  const GroupInfo *group = nullptr;
  /// Set by Sema: every constant argument (`tau`, `axis`, `offsets`, ...)
  /// with defaults filled in, lists flattened row-major.
  std::map<std::string, std::vector<double>> constants;
  /// Set by Sema for built-ins with several results (the cross form of
  /// `lie_attention` and `lie_attention_grad`): the types of results 2, 3,
  /// ...; `let a, b = call(...)` binds them. With `bindAll`, a binding
  /// must name every result.
  std::vector<Type> extraTypes;
  bool bindAll = false;
  /// Returns constants[name][0]; the name must exist.
  double getConstant(const std::string &name) const {
    return constants.at(name).front();
  }

  /// Returns the keyword argument `name`, or null.
  const KeywordArg *getKeyword(llvm::StringRef name) const {
    for (const KeywordArg &kw : kwargs)
      if (kw.name == name)
        return &kw;
    return nullptr;
  }
  static bool classof(const Expr *e) { return e->getKind() == Call; }
};

//===----------------------------------------------------------------------===//
// Statements and declarations
//===----------------------------------------------------------------------===//

/// Base of everything that ends in `;` or a `}` inside a model or group.
class Stmt {
public:
  enum StmtKind { Dim, Input, Param, Let, Output, Return, Block };
  Stmt(StmtKind kind, llvm::SMLoc loc, std::string name)
      : name(std::move(name)), kind(kind), loc(loc) {}
  virtual ~Stmt() = default;
  StmtKind getKind() const { return kind; }
  llvm::SMLoc getLoc() const { return loc; }
  std::string name; ///< Declared name; empty for `return`.

private:
  const StmtKind kind;
  llvm::SMLoc loc;
};
using StmtPtr = std::unique_ptr<Stmt>;

/// `dim L;` (symbolic) or `dim D = 64;` (fixed).
class DimDecl : public Stmt {
public:
  DimDecl(llvm::SMLoc loc, std::string name)
      : Stmt(Stmt::Dim, loc, std::move(name)) {}
  bool isFixed = false;
  int64_t value = 0;
  llvm::SMLoc valueLoc;
  static bool classof(const Stmt *s) { return s->getKind() == Stmt::Dim; }
};

/// `input x: f32[L, D];` and `param W: f32[D, D];`.
class ValueDecl : public Stmt {
public:
  ValueDecl(StmtKind kind, llvm::SMLoc loc, std::string name, TypeExpr ty)
      : Stmt(kind, loc, std::move(name)), typeExpr(std::move(ty)) {}
  TypeExpr typeExpr;
  Type type; ///< Set by Sema.
  /// For group inputs: every use is relative (set by Sema).
  bool leftInvariant = false;
  static bool classof(const Stmt *s) {
    return s->getKind() == Input || s->getKind() == Param;
  }
};

/// `let y = expr;`, `let y: T = expr;`, `output y = expr;`, `return expr;`.
class BindStmt : public Stmt {
public:
  BindStmt(StmtKind kind, llvm::SMLoc loc, std::string name)
      : Stmt(kind, loc, std::move(name)) {}
  bool hasType = false;
  TypeExpr typeExpr;
  ExprPtr value;
  /// `let a, b, c = ...`: the names after the first, bound to the
  /// call's further results (CallExpr::extraTypes).
  std::vector<std::string> extraNames;
  std::vector<llvm::SMLoc> extraLocs;
  static bool classof(const Stmt *s) {
    return s->getKind() == Let || s->getKind() == Output ||
           s->getKind() == Return;
  }
};

/// One `name: type` parameter of a block.
struct BlockArg {
  llvm::SMLoc loc;
  std::string name;
  TypeExpr typeExpr;
  Type type; ///< Set by Sema.
};

/// `block Layer(h: f32[L, D], g: SE3[L]) -> f32[L, D] { ... return h; }`.
/// Its params are instantiated once per use.
class BlockDecl : public Stmt {
public:
  BlockDecl(llvm::SMLoc loc, std::string name)
      : Stmt(Stmt::Block, loc, std::move(name)) {}
  std::vector<BlockArg> args;
  TypeExpr resultTypeExpr;
  Type resultType; ///< Set by Sema.
  std::vector<StmtPtr> body;
  /// Block instances one use expands to, itself included (set by Sema).
  uint64_t instances = 1;
  static bool classof(const Stmt *s) { return s->getKind() == Stmt::Block; }
};

/// `model Name { ... }`.
struct ModelDecl {
  llvm::SMLoc loc;
  std::string name;
  std::vector<StmtPtr> body;
  /// Statements the parser dropped after an error. Sema stays quiet about
  /// their names (and about missing outputs) to avoid cascading errors.
  bool hadParseError = false;
  std::set<std::string> droppedNames;
};

/// `generator X = [[...], ...];` inside a group.
struct GeneratorDecl {
  llvm::SMLoc loc;
  std::string name;
  ExprPtr matrix;             ///< A ListExpr of ListExprs of numbers.
  std::vector<double> values; ///< Row-major n×n, set by Sema.
};

/// `norm trans = X, Y;` inside a group.
struct NormBlockDecl {
  llvm::SMLoc loc;
  std::string name;
  std::vector<std::pair<llvm::SMLoc, std::string>> generators;
};

/// `group Heis3 { matrix 3; generator X = ...; norm xy = X, Y; }`.
struct GroupDecl {
  llvm::SMLoc loc;
  std::string name;
  llvm::SMLoc matrixLoc;
  int64_t matrixSize = 0; ///< 0 when the `matrix` line is missing.
  std::vector<GeneratorDecl> generators;
  std::vector<NormBlockDecl> norms;
  GroupInfo info; ///< Filled by Sema.
};

/// A whole `.tsr` file.
struct Module {
  std::vector<std::unique_ptr<GroupDecl>> groups;
  std::vector<std::unique_ptr<ModelDecl>> models;
};

/// Prints a readable, indented dump (`torsorc --emit=ast`). Types are
/// included when Sema has run; `srcMgr`, when given, adds `@line:col`.
void dumpAST(const Module &module, llvm::raw_ostream &os,
             const llvm::SourceMgr *srcMgr = nullptr);

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_AST_H
