//===- Support.cpp - Status, dtypes and owned tensors ---------------------===//
//
// Implements the helpers of Support.h: formatting, dtype tables and the
// aligned allocation behind HostTensor.
//
//===----------------------------------------------------------------------===//

#include "Support.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

namespace torsor::rt {

std::string format(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0)
    std::vsnprintf(&out[0], out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

size_t dtypeSize(int32_t dtype) {
  switch (dtype) {
  case TORSOR_DTYPE_F32:
    return 4;
  case TORSOR_DTYPE_F64:
  case TORSOR_DTYPE_I64:
    return 8;
  default:
    return 0;
  }
}

const char *dtypeName(int32_t dtype) {
  switch (dtype) {
  case TORSOR_DTYPE_F32:
    return "f32";
  case TORSOR_DTYPE_F64:
    return "f64";
  case TORSOR_DTYPE_I64:
    return "i64";
  default:
    return "?";
  }
}

bool parseDType(const std::string &name, int32_t &dtype) {
  for (int32_t d : {TORSOR_DTYPE_F32, TORSOR_DTYPE_F64, TORSOR_DTYPE_I64}) {
    if (name == dtypeName(d)) {
      dtype = d;
      return true;
    }
  }
  return false;
}

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return -1;
  }
  return n;
}

std::string shapeToString(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? " x " : "") + std::to_string(shape[i]);
  return out;
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i > 1; --i)
    strides[i - 2] = strides[i - 1] * shape[i - 1];
  return strides;
}

bool tryResize(std::string &s, uint64_t n) {
  if (n > s.max_size())
    return false;
#if defined(__cpp_exceptions)
  try {
    s.resize(static_cast<size_t>(n));
  } catch (const std::exception &) {
    return false;
  }
#else
  s.resize(static_cast<size_t>(n));
#endif
  return true;
}

void HostTensor::FreeDeleter::operator()(void *p) const { std::free(p); }

Status HostTensor::create(int32_t dtype, std::vector<int64_t> shape,
                          HostTensor &out) {
  size_t elem = dtypeSize(dtype);
  if (!elem)
    return invalidArg(format("unsupported dtype code %d", dtype));
  int64_t n = numElements(shape);
  uint64_t bytes = 0;
  if (n < 0 || __builtin_mul_overflow(static_cast<uint64_t>(n), elem, &bytes))
    return invalidArg("tensor of shape " + shapeToString(shape) +
                      " is too large");
  // aligned_alloc wants a multiple of the alignment; never ask for 0 bytes.
  uint64_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    return Status(TORSOR_OUT_OF_MEMORY,
                  format("out of memory allocating %llu bytes",
                         static_cast<unsigned long long>(bytes)));
  std::memset(p, 0, rounded);
  out.dtype_ = dtype;
  out.shape_ = std::move(shape);
  out.numel_ = n;
  out.data_.reset(static_cast<unsigned char *>(p));
  return Status();
}

std::vector<int64_t> HostTensor::strides() const {
  return rowMajorStrides(shape_);
}

TorsorTensor HostTensor::view(const std::vector<int64_t> &strides) const {
  TorsorTensor t;
  t.data = const_cast<void *>(data());
  t.shape = shape_.data();
  t.strides = strides.data();
  t.rank = static_cast<int32_t>(shape_.size());
  t.dtype = dtype_;
  return t;
}

} // namespace torsor::rt
