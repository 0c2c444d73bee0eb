//===- SemaTest.cpp - Tests for Torsor semantic analysis ------------------===//
//
// Shape inference with symbolic dims, broadcasting, declared groups, and
// the left-invariance analysis that decides the manifest's
// `left_invariant` claim for each group input.
//
//===----------------------------------------------------------------------===//

#include "FrontendTestUtils.h"
#include "frontend/Types.h"
#include "torsor/GroupFacts.h"
#include "gtest/gtest.h"

using namespace torsor::frontend;
using namespace torsor::frontend::test;

namespace {

/// The type of output `name` of the first model.
std::string outputType(const Compiled &c, llvm::StringRef name) {
  for (const StmtPtr &s : c.module->models[0]->body)
    if (s->getKind() == Stmt::Output && s->name == name)
      return llvm::cast<BindStmt>(*s).value->type.str();
  return "<none>";
}

/// The left-invariance verdict of input `name` of the first model.
bool leftInvariant(const Compiled &c, llvm::StringRef name) {
  for (const StmtPtr &s : c.module->models[0]->body)
    if (s->getKind() == Stmt::Input && s->name == name)
      return llvm::cast<ValueDecl>(*s).leftInvariant;
  ADD_FAILURE() << "no input " << name.str();
  return false;
}

TEST(SemaTest, ShapesWithSymbolicDims) {
  auto ok = compile(R"(
    model M {
      dim B; dim L; dim D = 16; dim H = 4;
      input x: f32[B, L, D];
      input y: f32[L, D];
      input bias: f32[D];
      param W: f32[D, 32];
      output a = x @ W;
      output b = x + bias;
      output c = x * 2;
      output d = concat(x, x, axis = -1);
      output e = heads(y, H);
      output f = merge_heads(heads(y, H));
    })");
  EXPECT_TRUE(ok->errors().empty());
  EXPECT_EQ(outputType(*ok, "a"), "f32[B, L, 32]");
  EXPECT_EQ(outputType(*ok, "b"), "f32[B, L, 16]");
  EXPECT_EQ(outputType(*ok, "c"), "f32[B, L, 16]");
  EXPECT_EQ(outputType(*ok, "d"), "f32[B, L, 32]");
  EXPECT_EQ(outputType(*ok, "e"), "f32[4, L, 4]");
  EXPECT_EQ(outputType(*ok, "f"), "f32[L, 16]");
}

TEST(SemaTest, GroupOpsTypes) {
  auto c = compile(R"(
    model M {
      dim L;
      input g: SE3[L];
      input p: f32[L, 3];
      output w = log(compose(inverse(g), g));
      output q = act(g, p);
      output d = dist2(g, g, lambda = [1, 0.5]);
      output pd = dist2(g, g, pairwise = true);
    })");
  EXPECT_TRUE(c->errors().empty());
  EXPECT_EQ(outputType(*c, "w"), "f32[L, 6]");
  EXPECT_EQ(outputType(*c, "q"), "f32[L, 3]");
  EXPECT_EQ(outputType(*c, "d"), "f32[L]");
  EXPECT_EQ(outputType(*c, "pd"), "f32[L, L]");
}

TEST(SemaTest, HeisenbergGroup) {
  auto c = compile(R"(
    group Heis3 {
      matrix 3;
      generator X = [[0, 1, 0], [0, 0, 0], [0, 0, 0]];
      generator Y = [[0, 0, 0], [0, 0, 1], [0, 0, 0]];
      generator Z = [[0, 0, 1], [0, 0, 0], [0, 0, 0]];
      norm plane = X, Y;
      norm center = Z;
    }
    model M {
      dim L;
      input g: Heis3[L];
      output w = log(g);
    })");
  EXPECT_TRUE(c->errors().empty());
  const GroupInfo &info = c->module->groups[0]->info;
  EXPECT_EQ(info.algebraDim, 3u);
  EXPECT_EQ(info.blocks.size(), 2u);
  EXPECT_EQ(info.pointDim, 2u); // last row is zero: affine action
  EXPECT_EQ(outputType(*c, "w"), "f32[L, 3]");
}

TEST(SemaTest, LeftInvarianceRelativeUses) {
  auto c = compile(R"(
    model M {
      dim L;
      input g: SE3[L];
      input h: SE3[L];
      input k: SE3[L];
      input v: f32[L, 8];
      let a = lie_attention(g, v, heads = 2);
      output o = a;
      output d1 = dist2(h, h);
      output d2 = dist2(g, g, pairwise = true);
      output r = log(compose(inverse(k), k));
    })");
  ASSERT_TRUE(c->errors().empty());
  EXPECT_TRUE(leftInvariant(*c, "g"));
  EXPECT_TRUE(leftInvariant(*c, "h"));
  EXPECT_TRUE(leftInvariant(*c, "k")); // k⁻¹k is invariant
}

TEST(SemaTest, LeftInvarianceAbsoluteUses) {
  auto c = compile(R"(
    model M {
      dim L;
      input a: SE3[L];
      input b: SE3[L];
      input c: SE3[L];
      input d: SE3[L];
      input e: SE3[L];
      input p: f32[L, 3];
      output o1 = log(a);
      output o2 = act(b, p);
      output o3 = dist2(c, d);
      output o4 = e;
    })");
  ASSERT_TRUE(c->errors().empty());
  EXPECT_FALSE(leftInvariant(*c, "a"));
  EXPECT_FALSE(leftInvariant(*c, "b"));
  EXPECT_FALSE(leftInvariant(*c, "c")); // mixes two independent inputs
  EXPECT_FALSE(leftInvariant(*c, "d"));
  EXPECT_FALSE(leftInvariant(*c, "e")); // the output exposes the pose
}

TEST(SemaTest, LeftInvarianceThroughBlocks) {
  auto c = compile(R"(
    model M {
      dim L; dim D = 8;
      input g: SE3[L];
      input q: SE3[L];
      input x: f32[L, D];
      block Rel(h: f32[L, D], pose: SE3[L]) -> f32[L, D] {
        return lie_attention(pose, h);
      }
      block Abs(h: f32[L, D], pose: SE3[L]) -> f32[L, D] {
        return h + log(pose) @ transpose(log(pose)) @ h;
      }
      let y = repeat 3 Rel(x, g);
      output o = Abs(y, q);
    })");
  ASSERT_TRUE(c->errors().empty()) << c->errors()[0];
  EXPECT_TRUE(leftInvariant(*c, "g"));
  EXPECT_FALSE(leftInvariant(*c, "q"));
}

TEST(SemaTest, OneErrorPerMistake) {
  auto c = compile(R"(model M {
  dim L;
  input x: f32[L, 4];
  let y = x + zz;
  let w = y @ y;
  output o = w;
})");
  // `y` is invalid after the first error; its uses stay quiet.
  std::vector<std::string> want = {"4:15: use of undeclared name 'zz'"};
  EXPECT_EQ(c->errors(), want);
}

} // namespace

// The language's built-in groups are the rows of the shared table of group
// facts (torsor/GroupFacts.def), in order, with the same sizes and blocks.
TEST(SemaTest, BuiltinGroupsComeFromTheFactsTable) {
  llvm::ArrayRef<GroupInfo> groups = getBuiltinGroups();
  ASSERT_EQ(groups.size(), std::size(torsor::facts::kGroups));
  for (size_t i = 0; i < groups.size(); ++i) {
    const torsor::facts::Group &row = torsor::facts::kGroups[i];
    EXPECT_EQ(groups[i].name, row.name);
    EXPECT_EQ(groups[i].mnemonic, row.mnemonic);
    EXPECT_EQ(groups[i].matrixSize, row.n);
    EXPECT_EQ(groups[i].algebraDim, row.k);
    EXPECT_EQ(groups[i].pointDim, row.pointDim);
    ASSERT_EQ(groups[i].blocks.size(), row.numBlocks);
    for (size_t b = 0; b < row.numBlocks; ++b) {
      EXPECT_EQ(groups[i].blocks[b].name, row.blocks[b].name);
      EXPECT_EQ(groups[i].blocks[b].size, row.blocks[b].size);
    }
  }
}
