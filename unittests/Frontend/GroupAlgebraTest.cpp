//===- GroupAlgebraTest.cpp - Tests for the declared-group analysis -------===//
//
// The analysis that both Sema and the Lie dialect's GenericGroupModel run on
// declared generators: validity (independence, closure) and the derived
// facts (dual basis, nilpotency index, affine and orthogonal structure).
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/GroupAlgebra.h"
#include "unittests/Frontend/MatrixTestUtils.h"
#include "gtest/gtest.h"

#include <cmath>

using namespace torsor::lie::algebra;
using torsor::lie::algebra::testing::plus;
using torsor::lie::algebra::testing::unit;

namespace {

/// so(3): the hat of each axis.
std::vector<Matrix> so3() {
  std::vector<Matrix> g;
  for (unsigned axis = 0; axis < 3; ++axis) {
    unsigned i = (axis + 1) % 3, j = (axis + 2) % 3;
    g.push_back(plus(unit(3, j, i), unit(3, i, j), -1));
  }
  return g;
}

/// The Heisenberg algebra: strictly upper triangular 3×3.
std::vector<Matrix> heisenberg() {
  return {unit(3, 0, 1), unit(3, 1, 2), unit(3, 0, 2)};
}

TEST(GroupAlgebraTest, SO3IsOrthogonalAndNotNilpotent) {
  Facts f;
  Problem p = analyze(3, so3(), f);
  ASSERT_FALSE(p) << describe(p, 3);
  EXPECT_EQ(f.nilpotencyIndex, 0u);
  EXPECT_FALSE(f.affine);
  EXPECT_TRUE(f.orthogonal);
  EXPECT_EQ(f.getPointDim(), 3u);
}

TEST(GroupAlgebraTest, HeisenbergIsNilpotentOfIndexThreeAndAffine) {
  Facts f;
  ASSERT_FALSE(analyze(3, heisenberg(), f));
  EXPECT_EQ(f.nilpotencyIndex, 3u);
  EXPECT_TRUE(f.affine);
  EXPECT_EQ(f.getPointDim(), 2u);
}

TEST(GroupAlgebraTest, DualBasisGivesCoordinatesOfNonOrthonormalGenerators) {
  // E0 = X, E1 = X + Y: not orthogonal, so the dual basis is not E.
  std::vector<Matrix> g = {unit(2, 0, 1), plus(unit(2, 0, 1), unit(2, 1, 0))};
  // Not closed ([X, X + Y] = diag(1, −1)) — add H to close sl(2).
  g.push_back(plus(unit(2, 0, 0), unit(2, 1, 1), -1));
  Facts f;
  ASSERT_FALSE(analyze(2, g, f)) << describe(analyze(2, g, f), 2);
  // X = 0.3 E0 + 0.7 E1 − 2 E2.
  Matrix x = plus(plus(Matrix(4, 0.0), g[0], 0.3), g[1], 0.7);
  x = plus(x, g[2], -2);
  const double want[] = {0.3, 0.7, -2};
  for (unsigned a = 0; a < 3; ++a) {
    double w = 0;
    for (unsigned i = 0; i < 4; ++i)
      w += f.dual[a][i] * x[i];
    EXPECT_NEAR(w, want[a], 1e-14);
  }
}

TEST(GroupAlgebraTest, DependentGeneratorIsNamedInDeclarationOrder) {
  std::vector<Matrix> g = so3();
  g.push_back(plus(g[0], g[2], 2.5));
  Facts f;
  Problem p = analyze(3, g, f);
  EXPECT_EQ(p.kind, Problem::Dependent);
  EXPECT_EQ(p.a, 3u);
  EXPECT_EQ(describe(p, 3, {"X", "Y", "Z", "W"}),
            "expects linearly independent generators, found W in the span "
            "of the generators before it");
}

TEST(GroupAlgebraTest, IndependenceIsScaleFree) {
  // Tiny and huge generators are as independent as unit ones; a remainder
  // of 1e-10 of the generator's own norm is not.
  for (double scale : {1e-12, 1.0, 1e12}) {
    std::vector<Matrix> g = heisenberg();
    for (Matrix &m : g)
      for (double &x : m)
        x *= scale;
    Facts f;
    EXPECT_FALSE(analyze(3, g, f)) << scale;
    std::vector<Matrix> d = {g[0], plus(g[0], g[1], 1e-10)};
    EXPECT_EQ(analyze(3, d, f).kind, Problem::Dependent) << scale;
    std::vector<Matrix> e = {g[0], plus(g[0], g[1], 1e-8)};
    EXPECT_NE(analyze(3, e, f).kind, Problem::Dependent) << scale;
  }
}

TEST(GroupAlgebraTest, MissingBracketIsReportedWithItsValue) {
  std::vector<Matrix> g = heisenberg();
  g.pop_back(); // [E01, E12] = E02 is no longer in the span.
  Facts f;
  Problem p = analyze(3, g, f);
  ASSERT_EQ(p.kind, Problem::NotClosed);
  EXPECT_EQ(p.a, 0u);
  EXPECT_EQ(p.b, 1u);
  EXPECT_EQ(formatMatrix(p.bracket, 3), "[[0, 0, 1], [0, 0, 0], [0, 0, 0]]");
}

TEST(GroupAlgebraTest, CommutingGeneratorsAtLargeScaleAreClosed) {
  // Rotation and scaling of the plane commute; at 1e8 the products are 1e16
  // and must still cancel to an accepted bracket.
  std::vector<Matrix> g = {plus(unit(2, 1, 0, 1e8), unit(2, 0, 1), -1e8),
                           plus(unit(2, 0, 0, 1e8), unit(2, 1, 1, 1e8))};
  Facts f;
  EXPECT_FALSE(analyze(2, g, f));
}

TEST(GroupAlgebraTest, RejectsBadSizesCountsAndNonFiniteEntries) {
  Facts f;
  EXPECT_EQ(analyze(1, {Matrix(1, 1.0)}, f).kind, Problem::MatrixSize);
  EXPECT_EQ(analyze(9, {Matrix(81, 1.0)}, f).kind, Problem::MatrixSize);
  EXPECT_EQ(analyze(2, {}, f).kind, Problem::GeneratorCount);
  EXPECT_EQ(analyze(2, std::vector<Matrix>(5, Matrix(4, 1.0)), f).kind,
            Problem::GeneratorCount);
  EXPECT_EQ(analyze(2, {Matrix(3, 1.0)}, f).kind, Problem::MatrixSize);
  Problem p = analyze(2, {unit(2, 0, 1), unit(2, 1, 0, NAN)}, f);
  EXPECT_EQ(p.kind, Problem::NonFinite);
  EXPECT_EQ(p.a, 1u);
  EXPECT_EQ(analyze(2, {Matrix(4, 0.0)}, f).kind, Problem::Dependent);
}

} // namespace
