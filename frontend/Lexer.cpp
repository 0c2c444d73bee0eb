//===- Lexer.cpp - Torsor language lexer ----------------------------------===//
//
// Hand-written lexer for `.tsr`. Comments run from `//` to the end of the
// line and may hold any bytes (UTF-8 prose, `expected-error` directives).
// Outside comments only printable ASCII is valid; every other byte is
// reported once per run of bad bytes so binary input yields a bounded
// number of errors.
//
//===----------------------------------------------------------------------===//

#include "frontend/Lexer.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

using namespace torsor::frontend;
using llvm::SMLoc;
using llvm::StringRef;

StringRef Token::getKindName(Kind kind) {
  switch (kind) {
  case eof:
    return "end of file";
  case error:
    return "invalid token";
  case identifier:
    return "identifier";
  case integer:
    return "integer";
  case floating:
    return "number";
#define PUNCT(ID, SPELLING)                                                    \
  case ID:                                                                     \
    return "'" SPELLING "'";
#define KEYWORD(SPELLING)                                                      \
  case kw_##SPELLING:                                                          \
    return "'" #SPELLING "'";
#include "frontend/TokenKinds.def"
  }
  return "token";
}

Lexer::Lexer(const llvm::SourceMgr &srcMgr, unsigned bufferId,
             DiagnosticEngine &diags)
    : srcMgr(srcMgr), bufferId(bufferId), diags(diags),
      buffer(srcMgr.getMemoryBuffer(bufferId)->getBuffer()),
      curPtr(buffer.begin()) {}

FileLineCol Lexer::translateLocation(SMLoc loc) const {
  FileLineCol result;
  result.file = srcMgr.getMemoryBuffer(bufferId)->getBufferIdentifier();
  if (!loc.isValid())
    return result;
  auto lineCol = srcMgr.getLineAndColumn(loc, bufferId);
  result.line = lineCol.first;
  result.col = lineCol.second;
  return result;
}

Token Lexer::emitError(const char *loc, const llvm::Twine &msg) {
  diags.emitError(SMLoc::getFromPointer(loc), msg);
  return formToken(Token::error, loc);
}

/// Skips a `//` comment up to (not including) the newline.
void Lexer::skipComment() {
  while (curPtr != buffer.end() && *curPtr != '\n')
    ++curPtr;
}

static bool isIdentStart(char c) { return llvm::isAlpha(c) || c == '_'; }
static bool isIdentChar(char c) { return llvm::isAlnum(c) || c == '_'; }

Token Lexer::lexToken() {
  while (true) {
    if (curPtr == buffer.end())
      return Token(Token::eof, StringRef(buffer.end(), 0));
    const char *start = curPtr++;
    char c = *start;
    switch (c) {
    case ' ':
    case '\t':
    case '\n':
    case '\r':
      continue;
    case '/':
      if (curPtr != buffer.end() && *curPtr == '/') {
        skipComment();
        continue;
      }
      return formToken(Token::slash, start);
    case '-':
      if (curPtr != buffer.end() && *curPtr == '>') {
        ++curPtr;
        return formToken(Token::arrow, start);
      }
      return formToken(Token::minus, start);
    case '(':
      return formToken(Token::l_paren, start);
    case ')':
      return formToken(Token::r_paren, start);
    case '{':
      return formToken(Token::l_brace, start);
    case '}':
      return formToken(Token::r_brace, start);
    case '[':
      return formToken(Token::l_square, start);
    case ']':
      return formToken(Token::r_square, start);
    case '<':
      return formToken(Token::less, start);
    case '>':
      return formToken(Token::greater, start);
    case ',':
      return formToken(Token::comma, start);
    case ':':
      return formToken(Token::colon, start);
    case ';':
      return formToken(Token::semi, start);
    case '=':
      return formToken(Token::equal, start);
    case '+':
      return formToken(Token::plus, start);
    case '*':
      // Python's power operator: one targeted error, not two.
      if (curPtr != buffer.end() && *curPtr == '*') {
        ++curPtr;
        return emitError(start, "Torsor has no '**' operator; write 'x * x' "
                                "for a square");
      }
      return formToken(Token::star, start);
    case '#':
      // A Python comment (`# text`, or `#` ending the line): say so once
      // and skip it as a comment, so the rest of the line does not turn
      // into more errors. Any other `#` is just an unexpected character.
      if (curPtr != buffer.end() && *curPtr != ' ' && *curPtr != '\t' &&
          *curPtr != '\n' && *curPtr != '\r' && *curPtr != '#' &&
          *curPtr != '!')
        break;
      diags.emitError(SMLoc::getFromPointer(start),
                      "'#' does not start a comment; Torsor comments start "
                      "with '//'");
      skipComment();
      continue;
    case '@':
      return formToken(Token::at, start);
    default:
      break;
    }
    if (isIdentStart(c))
      return lexIdentifier(start);
    // `x.T`, `x.shape`, `x.softmax(...)`: Python/PyTorch member access.
    if (c == '.' && curPtr != buffer.end() && isIdentStart(*curPtr)) {
      while (curPtr != buffer.end() && isIdentChar(*curPtr))
        ++curPtr;
      StringRef member(start + 1, std::min<size_t>(curPtr - start - 1, 40));
      if (member == "T" || member == "mT" || member == "t")
        return emitError(start, "Torsor has no '." + member +
                                    "'; write 'transpose(x)' (it swaps the "
                                    "last two dims)");
      return emitError(start, "Torsor has no '.' member access ('." + member +
                                  "'); built-ins are functions, e.g. '" +
                                  member + "(x)'");
    }
    if (llvm::isDigit(c) ||
        (c == '.' && curPtr != buffer.end() && llvm::isDigit(*curPtr)))
      return lexNumber(start);
    // Report a run of invalid bytes once, so binary input stays readable.
    auto isBad = [](char ch) {
      unsigned char u = ch;
      return u >= 0x80 || u == 0 ||
             (u < 0x20 && u != '\n' && u != '\t' && u != '\r') || u == 0x7f;
    };
    while (curPtr != buffer.end() && isBad(*curPtr))
      ++curPtr;
    unsigned char u = c;
    if (u == 0)
      return emitError(start, "unexpected NUL byte in source");
    if (u >= 0x80)
      return emitError(start, "unexpected non-ASCII byte in source (only "
                              "comments may contain UTF-8)");
    if (u < 0x20 || u == 0x7f)
      return emitError(start, "unexpected control character in source");
    return emitError(start,
                     "unexpected character '" + StringRef(start, 1) + "'");
  }
}

Token Lexer::lexIdentifier(const char *start) {
  while (curPtr != buffer.end() && isIdentChar(*curPtr))
    ++curPtr;
  StringRef spelling(start, curPtr - start);
  if (spelling.size() > kMaxIdentifierLength)
    return emitError(start, "identifier is too long (" +
                                llvm::Twine(spelling.size()) +
                                " characters; the limit is " +
                                llvm::Twine(kMaxIdentifierLength) + ")");
  Token::Kind kind = llvm::StringSwitch<Token::Kind>(spelling)
#define KEYWORD(SPELLING) .Case(#SPELLING, Token::kw_##SPELLING)
#include "frontend/TokenKinds.def"
                         .Default(Token::identifier);
  return formToken(kind, start);
}

Token Lexer::lexNumber(const char *start) {
  bool isFloat = false;
  auto atEnd = [&] { return curPtr == buffer.end(); };
  while (!atEnd() && llvm::isDigit(*curPtr))
    ++curPtr;
  if (*start == '.' || (!atEnd() && *curPtr == '.')) {
    isFloat = true;
    if (*start != '.')
      ++curPtr;
    while (!atEnd() && llvm::isDigit(*curPtr))
      ++curPtr;
  }
  if (!atEnd() && (*curPtr == 'e' || *curPtr == 'E')) {
    const char *expStart = curPtr++;
    if (!atEnd() && (*curPtr == '+' || *curPtr == '-'))
      ++curPtr;
    if (atEnd() || !llvm::isDigit(*curPtr)) {
      curPtr = expStart + 1;
      return emitError(expStart, "expected digits in the exponent of a "
                                 "number");
    }
    while (!atEnd() && llvm::isDigit(*curPtr))
      ++curPtr;
    isFloat = true;
  }
  // `12abc` is one bad token, not a number followed by a name.
  if (!atEnd() && (llvm::isAlpha(*curPtr) || *curPtr == '_')) {
    while (!atEnd() && isIdentChar(*curPtr))
      ++curPtr;
    return emitError(
        start, "invalid number '" +
                   StringRef(start, std::min<size_t>(curPtr - start, 40)) +
                   "'");
  }
  StringRef spelling(start, curPtr - start);
  std::string text = spelling.str();
  if (!isFloat) {
    uint64_t value;
    if (spelling.getAsInteger(10, value) || value > uint64_t(INT64_MAX))
      return emitError(start, "integer literal '" + spelling.take_front(40) +
                                  (spelling.size() > 40 ? "..." : "") +
                                  "' is too large (limit is 2^63 - 1)");
    Token tok = formToken(Token::integer, start);
    tok.setIntValue(int64_t(value));
    tok.setFloatValue(double(value));
    return tok;
  }
  errno = 0;
  double value = std::strtod(text.c_str(), nullptr);
  if (errno == ERANGE && !std::isfinite(value))
    return emitError(start, "number '" + spelling.take_front(40) +
                                (spelling.size() > 40 ? "..." : "") +
                                "' is out of range for a 64-bit float");
  Token tok = formToken(Token::floating, start);
  tok.setFloatValue(value);
  return tok;
}
