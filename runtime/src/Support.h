//===- Support.h - Status, dtypes and owned tensors -----------*- C++ -*-===//
//
// Small shared vocabulary of the runtime's C++ internals: a Status that
// carries a TorsorStatusCode and message (the runtime builds without
// exceptions so it can sit inside -fno-exceptions hosts), printf-style
// formatting, dtype helpers, and HostTensor, an owning, 64-byte aligned,
// row-major tensor used for file I/O, copied params and outputs.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_SUPPORT_H
#define TORSOR_RUNTIME_SUPPORT_H

#include "torsor/runtime.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace torsor::rt {

/// Outcome of an internal operation: ok() or a code with a message.
class Status {
public:
  /// Success.
  Status() = default;
  /// Failure with `code` (must not be TORSOR_OK) and `message`.
  Status(TorsorStatusCode code, std::string message)
      : code(code), message(std::move(message)) {}

  /// True on success.
  bool ok() const { return code == TORSOR_OK; }
  /// Returns a copy whose message is prefixed with `prefix`.
  Status withPrefix(const std::string &prefix) const {
    return ok() ? *this : Status(code, prefix + message);
  }

  TorsorStatusCode code = TORSOR_OK;
  std::string message;
};

/// Shorthand for an invalid-argument error.
inline Status invalidArg(std::string message) {
  return Status(TORSOR_INVALID_ARGUMENT, std::move(message));
}
/// Shorthand for an I/O or file-format error.
inline Status ioError(std::string message) {
  return Status(TORSOR_IO_ERROR, std::move(message));
}

/// printf-style formatting into a std::string.
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/// Bytes per element of a TorsorDType, 0 for an unknown dtype.
size_t dtypeSize(int32_t dtype);
/// Manifest spelling of a dtype ("f32"), "?" if unknown.
const char *dtypeName(int32_t dtype);
/// Parses "f32"/"f64"/"i64"; returns false for anything else.
bool parseDType(const std::string &name, int32_t &dtype);

/// Product of `shape`, or -1 on a negative extent or int64 overflow.
int64_t numElements(const std::vector<int64_t> &shape);
/// Joins extents as "10 x 4 x 4" ("scalar" for rank 0).
std::string shapeToString(const std::vector<int64_t> &shape);

/// An owning, row-major tensor whose data is 64-byte aligned (so compiled
/// vector code may use aligned loads).
class HostTensor {
public:
  HostTensor() = default;
  /// Allocates a zero-filled tensor; fails on a bad dtype, a negative extent
  /// or an allocation that does not fit in memory.
  static Status create(int32_t dtype, std::vector<int64_t> shape,
                       HostTensor &out);

  int32_t dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t byteSize() const { return static_cast<size_t>(numel_) * elemSize(); }
  size_t elemSize() const { return dtypeSize(dtype_); }
  void *data() { return data_.get(); }
  const void *data() const { return data_.get(); }
  /// Row-major element strides of shape().
  std::vector<int64_t> strides() const;
  /// A C view of this tensor; valid while this object and `strides` live.
  /// Callers hand it out read-only (outputs, gradients) or write through
  /// it as the C API's `data` pointer allows.
  TorsorTensor view(const std::vector<int64_t> &strides) const;
  /// True when the data was stored as f16/bf16 and widened on load
  /// (Half.h), so binding may widen it again to the model's f64.
  bool widenedFromHalf() const { return widened_; }
  void setWidenedFromHalf(bool widened) { widened_ = widened; }

private:
  /// Frees memory from std::aligned_alloc.
  struct FreeDeleter {
    void operator()(void *p) const;
  };
  int32_t dtype_ = TORSOR_DTYPE_F32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::unique_ptr<unsigned char, FreeDeleter> data_;
  bool widened_ = false;
};

/// Resizes `s` to `n` bytes; false (instead of throwing std::bad_alloc or
/// std::length_error) when that memory is not available.
bool tryResize(std::string &s, uint64_t n);

/// Row-major element strides of `shape`.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_SUPPORT_H
