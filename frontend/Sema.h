//===- Sema.h - Torsor semantic analysis -----------------------*- C++ -*-===//
//
// Checks a parsed Module and annotates it: resolves names (dims, inputs,
// params, lets, blocks, groups), infers every expression's dtype and shape
// with symbolic dims, validates declared groups (generator shapes, linear
// independence, closure under the bracket, norm blocks) and the arguments
// of every built-in, and finally runs the left-invariance analysis that
// decides which group inputs are only used through relative poses.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_SEMA_H
#define TORSOR_FRONTEND_SEMA_H

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace torsor::frontend {

/// What a name refers to.
struct Symbol {
  enum Kind { DimSym, Value, BlockSym, GroupSym };
  Kind kind = Value;
  llvm::SMLoc loc;
  Type type;                        ///< Value: its type.
  const DimDecl *dim = nullptr;     ///< DimSym.
  const BlockDecl *block = nullptr; ///< BlockSym.
  const GroupInfo *group = nullptr; ///< GroupSym.
  bool isModelParam = false;        ///< Visible inside blocks.
};

/// Semantic analysis of one Module.
class Sema {
public:
  explicit Sema(DiagnosticEngine &diags) : diags(diags) {}

  /// Checks and annotates `module`; returns true when no error was found.
  bool check(Module &module);

private:
  // Declarations (Sema.cpp).
  void checkGroup(GroupDecl &group);
  void checkModel(ModelDecl &model);
  void checkStmt(Stmt &stmt);
  void checkBlock(BlockDecl &block);
  /// Resolves a written type; Invalid (after reporting) on error.
  Type resolveType(const TypeExpr &typeExpr);
  /// Looks up a built-in or declared group by name.
  const GroupInfo *lookupGroup(llvm::StringRef name) const;
  /// Adds a name to the innermost scope; reports redefinitions.
  bool declare(llvm::StringRef name, llvm::SMLoc loc, Symbol symbol);
  /// Finds a name, innermost scope first; null if unknown.
  const Symbol *lookup(llvm::StringRef name) const;
  /// "; did you mean 'X'?" for a misspelled function (built-in or block).
  std::string suggestFunction(llvm::StringRef name) const;
  /// The same for a value or group name visible here.
  std::string suggestName(llvm::StringRef name) const;
  /// The same for a group name (built-in or declared).
  std::string suggestGroup(llvm::StringRef name) const;

  // Expressions (SemaExpr.cpp, SemaBuiltins.cpp).
  Type checkExpr(Expr &expr);
  /// Reports a computed type whose fixed dims exceed kMaxDimSize or
  /// multiply past kMaxStaticElements (merge_heads, concat, declarations).
  bool checkShapeLimits(llvm::SMLoc loc, const Type &type);
  Type checkBinary(BinaryExpr &expr);
  Type checkCall(CallExpr &call);
  /// Reports a call with several results (lie_attention_grad, or the
  /// two-set lie_attention with offsets) used inside an expression, where
  /// only its first result would reach the expression.
  void checkNestedMultiResult(const CallExpr &call);
  Type checkBlockCall(CallExpr &call, const BlockDecl &block);
  Type checkBuiltin(CallExpr &call);
  Type checkGroupOp(CallExpr &call);
  Type checkGeoLayer(CallExpr &call);
  /// lie_attention (self or two-set form) and lie_attention_grad.
  Type checkLieAttention(CallExpr &call);
  /// `let a, b, ... = call`: binds the names after the first to the
  /// call's further results, or reports a count that does not match.
  void checkMultiBind(BindStmt &bind, const Type &first);
  /// embedding, cross_entropy, mse (SemaTrain.cpp); null Type::Kind when
  /// `call` is none of them.
  bool checkTraining(CallExpr &call, Type &result);
  /// Broadcasts two shapes numpy-style; reports at `loc` on mismatch.
  bool broadcast(llvm::ArrayRef<Dim> a, llvm::ArrayRef<Dim> b,
                 std::vector<Dim> &result, llvm::SMLoc loc,
                 const llvm::Twine &what, const Type &lhs, const Type &rhs);

public:
  // Argument helpers, shared with the built-in checks.
  /// Reports unless `type` is a float tensor; `what` names the operand.
  bool expectFloatTensor(const Expr &expr, const llvm::Twine &what);
  /// Checks a literal keyword argument; helpers for numbers and lists.
  bool getNumberList(const KeywordArg &kw, std::vector<double> &values);
  bool getNumber(const KeywordArg &kw, double &value);
  /// Reads the optional `eps` keyword of `call` (default `defaultEps`),
  /// checks it is positive and records it in `call.constants["eps"]`.
  bool getPositiveEps(CallExpr &call, double defaultEps);
  bool getBool(const KeywordArg &kw, bool &value);
  /// Integer-valued: an integer literal or a fixed dim.
  bool getInteger(const Expr &expr, int64_t &value, const llvm::Twine &what);
  /// Reports unknown or repeated keyword arguments of `call`.
  bool checkKeywords(const CallExpr &call,
                     llvm::ArrayRef<llvm::StringRef> allowed);
  /// Reports a wrong positional argument count.
  bool checkArgCount(const CallExpr &call, unsigned min, unsigned max);

private:
  DiagnosticEngine &diags;
  Module *module = nullptr;
  llvm::StringMap<const GroupInfo *> groups;
  /// Declared groups whose declaration failed (already reported): their
  /// uses stay quiet instead of reporting "unknown group".
  llvm::StringSet<> failedGroups;
  /// Scopes: [0] is the model, [1] a block body while checking one.
  std::vector<llvm::StringMap<Symbol>> scopes;
  const BlockDecl *currentBlock = nullptr;
  const ModelDecl *currentModel = nullptr;
  /// Block instances the current model or block body expands to.
  uint64_t instanceCount = 0;
  /// True for names of statements the parser dropped (already reported).
  bool isDropped(llvm::StringRef name) const {
    return currentModel && currentModel->droppedNames.count(name.str());
  }
  bool sawReturn = false;
  /// The value of the `let`/`output`/`return` being checked: the one
  /// place a call with several results may stand (checkNestedMultiResult).
  const Expr *bindValue = nullptr;
};

/// Reports unless `expr` has a group type; returns that type.
const Type *expectGroup(DiagnosticEngine &diags, const Expr &expr,
                        const llvm::Twine &what);
/// Reads `lambda` (one weight per block, or per head per block, default
/// all ones) into `call.constants["lambda"]`, `heads` rows of them.
bool getLambda(Sema &sema, DiagnosticEngine &diags, CallExpr &call,
               const GroupInfo &group, int64_t heads);

/// Decides, for every group input of `model`, whether every use goes
/// through relative poses g_i⁻¹g_j, and stores it in ValueDecl's
/// `leftInvariant` (Invariance.cpp). Requires a successful Sema.
void analyzeLeftInvariance(ModelDecl &model);

/// Parses and checks buffer `bufferId`: null when any error was reported.
std::unique_ptr<Module> parseAndCheck(const llvm::SourceMgr &srcMgr,
                                      unsigned bufferId,
                                      DiagnosticEngine &diags);

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_SEMA_H
