//===- LexerTest.cpp - Tests for the .tsr lexer ---------------------------===//
//
// Token kinds, number values, comments, and the garbage-input guarantees:
// NUL bytes, invalid UTF-8, overlong identifiers and huge numbers give a
// bounded number of located errors and never crash.
//
//===----------------------------------------------------------------------===//

#include "frontend/Lexer.h"
#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"
#include <string>

using namespace torsor::frontend;

namespace {

/// Lexes `text` to the end; returns the kinds and records errors.
std::vector<Token::Kind> lexAll(llvm::StringRef text,
                                CollectingDiagnostics &diags,
                                std::vector<Token> *tokens = nullptr) {
  static llvm::SourceMgr srcMgr; // Keeps buffers alive for the tokens.
  unsigned id = srcMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "lex.tsr"), llvm::SMLoc());
  Lexer lexer(srcMgr, id, diags);
  std::vector<Token::Kind> kinds;
  for (unsigned i = 0; i < 1000000; ++i) {
    Token tok = lexer.lexToken();
    if (tokens)
      tokens->push_back(tok);
    kinds.push_back(tok.getKind());
    if (tok.is(Token::eof))
      break;
  }
  return kinds;
}

TEST(LexerTest, KeywordsPunctuationAndNames) {
  CollectingDiagnostics diags;
  auto kinds = lexAll("model M { let y = a @ b -> c; } // comment", diags);
  std::vector<Token::Kind> want = {
      Token::kw_model,   Token::identifier, Token::l_brace,    Token::kw_let,
      Token::identifier, Token::equal,      Token::identifier, Token::at,
      Token::identifier, Token::arrow,      Token::identifier, Token::semi,
      Token::r_brace,    Token::eof};
  EXPECT_EQ(kinds, want);
  EXPECT_TRUE(diags.entries.empty());
}

TEST(LexerTest, Numbers) {
  CollectingDiagnostics diags;
  std::vector<Token> toks;
  lexAll("42 1.5 2e-3 .25", diags, &toks);
  ASSERT_EQ(toks.size(), 5u);
  EXPECT_EQ(toks[0].getKind(), Token::integer);
  EXPECT_EQ(toks[0].getIntValue(), 42);
  EXPECT_EQ(toks[1].getKind(), Token::floating);
  EXPECT_DOUBLE_EQ(toks[1].getFloatValue(), 1.5);
  EXPECT_DOUBLE_EQ(toks[2].getFloatValue(), 2e-3);
  EXPECT_DOUBLE_EQ(toks[3].getFloatValue(), 0.25);
  EXPECT_TRUE(diags.entries.empty());
}

TEST(LexerTest, CommentsMayHoldUTF8) {
  CollectingDiagnostics diags;
  auto kinds = lexAll("// τ per head, λ per block\nx", diags);
  EXPECT_EQ(kinds, (std::vector<Token::Kind>{Token::identifier, Token::eof}));
  EXPECT_TRUE(diags.entries.empty());
}

TEST(LexerTest, HugeIntegerIsAnError) {
  CollectingDiagnostics diags;
  auto kinds = lexAll(std::string(5000, '9'), diags);
  ASSERT_EQ(diags.entries.size(), 1u);
  EXPECT_NE(diags.entries[0].message.find("is too large"), std::string::npos);
  EXPECT_EQ(kinds.front(), Token::error);
}

TEST(LexerTest, OverlongIdentifierIsAnError) {
  CollectingDiagnostics diags;
  lexAll(std::string(100000, 'a'), diags);
  ASSERT_EQ(diags.entries.size(), 1u);
  EXPECT_EQ(diags.entries[0].message,
            "identifier is too long (100000 characters; the limit is 256)");
}

TEST(LexerTest, BinaryGarbageGivesBoundedErrors) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i)
    garbage.push_back(char((i * 7919) & 0xff));
  garbage += std::string(100, '\0');
  CollectingDiagnostics diags;
  auto kinds = lexAll(garbage, diags);
  EXPECT_EQ(kinds.back(), Token::eof);
  EXPECT_FALSE(diags.entries.empty());
  // Runs of bad bytes are reported once, so far fewer errors than bytes.
  EXPECT_LT(diags.entries.size(), garbage.size() / 2);
}

TEST(LexerTest, NulAndInvalidUTF8) {
  CollectingDiagnostics diags;
  lexAll(std::string("a\0b", 3), diags);
  ASSERT_EQ(diags.entries.size(), 1u);
  EXPECT_EQ(diags.entries[0].message, "unexpected NUL byte in source");
  CollectingDiagnostics diags2;
  lexAll("x \xff\xfe y", diags2);
  ASSERT_EQ(diags2.entries.size(), 1u);
  EXPECT_EQ(diags2.entries[0].message,
            "unexpected non-ASCII byte in source (only comments may contain "
            "UTF-8)");
}

} // namespace
