//===- NonFiniteTest.cpp - The NaN/Inf scan of bound tensors --------------===//
//
// checkFinite screens blocks of 4096 elements with integer exponent tests
// and searches only a flagged block: the first non-finite element must be
// found wherever it lies, at and either side of a block boundary, in f32
// and f64, and finite extremes (the largest value, subnormals, -0) must
// pass.
//
//===----------------------------------------------------------------------===//

#include "NonFinite.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace torsor::rt;

namespace {

/// Runs checkFinite over `data` as a rank-1 tensor of `dtype`.
template <typename T> Status scan(std::vector<T> &data, int32_t dtype) {
  BoundTensor t;
  t.bound = true;
  t.dtype = dtype;
  t.shape = {static_cast<int64_t>(data.size())};
  t.strides = {1};
  t.data = data.data();
  return checkFinite("input 'x'", t);
}

template <typename T> void checkEveryPosition(int32_t dtype) {
  const T bad[] = {std::numeric_limits<T>::quiet_NaN(),
                   std::numeric_limits<T>::infinity(),
                   -std::numeric_limits<T>::infinity()};
  const char *words[] = {"NaN", "+Inf", "-Inf"};
  for (int64_t n : {1, 4095, 4096, 4097, 10000}) {
    std::vector<T> data(n, T(1));
    // Finite extremes never trip the screen.
    data[0] = std::numeric_limits<T>::max();
    data[n - 1] = std::numeric_limits<T>::denorm_min();
    if (n > 2)
      data[n / 2] = T(-0.0);
    ASSERT_TRUE(scan(data, dtype).ok()) << n;
    for (int64_t at : {int64_t(0), int64_t(4095), int64_t(4096), n - 1}) {
      if (at >= n)
        continue;
      for (int k = 0; k < 3; ++k) {
        std::vector<T> copy = data;
        copy[at] = bad[k];
        if (at + 1 < n)
          copy[n - 1] = bad[(k + 1) % 3]; // a later one must not win
        Status s = scan(copy, dtype);
        std::string want = "input 'x' element " + std::to_string(at) +
                           " (index [" + std::to_string(at) + "]) is " +
                           words[k] + ";";
        EXPECT_EQ(s.message.substr(0, want.size()), want)
            << "n " << n << " at " << at;
      }
    }
  }
}

TEST(NonFinite, FindsTheFirstNonFiniteElementInF32) {
  checkEveryPosition<float>(TORSOR_DTYPE_F32);
}

TEST(NonFinite, FindsTheFirstNonFiniteElementInF64) {
  checkEveryPosition<double>(TORSOR_DTYPE_F64);
}

} // namespace
