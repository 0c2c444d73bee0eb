//===- GroupStructureTest.cpp - Tests for declared-group recognition ------===//
//
// recognize() (GroupStructure.h) decides which built-in's closed forms a
// declared group reuses. A wrong identification is a wrong kernel, so these
// tests pin the decision, the coordinate maps and the block-norm mix for
// groups written in permuted, scaled and sheared bases, and the refusals:
// a conjugated so(3) (isomorphic, but not inside a built-in's matrices), a
// group none contains, nilpotent groups and the `generic` keyword.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/GroupStructure.h"
#include "unittests/Frontend/MatrixTestUtils.h"
#include "gtest/gtest.h"

#include <cmath>

using namespace torsor::lie::algebra;
using torsor::lie::algebra::testing::plus;
using torsor::lie::algebra::testing::unit;

namespace {

Matrix scaled(Matrix a, double s) {
  for (double &x : a)
    x *= s;
  return a;
}

/// hat(e_axis) of so(3) in the corner of an n×n matrix.
Matrix hat(unsigned n, unsigned axis) {
  unsigned i = (axis + 1) % 3, j = (axis + 2) % 3;
  return plus(unit(n, j, i), unit(n, i, j), -1);
}

/// The planar rotation generator in the corner of an n×n matrix.
Matrix rot2(unsigned n) { return hat(n, 2); }

/// Analyses `gens` (must be valid) and recognises them with `blocks`.
Recognition run(unsigned n, const std::vector<Matrix> &gens,
                const std::vector<unsigned> &blocks, Facts *out = nullptr) {
  Facts facts;
  Problem p = analyze(n, gens, facts);
  EXPECT_FALSE(p) << describe(p, n);
  if (out)
    *out = facts;
  return recognize(facts, blocks);
}

TEST(GroupStructure, ExactBuiltinBasis) {
  Recognition r = run(4,
                      {hat(4, 0), hat(4, 1), hat(4, 2), unit(4, 0, 3),
                       unit(4, 1, 3), unit(4, 2, 3)},
                      {3, 3});
  EXPECT_EQ(r.kind, Recognition::Exact);
  EXPECT_EQ(r.builtin, "se3");
}

TEST(GroupStructure, PermutedSE2InOneBlockIsIsotropic) {
  // Translation, rotation, translation, one λ block: T is a permutation
  // and the one block's norm is rot + trans.
  Recognition r = run(3, {unit(3, 0, 2), rot2(3), unit(3, 1, 2)}, {3});
  ASSERT_EQ(r.kind, Recognition::Embedded);
  EXPECT_EQ(r.builtin, "se2");
  ASSERT_TRUE(r.isBlockIsotropic());
  ASSERT_EQ(r.blockMix.size(), 2u);
  EXPECT_NEAR(r.blockMix[0], 1, 1e-14);
  EXPECT_NEAR(r.blockMix[1], 1, 1e-14);
  // T maps declared (Tx, R, Ty) to se2's (θ, x, y).
  EXPECT_EQ(r.toBuiltin, (Matrix{0, 1, 0, 1, 0, 0, 0, 0, 1}));
}

TEST(GroupStructure, PermutedSE2WithSplitTranslationsNeedsThePairLog) {
  // Blocks {Tx}, {R, Ty}: Ty's weight differs from Tx's, which no
  // combination of se2's (rot, trans) norms expresses.
  Recognition r = run(3, {unit(3, 0, 2), rot2(3), unit(3, 1, 2)}, {1, 2});
  ASSERT_EQ(r.kind, Recognition::Embedded);
  EXPECT_EQ(r.builtin, "se2");
  EXPECT_FALSE(r.isBlockIsotropic());
  EXPECT_NE(r.reason.find("per pair"), std::string::npos) << r.reason;
}

TEST(GroupStructure, ScaledRotationIsIsotropicShearedTranslationsAreNot) {
  Matrix r2 = scaled(rot2(3), 2.5);
  Recognition iso =
      run(3, {r2, scaled(unit(3, 0, 2), 3), scaled(unit(3, 1, 2), 3)}, {1, 2});
  ASSERT_EQ(iso.kind, Recognition::Embedded);
  ASSERT_TRUE(iso.isBlockIsotropic());
  // N_rot = θ'² = (θ/2.5)², N_trans = ‖ρ/3‖².
  EXPECT_NEAR(iso.blockMix[0], 1 / 6.25, 1e-14);
  EXPECT_NEAR(iso.blockMix[1], 0, 1e-14);
  EXPECT_NEAR(iso.blockMix[3], 1 / 9.0, 1e-14);

  Recognition shear =
      run(3, {r2, unit(3, 0, 2), plus(unit(3, 0, 2), unit(3, 1, 2))}, {1, 2});
  ASSERT_EQ(shear.kind, Recognition::Embedded);
  EXPECT_EQ(shear.builtin, "se2");
  EXPECT_FALSE(shear.isBlockIsotropic());
  // T⁺ inverts T on the declared coordinates.
  for (unsigned a = 0; a < 3; ++a)
    for (unsigned c = 0; c < 3; ++c) {
      double s = 0;
      for (unsigned i = 0; i < 3; ++i)
        s += shear.fromBuiltin[a * 3 + i] * shear.toBuiltin[i * 3 + c];
      EXPECT_NEAR(s, a == c ? 1 : 0, 1e-14);
    }
}

TEST(GroupStructure, Sim2HasItsOwnClosedFormsNeverExact) {
  // The shipped example's basis is the sim2 host's own; sim2 is not a
  // keyword, so the result is Embedded (T = I), not Exact.
  Matrix scale = plus(unit(3, 0, 0), unit(3, 1, 1));
  Recognition r =
      run(3, {rot2(3), scale, unit(3, 0, 2), unit(3, 1, 2)}, {2, 2});
  ASSERT_EQ(r.kind, Recognition::Embedded);
  EXPECT_EQ(r.builtin, "sim2");
  ASSERT_TRUE(r.isBlockIsotropic());
  EXPECT_EQ(r.blockMix, (std::vector<double>{1, 0, 0, 1}));
}

TEST(GroupStructure, RotationScaleOfThePlaneEmbedsInSim2) {
  // SO(2) × ℝ⁺ as 2×2 matrices: diag(g, 1) is a Sim(2) element.
  Recognition r = run(2, {rot2(2), plus(unit(2, 0, 0), unit(2, 1, 1))}, {2});
  ASSERT_EQ(r.kind, Recognition::Embedded);
  EXPECT_EQ(r.builtin, "sim2");
  EXPECT_EQ(r.builtinN, 3u);
  EXPECT_EQ(r.blockMix, (std::vector<double>{1, 0}));
}

TEST(GroupStructure, GeneralLinearPartsNeedAff2) {
  // Scale and a shear (not conformal) with translations: aff(2) hosts it.
  Recognition r = run(3,
                      {plus(unit(3, 0, 0), unit(3, 1, 1)), unit(3, 0, 1),
                       unit(3, 0, 2), unit(3, 1, 2)},
                      {2, 2});
  ASSERT_EQ(r.kind, Recognition::Embedded);
  EXPECT_EQ(r.builtin, "aff2");
}

TEST(GroupStructure, RotationTimesScaleIsCO3) {
  Matrix identity = plus(plus(unit(3, 0, 0), unit(3, 1, 1)), unit(3, 2, 2));
  Recognition r = run(3, {hat(3, 0), hat(3, 1), hat(3, 2), identity}, {3, 1});
  ASSERT_EQ(r.kind, Recognition::Embedded);
  EXPECT_EQ(r.builtin, "co3");
  EXPECT_EQ(r.builtinN, 3u);
  ASSERT_TRUE(r.isBlockIsotropic());
  EXPECT_EQ(r.blockMix, (std::vector<double>{1, 0, 0, 1}));
}

TEST(GroupStructure, RotationScaleAndTranslationsEmbedInSim3) {
  // The same with translations of ℝ³ (4×4): sim(3) itself, in a scaled
  // basis (the scale generator is diag(2, 2, 2, 0)).
  Matrix scale = unit(4, 0, 0, 2);
  scale[5] = scale[10] = 2;
  Recognition r = run(4,
                      {hat(4, 0), hat(4, 1), hat(4, 2), unit(4, 0, 3),
                       unit(4, 1, 3), unit(4, 2, 3), scale},
                      {3, 3, 1});
  ASSERT_EQ(r.kind, Recognition::Embedded);
  EXPECT_EQ(r.builtin, "sim3");
  ASSERT_TRUE(r.isBlockIsotropic());
  EXPECT_NEAR(r.blockMix[8], 0.25, 1e-14);
}

TEST(GroupStructure, SL2IsASubalgebraOfGL2WithThePairLog) {
  Matrix h = plus(unit(2, 0, 0), unit(2, 1, 1), -1);
  Recognition r = run(2, {h, unit(2, 0, 1), unit(2, 1, 0)}, {3});
  ASSERT_EQ(r.kind, Recognition::Embedded);
  EXPECT_EQ(r.builtin, "gl2");
  EXPECT_EQ(r.builtinN, 2u);
  // ‖L‖² = 2h² + e² + f² is not h² + e² + f².
  EXPECT_FALSE(r.isBlockIsotropic());
}

TEST(GroupStructure, ConjugatedSO3IsRefusedWithTheNearestBuiltin) {
  // D·so(3)·D⁻¹ for D = diag(1, 2, 3): a valid algebra isomorphic to so(3),
  // but its elements are not rotations, so no built-in closed form applies.
  std::vector<Matrix> gens;
  double d[3] = {1, 2, 3};
  for (unsigned axis = 0; axis < 3; ++axis) {
    Matrix g = hat(3, axis);
    for (unsigned i = 0; i < 3; ++i)
      for (unsigned j = 0; j < 3; ++j)
        g[i * 3 + j] *= d[i] / d[j];
    gens.push_back(g);
  }
  Recognition r = run(3, gens, {3});
  EXPECT_EQ(r.kind, Recognition::None);
  EXPECT_NE(r.reason.find("nearest"), std::string::npos) << r.reason;
}

TEST(GroupStructure, SlightlyPerturbedSO3IsRefused) {
  // so(3) conjugated by a rotation-free matrix 1e-6 from the identity:
  // closed under the bracket, but 1e-6 outside so(3)'s matrices.
  double eps = 1e-6;
  std::vector<Matrix> gens;
  for (unsigned axis = 0; axis < 3; ++axis) {
    Matrix g = hat(3, axis);
    for (unsigned i = 0; i < 3; ++i)
      for (unsigned j = 0; j < 3; ++j)
        g[i * 3 + j] *= (1 + eps * i) / (1 + eps * j);
    gens.push_back(g);
  }
  EXPECT_EQ(run(3, gens, {3}).kind, Recognition::None);
}

TEST(GroupStructure, GalileanGroupIsSE2WithTranslations) {
  // Rotation of (x, y), boosts x += v t, translations in x, y, t (4×4 on
  // homogeneous (x, y, t, 1)): the linear part [[R, v], [0, 1]] is an
  // SE(2) element, so the group is se2x = SE(2) ⋉ ℝ³.
  Recognition r = run(4,
                      {rot2(4), unit(4, 0, 2), unit(4, 1, 2), unit(4, 0, 3),
                       unit(4, 1, 3), unit(4, 2, 3)},
                      {1, 2, 3});
  ASSERT_EQ(r.kind, Recognition::Embedded);
  EXPECT_EQ(r.builtin, "se2x");
  EXPECT_TRUE(r.isBlockIsotropic());
}

TEST(GroupStructure, BoostsWithoutRotationAreNilpotent) {
  // Galilean boosts and translations alone: nilpotent, not recognised.
  Recognition r = run(4, {unit(4, 0, 2), unit(4, 0, 3), unit(4, 2, 3)}, {1, 2});
  EXPECT_EQ(r.kind, Recognition::None);
  EXPECT_NE(r.reason.find("nilpotent"), std::string::npos);
}

TEST(GroupStructure, ScaledSpaceTimeIsSim2PlusATranslation) {
  // Rotation, a dilation of (x, y) only, and translations in x, y, t: no
  // single host has the dilation with a 3-D translation part, but the
  // generators are block diagonal on (x, y, 1) and (t, 1): sim(2) ⊕ ℝ,
  // the t translation a nilpotent factor.
  Matrix dil = plus(unit(4, 0, 0), unit(4, 1, 1));
  Recognition r = run(
      4, {rot2(4), dil, unit(4, 0, 3), unit(4, 1, 3), unit(4, 2, 3)}, {2, 3});
  ASSERT_EQ(r.kind, Recognition::Product) << r.reason;
  ASSERT_EQ(r.factors.size(), 2u);
  EXPECT_EQ(r.factors[0].host, "sim2");
  EXPECT_EQ(r.factors[0].indices, (std::vector<unsigned>{0, 1, 3}));
  EXPECT_EQ(r.factors[1].kind, Factor::Nilpotent);
  EXPECT_EQ(r.factors[1].indices, (std::vector<unsigned>{2, 3}));
  EXPECT_TRUE(r.isBlockIsotropic());
}

TEST(GroupStructure, SO3PlusSO2IsADirectSum) {
  // so(3) permuted on (x, y, z), so(2) scaled by 2 on (u, v): 5×5, no
  // single host; the factors' own pair forms, spin = ¼·so2's norm.
  Recognition r = run(5,
                      {hat(5, 1), hat(5, 0), hat(5, 2),
                       plus(unit(5, 4, 3, 2), unit(5, 3, 4), -2)},
                      {3, 1});
  ASSERT_EQ(r.kind, Recognition::Product) << r.reason;
  EXPECT_EQ(r.builtin, "so3 + so2");
  ASSERT_EQ(r.factors.size(), 2u);
  EXPECT_EQ(r.factors[1].indices, (std::vector<unsigned>{3, 4}));
  EXPECT_EQ(r.builtinDim, 4u);
  ASSERT_TRUE(r.isBlockIsotropic());
  // Host blocks: so3.rot, so2.rot.
  ASSERT_EQ(r.blockMix.size(), 4u);
  EXPECT_NEAR(r.blockMix[0], 1, 1e-14);
  EXPECT_NEAR(r.blockMix[1], 0, 1e-14);
  EXPECT_NEAR(r.blockMix[3], 0.25, 1e-14);
  EXPECT_LE(r.verifyError, 1e-12);
}

TEST(GroupStructure, SE2PlusAScalingSharesNoHomogeneousRow) {
  // SE(2) of (x, y) on the homogeneous (x, y, z, 1), and a scaling of z:
  // se(2) on {0, 1, 3}, a 1×1 block of scalings on {2}.
  Recognition r = run(
      4, {unit(4, 2, 2, 0.5), unit(4, 0, 3), rot2(4), unit(4, 1, 3)}, {1, 3});
  ASSERT_EQ(r.kind, Recognition::Product) << r.reason;
  ASSERT_EQ(r.factors.size(), 2u);
  EXPECT_EQ(r.factors[0].host, "se2");
  EXPECT_EQ(r.factors[0].indices, (std::vector<unsigned>{0, 1, 3}));
  EXPECT_EQ(r.factors[1].kind, Factor::Scalar);
  EXPECT_EQ(r.factors[1].indices, (std::vector<unsigned>{2}));
  ASSERT_TRUE(r.isBlockIsotropic());
  // The scale coordinate is 2·ln g_zz: its norm is 4·(ln g_zz)².
  EXPECT_NEAR(r.blockMix[2], 4, 1e-14);
}

TEST(GroupStructure, AGeneratorOnTwoBlocksIsStillASum) {
  // The torus in the basis J₁ + J₂, J₂: two generators, two so(2) blocks,
  // so still their direct sum (T mixes the factors), but a⁻¹b's block
  // norms are not the factors' (θ₂ − θ₁ appears): per-pair logs.
  Matrix j1 = plus(unit(4, 1, 0), unit(4, 0, 1), -1);
  Matrix j2 = plus(unit(4, 3, 2), unit(4, 2, 3), -1);
  Recognition r = run(4, {plus(j1, j2), j2}, {1, 1});
  ASSERT_EQ(r.kind, Recognition::Product) << r.reason;
  EXPECT_FALSE(r.isBlockIsotropic());
  EXPECT_NE(r.reason.find("per pair"), std::string::npos) << r.reason;
  EXPECT_EQ(r.toBuiltin, (Matrix{1, 0, 1, 1}));
}

TEST(GroupStructure, CoupledBlocksAreRefused) {
  // A log-spiral: one generator turning (x, y) and scaling z together is
  // block diagonal, but its parts span 2 dimensions of so(2) ⊕ ℝ: the
  // group is not the product, so neither factor's log alone gives it.
  Matrix spiral = plus(rot2(3), unit(3, 2, 2));
  Recognition r = run(3, {spiral}, {1});
  EXPECT_EQ(r.kind, Recognition::None);
  EXPECT_NE(r.reason.find("not the direct sum"), std::string::npos) << r.reason;

  // An irrational winding of the torus, the same.
  Matrix j1 = plus(unit(4, 1, 0), unit(4, 0, 1), -1);
  Matrix j2 = plus(unit(4, 3, 2), unit(4, 2, 3), -1);
  Recognition w = run(4, {plus(j1, j2, std::sqrt(2.0))}, {1});
  EXPECT_EQ(w.kind, Recognition::None);
  EXPECT_NE(w.reason.find("not the direct sum"), std::string::npos) << w.reason;
}

TEST(GroupStructure, AFactorWithoutAClosedFormRefusesTheSum) {
  // so(3) conjugated by diag(1, 2, 3) next to so(2): block diagonal and a
  // direct sum, but the first factor has no host, so the group keeps the
  // generic model and the reason names the block.
  std::vector<Matrix> gens;
  double d[3] = {1, 2, 3};
  for (unsigned axis = 0; axis < 3; ++axis) {
    Matrix g = hat(5, axis);
    for (unsigned i = 0; i < 3; ++i)
      for (unsigned j = 0; j < 3; ++j)
        g[i * 5 + j] *= d[i] / d[j];
    gens.push_back(g);
  }
  gens.push_back(plus(unit(5, 4, 3), unit(5, 3, 4), -1));
  Recognition r = run(5, gens, {3, 1});
  EXPECT_EQ(r.kind, Recognition::None);
  EXPECT_NE(r.reason.find("the block {0, 1, 2} has no closed form"),
            std::string::npos)
      << r.reason;
}

TEST(GroupStructure, ACouplingOfOneInAMillionIsACoupling) {
  // so(3) ⊕ so(2) conjugated by P = I + 1e-6·E_03: closed and isomorphic
  // to the sum, but its matrices couple the blocks (any non-zero entry
  // does), and the merged 5×5 algebra is in no host: refused, not
  // approximated.
  double eps = 1e-6;
  Matrix p = plus(unit(5, 0, 0), unit(5, 0, 3), eps),
         pInv = unit(5, 0, 3, -eps);
  for (unsigned i = 0; i < 5; ++i)
    p[i * 6] = pInv[i * 6] = 1;
  std::vector<Matrix> gens;
  for (const Matrix &g : {hat(5, 0), hat(5, 1), hat(5, 2),
                          plus(unit(5, 4, 3), unit(5, 3, 4), -1)})
    gens.push_back(multiply(5, multiply(5, p, g), pInv));
  Recognition r = run(5, gens, {3, 1});
  EXPECT_EQ(r.kind, Recognition::None);
  EXPECT_NE(r.reason.find("no built-in group"), std::string::npos) << r.reason;
}

TEST(GroupStructure, NilpotentAndGenericAreNotRecognised) {
  std::vector<Matrix> heis = {unit(3, 0, 1), unit(3, 1, 2), unit(3, 0, 2)};
  Recognition r = run(3, heis, {3});
  EXPECT_EQ(r.kind, Recognition::None);
  EXPECT_NE(r.reason.find("nilpotent"), std::string::npos);

  Facts facts;
  ASSERT_FALSE(analyze(3, {rot2(3), unit(3, 0, 2), unit(3, 1, 2)}, facts));
  Recognition off = recognize(facts, {1, 2}, /*allowed=*/false);
  EXPECT_EQ(off.kind, Recognition::None);
  EXPECT_NE(off.reason.find("generic"), std::string::npos);
}

TEST(GroupStructure, DescribeNamesTheBuiltinAndTheBasis) {
  Facts facts;
  Recognition r = run(3, {unit(3, 0, 2), rot2(3), unit(3, 1, 2)}, {3}, &facts);
  std::string text = describe(r, facts, {"Tx", "R", "Ty"});
  EXPECT_NE(text.find("a basis change of se2"), std::string::npos) << text;
  EXPECT_NE(text.find("R = [1, 0, 0]"), std::string::npos) << text;
}

} // namespace
