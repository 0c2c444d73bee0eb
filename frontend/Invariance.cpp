//===- Invariance.cpp - Left-invariance analysis of group inputs ----------===//
//
// Decides, for each group input g of a model, whether the outputs are
// unchanged when every element of g is replaced by h·g_i for one fixed h,
// because every use of g goes through relative poses g_i⁻¹g_j. The manifest
// claims `left_invariant` only from this analysis (docs/language.md §8).
//
// Every group-valued expression gets a Frame, how it moves under g ↦ h·g:
//   Inv      unchanged              (exp(v), compose(inverse(g), g))
//   Left(g)  x ↦ h·x                (g, compose(g, c) with c invariant)
//   Right(g) x ↦ x·h⁻¹              (inverse(g))
//   Opaque   anything else; keeps the set of inputs it depends on.
// Relative uses (lie_attention's elements, dist2 of two Left(g) values)
// accept Left(g) and Inv. Every other use (log, act, an output, an Opaque
// or Right value in a relative op) breaks invariance for the inputs the
// value depends on. Blocks are analysed per call with their argument
// frames, which is exact because every use is inlined by MLIRGen too.
//
//===----------------------------------------------------------------------===//

#include "frontend/Builtins.h"
#include "frontend/Sema.h"
#include "llvm/ADT/StringMap.h"
#include <set>

using namespace torsor::frontend;

namespace {
/// How a group value moves under a left translation of one input.
struct Frame {
  enum Kind { Inv, Left, Right, Opaque };
  Kind kind = Inv;
  std::set<std::string> deps; ///< Inputs it depends on (one for Left/Right).

  static Frame of(Kind k, std::set<std::string> d) { return Frame{k, d}; }
  bool operator==(const Frame &o) const {
    return kind == o.kind && deps == o.deps;
  }
};

using Env = llvm::StringMap<Frame>;

/// Runs the analysis over one model.
class InvarianceAnalysis {
public:
  std::set<std::string> broken;

  void runModel(ModelDecl &model) {
    Env env;
    for (StmtPtr &stmt : model.body) {
      if (auto *decl = llvm::dyn_cast<ValueDecl>(stmt.get())) {
        if (decl->getKind() == Stmt::Input && decl->type.isGroup())
          env[decl->name] = Frame::of(Frame::Left, {decl->name});
        continue;
      }
      if (auto *bind = llvm::dyn_cast<BindStmt>(stmt.get())) {
        Frame f = eval(*bind->value, env);
        if (bind->getKind() == Stmt::Output)
          breakAll(f); // The output exposes the absolute pose.
        else
          env[bind->name] = f;
      }
    }
  }

private:
  void breakAll(const Frame &f) {
    if (f.kind != Frame::Inv)
      broken.insert(f.deps.begin(), f.deps.end());
  }

  /// Frame of compose(a, b).
  static Frame compose(const Frame &a, const Frame &b) {
    if (a.kind == Frame::Inv)
      return b;
    if (b.kind == Frame::Inv && a.kind != Frame::Right)
      return a;
    if (a.kind == Frame::Right && b.kind == Frame::Left && a.deps == b.deps)
      return Frame(); // (h g)⁻¹ (h g') = g⁻¹ g'
    if (a.kind == Frame::Right && b.kind == Frame::Inv)
      return a;
    std::set<std::string> deps = a.deps;
    deps.insert(b.deps.begin(), b.deps.end());
    return Frame::of(Frame::Opaque, deps);
  }

  /// Consumes `f` in a relative position (pairs of tokens of one input).
  void relative(const Frame &f) {
    if (f.kind != Frame::Inv && f.kind != Frame::Left)
      breakAll(f);
  }

  Frame eval(Expr &expr, Env &env) {
    switch (expr.getKind()) {
    case Expr::Var: {
      auto it = env.find(llvm::cast<VarExpr>(expr).name);
      return it == env.end() ? Frame() : it->second;
    }
    case Expr::Unary:
      eval(*llvm::cast<UnaryExpr>(expr).operand, env);
      return Frame();
    case Expr::Binary: {
      auto &bin = llvm::cast<BinaryExpr>(expr);
      eval(*bin.lhs, env);
      eval(*bin.rhs, env);
      return Frame();
    }
    case Expr::Call:
      return evalCall(llvm::cast<CallExpr>(expr), env);
    default:
      return Frame();
    }
  }

  Frame evalCall(CallExpr &call, Env &env) {
    std::vector<Frame> args;
    for (ExprPtr &arg : call.args)
      args.push_back(eval(*arg, env));
    for (KeywordArg &kw : call.kwargs)
      breakAll(eval(*kw.value, env));
    if (call.block)
      return evalBlock(call, args);
    // What the built-in does with poses comes from the registry of
    // built-ins (Builtins.def); `exp` and dense layers take none.
    const BuiltinInfo *info = lookupBuiltin(call.callee);
    PoseUse use = info ? info->poses : PoseUse::ABSOLUTE;
    // Only checked calls reach here, but stay in bounds regardless: a call
    // short of the operands its rule reads counts as an absolute use.
    size_t needed = use == PoseUse::COMPOSE || use == PoseUse::DISTANCE   ? 2
                    : use == PoseUse::INVERSE || use == PoseUse::RELATIVE ? 1
                                                                          : 0;
    if (args.size() < needed)
      use = PoseUse::ABSOLUTE;
    // lie_attention(g_q, g_k, v): relative poses between two arguments.
    if (use == PoseUse::RELATIVE && args.size() > 2)
      use = PoseUse::DISTANCE;
    if (use == PoseUse::COMPOSE)
      return compose(args[0], args[1]);
    if (use == PoseUse::INVERSE) {
      Frame f = args[0];
      if (f.kind == Frame::Left)
        f.kind = Frame::Right;
      else if (f.kind == Frame::Right)
        f.kind = Frame::Left;
      return f;
    }
    if (use == PoseUse::RELATIVE) {
      relative(args[0]);
      return Frame();
    }
    if (use == PoseUse::DISTANCE) {
      const Frame &a = args[0], &b = args[1];
      bool ok =
          (a.kind == Frame::Inv && b.kind == Frame::Inv) ||
          (a.kind == Frame::Left && b.kind == Frame::Left && a.deps == b.deps);
      if (!ok) {
        breakAll(a);
        breakAll(b);
      }
      return Frame();
    }
    // ABSOLUTE (log, act, ...) and everything else read absolute poses.
    for (const Frame &f : args)
      breakAll(f);
    return Frame();
  }

  Frame evalBlock(CallExpr &call, std::vector<Frame> args) {
    const BlockDecl &block = *call.block;
    int64_t iterations = call.repeatCount ? call.repeatCount : 1;
    Frame result;
    for (int64_t i = 0; i < iterations; ++i) {
      Env env;
      for (size_t a = 0; a < block.args.size(); ++a)
        env[block.args[a].name] = a < args.size() ? args[a] : Frame();
      for (const StmtPtr &stmt : block.body) {
        auto *bind = llvm::dyn_cast<BindStmt>(stmt.get());
        if (!bind)
          continue;
        Frame f = eval(*bind->value, env);
        if (bind->getKind() == Stmt::Return)
          result = f;
        else
          env[bind->name] = f;
      }
      // Only the first argument is threaded through a repeat; once its
      // frame is stable further iterations see the same inputs.
      if (call.repeatCount && !args.empty()) {
        if (result == args[0])
          break;
        args[0] = result;
      }
    }
    return result;
  }
};
} // namespace

void torsor::frontend::analyzeLeftInvariance(ModelDecl &model) {
  InvarianceAnalysis analysis;
  analysis.runModel(model);
  for (StmtPtr &stmt : model.body)
    if (auto *decl = llvm::dyn_cast<ValueDecl>(stmt.get()))
      if (decl->getKind() == Stmt::Input && decl->type.isGroup())
        decl->leftInvariant = !analysis.broken.count(decl->name);
}
