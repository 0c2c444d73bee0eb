//===- NonFinite.cpp - NaN/Inf policy for bound tensors -------------------===//
//
// Implements NonFinite.h: one vectorised screening pass; the message gives the
// flat element number and the multi-index, so the value can be found in NumPy.
//
//===----------------------------------------------------------------------===//

#include "NonFinite.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace torsor::rt {

namespace {
/// Whether `data[0, n)` holds a NaN or an infinity: an all-ones exponent.
/// Branch-free integer work the compiler vectorises, so the check costs a
/// pass over memory, not a compare and branch per element (params of a
/// whole model are scanned on every run).
template <typename T, typename Bits>
bool anyNonFinite(const T *data, int64_t n, Bits exponent) {
  Bits hits = 0;
  for (int64_t i = 0; i < n; ++i) {
    Bits bits;
    std::memcpy(&bits, data + i, sizeof(bits));
    hits |= static_cast<Bits>((bits & exponent) == exponent);
  }
  return hits != 0;
}

/// Index of the first non-finite element of `data[0, n)`, or -1: blocks
/// are screened with anyNonFinite and only a flagged block is searched.
template <typename T, typename Bits>
int64_t firstNonFinite(const T *data, int64_t n, Bits exponent) {
  constexpr int64_t kBlock = 4096;
  for (int64_t lo = 0; lo < n; lo += kBlock) {
    int64_t len = std::min(kBlock, n - lo);
    if (!anyNonFinite(data + lo, len, exponent))
      continue;
    for (int64_t i = lo; i < lo + len; ++i)
      if (!std::isfinite(data[i]))
        return i;
  }
  return -1;
}

} // namespace

Status checkFinite(const std::string &label, const BoundTensor &t) {
  int64_t n = numElements(t.shape);
  if (n <= 0 || !t.data)
    return Status();
  int64_t bad = -1;
  double value = 0;
  if (t.dtype == TORSOR_DTYPE_F32) {
    const float *d = static_cast<const float *>(t.data);
    if ((bad = firstNonFinite(d, n, uint32_t{0x7f800000})) >= 0)
      value = d[bad];
  } else if (t.dtype == TORSOR_DTYPE_F64) {
    const double *d = static_cast<const double *>(t.data);
    if ((bad = firstNonFinite(d, n, uint64_t{0x7ff0000000000000})) >= 0)
      value = d[bad];
  }
  if (bad < 0)
    return Status();
  std::string index;
  int64_t rest = bad;
  for (size_t d = t.shape.size(); d-- > 0;) {
    int64_t extent = t.shape[d];
    index = std::to_string(rest % extent) + (index.empty() ? "" : ", ") + index;
    rest /= extent;
  }
  return invalidArg(format(
      "%s element %lld (index [%s]) is %s; non-finite values are rejected "
      "while input checks are on (turn them off with --no-check-groups or "
      "torsorModuleSetCheckGroups to pass them through)",
      label.c_str(), (long long)bad, index.c_str(),
      std::isnan(value) ? "NaN" : (value > 0 ? "+Inf" : "-Inf")));
}

} // namespace torsor::rt
