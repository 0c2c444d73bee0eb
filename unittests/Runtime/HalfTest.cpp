//===- HalfTest.cpp - f16/bf16 decoding and widening ----------------------===//
//
// Bit patterns with independently known values (IEEE 754 binary16 and
// bfloat16 tables): normals, the extremes, subnormals, signed zero, inf
// and NaN; then widening to f64 for f64 models.
//
//===----------------------------------------------------------------------===//

#include "Half.h"
#include "Npy.h"
#include "SafeTensors.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>

using namespace torsor::rt;

TEST(Half, DecodesF16) {
  EXPECT_EQ(f16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(f16ToFloat(0xc100), -2.5f);
  EXPECT_EQ(f16ToFloat(0x3555), 0.333251953125f);       // nearest f16 to 1/3
  EXPECT_EQ(f16ToFloat(0x7bff), 65504.0f);              // largest finite
  EXPECT_EQ(f16ToFloat(0x0400), std::ldexp(1.0f, -14)); // smallest normal
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
  EXPECT_EQ(f16ToFloat(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16ToFloat(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(f16ToFloat(0x8000)));
  EXPECT_EQ(f16ToFloat(0x7c00), INFINITY);
  EXPECT_EQ(f16ToFloat(0xfc00), -INFINITY);
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7e00)));
}

TEST(Half, DecodesBF16) {
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xc020), -2.5f);
  EXPECT_EQ(bf16ToFloat(0x3eab), 0.333984375f);
  EXPECT_EQ(bf16ToFloat(0x7f7f), 3.3895313892515355e38f); // largest finite
  EXPECT_EQ(bf16ToFloat(0x0001), std::ldexp(1.0f, -133)); // subnormal
  EXPECT_EQ(bf16ToFloat(0xff80), -INFINITY);
  EXPECT_TRUE(std::isnan(bf16ToFloat(0x7fc0)));
}

TEST(Half, LoadsSafeTensorsAndWidensForF64) {
  // {"h": F16 [2] = {1, -2.5}, "b": BF16 [2] = {1, -2.5}}
  std::string header = R"({"h": {"dtype": "F16", "shape": [2],)"
                       R"( "data_offsets": [0, 4]},)"
                       R"( "b": {"dtype": "BF16", "shape": [2],)"
                       R"( "data_offsets": [4, 8]}})";
  std::string bytes(8, '\0');
  uint64_t len = header.size();
  std::memcpy(&bytes[0], &len, 8);
  bytes += header;
  const unsigned char data[] = {0x00, 0x3c, 0x00, 0xc1, 0x80, 0x3f, 0x20, 0xc0};
  bytes.append(reinterpret_cast<const char *>(data), sizeof(data));
  TensorBundle bundle;
  Status s = parseSafeTensors(bytes, "w.st", bundle);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(bundle.size(), 2u);
  for (auto &[name, t] : bundle) {
    ASSERT_EQ(t.dtype(), TORSOR_DTYPE_F32) << name;
    EXPECT_TRUE(t.widenedFromHalf());
    EXPECT_EQ(static_cast<const float *>(t.data())[0], 1.0f);
    EXPECT_EQ(static_cast<const float *>(t.data())[1], -2.5f);
    // An f32 model keeps it; an f64 model gets the exact f64 copy.
    ASSERT_TRUE(widenForModel(t, TORSOR_DTYPE_F32).ok());
    EXPECT_EQ(t.dtype(), TORSOR_DTYPE_F32);
    ASSERT_TRUE(widenForModel(t, TORSOR_DTYPE_F64).ok());
    ASSERT_EQ(t.dtype(), TORSOR_DTYPE_F64);
    EXPECT_EQ(static_cast<const double *>(t.data())[1], -2.5);
  }
}

TEST(Half, F32DataIsNotWidened) {
  HostTensor t;
  ASSERT_TRUE(HostTensor::create(TORSOR_DTYPE_F32, {3}, t).ok());
  ASSERT_TRUE(widenForModel(t, TORSOR_DTYPE_F64).ok());
  EXPECT_EQ(t.dtype(), TORSOR_DTYPE_F32); // a real dtype mismatch stays one
}

TEST(Half, LoadsF16Npy) {
  std::string dict = "{'descr': '<f2', 'fortran_order': False, "
                     "'shape': (3,), }";
  dict.resize(118 - 1, ' ');
  dict += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>(dict.size() >> 8);
  bytes += dict;
  const unsigned char data[] = {0x00, 0x3c, 0x01, 0x00, 0x00, 0xfc};
  bytes.append(reinterpret_cast<const char *>(data), sizeof(data));
  HostTensor t;
  Status s = parseNpy(bytes, "h.npy", t);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(t.dtype(), TORSOR_DTYPE_F32);
  const float *v = static_cast<const float *>(t.data());
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], std::ldexp(1.0f, -24));
  EXPECT_EQ(v[2], -INFINITY);
  // bf16 saved by ml_dtypes loses its type in .npy: say so.
  std::string v2 = bytes;
  v2.replace(v2.find("<f2"), 3, "<V2");
  EXPECT_NE(parseNpy(v2, "b.npy", t)
                .message.find("store bf16 in "
                              ".safetensors"),
            std::string::npos);
}

TEST(Half, ConvertsBetweenFloatTypesUnderThePolicy) {
  HostTensor t;
  ASSERT_TRUE(HostTensor::create(TORSOR_DTYPE_F64, {3}, t).ok());
  double *d = static_cast<double *>(t.data());
  d[0] = 0.1;
  d[1] = -2.5;
  d[2] = 1e300; // overflows f32: rounds to inf, as a cast does
  bool rounded = false;
  ASSERT_TRUE(convertFloatForModel(t, TORSOR_DTYPE_F32, rounded).ok());
  EXPECT_TRUE(rounded);
  ASSERT_EQ(t.dtype(), TORSOR_DTYPE_F32);
  const float *f = static_cast<const float *>(t.data());
  EXPECT_EQ(f[0], 0.1f);
  EXPECT_EQ(f[1], -2.5f);
  EXPECT_EQ(f[2], INFINITY);
  // Widening is exact and not a rounding.
  ASSERT_TRUE(convertFloatForModel(t, TORSOR_DTYPE_F64, rounded).ok());
  EXPECT_FALSE(rounded);
  ASSERT_EQ(t.dtype(), TORSOR_DTYPE_F64);
  EXPECT_EQ(static_cast<const double *>(t.data())[0],
            static_cast<double>(0.1f));
  // Integers are never converted (the binding reports the mismatch).
  HostTensor ids;
  ASSERT_TRUE(HostTensor::create(TORSOR_DTYPE_I64, {2}, ids).ok());
  ASSERT_TRUE(convertFloatForModel(ids, TORSOR_DTYPE_F32, rounded).ok());
  EXPECT_EQ(ids.dtype(), TORSOR_DTYPE_I64);
  ASSERT_TRUE(convertFloatForModel(t, TORSOR_DTYPE_I64, rounded).ok());
  EXPECT_EQ(t.dtype(), TORSOR_DTYPE_F64);
}
