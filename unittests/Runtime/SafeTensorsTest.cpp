//===- SafeTensorsTest.cpp - Tests of the .safetensors reader/writer ------===//
//
// Round trips of multi-tensor bundles and one test per rejected file,
// especially offsets that point outside the file.
//
//===----------------------------------------------------------------------===//

#include "SafeTensors.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace torsor::rt;

namespace {

/// A .safetensors file with JSON header `header` and `dataBytes` zero bytes.
std::string fileWith(const std::string &header, size_t dataBytes) {
  std::string out;
  for (int i = 0; i < 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + std::string(dataBytes, '\0');
}

/// Parses `bytes`, expecting failure; returns the message.
std::string stError(const std::string &bytes) {
  TensorBundle b;
  Status s = parseSafeTensors(bytes, "w.st", b);
  EXPECT_FALSE(s.ok());
  return s.message;
}

TEST(SafeTensors, RoundTripsBundles) {
  TensorBundle bundle;
  int32_t dtypes[] = {TORSOR_DTYPE_F32, TORSOR_DTYPE_F64, TORSOR_DTYPE_I64,
                      TORSOR_DTYPE_F32};
  std::vector<std::vector<int64_t>> shapes = {{2, 3}, {4}, {}, {0, 5}};
  for (int i = 0; i < 4; ++i) {
    HostTensor t;
    ASSERT_TRUE(HostTensor::create(dtypes[i], shapes[i], t).ok());
    auto *bytes = static_cast<unsigned char *>(t.data());
    for (size_t k = 0; k < t.byteSize(); ++k)
      bytes[k] = static_cast<unsigned char>(k * 7 + i);
    bundle.emplace_back("blocks." + std::to_string(i) + ".W\"q", std::move(t));
  }
  std::string bytes = serializeSafeTensors(bundle);
  EXPECT_EQ((bytes.size() - 8) % 8, 0u);
  TensorBundle back;
  Status s = parseSafeTensors(bytes, "w.st", back);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(back.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(back[i].first, bundle[i].first);
    EXPECT_EQ(back[i].second.dtype(), dtypes[i]);
    EXPECT_EQ(back[i].second.shape(), shapes[i]);
    EXPECT_EQ(std::memcmp(back[i].second.data(), bundle[i].second.data(),
                          bundle[i].second.byteSize()),
              0);
  }
}

TEST(SafeTensors, IgnoresMetadata) {
  TensorBundle b;
  Status s = parseSafeTensors(fileWith(R"({"__metadata__": {"format": "pt"},
                 "a": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})",
                                       8),
                              "w.st", b);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].first, "a");
}

TEST(SafeTensors, RejectsBadFiles) {
  EXPECT_EQ(stError("abc"), "w.st: not a .safetensors file (shorter than its "
                            "8-byte header length)");
  EXPECT_EQ(stError(std::string("\xff\xff\0\0\0\0\0\0{}", 10)),
            "w.st: header length 65535 exceeds the file size (10 bytes); not "
            "a .safetensors file or truncated");
  EXPECT_EQ(stError(fileWith("{\"a\": }", 0)),
            "w.st: header: 1:7: expected a JSON value, found '}'");
  EXPECT_EQ(stError(fileWith("[]", 0)), "w.st: header must be a JSON object");
  EXPECT_EQ(stError(fileWith(R"({"a": {"dtype": "I32", "shape": [1],
                               "data_offsets": [0, 4]}})",
                             4)),
            "w.st: tensor 'a' (header 1:7): unsupported dtype 'I32'; "
            "supported: F32, F64, I64, and F16 and BF16 (widened to the "
            "model's float type)");
  // Half precision takes 2 bytes per element.
  EXPECT_EQ(stError(fileWith(R"({"a": {"dtype": "BF16", "shape": [2],
                               "data_offsets": [0, 8]}})",
                             8)),
            "w.st: tensor 'a' (header 1:7): shape 2 BF16 needs 4 bytes but "
            "data_offsets span 8");
  EXPECT_EQ(stError(fileWith(R"({"a": {"dtype": "F32", "shape": [4],
                               "data_offsets": [0, 16]}})",
                             12)),
            "w.st: tensor 'a' (header 1:7): data_offsets [0, 16] outside the "
            "12 data bytes of the file (truncated?)");
  EXPECT_EQ(stError(fileWith(R"({"a": {"dtype": "F32", "shape": [4],
                               "data_offsets": [8, 4]}})",
                             16)),
            "w.st: tensor 'a' (header 1:7): data_offsets [8, 4] outside the "
            "16 data bytes of the file (truncated?)");
  EXPECT_EQ(stError(fileWith(R"({"a": {"dtype": "F32", "shape": [3],
                               "data_offsets": [0, 16]}})",
                             16)),
            "w.st: tensor 'a' (header 1:7): shape 3 f32 needs 12 bytes but "
            "data_offsets span 16");
  EXPECT_EQ(stError(fileWith(R"({"a": {"dtype": "F32", "shape": [-3],
                               "data_offsets": [0, 16]}})",
                             16)),
            "w.st: tensor 'a' (header 1:7): shape entries must be "
            "non-negative integers");
  EXPECT_EQ(stError(fileWith(R"({"a": {"dtype": "F32", "shape": [3]}})", 16)),
            "w.st: tensor 'a' (header 1:7): missing field 'data_offsets' "
            "([begin, end])");
  EXPECT_EQ(stError(fileWith(R"({"a": 3})", 0)),
            "w.st: tensor 'a' (header 1:7): expected an object");
}

TEST(SafeTensors, ReportsMissingFile) {
  TensorBundle b;
  EXPECT_EQ(readSafeTensors("/nonexistent/w.safetensors", b).message,
            "cannot open '/nonexistent/w.safetensors': No such file or "
            "directory");
}

} // namespace
