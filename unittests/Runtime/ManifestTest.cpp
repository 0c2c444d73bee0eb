//===- ManifestTest.cpp - Tests of the manifest schema check --------------===//
//
// The ABI example manifest parses into the expected specs; each schema rule
// rejects with file, line:col and field path.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "gtest/gtest.h"

using namespace torsor::rt;

namespace {

/// The example from docs/runtime.md.
const char *kExample = R"({"model": "PoseAttention", "target": "cpu",
 "dtype": "f32", "abi": 1, "entry": "torsor_forward", "dims": ["L"],
 "inputs":  [{"name": "pose", "dtype": "f32", "shape": ["L", 4, 4],
              "group": "SE3", "left_invariant": true},
             {"name": "x", "dtype": "f32", "shape": ["L", 64]}],
 "params":  [{"name": "blocks.0.Wv", "dtype": "f32", "shape": [64, 64]}],
 "outputs": [{"name": "out", "dtype": "f32", "shape": ["L", 64]}]})";

/// Parses `text` expecting failure; returns the message.
std::string manifestError(const std::string &text) {
  Manifest m;
  Status s = parseManifest(text, "m.json", m);
  EXPECT_FALSE(s.ok());
  return s.message;
}

/// A minimal manifest whose single input is `input` (a JSON object).
std::string withInput(const std::string &input) {
  return R"({"model": "M", "target": "cpu", "abi": 1, "dims": ["L"],
"inputs": [)" +
         input + R"(], "params": [], "outputs": []})";
}

TEST(Manifest, ParsesExample) {
  Manifest m;
  Status s = parseManifest(kExample, "m.json", m);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(m.model, "PoseAttention");
  EXPECT_EQ(m.entry, "torsor_forward");
  EXPECT_EQ(m.dims, std::vector<std::string>{"L"});
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(m.inputs[0].group, "SE3");
  EXPECT_EQ(m.inputs[0].groupN, 4);
  EXPECT_TRUE(m.inputs[0].leftInvariant);
  EXPECT_EQ(m.inputs[0].shapeString(), "L x 4 x 4");
  EXPECT_TRUE(m.inputs[0].shape[0].isSymbolic());
  EXPECT_EQ(m.inputs[0].shape[1].extent, 4);
  EXPECT_EQ(m.params[0].name, "blocks.0.Wv");
  EXPECT_EQ(m.outputs[0].dtype, TORSOR_DTYPE_F32);
}

TEST(Manifest, AcceptsUserGroupsWithSize) {
  Manifest m;
  Status s = parseManifest(withInput(R"({"name": "g", "dtype": "f64",
      "shape": ["L", 5, 5], "group": "MyGroup", "group_n": 5})"),
                           "m.json", m);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(m.inputs[0].groupN, 5);
  EXPECT_EQ(m.inputs[0].dtype, TORSOR_DTYPE_F64);
  EXPECT_EQ(m.entry, "torsor_forward"); // default
}

TEST(Manifest, ParsesPrepare) {
  // --compute=bf16: the params' packed copies (docs/runtime.md).
  std::string text = R"({"model": "M", "target": "cpu", "abi": 1, "dims": [],
"inputs": [], "params": [], "outputs": [], "compute": "bf16",
"prepare": {"entry": "torsor_prepare", "bytes": 24576}})";
  Manifest m;
  Status s = parseManifest(text, "m.json", m);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(m.prepareEntry, "torsor_prepare");
  EXPECT_EQ(m.prepareBytes, 24576);
  Manifest plain;
  ASSERT_TRUE(parseManifest(kExample, "m.json", plain).ok());
  EXPECT_EQ(plain.prepareEntry, ""); // no prepare: nothing to pack
  auto prepare = [](const std::string &field) {
    return R"({"model": "M", "target": "cpu", "abi": 1, "dims": [],
"inputs": [], "params": [], "outputs": [], "prepare": )" +
           field + "}";
  };
  EXPECT_EQ(manifestError(prepare("1")),
            "m.json:2:55: prepare: expected an object");
  EXPECT_EQ(manifestError(prepare(R"({"entry": "torsor_prepare"})")),
            "m.json:2:55: missing field 'prepare.bytes'");
  EXPECT_EQ(
      manifestError(prepare(R"({"entry": "torsor_prepare", "bytes": -8})")),
      "m.json:2:92: prepare.bytes: expected a byte count from 0 to "
      "2^40");
}

TEST(Manifest, RejectsSchemaErrors) {
  EXPECT_EQ(manifestError("{\"model\": 1}"),
            "m.json:1:11: model: expected a string, got a number");
  EXPECT_EQ(manifestError("{\"model\": \"M\"}"),
            "m.json:1:1: missing field 'target'");
  EXPECT_EQ(manifestError("[]"),
            "m.json:1:1: manifest: expected a JSON object");
  EXPECT_EQ(manifestError("{\"model\": \"M\",\n \"target\": \"cpu\", "
                          "\"abi\": 3, \"dims\": []}"),
            "m.json:2:26: abi: manifest is for ABI version 3, this runtime "
            "supports versions 1 to 2");
  EXPECT_EQ(manifestError("{\"model\": \"M\", \"target\": \"nvptx\", "
                          "\"abi\": 2,\n\"gpu_arch\": 90, \"dims\": []}"),
            "m.json:2:13: gpu_arch: expected an arch like \"sm_90\"");
  EXPECT_EQ(manifestError("{\"model\": \"M\", \"target\": \"cpu\",\n"
                          "\"abi\": 1, \"dims\": [\"L\", \"L\"]}"),
            "m.json:2:25: dims[1]: duplicate dim 'L'");
  EXPECT_EQ(manifestError(withInput(R"({"name": "x", "dtype": "f16",
                                        "shape": []})")),
            "m.json:2:35: inputs[0].dtype: unknown dtype 'f16'; expected "
            "f32, f64 or i64");
  EXPECT_EQ(manifestError(withInput(R"({"name": "x", "dtype": "f32",
      "shape": ["N"]})")),
            "m.json:3:17: inputs[0].shape[0]: symbolic dim 'N' is not "
            "declared in \"dims\"");
  EXPECT_EQ(manifestError(withInput(R"({"name": "x", "dtype": "f32",
      "shape": [-1]})")),
            "m.json:3:17: inputs[0].shape[0]: expected a non-negative "
            "integer or a symbolic dim name");
  EXPECT_EQ(manifestError(withInput(R"({"name": "x", "dtype": "f32"})")),
            "m.json:2:12: missing field 'inputs[0].shape'");
  EXPECT_EQ(manifestError(withInput(R"({"name": "p", "dtype": "f32",
      "shape": ["L", 3, 3], "group": "SE3"})")),
            "m.json:2:12: inputs[0].shape: group SE3 elements are 4x4 "
            "matrices, but the shape is L x 3 x 3");
  EXPECT_EQ(manifestError(withInput(R"({"name": "p", "dtype": "f32",
      "shape": ["L", 3, 3], "group": "Mine"})")),
            "m.json:3:38: inputs[0].group: user group 'Mine' needs "
            "\"group_n\" (its matrix size)");
  EXPECT_EQ(manifestError(withInput(R"({"name": "p", "dtype": "f32",
      "shape": ["L", 3, 3], "group": "SO3", "group_n": 4})")),
            "m.json:3:56: inputs[0].group_n: built-in group SO3 is 3x3, got "
            "4");
  EXPECT_EQ(manifestError(withInput(R"({"name": "p", "dtype": "f32",
      "shape": [], "left_invariant": 1})")),
            "m.json:3:38: inputs[0].left_invariant: expected a boolean");
  EXPECT_EQ(manifestError(R"({"model": "M", "target": "cpu", "abi": 1,
"dims": [], "inputs": [{"name": "a", "dtype": "f32", "shape": []}],
"params": [], "outputs": [{"name": "a", "dtype": "f32", "shape": []}]})"),
            "m.json: tensor name 'a' is declared more than once");
}

TEST(Manifest, ReportsSyntaxErrorsWithLocation) {
  EXPECT_EQ(manifestError("{\"model\": \"M\",\n  \"target\" \"cpu\"}"),
            "m.json:2:12: expected ':' after object key, found '\"'");
  Manifest m;
  EXPECT_EQ(readManifest("/nonexistent/m.json", m).message,
            "cannot open '/nonexistent/m.json': No such file or directory");
}

} // namespace
