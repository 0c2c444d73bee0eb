//===- ParserTest.cpp - Tests for the .tsr parser -------------------------===//
//
// AST shapes for each construct, error recovery (several errors per run),
// and the nesting cap that keeps hostile input from overflowing the stack.
//
//===----------------------------------------------------------------------===//

#include "FrontendTestUtils.h"
#include "gtest/gtest.h"

using namespace torsor::frontend;
using namespace torsor::frontend::test;

namespace {

TEST(ParserTest, ModelItems) {
  auto c = compile(R"(
    model M {
      dim L;
      dim D = 8;
      input x: f32[L, D];
      param W: f32[D, D];
      block B(h: f32[L, D]) -> f32[L, D] {
        param V: f32[D, D];
        return h @ V;
      }
      let y = repeat 3 B(x @ W) as blocks;
      output z = softmax(y, axis = -1);
    })",
                   /*sema=*/false);
  EXPECT_TRUE(c->errors().empty());
  ASSERT_EQ(c->module->models.size(), 1u);
  const ModelDecl &m = *c->module->models[0];
  ASSERT_EQ(m.body.size(), 7u);
  auto *d = llvm::dyn_cast<DimDecl>(m.body[1].get());
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->isFixed);
  EXPECT_EQ(d->value, 8);
  auto *block = llvm::dyn_cast<BlockDecl>(m.body[4].get());
  ASSERT_TRUE(block);
  EXPECT_EQ(block->args.size(), 1u);
  EXPECT_EQ(block->body.size(), 2u);
  auto *let = llvm::cast<BindStmt>(m.body[5].get());
  auto *call = llvm::dyn_cast<CallExpr>(let->value.get());
  ASSERT_TRUE(call);
  EXPECT_EQ(call->repeatCount, 3);
  EXPECT_EQ(call->prefix, "blocks");
  auto *arg = llvm::dyn_cast<BinaryExpr>(call->args[0].get());
  ASSERT_TRUE(arg);
  EXPECT_EQ(arg->op, '@');
}

TEST(ParserTest, PrecedenceMatmulBindsTighterThanPlus) {
  auto c = compile("model M { let y = a + b @ c * d; }", /*sema=*/false);
  auto *let = llvm::cast<BindStmt>(c->module->models[0]->body[0].get());
  auto *add = llvm::dyn_cast<BinaryExpr>(let->value.get());
  ASSERT_TRUE(add);
  EXPECT_EQ(add->op, '+');
  auto *mul = llvm::dyn_cast<BinaryExpr>(add->rhs.get());
  ASSERT_TRUE(mul);
  EXPECT_EQ(mul->op, '*'); // (b @ c) * d, left to right
}

TEST(ParserTest, GroupDeclaration) {
  auto c = compile(R"(
    group H {
      matrix 3;
      generator X = [[0, 1, 0], [0, 0, 0], [0, 0, 0]];
      norm a = X;
    })",
                   /*sema=*/false);
  EXPECT_TRUE(c->errors().empty());
  ASSERT_EQ(c->module->groups.size(), 1u);
  EXPECT_EQ(c->module->groups[0]->matrixSize, 3);
  EXPECT_EQ(c->module->groups[0]->norms[0].generators.size(), 1u);
}

TEST(ParserTest, RecoversAndReportsSeveralErrors) {
  auto c = compile(R"(model M {
  let a = ;
  let b = (1 + ;
  output c = 1.0;
})",
                   /*sema=*/false);
  std::vector<std::string> want = {"2:11: expected an expression, got ';'",
                                   "3:16: expected an expression, got ';'"};
  EXPECT_EQ(c->errors(), want);
  // The good statement after the errors is still there.
  ASSERT_EQ(c->module->models[0]->body.size(), 1u);
}

TEST(ParserTest, NestingIsCapped) {
  std::string deep = "model M { output y = " + std::string(100000, '(') + "1" +
                     std::string(100000, ')') + "; }";
  auto c = compile(deep, /*sema=*/false);
  ASSERT_EQ(c->errors().size(), 1u);
  EXPECT_NE(c->errors()[0].find("nested too deeply"), std::string::npos);
  std::string lists =
      "model M { output y = f(t = " + std::string(50000, '[') + "; }";
  auto c2 = compile(lists, /*sema=*/false);
  ASSERT_EQ(c2->errors().size(), 1u);
  std::string minus =
      "model M { output y = " + std::string(50000, '-') + "1; }";
  auto c3 = compile(minus, /*sema=*/false);
  ASSERT_EQ(c3->errors().size(), 1u);
}

} // namespace
