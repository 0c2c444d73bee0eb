//===- Half.h - f16 and bf16 storage, widened on load -----------*- C++ -*-===//
//
// Weights are often stored in half precision: IEEE binary16 (`<f2` in
// .npy, F16 in .safetensors) or bfloat16 (BF16 in .safetensors). Models
// compute in f32 or f64, so the readers widen half-precision data to f32
// when they load it (exactly: every f16 and bf16 value is an f32 value),
// and binding widens it once more to f64 for an f64 model. There is no
// compute in half precision. The hosts' dtype policy (torsor-run, the
// Python package, torsorModuleLoadWeightsConverting) also converts between
// f32 and f64 storage: exactly one way, rounding (and saying so) the other.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_HALF_H
#define TORSOR_RUNTIME_HALF_H

#include "Support.h"

#include <cstdint>

namespace torsor::rt {

/// The two half-precision storage formats.
enum class HalfFormat { F16, BF16 };

/// The f32 value of IEEE binary16 bits `h` (subnormals, inf, NaN exact).
float f16ToFloat(uint16_t h);
/// The f32 value of bfloat16 bits `b` (the top half of an f32).
float bf16ToFloat(uint16_t b);

/// Fills the f32 tensor `out` (already created, `out.numel()` elements)
/// from little-endian half-precision `bytes`.
void widenHalf(const unsigned char *bytes, HalfFormat format, HostTensor &out);

/// If `t` holds f32 data widened from half precision and `dtype` is f64,
/// replaces it with its f64 copy (exact); otherwise leaves it alone.
Status widenForModel(HostTensor &t, int32_t dtype);

/// The dtype policy for float data (docs/runtime.md, "dtypes"): converts
/// f32 or f64 `t` (half-precision storage included) to the model's float
/// `dtype`: f32 -> f64 exactly, f64 -> f32 rounded to nearest, which sets
/// `rounded`. Any other combination is left alone, so binding reports the
/// mismatch (integers and floats are never converted).
Status convertFloatForModel(HostTensor &t, int32_t dtype, bool &rounded);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_HALF_H
