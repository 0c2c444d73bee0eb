//===- Half.cpp - f16 and bf16 storage, widened on load -------------------===//
//
// Bit-level decoding, so the runtime needs no compiler support for
// _Float16 or __bf16 (C++17 and the OS only).
//
//===----------------------------------------------------------------------===//

#include "Half.h"

#include <cstring>

namespace torsor::rt {

namespace {
/// The float whose bits are `bits`.
float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
} // namespace

float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) // inf or NaN (payload kept)
    return fromBits(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) // normal: rebias 15 -> 127
    return fromBits(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0)
    return fromBits(sign);
  // Subnormal: mant · 2^-24, exact in f32.
  float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
  return sign ? -v : v;
}

float bf16ToFloat(uint16_t b) {
  return fromBits(static_cast<uint32_t>(b) << 16);
}

void widenHalf(const unsigned char *bytes, HalfFormat format, HostTensor &out) {
  float *dst = static_cast<float *>(out.data());
  for (int64_t i = 0; i < out.numel(); ++i) {
    uint16_t bits = static_cast<uint16_t>(bytes[2 * i] | bytes[2 * i + 1] << 8);
    dst[i] = format == HalfFormat::F16 ? f16ToFloat(bits) : bf16ToFloat(bits);
  }
  out.setWidenedFromHalf(true);
}

Status widenForModel(HostTensor &t, int32_t dtype) {
  if (!t.widenedFromHalf() || t.dtype() != TORSOR_DTYPE_F32 ||
      dtype != TORSOR_DTYPE_F64)
    return Status();
  HostTensor wide;
  Status s = HostTensor::create(TORSOR_DTYPE_F64, t.shape(), wide);
  if (!s.ok())
    return s;
  const float *src = static_cast<const float *>(t.data());
  double *dst = static_cast<double *>(wide.data());
  for (int64_t i = 0; i < t.numel(); ++i)
    dst[i] = src[i];
  wide.setWidenedFromHalf(true);
  t = std::move(wide);
  return Status();
}

Status convertFloatForModel(HostTensor &t, int32_t dtype, bool &rounded) {
  rounded = false;
  Status s = widenForModel(t, dtype);
  bool f32ToF64 = t.dtype() == TORSOR_DTYPE_F32 && dtype == TORSOR_DTYPE_F64;
  bool f64ToF32 = t.dtype() == TORSOR_DTYPE_F64 && dtype == TORSOR_DTYPE_F32;
  if (!s.ok() || !(f32ToF64 || f64ToF32))
    return s;
  HostTensor converted;
  if (!(s = HostTensor::create(dtype, t.shape(), converted)).ok())
    return s;
  if (f32ToF64) {
    const float *src = static_cast<const float *>(t.data());
    double *dst = static_cast<double *>(converted.data());
    for (int64_t i = 0; i < t.numel(); ++i)
      dst[i] = src[i];
  } else {
    const double *src = static_cast<const double *>(t.data());
    float *dst = static_cast<float *>(converted.data());
    for (int64_t i = 0; i < t.numel(); ++i)
      dst[i] = static_cast<float>(src[i]);
    rounded = true;
  }
  converted.setWidenedFromHalf(t.widenedFromHalf());
  t = std::move(converted);
  return Status();
}

} // namespace torsor::rt
