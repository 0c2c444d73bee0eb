//===- FakeModelFixture.h - The fake model loaded for tests ---*- C++ -*-===//
//
// What ModuleTest.cpp and FaultTest.cpp both set up: the fake compiled
// model's path (FakeModel.cpp with fake_model.json, built into
// TORSOR_FAKE_MODEL_DIR), statuses as strings, and a GoogleTest fixture
// that loads the model and holds data for its inputs pose [L, 4, 4] and
// x [L, 8] and its param w [8]. Each suite fills the data its own way.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_UNITTESTS_RUNTIME_FAKEMODELFIXTURE_H
#define TORSOR_UNITTESTS_RUNTIME_FAKEMODELFIXTURE_H

#include "torsor/runtime.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace torsor::fake {

/// The folder of the fake models, and the well-formed fake model.
inline const std::string kDir = TORSOR_FAKE_MODEL_DIR;
inline const std::string kModel = kDir + "/torsor_fake_model.so";

/// Returns the message of `s` (or "" for success) and frees it.
inline std::string msg(TorsorStatus *s) {
  std::string m = s ? torsorStatusMessage(s) : "";
  torsorStatusFree(s);
  return m;
}

/// Fixture: the fake model loaded, with room for `Rows` rows of data
/// (pose: identities; x, w: zeros). Suites derive from it, fill the data in
/// their SetUp (after calling this one) and bind it with bindAll.
template <int64_t Rows> class FakeModelFixture : public ::testing::Test {
protected:
  static constexpr int64_t L = Rows;

  /// Loads the model and sizes the data: L identity poses, zero x and w.
  void SetUp() override {
    ASSERT_EQ(msg(torsorModuleLoad(kModel.c_str(), &module)), "");
    pose.assign(L * 16, 0.0f);
    for (int64_t l = 0; l < L; ++l)
      for (int i = 0; i < 4; ++i)
        pose[l * 16 + i * 5] = 1.0f;
    x.assign(L * 8, 0.0f);
    w.assign(8, 0.0f);
  }
  /// Frees the module.
  void TearDown() override { torsorModuleFree(module); }

  /// Binds pose, x and w with their valid shapes.
  void bindAll() {
    TorsorTensor tp{pose.data(), poseShape, nullptr, 3, TORSOR_DTYPE_F32};
    TorsorTensor tx{x.data(), xShape, nullptr, 2, TORSOR_DTYPE_F32};
    TorsorTensor tw{w.data(), wShape, nullptr, 1, TORSOR_DTYPE_F32};
    ASSERT_EQ(msg(torsorModuleBindInput(module, "pose", &tp)), "");
    ASSERT_EQ(msg(torsorModuleBindInput(module, "x", &tx)), "");
    ASSERT_EQ(msg(torsorModuleBindParam(module, "w", &tw)), "");
  }

  TorsorModule *module = nullptr;
  std::vector<float> pose, x, w;
  int64_t poseShape[3] = {L, 4, 4}, xShape[2] = {L, 8}, wShape[1] = {8};
};

} // namespace torsor::fake

#endif // TORSOR_UNITTESTS_RUNTIME_FAKEMODELFIXTURE_H
