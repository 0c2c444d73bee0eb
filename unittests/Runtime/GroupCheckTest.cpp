//===- GroupCheckTest.cpp - Tests of the group membership checks ----------===//
//
// A valid element of each built-in group passes; each failure mode (shear,
// reflection, last row, non-positive determinant or scale, NaN) is caught
// with its message, and tensor-level messages name the element.
//
//===----------------------------------------------------------------------===//

#include "GroupCheck.h"
#include "torsor/GroupFacts.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace torsor::rt;

namespace {

/// An SE(3) element: rotation by `a` about z, translation (1, 2, 3).
std::vector<double> se3(double a) {
  double c = std::cos(a), s = std::sin(a);
  return {c, -s, 0, 1, s, c, 0, 2, 0, 0, 1, 3, 0, 0, 0, 1};
}

TEST(GroupCheck, KnowsBuiltinSizes) {
  EXPECT_EQ(builtinGroupMatrixSize("SO2"), 2);
  EXPECT_EQ(builtinGroupMatrixSize("SE2"), 3);
  EXPECT_EQ(builtinGroupMatrixSize("SO3"), 3);
  EXPECT_EQ(builtinGroupMatrixSize("SE3"), 4);
  EXPECT_EQ(builtinGroupMatrixSize("Aff2"), 3);
  EXPECT_EQ(builtinGroupMatrixSize("Sim3"), 4);
  EXPECT_EQ(builtinGroupMatrixSize("SE4"), 0);
}

TEST(GroupCheck, AcceptsMembers) {
  double c = std::cos(0.3), s = std::sin(0.3);
  std::vector<double> so2 = {c, -s, s, c};
  std::vector<double> se2 = {c, -s, 5, s, c, -1, 0, 0, 1};
  std::vector<double> so3 = {1, 0, 0, 0, c, -s, 0, s, c};
  std::vector<double> aff2 = {2, 1, 3, 0, 0.5, 4, 0, 0, 1};
  std::vector<double> sim3 = {2 * c, -2 * s, 0, 1, 2 * s, 2 * c, 0, 2,
                              0,     0,      2, 3, 0,     0,     0, 1};
  EXPECT_EQ(checkGroupMatrix("SO2", so2.data(), 1e-9), "");
  EXPECT_EQ(checkGroupMatrix("SE2", se2.data(), 1e-9), "");
  EXPECT_EQ(checkGroupMatrix("SO3", so3.data(), 1e-9), "");
  EXPECT_EQ(checkGroupMatrix("SE3", se3(1.2).data(), 1e-9), "");
  EXPECT_EQ(checkGroupMatrix("Aff2", aff2.data(), 1e-9), "");
  EXPECT_EQ(checkGroupMatrix("Sim3", sim3.data(), 1e-9), "");
}

TEST(GroupCheck, RejectsNonMembers) {
  std::vector<double> shear = se3(0);
  shear[1] = 0.1;
  EXPECT_EQ(checkGroupMatrix("SE3", shear.data(), 1e-4),
            "rotation block not orthonormal (error 1.0e-01 > tol 1e-04)");
  EXPECT_EQ(checkGroupMatrix("SE3", shear.data(), 0.2), "");
  std::vector<double> reflect = se3(0);
  reflect[0] = -1;
  EXPECT_EQ(checkGroupMatrix("SE3", reflect.data(), 1e-4),
            "rotation block has determinant -1.00, expected +1 (a "
            "reflection)");
  std::vector<double> row = se3(0);
  row[14] = 0.5;
  EXPECT_EQ(checkGroupMatrix("SE3", row.data(), 1e-4),
            "last row is not [0 0 0 1] (error 5.0e-01 > tol 1e-04)");
  std::vector<double> so2 = {1, 0, 0, -1};
  EXPECT_EQ(checkGroupMatrix("SO2", so2.data(), 1e-4),
            "rotation block has determinant -1.00, expected +1 (a "
            "reflection)");
  std::vector<double> aff2 = {1, 0, 0, 0, -2, 0, 0, 0, 1};
  EXPECT_EQ(checkGroupMatrix("Aff2", aff2.data(), 1e-4),
            "linear part has determinant -2.0e+00, expected > 0");
  std::vector<double> aff2Row = {1, 0, 0, 0, 1, 0, 0, 1, 1};
  EXPECT_EQ(checkGroupMatrix("Aff2", aff2Row.data(), 1e-4),
            "last row is not [0 0 1] (error 1.0e+00 > tol 1e-04)");
  std::vector<double> sim3 = se3(0);
  for (int i : {0, 5, 10})
    sim3[i] = -2;
  EXPECT_EQ(checkGroupMatrix("Sim3", sim3.data(), 1e-4),
            "scale cbrt(det) = -2.0e+00 of the linear part is not positive");
  std::vector<double> sim3Shear = se3(0);
  sim3Shear[0] = 2;
  EXPECT_EQ(checkGroupMatrix("Sim3", sim3Shear.data(), 1e-4),
            "linear part is not a scaled rotation (error 1.5e+00 > tol "
            "1e-04)");
  std::vector<double> nan = se3(0);
  nan[5] = NAN;
  EXPECT_EQ(checkGroupMatrix("SE3", nan.data(), 1e-4),
            "entry (1, 1) is not finite");
}

// Issue 24, item 4: an Aff(2) element scaled by 1e±30, or 1e-40·I (an f32
// subnormal), is a member but over- or underflows in f32 code. The range
// rule (GroupCheck.cpp): singular values of the linear part in [1/R, R],
// R = 2^31 for f32 and 2^255 for f64.
TEST(GroupCheck, RefusesScalesOutsideTheDTypeRange) {
  EXPECT_EQ(scaleRange(TORSOR_DTYPE_F32), 2147483648.0);
  auto aff2 = [](double a, double b, double c, double d) {
    return std::vector<double>{a, b, 0.5, c, d, -1, 0, 0, 1};
  };
  double th = 0.3, c = std::cos(th), s = std::sin(th);
  std::vector<double> big = aff2(1e30 * c, -1e30 * s, 1e30 * s, 1e30 * c);
  std::string why =
      checkGroupMatrix("Aff2", big.data(), 1e-4, TORSOR_DTYPE_F32);
  EXPECT_EQ(why.substr(0, 53),
            "linear part is outside the range f32 code computes in");
  // Bounds: 2·max|a_ij| above, det / (2·max|a_ij|) below.
  EXPECT_NE(why.find("its scale (singular values) reaches [5.2e+29, 1.9e+30]"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("must lie within [4.7e-10, 2.1e+09]"), std::string::npos)
      << why;
  EXPECT_NE(why.find("compile with --dtype=f64 for [1.7e-77, 5.8e+76]"),
            std::string::npos)
      << why;
  // The same element is fine in f64.
  EXPECT_EQ(checkGroupMatrix("Aff2", big.data(), 1e-4, TORSOR_DTYPE_F64), "");
  std::vector<double> small = aff2(1e-30 * c, -1e-30 * s, 1e-30 * s, 1e-30 * c);
  EXPECT_NE(checkGroupMatrix("Aff2", small.data(), 1e-4, TORSOR_DTYPE_F32), "");
  std::vector<double> denormal = aff2(1e-40, 0, 0, 1e-40);
  EXPECT_NE(checkGroupMatrix("Aff2", denormal.data(), 1e-4, TORSOR_DTYPE_F32),
            "");
  // Ordinary scales and shears pass, up to the bound.
  std::vector<double> shear = aff2(1, 1e9, 0, 1);
  EXPECT_EQ(checkGroupMatrix("Aff2", shear.data(), 1e-4, TORSOR_DTYPE_F32), "");
  std::vector<double> scaled = aff2(1e-4, 0, 0, 1e4);
  EXPECT_EQ(checkGroupMatrix("Aff2", scaled.data(), 1e-4, TORSOR_DTYPE_F32),
            "");
  // Sim(3) scales by the same rule; f64 has its own, wider range.
  std::vector<double> sim3 = {1e12, 0, 0,    0, 0, 1e12, 0, 0,
                              0,    0, 1e12, 0, 0, 0,    0, 1};
  EXPECT_NE(checkGroupMatrix("Sim3", sim3.data(), 1e-4, TORSOR_DTYPE_F32), "");
  EXPECT_EQ(checkGroupMatrix("Sim3", sim3.data(), 1e-4, TORSOR_DTYPE_F64), "");
  for (int i : {0, 5, 10})
    sim3[i] = 1e80;
  EXPECT_NE(checkGroupMatrix("Sim3", sim3.data(), 1e-4, TORSOR_DTYPE_F64), "");
  // Through a tensor, the dtype is the tensor's: f32 storage of 1e30·R.
  std::vector<float> f32(big.begin(), big.end());
  int64_t shape[] = {1, 3, 3};
  TorsorTensor t{f32.data(), shape, nullptr, 3, TORSOR_DTYPE_F32};
  EXPECT_EQ(
      checkGroupTensor("input 'g'", "Aff2", t, 1e-4).message.substr(0, 72),
      "input 'g' element 0 is not in Aff2: linear part is outside the "
      "range f32");
}

TEST(GroupCheck, NamesTheElementInTensors) {
  // Four f32 SE(3) poses; element 3 has a sheared rotation block.
  std::vector<float> poses;
  for (int e = 0; e < 4; ++e)
    for (double v : se3(0.1 * e))
      poses.push_back(static_cast<float>(v));
  poses[3 * 16 + 1] += 0.21f;
  int64_t shape[] = {2, 2, 4, 4};
  TorsorTensor t{poses.data(), shape, nullptr, 4, TORSOR_DTYPE_F32};
  Status s = checkGroupTensor("input 'pose'", "SE3", t, 1e-4);
  EXPECT_EQ(s.code, TORSOR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message.substr(0, 76),
            "input 'pose' element 3 is not in SE3: rotation block not "
            "orthonormal (error ");
  EXPECT_NE(s.message.find("> tol 1e-04)"), std::string::npos);
  EXPECT_TRUE(checkGroupTensor("input 'pose'", "SE3", t, 0.5).ok());
  // Unknown groups are checked by shape only (i.e. not here).
  EXPECT_TRUE(checkGroupTensor("input 'pose'", "Mine", t, 1e-4).ok());
  // Strided (f64) views are followed: element 1 of a transposed batch.
  std::vector<double> batch(2 * 16);
  for (int e = 0; e < 2; ++e)
    for (int k = 0; k < 16; ++k)
      batch[k * 2 + e] = se3(0)[k]; // layout [4][4][2]
  batch[0 * 2 + 1] = -1;            // element 1, entry (0, 0)
  int64_t shape2[] = {2, 4, 4}, strides2[] = {1, 8, 2};
  TorsorTensor t2{batch.data(), shape2, strides2, 3, TORSOR_DTYPE_F64};
  EXPECT_EQ(checkGroupTensor("input 'g'", "SE3", t2, 1e-4).message,
            "input 'g' element 1 is not in SE3: rotation block has "
            "determinant -1.00, expected +1 (a reflection)");
}

} // namespace

// The one table of group facts (torsor/GroupFacts.def) is consistent: the
// λ blocks of each group tile its k algebra coordinates in order, and the
// runtime's matrix sizes are the table's.
TEST(GroupFacts, TableIsConsistent) {
  ASSERT_EQ(std::size(torsor::facts::kGroups), 6u);
  for (const torsor::facts::Group &g : torsor::facts::kGroups) {
    SCOPED_TRACE(std::string(g.name));
    unsigned next = 0;
    ASSERT_GT(g.numBlocks, 0u);
    for (size_t i = 0; i < g.numBlocks; ++i) {
      EXPECT_EQ(g.blocks[i].group, g.name);
      EXPECT_EQ(g.blocks[i].offset, next);
      next += g.blocks[i].size;
    }
    EXPECT_EQ(next, g.k);
    EXPECT_LE(g.pointDim, g.n);
    EXPECT_EQ(torsor::rt::builtinGroupMatrixSize(std::string(g.name)),
              static_cast<int>(g.n));
    // Mnemonics are for the dialect; manifests use names.
    EXPECT_EQ(torsor::rt::builtinGroupMatrixSize(std::string(g.mnemonic)), 0);
  }
  EXPECT_EQ(torsor::rt::builtinGroupMatrixSize("Heis3"), 0);
}
