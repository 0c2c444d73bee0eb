//===- BindingTest.cpp - Tests of binding checks and dim resolution -------===//
//
// Every validation message of Binding.h, verbatim, on the manifest of the
// ABI example: name lookup, dtype, rank, fixed extents, symbolic dims that
// disagree, missing tensors, unresolvable output dims, strided copies.
//
//===----------------------------------------------------------------------===//

#include "Binding.h"

#include "gtest/gtest.h"

using namespace torsor::rt;

namespace {

/// Fixture with the PoseAttention-style manifest (small extents).
class BindingTest : public ::testing::Test {
protected:
  /// Parses the manifest.
  void SetUp() override {
    Status s = parseManifest(R"({"model": "M", "target": "cpu", "abi": 1,
      "dims": ["L", "K"],
      "inputs": [{"name": "pose", "dtype": "f32", "shape": ["L", 4, 4],
                  "group": "SE3"},
                 {"name": "x", "dtype": "f32", "shape": ["L", 3]}],
      "params": [{"name": "w", "dtype": "f64", "shape": [3, "L"]}],
      "outputs": [{"name": "out", "dtype": "f32", "shape": ["L", 3]},
                  {"name": "bad", "dtype": "f32", "shape": ["K"]}]})",
                             "m.json", manifest);
    ASSERT_TRUE(s.ok()) << s.message;
  }

  /// Binds a tensor with `shape` and `dtype` (data not read) to `spec`.
  Status bindShape(int kind, const TensorSpec &spec, int32_t dtype,
                   std::vector<int64_t> shape, BoundTensor &out) {
    static double storage[1024];
    TorsorTensor t{storage, shape.data(), nullptr,
                   static_cast<int32_t>(shape.size()), dtype};
    return bindTensor(kind, spec, &t, out);
  }

  Manifest manifest;
};

TEST_F(BindingTest, FindsTensorsByName) {
  size_t index = 99;
  EXPECT_TRUE(findTensor(manifest.inputs, TORSOR_INPUT, "x", index).ok());
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(findTensor(manifest.inputs, TORSOR_INPUT, "posee", index).message,
            "unknown input 'posee'; model inputs are: pose, x");
  EXPECT_EQ(findTensor(manifest.params, TORSOR_PARAM, "v", index).message,
            "unknown param 'v'; model params are: w");
  std::vector<TensorSpec> none;
  EXPECT_EQ(findTensor(none, TORSOR_PARAM, "v", index).message,
            "unknown param 'v'; the model has no params");
}

TEST_F(BindingTest, ChecksDTypeRankAndExtents) {
  const TensorSpec &pose = manifest.inputs[0];
  const TensorSpec &x = manifest.inputs[1];
  BoundTensor b;
  EXPECT_EQ(bindShape(TORSOR_INPUT, pose, TORSOR_DTYPE_F32, {10, 4}, b).message,
            "input 'pose': expected rank 3 (L x 4 x 4), got rank 2 (10 x 4)");
  EXPECT_EQ(
      bindShape(TORSOR_INPUT, pose, TORSOR_DTYPE_F32, {10, 4, 3}, b).message,
      "input 'pose': dim 2 expected 4, got 3");
  EXPECT_EQ(
      bindShape(TORSOR_INPUT, pose, TORSOR_DTYPE_F32, {10, 3, 4}, b).message,
      "input 'pose': dim 1 expected 4, got 3");
  EXPECT_EQ(bindShape(TORSOR_INPUT, x, TORSOR_DTYPE_F64, {10, 3}, b).message,
            "input 'x': expected dtype f32, got f64; cast it "
            "(arr.astype(np.float32)) or compile the model with --dtype=f64");
  EXPECT_EQ(bindShape(TORSOR_INPUT, x, TORSOR_DTYPE_F32, {-1, 3}, b).message,
            "input 'x': dim 0 is negative (-1)");
  EXPECT_EQ(bindShape(TORSOR_INPUT, x, 7, {10, 3}, b).message,
            "input 'x': unknown dtype code 7");
  EXPECT_EQ(bindTensor(TORSOR_INPUT, x, nullptr, b).message,
            "input 'x': tensor is NULL");
  int64_t shape[] = {2, 3};
  TorsorTensor noData{nullptr, shape, nullptr, 2, TORSOR_DTYPE_F32};
  EXPECT_EQ(bindTensor(TORSOR_INPUT, x, &noData, b).message,
            "input 'x': data is NULL");
  EXPECT_TRUE(bindShape(TORSOR_INPUT, x, TORSOR_DTYPE_F32, {0, 3}, b).ok());
  EXPECT_EQ(
      bindShape(TORSOR_PARAM, manifest.params[0], TORSOR_DTYPE_F64, {4, 10}, b)
          .message,
      "param 'w': dim 0 expected 3, got 4");
}

TEST_F(BindingTest, ResolvesSymbolicDims) {
  std::vector<BoundTensor> inputs(2), params(1);
  std::map<std::string, int64_t> dims;
  // Every unbound tensor is listed in one message.
  EXPECT_EQ(resolveDims(manifest, inputs, params, dims).message,
            "missing input 'pose', input 'x', param 'w'");
  ASSERT_TRUE(bindShape(TORSOR_INPUT, manifest.inputs[0], TORSOR_DTYPE_F32,
                        {10, 4, 4}, inputs[0])
                  .ok());
  EXPECT_EQ(resolveDims(manifest, inputs, params, dims).message,
            "missing input 'x', param 'w'");
  ASSERT_TRUE(bindShape(TORSOR_INPUT, manifest.inputs[1], TORSOR_DTYPE_F32,
                        {12, 3}, inputs[1])
                  .ok());
  Status s = resolveDims(manifest, inputs, params, dims);
  EXPECT_EQ(s.code, TORSOR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message, "symbolic dim 'L' is 10 from input 'pose' but 12 from "
                       "input 'x'");
  ASSERT_TRUE(bindShape(TORSOR_INPUT, manifest.inputs[1], TORSOR_DTYPE_F32,
                        {10, 3}, inputs[1])
                  .ok());
  s = resolveDims(manifest, inputs, params, dims);
  EXPECT_EQ(s.code, TORSOR_FAILED_PRECONDITION);
  EXPECT_EQ(s.message, "missing param 'w'");
  ASSERT_TRUE(bindShape(TORSOR_PARAM, manifest.params[0], TORSOR_DTYPE_F64,
                        {3, 11}, params[0])
                  .ok());
  EXPECT_EQ(resolveDims(manifest, inputs, params, dims).message,
            "symbolic dim 'L' is 10 from input 'pose' but 11 from param 'w'");
  ASSERT_TRUE(bindShape(TORSOR_PARAM, manifest.params[0], TORSOR_DTYPE_F64,
                        {3, 10}, params[0])
                  .ok());
  s = resolveDims(manifest, inputs, params, dims);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(dims.at("L"), 10);
  std::vector<int64_t> shape;
  ASSERT_TRUE(outputShape(manifest.outputs[0], dims, shape).ok());
  EXPECT_EQ(shape, (std::vector<int64_t>{10, 3}));
  EXPECT_EQ(outputShape(manifest.outputs[1], dims, shape).message,
            "output 'bad': symbolic dim 'K' is not fixed by any input or "
            "param");
}

// Issue 24, item 8: a zero-element input with a huge dim (2^31 x 0) makes
// L = 2^31; an L x L intermediate of 4-byte floats is 2^64 bytes, which
// wraps to 0 in the compiled code's size arithmetic. Such dims are refused
// before the call, by a bound over everything the model can derive from
// its dims (Binding.h, checkDerivedSizes), whatever the element counts.
TEST_F(BindingTest, RefusesDimsWhoseDerivedSizesOverflow) {
  Manifest m;
  Status s = parseManifest(R"({"model": "M", "target": "cpu", "abi": 1,
      "dims": ["L", "D"],
      "inputs": [{"name": "x", "dtype": "f32", "shape": ["L", "D"]}],
      "params": [],
      "outputs": [{"name": "y", "dtype": "f32", "shape": ["L", "D"]}]})",
                           "m.json", m);
  ASSERT_TRUE(s.ok()) << s.message;
  std::vector<BoundTensor> inputs(1), params;
  std::map<std::string, int64_t> dims;
  auto resolve = [&](int64_t l, int64_t d) {
    Status b = bindShape(TORSOR_INPUT, m.inputs[0], TORSOR_DTYPE_F32, {l, d},
                         inputs[0]);
    return b.ok() ? resolveDims(m, inputs, params, dims) : b;
  };
  s = resolve(int64_t(1) << 31, 0);
  EXPECT_EQ(s.code, TORSOR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message.substr(0, 89),
            "symbolic dims too large: D = 0 from input 'x', L = 2147483648 "
            "from input 'x'. Buffers the");
  EXPECT_NE(s.message.find("would pass 2^62 bytes"), std::string::npos)
      << s.message;
  // The boundary: L x D x L x 8 bytes = 2^62 runs, one step past is refused.
  EXPECT_TRUE(resolve(int64_t(1) << 29, 2).ok());
  EXPECT_FALSE(resolve(int64_t(1) << 29, 3).ok());
  EXPECT_FALSE(resolve(int64_t(1) << 30, 0).ok());
  // Sizes no machine could hold anyway; real long runs still pass.
  EXPECT_TRUE(resolve(int64_t(1) << 20, 0).ok());
  EXPECT_TRUE(resolve(65536, 512).ok());
  // Products that overflow uint64 itself are refused, not wrapped.
  EXPECT_FALSE(resolve(INT64_MAX, INT64_MAX).ok());
  // The fixed dims of a tensor with a symbolic dim count (pose: 16).
  std::vector<BoundTensor> poseInputs(2), poseParams(1);
  ASSERT_TRUE(bindShape(TORSOR_INPUT, manifest.inputs[0], TORSOR_DTYPE_F32,
                        {int64_t(1) << 28, 4, 4}, poseInputs[0])
                  .ok());
  ASSERT_TRUE(bindShape(TORSOR_INPUT, manifest.inputs[1], TORSOR_DTYPE_F32,
                        {int64_t(1) << 28, 3}, poseInputs[1])
                  .ok());
  ASSERT_TRUE(bindShape(TORSOR_PARAM, manifest.params[0], TORSOR_DTYPE_F64,
                        {3, int64_t(1) << 28}, poseParams[0])
                  .ok());
  s = resolveDims(manifest, poseInputs, poseParams, dims);
  EXPECT_NE(s.message.find("times 16 elements of fixed dims"),
            std::string::npos)
      << s.message;
}

TEST_F(BindingTest, CopiesStridedData) {
  // A transposed 3 x 2 view of a row-major 2 x 3 buffer.
  float data[] = {0, 1, 2, 3, 4, 5};
  int64_t shape[] = {3, 2}, strides[] = {1, 3};
  TensorSpec spec;
  spec.name = "t";
  spec.shape = {DimSpec{"", 3}, DimSpec{"", 2}};
  TorsorTensor t{data, shape, strides, 2, TORSOR_DTYPE_F32};
  BoundTensor b;
  ASSERT_TRUE(bindTensor(TORSOR_INPUT, spec, &t, b).ok());
  EXPECT_NE(b.data, static_cast<void *>(data));
  EXPECT_EQ(b.strides, (std::vector<int64_t>{2, 1}));
  const float *copy = static_cast<const float *>(b.data);
  float expect[] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(copy[i], expect[i]) << i;
  // Row-major strides (explicit or NULL) borrow the caller's memory.
  int64_t rowMajor[] = {2, 1};
  TorsorTensor c{data, shape, rowMajor, 2, TORSOR_DTYPE_F32};
  ASSERT_TRUE(bindTensor(TORSOR_INPUT, spec, &c, b).ok());
  EXPECT_EQ(b.data, static_cast<void *>(data));
}

} // namespace
