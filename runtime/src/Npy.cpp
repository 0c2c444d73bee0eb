//===- Npy.cpp - NumPy .npy reader and writer -----------------------------===//
//
// The .npy header is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and ended by '\n'. This file parses exactly that subset
// (string, bool and int-tuple values) rather than general Python.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"
#include "Half.h"
#include "StagedFiles.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace torsor::rt {

/// What kind of non-regular file `mode` is, for the refusal message.
static const char *fileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a pipe";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

Status readFile(const std::string &path, std::string &out, uint64_t maxBytes) {
  // Regular files only: /dev/zero or a pipe has no size to check a header
  // against, and reading it "to the end" never ends (it used to exhaust
  // memory and abort with std::bad_alloc).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ioError(
        format("cannot open '%s': %s", path.c_str(), std::strerror(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return ioError(format("cannot read '%s': it is %s, not a regular file",
                          path.c_str(), fileKind(st.st_mode)));
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > maxBytes) {
    ::close(fd);
    return ioError(format("cannot read '%s': the file has %llu bytes, more "
                          "than the %llu this reader accepts",
                          path.c_str(), (unsigned long long)size,
                          (unsigned long long)maxBytes));
  }
  out.clear();
  if (!tryResize(out, size)) {
    ::close(fd);
    return Status(TORSOR_OUT_OF_MEMORY,
                  format("out of memory reading '%s' (%llu bytes)",
                         path.c_str(), (unsigned long long)size));
  }
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, &out[done], size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      ::close(fd);
      return ioError(format("cannot read '%s': %s", path.c_str(),
                            n < 0 ? std::strerror(errno)
                                  : "the file shrank while it was read"));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return Status();
}

Status writeFile(const std::string &path, const std::string &bytes) {
  // Links resolved, staged beside the real target, special files written
  // in place, every error checked (StagedFiles.h).
  return writeFileSafely(path, bytes);
}

namespace {

/// Parser for the header's dict literal.
class HeaderParser {
public:
  /// Parses `text`; `path` labels errors.
  HeaderParser(const std::string &text, const std::string &path)
      : text(text), path(path) {}

  /// Parsed fields.
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;

  /// Parses the whole dict; all three keys are required.
  Status parse() {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skip();
    if (!eat('{'))
      return error("header is not a dict");
    while (true) {
      skip();
      if (eat('}'))
        break;
      std::string key;
      Status s = parseStr(key);
      if (!s.ok())
        return s;
      skip();
      if (!eat(':'))
        return error("expected ':' after key '" + key + "'");
      skip();
      if (key == "descr") {
        s = parseStr(descr);
        haveDescr = true;
      } else if (key == "fortran_order") {
        s = parseBool(fortranOrder);
        haveOrder = true;
      } else if (key == "shape") {
        s = parseShape();
        haveShape = true;
      } else {
        return error("unexpected key '" + key + "'");
      }
      if (!s.ok())
        return s;
      skip();
      if (eat(','))
        continue;
      skip();
      if (eat('}'))
        break;
      return error("expected ',' or '}'");
    }
    skip();
    if (pos != text.size())
      return error("trailing characters after the dict");
    if (!haveDescr || !haveOrder || !haveShape)
      return error("header needs 'descr', 'fortran_order' and 'shape'");
    return Status();
  }

private:
  std::string text; // a copy: callers pass temporaries
  const std::string &path;
  size_t pos = 0;

  /// A malformed-header error.
  Status error(const std::string &what) const {
    return ioError(path + ": malformed .npy header: " + what);
  }
  /// Skips whitespace.
  void skip() {
    while (pos < text.size() &&
           (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\t'))
      ++pos;
  }
  /// Consumes `c` if it is next.
  bool eat(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  /// Parses a '...' or "..." string (no escapes occur in headers).
  Status parseStr(std::string &out) {
    char quote = pos < text.size() ? text[pos] : '\0';
    if (quote != '\'' && quote != '"')
      return error("expected a quoted string");
    size_t end = text.find(quote, pos + 1);
    if (end == std::string::npos)
      return error("unterminated string");
    out = text.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    return Status();
  }
  /// Parses True or False.
  Status parseBool(bool &out) {
    if (text.compare(pos, 4, "True") == 0) {
      out = true;
      pos += 4;
    } else if (text.compare(pos, 5, "False") == 0) {
      out = false;
      pos += 5;
    } else {
      return error("expected True or False for 'fortran_order'");
    }
    return Status();
  }
  /// Parses a tuple of non-negative integers: (), (3,), (2, 3).
  Status parseShape() {
    if (!eat('('))
      return error("expected a tuple for 'shape'");
    while (true) {
      skip();
      if (eat(')'))
        return Status();
      if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
        return error("expected a non-negative integer in 'shape'");
      int64_t v = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, text[pos] - '0', &v))
          return error("extent too large in 'shape'");
        ++pos;
      }
      shape.push_back(v);
      skip();
      if (eat(','))
        continue;
      skip();
      if (eat(')'))
        return Status();
      return error("expected ',' or ')' in 'shape'");
    }
  }
};

/// Reads a little-endian unsigned integer of `n` bytes.
uint64_t readLE(const std::string &bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

/// How an array's elements are stored when that is not the tensor's own
/// type: f16 (widened to f32) or another integer width (widened to i64).
struct Stored {
  bool half = false;
  int intBytes = 0; ///< 1, 2, 4 or 8 for a widened integer; 0 otherwise
  bool intUnsigned = false;
  std::string name; ///< "f16", "int32", ... for messages
};

/// Maps a little-endian descr to a dtype; explains what is wrong otherwise.
/// `<f2` (f16) loads as f32, and the other integer widths (`|i1` ... `<u8`)
/// as i64 (the dtype policy: exact conversions only), as `stored` says.
Status dtypeFromDescr(const std::string &descr, const std::string &path,
                      int32_t &dtype, Stored &stored) {
  stored = Stored();
  static const struct {
    const char *descr;
    int bytes;
    bool isUnsigned;
    const char *name;
  } kInts[] = {{"|i1", 1, false, "int8"},  {"<i2", 2, false, "int16"},
               {"<i4", 4, false, "int32"}, {"|u1", 1, true, "uint8"},
               {"<u2", 2, true, "uint16"}, {"<u4", 4, true, "uint32"},
               {"<u8", 8, true, "uint64"}};
  for (const auto &i : kInts)
    if (descr == i.descr) {
      dtype = TORSOR_DTYPE_I64;
      stored.intBytes = i.bytes;
      stored.intUnsigned = i.isUnsigned;
      stored.name = i.name;
      return Status();
    }
  stored.half = descr == "<f2";
  if (stored.half) {
    dtype = TORSOR_DTYPE_F32;
    stored.name = "f16";
  } else if (descr == "<V2" || descr == "|V2")
    return ioError(path + ": dtype '" + descr +
                   "' is 2 raw bytes (ml_dtypes' bfloat16 saves as this and "
                   "loses its type); store bf16 in .safetensors (dtype BF16) "
                   "or save arr.astype(np.float32)");
  else if (descr == "<f4")
    dtype = TORSOR_DTYPE_F32;
  else if (descr == "<f8")
    dtype = TORSOR_DTYPE_F64;
  else if (descr == "<i8")
    dtype = TORSOR_DTYPE_I64;
  else if (!descr.empty() && descr[0] == '>')
    return ioError(path + ": big-endian dtype '" + descr +
                   "' is not supported; save little-endian data "
                   "(e.g. arr.astype(arr.dtype.newbyteorder('<')))");
  else
    return ioError(path + ": unsupported dtype '" + descr +
                   "'; supported: '<f4' (f32), '<f8' (f64), '<i8' (i64), "
                   "'<f2' (f16, widened to the model's float type), and the "
                   "other integer widths '|i1' ... '<u8' (widened to i64)");
  if (stored.name.empty())
    stored.name = dtypeName(dtype);
  return Status();
}

/// Widens `n` little-endian integers of `stored`'s width at `src` into the
/// i64 tensor `out`; a uint64 value above 2^63 - 1 is an error.
Status widenInts(const char *src, const Stored &stored, int64_t n,
                 const std::string &path, HostTensor &out) {
  int64_t *dst = static_cast<int64_t *>(out.data());
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, src + i * stored.intBytes, stored.intBytes);
    int shift = 64 - 8 * stored.intBytes;
    if (stored.intUnsigned) {
      if (bits > static_cast<uint64_t>(INT64_MAX))
        return ioError(format("%s: element %lld is %llu, which does not fit "
                              "i64 (uint64 values above 2^63 - 1 are not "
                              "converted)",
                              path.c_str(), (long long)i,
                              (unsigned long long)bits));
      dst[i] = static_cast<int64_t>(bits);
    } else {
      // Sign-extend from the stored width.
      dst[i] = static_cast<int64_t>(bits << shift) >> shift;
    }
  }
  return Status();
}

} // namespace

Status parseNpy(const std::string &bytes, const std::string &path,
                HostTensor &out) {
  static const char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    return ioError(path + ": not a .npy file (missing \\x93NUMPY magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = readLE(bytes, 8, 2);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return ioError(path + ": truncated .npy header");
    headerLen = readLE(bytes, 8, 4);
    headerStart = 12;
  } else {
    return ioError(format("%s: unsupported .npy format version %d.%d",
                          path.c_str(), major,
                          static_cast<unsigned char>(bytes[7])));
  }
  if (headerStart + headerLen > bytes.size())
    return ioError(format("%s: truncated .npy header (needs %zu bytes, file "
                          "has %zu)",
                          path.c_str(), headerStart + headerLen, bytes.size()));
  HeaderParser header(bytes.substr(headerStart, headerLen), path);
  Status s = header.parse();
  if (!s.ok())
    return s;
  int32_t dtype;
  Stored stored;
  s = dtypeFromDescr(header.descr, path, dtype, stored);
  if (!s.ok())
    return s;
  bool half = stored.half;
  size_t elementSize = half              ? 2
                       : stored.intBytes ? static_cast<size_t>(stored.intBytes)
                                         : dtypeSize(dtype);
  // Rank-1 and scalar arrays are identical in both orders.
  if (header.fortranOrder && header.shape.size() > 1)
    return ioError(path + ": Fortran-order arrays are not supported; save a "
                          "C-order array (np.ascontiguousarray)");
  int64_t n = numElements(header.shape);
  uint64_t need = 0;
  if (n < 0 ||
      __builtin_mul_overflow(static_cast<uint64_t>(n), elementSize, &need))
    return ioError(path + ": shape in .npy header is too large");
  size_t dataStart = headerStart + headerLen;
  uint64_t have = bytes.size() - dataStart;
  if (have != need)
    return ioError(format("%s: %s: header says %s %s = %llu bytes of data, "
                          "file has %llu",
                          path.c_str(), have < need ? "truncated" : "too long",
                          shapeToString(header.shape).c_str(),
                          stored.name.c_str(), (unsigned long long)need,
                          (unsigned long long)have));
  s = HostTensor::create(dtype, header.shape, out);
  if (!s.ok())
    return s.withPrefix(path + ": ");
  if (half)
    widenHalf(reinterpret_cast<const unsigned char *>(bytes.data()) + dataStart,
              HalfFormat::F16, out);
  else if (stored.intBytes)
    return widenInts(bytes.data() + dataStart, stored, n, path, out);
  else if (need)
    std::memcpy(out.data(), bytes.data() + dataStart, need);
  return Status();
}

Status readNpy(const std::string &path, HostTensor &out) {
  std::string bytes;
  Status s = readFile(path, bytes);
  if (!s.ok())
    return s;
  return parseNpy(bytes, path, out);
}

std::string serializeNpy(const HostTensor &tensor) {
  static const char *const kDescr[] = {"<f4", "<f8", "<i8"};
  std::string dict = "{'descr': '";
  dict += kDescr[tensor.dtype()];
  dict += "', 'fortran_order': False, 'shape': (";
  // numpy spells shapes "()", "(3,)" and "(3, 4)".
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    dict += (i ? ", " : "") + std::to_string(tensor.shape()[i]);
  if (tensor.shape().size() == 1)
    dict += ',';
  dict += "), }";
  // Pad with spaces so the data starts 64-byte aligned, then '\n'.
  bool v2 = dict.size() + 11 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  size_t len = dict.size();
  for (int i = 0; i < (v2 ? 4 : 2); ++i)
    out += static_cast<char>((len >> (8 * i)) & 0xFF);
  out += dict;
  out.append(static_cast<const char *>(tensor.data()), tensor.byteSize());
  return out;
}

Status writeNpy(const std::string &path, const HostTensor &tensor) {
  return writeFile(path, serializeNpy(tensor));
}

} // namespace torsor::rt
