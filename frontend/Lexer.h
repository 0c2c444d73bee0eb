//===- Lexer.h - Torsor language lexer -------------------------*- C++ -*-===//
//
// Turns a `.tsr` buffer into tokens. Every token carries an `llvm::SMLoc`
// into the buffer held by the `llvm::SourceMgr`, so diagnostics can point at
// the exact character. The lexer never crashes on garbage: NUL bytes, binary
// data, invalid UTF-8, overlong identifiers and out-of-range numbers become
// located errors and `error` tokens, and lexing continues.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_LEXER_H
#define TORSOR_FRONTEND_LEXER_H

#include "frontend/Diagnostics.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include <cstdint>

namespace torsor::frontend {

/// Longest identifier the lexer accepts.
constexpr size_t kMaxIdentifierLength = 256;

/// One token: its kind, its spelling in the buffer and, for numbers, value.
class Token {
public:
  enum Kind {
#define TOK(ID) ID,
#include "frontend/TokenKinds.def"
  };

  Token(Kind kind = eof, llvm::StringRef spelling = {})
      : kind(kind), spelling(spelling) {}

  Kind getKind() const { return kind; }
  bool is(Kind k) const { return kind == k; }
  bool isNot(Kind k) const { return kind != k; }
  /// True for the language's keywords (`model`, `dim`, ...).
  bool isKeyword() const {
    switch (kind) {
#define KEYWORD(SPELLING) case kw_##SPELLING:
#include "frontend/TokenKinds.def"
      return true;
    default:
      return false;
    }
  }
  /// The source text of the token.
  llvm::StringRef getSpelling() const { return spelling; }
  /// Location of the first character.
  llvm::SMLoc getLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data());
  }
  /// Value of an `integer` token (always fits in int64_t).
  int64_t getIntValue() const { return intValue; }
  /// Value of an `integer` or `floating` token as a double.
  double getFloatValue() const { return floatValue; }

  void setIntValue(int64_t v) { intValue = v; }
  void setFloatValue(double v) { floatValue = v; }

  /// Human-readable name of a kind for messages: "'('", "identifier", ...
  static llvm::StringRef getKindName(Kind kind);

private:
  Kind kind;
  llvm::StringRef spelling;
  int64_t intValue = 0;
  double floatValue = 0;
};

/// A file position resolved from an SMLoc, MLIR-free.
struct FileLineCol {
  llvm::StringRef file;
  unsigned line = 0, col = 0;
};

/// Produces tokens from one buffer of a SourceMgr.
class Lexer {
public:
  /// Lexes buffer `bufferId` of `srcMgr`; errors go to `diags`.
  Lexer(const llvm::SourceMgr &srcMgr, unsigned bufferId,
        DiagnosticEngine &diags);

  /// Returns the next token; `eof` forever at the end.
  Token lexToken();

  /// Resolves a location in this lexer's buffer to file/line/column
  /// (CIRCT's FIRLexer::translateLocation without the MLIR types).
  FileLineCol translateLocation(llvm::SMLoc loc) const;

  const llvm::SourceMgr &getSourceMgr() const { return srcMgr; }
  DiagnosticEngine &getDiagnostics() const { return diags; }

private:
  Token formToken(Token::Kind kind, const char *start) {
    return Token(kind, llvm::StringRef(start, curPtr - start));
  }
  Token emitError(const char *loc, const llvm::Twine &msg);
  Token lexIdentifier(const char *start);
  Token lexNumber(const char *start);
  void skipComment();

  const llvm::SourceMgr &srcMgr;
  unsigned bufferId;
  DiagnosticEngine &diags;
  llvm::StringRef buffer;
  const char *curPtr;
};

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_LEXER_H
