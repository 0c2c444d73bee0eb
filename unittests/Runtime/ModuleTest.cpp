//===- ModuleTest.cpp - End-to-end tests of the C API ---------------------===//
//
// Loads the fake compiled model (FakeModel.cpp + fake_model.json, built into
// <build>/lib) through the public C API: introspection, binding, weights
// from .safetensors, running with the descriptor ABI and torsor_parallel_for,
// and the errors a caller can hit (names, shapes, dtypes, groups, ABI).
//
//===----------------------------------------------------------------------===//

#include "torsor/runtime.h"

#include "FakeModelFixture.h"
#include "SafeTensors.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

using namespace torsor::rt;
using namespace torsor::fake;

namespace {

/// Fixture: the fake model loaded, with valid data for L = 5.
class ModuleTest : public FakeModelFixture<5> {
protected:
  /// Loads the model and fills pose (identity + x shift), x and w.
  void SetUp() override {
    FakeModelFixture::SetUp();
    if (HasFatalFailure())
      return;
    for (int64_t l = 0; l < L; ++l)
      pose[l * 16 + 3] = static_cast<float>(l); // translation x
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = 0.5f * i;
    for (int j = 0; j < 8; ++j)
      w[j] = 100.0f * j;
  }

  /// Expects output `out` to match the model's formula on current data.
  void expectOutputs() {
    TorsorTensor out, rowsum;
    ASSERT_EQ(msg(torsorModuleGetOutput(module, "out", &out)), "");
    ASSERT_EQ(msg(torsorModuleGetOutput(module, "rowsum", &rowsum)), "");
    ASSERT_EQ(out.rank, 2);
    EXPECT_EQ(out.shape[0], L);
    EXPECT_EQ(out.shape[1], 8);
    EXPECT_EQ(out.strides[0], 8);
    EXPECT_EQ(out.strides[1], 1);
    EXPECT_EQ(out.dtype, TORSOR_DTYPE_F32);
    EXPECT_EQ(rowsum.dtype, TORSOR_DTYPE_F64);
    const float *o = static_cast<const float *>(out.data);
    const double *r = static_cast<const double *>(rowsum.data);
    for (int64_t l = 0; l < L; ++l) {
      double sum = 0;
      for (int j = 0; j < 8; ++j) {
        float want = 2 * x[l * 8 + j] + pose[l * 16] + w[j];
        EXPECT_EQ(o[l * 8 + j], want) << l << "," << j;
        sum += want;
      }
      EXPECT_DOUBLE_EQ(r[l], sum);
    }
  }
};

TEST_F(ModuleTest, DescribesTheModel) {
  EXPECT_STREQ(torsorModuleName(module), "FakePose");
  EXPECT_EQ(torsorModuleNumTensors(module, TORSOR_INPUT), 2);
  EXPECT_EQ(torsorModuleNumTensors(module, TORSOR_PARAM), 1);
  EXPECT_EQ(torsorModuleNumTensors(module, TORSOR_OUTPUT), 2);
  EXPECT_STREQ(torsorModuleTensorName(module, TORSOR_INPUT, 0), "pose");
  EXPECT_EQ(torsorModuleTensorName(module, TORSOR_INPUT, 2), nullptr);
  EXPECT_EQ(torsorModuleTensorRank(module, TORSOR_INPUT, 0), 3);
  EXPECT_STREQ(torsorModuleTensorDimSymbol(module, TORSOR_INPUT, 0, 0), "L");
  EXPECT_EQ(torsorModuleTensorDimSymbol(module, TORSOR_INPUT, 0, 1), nullptr);
  EXPECT_EQ(torsorModuleTensorDimExtent(module, TORSOR_INPUT, 0, 0), -1);
  EXPECT_EQ(torsorModuleTensorDimExtent(module, TORSOR_INPUT, 0, 2), 4);
  EXPECT_EQ(torsorModuleTensorDimExtent(module, TORSOR_INPUT, 0, 3), -1);
  EXPECT_STREQ(torsorModuleTensorGroup(module, TORSOR_INPUT, 0), "SE3");
  EXPECT_EQ(torsorModuleTensorGroup(module, TORSOR_INPUT, 1), nullptr);
  EXPECT_EQ(torsorModuleTensorDType(module, TORSOR_OUTPUT, 1),
            TORSOR_DTYPE_F64);
  EXPECT_EQ(torsorModuleTensorDType(module, TORSOR_OUTPUT, -1), -1);
  EXPECT_STREQ(torsorDTypeName(TORSOR_DTYPE_I64), "i64");
}

TEST_F(ModuleTest, RunsAndComputes) {
  bindAll();
  for (int threads : {1, 3}) {
    ASSERT_EQ(msg(torsorSetNumThreads(threads)), "");
    ASSERT_EQ(msg(torsorModuleRun(module)), "");
    expectOutputs();
  }
  // Rebinding a different L resizes the outputs.
  x.resize(2 * 8);
  pose.resize(2 * 16);
  xShape[0] = poseShape[0] = 2;
  bindAll();
  ASSERT_EQ(msg(torsorModuleRun(module)), "");
  TorsorTensor out;
  ASSERT_EQ(msg(torsorModuleGetOutput(module, "out", &out)), "");
  EXPECT_EQ(out.shape[0], 2);
}

TEST_F(ModuleTest, ReportsBindingErrors) {
  float buf[64] = {};
  int64_t s2[] = {L, 4};
  TorsorTensor bad{buf, s2, nullptr, 2, TORSOR_DTYPE_F32};
  EXPECT_EQ(msg(torsorModuleBindInput(module, "pose", &bad)),
            "input 'pose': expected rank 3 (L x 4 x 4), got rank 2 (5 x 4)");
  int64_t s3[] = {L, 3, 4};
  TorsorTensor bad3{buf, s3, nullptr, 3, TORSOR_DTYPE_F32};
  EXPECT_EQ(msg(torsorModuleBindInput(module, "pose", &bad3)),
            "input 'pose': dim 1 expected 4, got 3");
  TorsorTensor f64{buf, xShape, nullptr, 2, TORSOR_DTYPE_F64};
  EXPECT_EQ(msg(torsorModuleBindInput(module, "x", &f64)),
            "input 'x': expected dtype f32, got f64; cast it "
            "(arr.astype(np.float32)) or compile the model with --dtype=f64");
  EXPECT_EQ(msg(torsorModuleBindInput(module, "posee", &bad)),
            "unknown input 'posee'; model inputs are: pose, x");
  EXPECT_EQ(msg(torsorModuleBindParam(module, "x", &bad)),
            "unknown param 'x'; model params are: w");
  TorsorStatus *st = torsorModuleRun(module);
  EXPECT_EQ(torsorStatusCode(st), TORSOR_FAILED_PRECONDITION);
  EXPECT_EQ(msg(st), "missing input 'pose', input 'x', param 'w'");
  TorsorTensor out;
  EXPECT_EQ(msg(torsorModuleGetOutput(module, "out", &out)),
            "output 'out' is not available: the model has not run "
            "successfully");
  EXPECT_EQ(msg(torsorModuleGetOutput(module, "outt", &out)),
            "unknown output 'outt'; model outputs are: out, rowsum");
  bindAll();
  std::vector<float> x12(12 * 8);
  int64_t x12Shape[] = {12, 8};
  TorsorTensor tx{x12.data(), x12Shape, nullptr, 2, TORSOR_DTYPE_F32};
  ASSERT_EQ(msg(torsorModuleBindInput(module, "x", &tx)), "");
  EXPECT_EQ(msg(torsorModuleRun(module)),
            "symbolic dim 'L' is 5 from input 'pose' but 12 from input 'x'");
}

TEST_F(ModuleTest, MissingParamIsAnError) {
  TorsorTensor tp{pose.data(), poseShape, nullptr, 3, TORSOR_DTYPE_F32};
  TorsorTensor tx{x.data(), xShape, nullptr, 2, TORSOR_DTYPE_F32};
  ASSERT_EQ(msg(torsorModuleBindInput(module, "pose", &tp)), "");
  ASSERT_EQ(msg(torsorModuleBindInput(module, "x", &tx)), "");
  EXPECT_EQ(msg(torsorModuleRun(module)), "missing param 'w'");
}

TEST_F(ModuleTest, UnbindInputsForgetsInputsButKeepsParams) {
  bindAll();
  ASSERT_EQ(msg(torsorModuleRun(module)), "");
  torsorModuleUnbindInputs(module);
  EXPECT_EQ(msg(torsorModuleRun(module)), "missing input 'pose', input 'x'");
  TorsorTensor tp{pose.data(), poseShape, nullptr, 3, TORSOR_DTYPE_F32};
  TorsorTensor tx{x.data(), xShape, nullptr, 2, TORSOR_DTYPE_F32};
  ASSERT_EQ(msg(torsorModuleBindInput(module, "pose", &tp)), "");
  ASSERT_EQ(msg(torsorModuleBindInput(module, "x", &tx)), "");
  ASSERT_EQ(msg(torsorModuleRun(module)), ""); // param 'w' is still bound
  expectOutputs();
  torsorModuleUnbindInputs(nullptr); // no-op
}

TEST_F(ModuleTest, ChecksGroupsByDefault) {
  pose[3 * 16 + 1] = 0.21f; // shear element 3
  bindAll();
  // On by default, with tolerance 1e-4.
  EXPECT_EQ(msg(torsorModuleRun(module)),
            "input 'pose' element 3 is not in SE3: rotation block not "
            "orthonormal (error 2.1e-01 > tol 1e-04)");
  torsorModuleSetCheckGroups(module, 1, 0.5);
  EXPECT_EQ(msg(torsorModuleRun(module)), "");
  torsorModuleSetCheckGroups(module, 1, 1e-4);
  EXPECT_NE(msg(torsorModuleRun(module)), "");
  torsorModuleSetCheckGroups(module, 0, 1e-4); // the opt-out
  EXPECT_EQ(msg(torsorModuleRun(module)), "");
}

TEST_F(ModuleTest, LoadsWeightsFromSafeTensors) {
  std::string path = ::testing::TempDir() + "/fake_weights.safetensors";
  TensorBundle bundle(1);
  bundle[0].first = "w";
  ASSERT_TRUE(HostTensor::create(TORSOR_DTYPE_F32, {8}, bundle[0].second).ok());
  for (int j = 0; j < 8; ++j)
    static_cast<float *>(bundle[0].second.data())[j] = w[j];
  ASSERT_TRUE(writeSafeTensors(path, bundle).ok());
  TorsorTensor tp{pose.data(), poseShape, nullptr, 3, TORSOR_DTYPE_F32};
  TorsorTensor tx{x.data(), xShape, nullptr, 2, TORSOR_DTYPE_F32};
  ASSERT_EQ(msg(torsorModuleBindInput(module, "pose", &tp)), "");
  ASSERT_EQ(msg(torsorModuleBindInput(module, "x", &tx)), "");
  ASSERT_EQ(msg(torsorModuleLoadWeights(module, path.c_str())), "");
  ASSERT_EQ(msg(torsorModuleRun(module)), "");
  expectOutputs();

  bundle[0].first = "ww";
  ASSERT_TRUE(writeSafeTensors(path, bundle).ok());
  EXPECT_EQ(msg(torsorModuleLoadWeights(module, path.c_str())),
            path + ": unknown param 'ww'; model params are: w");
  bundle[0].first = "w";
  ASSERT_TRUE(HostTensor::create(TORSOR_DTYPE_F64, {8}, bundle[0].second).ok());
  ASSERT_TRUE(writeSafeTensors(path, bundle).ok());
  EXPECT_EQ(msg(torsorModuleLoadWeights(module, path.c_str())),
            path + ": param 'w': expected dtype f32, got f64; cast it "
                   "(arr.astype(np.float32)) or compile the model with "
                   "--dtype=f64");
  std::remove(path.c_str());
}

TEST(ModuleLoad, ReportsLoadErrors) {
  TorsorModule *m = nullptr;
  EXPECT_EQ(msg(torsorModuleLoad("/nonexistent/m.so", &m)),
            "cannot open model '/nonexistent/m.so': no such file");
  EXPECT_EQ(m, nullptr);
  std::string noabi = kDir + "/torsor_fake_model_noabi.so";
  TorsorStatus *s = torsorModuleLoad(noabi.c_str(), &m);
  EXPECT_EQ(torsorStatusCode(s), TORSOR_ABI_ERROR);
  EXPECT_EQ(msg(s), "model '" + noabi +
                        "' does not export torsor_abi_version(); was it "
                        "built by torsorc?");
  std::string abi2 = kDir + "/torsor_fake_model_abi2.so";
  EXPECT_EQ(msg(torsorModuleLoad(abi2.c_str(), &m)),
            "model '" + abi2 + "' has ABI version 2, but its manifest '" +
                kDir +
                "/torsor_fake_model_abi2.json' says 1; rebuild both "
                "with torsorc");
  std::string abi3 = kDir + "/torsor_fake_model_abi3.so";
  EXPECT_EQ(msg(torsorModuleLoad(abi3.c_str(), &m)),
            "model '" + abi3 +
                "' has ABI version 3, this runtime supports versions 1 to 2");
  // A model without its manifest next to it.
  std::string lonely = ::testing::TempDir() + "/lonely_model.so";
  std::string cmd = "cp '" + kModel + "' '" + lonely + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string json = ::testing::TempDir() + "/lonely_model.json";
  std::remove(json.c_str());
  EXPECT_EQ(msg(torsorModuleLoad(lonely.c_str(), &m)),
            "cannot find the manifest '" + json + "' next to model '" + lonely +
                "'");
  // A GPU manifest must say ABI 2.
  FILE *f = std::fopen(json.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"model\": \"G\", \"target\": \"nvptx\", \"abi\": 1, "
             "\"dims\": [], \"inputs\": [], \"params\": [], \"outputs\": []}",
             f);
  std::fclose(f);
  s = torsorModuleLoad(lonely.c_str(), &m);
  EXPECT_EQ(torsorStatusCode(s), TORSOR_ABI_ERROR);
  EXPECT_EQ(msg(s), "model '" + lonely +
                        "': target 'nvptx' needs \"abi\": 2 in its manifest, "
                        "found 1");
  std::remove(json.c_str());
  std::remove(lonely.c_str());
  EXPECT_EQ(msg(torsorModuleLoad(nullptr, &m)),
            "model path or output pointer is NULL");
}

} // namespace
