//===- NpyTest.cpp - Tests of the .npy reader and writer ------------------===//
//
// Round trips for every dtype and rank, byte-exact agreement with NumPy's own
// header layout, and one test per rejected file.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace torsor::rt;

namespace {

/// A tensor whose elements are 0, 1, 2, ... in `dtype`.
HostTensor iota(int32_t dtype, std::vector<int64_t> shape) {
  HostTensor t;
  EXPECT_TRUE(HostTensor::create(dtype, shape, t).ok());
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == TORSOR_DTYPE_F32)
      static_cast<float *>(t.data())[i] = 0.5f * i;
    else if (dtype == TORSOR_DTYPE_F64)
      static_cast<double *>(t.data())[i] = 0.25 * i;
    else
      static_cast<int64_t *>(t.data())[i] = -3 * i;
  }
  return t;
}

/// A .npy file with header dict `dict` (v1) followed by `data`.
std::string npyWith(const std::string &dict, const std::string &data,
                    int major = 1) {
  std::string h = dict + "\n";
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  out += static_cast<char>(h.size() & 0xFF);
  out += static_cast<char>(h.size() >> 8);
  if (major != 1)
    out += std::string(2, '\0');
  return out + h + data;
}

/// Parses `bytes`, expecting failure; returns the message.
std::string npyError(const std::string &bytes) {
  HostTensor t;
  Status s = parseNpy(bytes, "t.npy", t);
  EXPECT_FALSE(s.ok());
  return s.message;
}

TEST(Npy, RoundTripsEveryDTypeAndRank) {
  for (int32_t dtype : {TORSOR_DTYPE_F32, TORSOR_DTYPE_F64, TORSOR_DTYPE_I64})
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{}, {5}, {2, 3}, {2, 3, 4}, {0, 3}}) {
      HostTensor t = iota(dtype, shape), back;
      std::string bytes = serializeNpy(t);
      EXPECT_EQ((bytes.size() - t.byteSize()) % 64, 0u);
      Status s = parseNpy(bytes, "t.npy", back);
      ASSERT_TRUE(s.ok()) << s.message;
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.shape(), shape);
      EXPECT_EQ(std::memcmp(back.data(), t.data(), t.byteSize()), 0);
    }
}

TEST(Npy, WritesNumPyHeaderLayout) {
  std::string bytes = serializeNpy(iota(TORSOR_DTYPE_F32, {3}));
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(bytes.find("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (3,), }"),
            10u);
  EXPECT_EQ(bytes[bytes.size() - 13], '\n'); // header ends before 12 bytes
  std::string scalar = serializeNpy(iota(TORSOR_DTYPE_I64, {}));
  EXPECT_NE(scalar.find("'<i8'"), std::string::npos);
  EXPECT_NE(scalar.find("'shape': (), }"), std::string::npos);
}

TEST(Npy, ReadsVersion2AndFortranVectors) {
  HostTensor t;
  std::string data(8, '\0');
  Status s = parseNpy(npyWith("{'descr': '<f4', 'fortran_order': False, "
                              "'shape': (2,), }",
                              data, 2),
                      "t.npy", t);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(t.shape(), std::vector<int64_t>{2});
  // Rank-1 Fortran order is the same bytes as C order.
  s = parseNpy(npyWith("{'descr': '<f8', 'fortran_order': True, 'shape': "
                       "(1,)}",
                       data),
               "t.npy", t);
  EXPECT_TRUE(s.ok()) << s.message;
}

TEST(Npy, RejectsBadFiles) {
  std::string f4 =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(npyError("hello world"),
            "t.npy: not a .npy file (missing \\x93NUMPY magic)");
  EXPECT_EQ(npyError(npyWith(f4, std::string(24, '\0'), 9)),
            "t.npy: unsupported .npy format version 9.0");
  EXPECT_EQ(npyError(npyWith("{'descr': '<f4', 'fortran_order': True, "
                             "'shape': (2, 3), }",
                             std::string(24, '\0'))),
            "t.npy: Fortran-order arrays are not supported; save a C-order "
            "array (np.ascontiguousarray)");
  EXPECT_EQ(npyError(npyWith("{'descr': '>f4', 'fortran_order': False, "
                             "'shape': (2, 3), }",
                             std::string(24, '\0'))),
            "t.npy: big-endian dtype '>f4' is not supported; save "
            "little-endian data (e.g. "
            "arr.astype(arr.dtype.newbyteorder('<')))");
  EXPECT_EQ(npyError(npyWith("{'descr': '<c8', 'fortran_order': False, "
                             "'shape': (2, 3), }",
                             std::string(48, '\0'))),
            "t.npy: unsupported dtype '<c8'; supported: '<f4' (f32), '<f8' "
            "(f64), '<i8' (i64), '<f2' (f16, widened to the model's float "
            "type), and the other integer widths '|i1' ... '<u8' (widened to "
            "i64)");
  EXPECT_EQ(npyError(npyWith(f4, std::string(20, '\0'))),
            "t.npy: truncated: header says 2 x 3 f32 = 24 bytes of data, "
            "file has 20");
  EXPECT_EQ(npyError(npyWith(f4, std::string(28, '\0'))),
            "t.npy: too long: header says 2 x 3 f32 = 24 bytes of data, file "
            "has 28");
  std::string full = npyWith(f4, "");
  EXPECT_EQ(npyError(full.substr(0, 30)),
            "t.npy: truncated .npy header (needs 70 bytes, file has 30)");
  EXPECT_EQ(npyError(npyWith("{'descr': '<f4', 'shape': (2, 3), }", "")),
            "t.npy: malformed .npy header: header needs 'descr', "
            "'fortran_order' and 'shape'");
  EXPECT_EQ(npyError(npyWith("{'descr': '<f4', 'fortran_order': False, "
                             "'shape': (2, -3), }",
                             "")),
            "t.npy: malformed .npy header: expected a non-negative integer "
            "in 'shape'");
  EXPECT_EQ(npyError(npyWith("[1, 2]", "")),
            "t.npy: malformed .npy header: header is not a dict");
  EXPECT_EQ(npyError(npyWith("{'descr': '<f4', 'fortran_order': False, "
                             "'shape': (99999999999, 99999999999, "
                             "99999999999), }",
                             "")),
            "t.npy: shape in .npy header is too large");
}

TEST(Npy, ReportsMissingAndUnwritableFiles) {
  HostTensor t;
  Status s = readNpy("/nonexistent/dir/x.npy", t);
  EXPECT_EQ(s.message,
            "cannot open '/nonexistent/dir/x.npy': No such file or directory");
  s = writeNpy("/nonexistent/dir/x.npy", iota(TORSOR_DTYPE_F32, {1}));
  EXPECT_EQ(s.message,
            "cannot write '/nonexistent/dir/x.npy': No such file or directory");
}

} // namespace

TEST(Npy, WidensOtherIntegerWidthsToI64) {
  // int16 [-2, 3] and uint8 [7, 255]: exact, sign-extended or not.
  HostTensor t;
  std::string i2("\xfe\xff\x03\x00", 4);
  Status s = parseNpy(npyWith("{'descr': '<i2', 'fortran_order': False, "
                              "'shape': (2,), }",
                              i2),
                      "t.npy", t);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(t.dtype(), TORSOR_DTYPE_I64);
  EXPECT_EQ(static_cast<const int64_t *>(t.data())[0], -2);
  EXPECT_EQ(static_cast<const int64_t *>(t.data())[1], 3);
  s = parseNpy(npyWith("{'descr': '|u1', 'fortran_order': False, "
                       "'shape': (2,), }",
                       std::string("\x07\xff", 2)),
               "t.npy", t);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(static_cast<const int64_t *>(t.data())[1], 255);
  // A uint64 that does not fit i64 is refused, naming the element.
  std::string u8(16, '\0');
  u8[7] = '\x01';
  u8[15] = '\x80';
  EXPECT_EQ(npyError(npyWith("{'descr': '<u8', 'fortran_order': False, "
                             "'shape': (2,), }",
                             u8)),
            "t.npy: element 1 is 9223372036854775808, which does not fit i64 "
            "(uint64 values above 2^63 - 1 are not converted)");
}
