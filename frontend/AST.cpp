//===- AST.cpp - Torsor AST dump ------------------------------------------===//
//
// The readable dump behind `torsorc --emit=ast`: one node per line, children
// indented by two spaces, semantic types after ':' once Sema has run, and
// source positions as `@line:col` when a SourceMgr is supplied. Tests
// FileCheck this text, so keep it stable.
//
//===----------------------------------------------------------------------===//

#include "frontend/AST.h"
#include "llvm/Support/Format.h"

using namespace torsor::frontend;
using llvm::raw_ostream;

namespace {
/// Walks the AST and prints it.
class ASTDumper {
public:
  ASTDumper(raw_ostream &os, const llvm::SourceMgr *srcMgr)
      : os(os), srcMgr(srcMgr) {}

  void dump(const Module &module) {
    os << "Module\n";
    for (const auto &group : module.groups)
      dump(*group);
    for (const auto &model : module.models)
      dump(*model);
  }

private:
  raw_ostream &indent() { return os.indent(level * 2); }
  void loc(llvm::SMLoc l) {
    if (!srcMgr || !l.isValid())
      return;
    auto lc = srcMgr->getLineAndColumn(l);
    os << " @" << lc.first << ":" << lc.second;
  }
  static std::string typeExpr(const TypeExpr &t) {
    std::string s = t.base;
    if (!t.elemDType.empty())
      s += "<" + t.elemDType + ">";
    if (t.dims.empty())
      return s;
    s += "[";
    for (size_t i = 0; i < t.dims.size(); ++i) {
      if (i)
        s += ", ";
      s += t.dims[i].name.empty() ? std::to_string(t.dims[i].value)
                                  : t.dims[i].name;
    }
    return s + "]";
  }
  /// Prints the semantic type if Sema set one, else the written one.
  void type(const Type &semantic, const TypeExpr *written) {
    if (!semantic.isInvalid())
      os << ": " << semantic.str();
    else if (written)
      os << ": " << typeExpr(*written);
  }

  void dump(const GroupDecl &group) {
    indent() << "Group " << group.name << " matrix=" << group.matrixSize;
    if (group.info.algebraDim)
      os << " dim=" << group.info.algebraDim;
    loc(group.loc);
    os << "\n";
    ++level;
    for (const GeneratorDecl &gen : group.generators) {
      indent() << "Generator " << gen.name;
      loc(gen.loc);
      os << "\n";
      ++level;
      dump(*gen.matrix);
      --level;
    }
    for (const NormBlockDecl &norm : group.norms) {
      indent() << "Norm " << norm.name << " =";
      for (const auto &g : norm.generators)
        os << " " << g.second;
      loc(norm.loc);
      os << "\n";
    }
    --level;
  }

  void dump(const ModelDecl &model) {
    indent() << "Model " << model.name;
    loc(model.loc);
    os << "\n";
    ++level;
    for (const StmtPtr &stmt : model.body)
      dump(*stmt);
    --level;
  }

  void dump(const Stmt &stmt) {
    if (auto *dim = llvm::dyn_cast<DimDecl>(&stmt)) {
      indent() << "Dim " << dim->name;
      if (dim->isFixed)
        os << " = " << dim->value;
      else
        os << " (symbolic)";
    } else if (auto *decl = llvm::dyn_cast<ValueDecl>(&stmt)) {
      indent() << (stmt.getKind() == Stmt::Input ? "Input " : "Param ")
               << decl->name;
      type(decl->type, &decl->typeExpr);
      if (decl->type.isGroup())
        os << (decl->leftInvariant ? " left_invariant" : " not_left_invariant");
    } else if (auto *bind = llvm::dyn_cast<BindStmt>(&stmt)) {
      const char *kw = stmt.getKind() == Stmt::Let      ? "Let "
                       : stmt.getKind() == Stmt::Output ? "Output "
                                                        : "Return";
      indent() << kw << bind->name;
      if (bind->hasType)
        os << ": " << typeExpr(bind->typeExpr);
    } else if (auto *block = llvm::dyn_cast<BlockDecl>(&stmt)) {
      indent() << "Block " << block->name << "(";
      for (size_t i = 0; i < block->args.size(); ++i) {
        os << (i ? ", " : "") << block->args[i].name;
        type(block->args[i].type, &block->args[i].typeExpr);
      }
      os << ") -> ";
      if (!block->resultType.isInvalid())
        os << block->resultType.str();
      else
        os << typeExpr(block->resultTypeExpr);
    }
    loc(stmt.getLoc());
    os << "\n";
    ++level;
    if (auto *bind = llvm::dyn_cast<BindStmt>(&stmt))
      dump(*bind->value);
    if (auto *block = llvm::dyn_cast<BlockDecl>(&stmt))
      for (const StmtPtr &s : block->body)
        dump(*s);
    --level;
  }

  void dump(const Expr &expr) {
    switch (expr.getKind()) {
    case Expr::Number: {
      auto &num = llvm::cast<NumberExpr>(expr);
      indent() << "Number ";
      if (num.isInteger)
        os << int64_t(num.value);
      else
        os << llvm::format("%g", num.value);
      break;
    }
    case Expr::Bool:
      indent() << "Bool "
               << (llvm::cast<BoolExpr>(expr).value ? "true" : "false");
      break;
    case Expr::Var:
      indent() << "Var " << llvm::cast<VarExpr>(expr).name;
      break;
    case Expr::List:
      indent() << "List";
      break;
    case Expr::Unary:
      indent() << "Unary " << llvm::cast<UnaryExpr>(expr).op;
      break;
    case Expr::Binary:
      indent() << "Binary " << llvm::cast<BinaryExpr>(expr).op;
      break;
    case Expr::Call: {
      auto &call = llvm::cast<CallExpr>(expr);
      indent() << (call.block ? "BlockCall " : "Call ") << call.callee;
      if (call.repeatCount)
        os << " repeat=" << call.repeatCount;
      if (!call.prefix.empty())
        os << " as=" << call.prefix;
      break;
    }
    }
    if (!expr.type.isInvalid() && expr.type.kind != Type::List &&
        expr.type.kind != Type::Bool)
      os << " : " << expr.type.str();
    loc(expr.getLoc());
    os << "\n";
    ++level;
    if (auto *list = llvm::dyn_cast<ListExpr>(&expr))
      for (const ExprPtr &e : list->elements)
        dump(*e);
    if (auto *un = llvm::dyn_cast<UnaryExpr>(&expr))
      dump(*un->operand);
    if (auto *bin = llvm::dyn_cast<BinaryExpr>(&expr)) {
      dump(*bin->lhs);
      dump(*bin->rhs);
    }
    if (auto *call = llvm::dyn_cast<CallExpr>(&expr)) {
      for (const ExprPtr &e : call->args)
        dump(*e);
      for (const KeywordArg &kw : call->kwargs) {
        indent() << "Keyword " << kw.name << "\n";
        ++level;
        dump(*kw.value);
        --level;
      }
    }
    --level;
  }

  raw_ostream &os;
  const llvm::SourceMgr *srcMgr;
  unsigned level = 1;
};
} // namespace

void torsor::frontend::dumpAST(const Module &module, raw_ostream &os,
                               const llvm::SourceMgr *srcMgr) {
  ASTDumper(os, srcMgr).dump(module);
}
