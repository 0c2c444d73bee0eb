//===- Parser.h - Torsor language parser -----------------------*- C++ -*-===//
//
// Recursive-descent parser from tokens to the AST (Toy's Parser.h style: the
// grammar rule each method implements is in its comment). On an error it
// reports one located message, skips to the next statement or declaration
// and goes on, so one run reports several independent errors. Expression
// nesting is capped so hostile input cannot overflow the stack.
//
// The whole grammar (docs/language.md has it in EBNF):
//
//   file        ::= (group-decl | model-decl)*
//   group-decl  ::= 'group' ident '{' group-item* '}'
//   group-item  ::= 'matrix' integer ';'
//                 | 'generator' ident '=' list ';'
//                 | 'norm' ident '=' ident (',' ident)* ';'
//   model-decl  ::= 'model' ident '{' model-item* '}'
//   model-item  ::= dim-decl | input-decl | param-decl | block-decl
//                 | let-stmt | output-stmt
//   dim-decl    ::= 'dim' ident ('=' integer)? ';'
//   input-decl  ::= 'input' ident ':' type ';'
//   param-decl  ::= 'param' ident ':' type ';'
//   block-decl  ::= 'block' ident '(' (ident ':' type (',' ident ':' type)*)?
//                   ')' '->' type '{' (param-decl | let-stmt)* return-stmt '}'
//   let-stmt    ::= 'let' ident (':' type)? '=' expr ';'
//   output-stmt ::= 'output' ident (':' type)? '=' expr ';'
//   return-stmt ::= 'return' expr ';'
//   type        ::= ident ('<' ident '>')? ('[' (dim (',' dim)*)? ']')?
//   dim         ::= ident | integer
//   expr        ::= term (('+' | '-') term)*
//   term        ::= unary (('*' | '/' | '@') unary)*
//   unary       ::= '-' unary | primary
//   primary     ::= number | 'true' | 'false' | ident | call | list
//                 | '(' expr ')' | 'repeat' integer call
//   call        ::= ident '(' (arg (',' arg)*)? ')' ('as' ident)?
//   arg         ::= expr | ident '=' expr
//   list        ::= '[' (expr (',' expr)*)? ']'
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_PARSER_H
#define TORSOR_FRONTEND_PARSER_H

#include "frontend/AST.h"
#include "frontend/Lexer.h"
#include <memory>

namespace torsor::frontend {

/// Deepest expression nesting the parser accepts.
constexpr unsigned kMaxNestingDepth = 128;
/// Tallest expression tree the parser accepts (operator chains included).
constexpr unsigned kMaxExprHeight = 512;

/// Parses one buffer into a Module.
class Parser {
public:
  explicit Parser(Lexer &lexer);

  /// file ::= (group-decl | model-decl)*
  /// Always returns a module (possibly partial); check the error count.
  std::unique_ptr<Module> parseModule();

private:
  // Declarations.
  /// group-decl ::= 'group' ident '{' group-item* '}'
  std::unique_ptr<GroupDecl> parseGroup();
  /// group-item ::= 'matrix' integer ';' | 'generator' ident '=' list ';'
  ///              | 'norm' ident '=' ident (',' ident)* ';'
  bool parseGroupItem(GroupDecl &group);
  /// model-decl ::= 'model' ident '{' model-item* '}'
  std::unique_ptr<ModelDecl> parseModel();
  /// model-item (inBlock: param-decl | let-stmt | return-stmt)
  StmtPtr parseItem(bool inBlock);
  /// dim-decl ::= 'dim' ident ('=' integer)? ';'
  StmtPtr parseDim();
  /// input-decl / param-decl ::= ('input'|'param') ident ':' type ';'
  StmtPtr parseValueDecl(Stmt::StmtKind kind);
  /// block-decl ::= 'block' ident '(' args ')' '->' type '{' ... '}'
  StmtPtr parseBlock();
  /// let-stmt / output-stmt / return-stmt
  StmtPtr parseBind(Stmt::StmtKind kind);
  /// type ::= ident ('<' ident '>')? ('[' (dim (',' dim)*)? ']')?
  bool parseType(TypeExpr &type);

  // Expressions.
  /// expr ::= term (('+' | '-') term)*
  ExprPtr parseExpr();
  /// term ::= unary (('*' | '/' | '@') unary)*
  ExprPtr parseTerm();
  /// unary ::= '-' unary | primary
  ExprPtr parseUnary();
  /// primary ::= number | bool | ident | call | list | '(' expr ')' | repeat
  ExprPtr parsePrimary();
  /// call ::= ident '(' (arg (',' arg)*)? ')' ('as' ident)?
  ExprPtr parseCall(llvm::SMLoc loc, std::string callee);
  /// list ::= '[' (expr (',' expr)*)? ']'
  ExprPtr parseList();
  /// Reports and drops `e` if its tree is taller than kMaxExprHeight.
  ExprPtr checkHeight(ExprPtr e);
  /// Builds `lhs op rhs`, enforcing the height cap.
  ExprPtr makeBinary(llvm::SMLoc loc, char op, ExprPtr lhs, ExprPtr rhs);

  // Helpers.
  void consume() {
    prevEnd = tok.getSpelling().end();
    tok = lexer.lexToken();
  }
  /// Consumes a token of `kind` or reports "expected <what>, got ...".
  bool expect(Token::Kind kind, const llvm::Twine &what);
  /// Parses an identifier into `name`/`loc`; reports with `what` on failure.
  bool expectIdent(std::string &name, llvm::SMLoc &loc,
                   const llvm::Twine &what);
  /// Reports at the current token (not again if it is a lexing error).
  void errorHere(const llvm::Twine &msg);
  /// Describes the current token for messages: `'foo'`, `end of file`.
  std::string describeToken() const;
  /// Skips to the start of the next statement (after `;`, before a
  /// statement keyword or `}`).
  void skipToNextItem();
  /// Skips to the next top-level `model` or `group`.
  void skipToNextDecl();

  Lexer &lexer;
  DiagnosticEngine &diags;
  Token tok;
  /// End of the previous token: a missing ';' is reported there, on the
  /// line that lacks it, rather than at the next statement.
  const char *prevEnd = nullptr;
  unsigned depth = 0;
  /// Set when an error was reported in this statement, to avoid cascades.
  bool inError = false;
  /// The model being parsed and the name the current statement declares
  /// (recorded as dropped if the statement fails).
  ModelDecl *currentModel = nullptr;
  std::string pendingName;
  /// Records a failed statement in the current model.
  void noteDropped();
};

/// Lexes and parses buffer `bufferId`; errors go to `diags`.
std::unique_ptr<Module> parseTorsor(const llvm::SourceMgr &srcMgr,
                                    unsigned bufferId, DiagnosticEngine &diags);

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_PARSER_H
