//===- SafeTensors.h - .safetensors reader and writer ---------*- C++ -*-===//
//
// Weight bundles: an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}, ...,
// optional "__metadata__"}), then the data. Only F32/F64/I64 are accepted and
// every offset is validated against the file size before any data is read.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_SAFETENSORS_H
#define TORSOR_RUNTIME_SAFETENSORS_H

#include "Support.h"

#include <string>
#include <utility>
#include <vector>

namespace torsor::rt {

/// Named tensors in file (header) order.
using TensorBundle = std::vector<std::pair<std::string, HostTensor>>;

/// The largest JSON header accepted. The format allows 100 MB; a parsed
/// JSON value takes up to ~60x its text, so 16 MiB bounds the parse at about
/// 1 GB even for a hostile header, and still fits ~100k tensors.
constexpr uint64_t kMaxSafeTensorsHeader = 16ull << 20;

/// Parses .safetensors contents `bytes`; `path` labels error messages.
Status parseSafeTensors(const std::string &bytes, const std::string &path,
                        TensorBundle &out);
/// Reads the .safetensors file at `path`.
Status readSafeTensors(const std::string &path, TensorBundle &out);
/// Serializes `bundle` (names must be unique; data packed in bundle order).
std::string serializeSafeTensors(const TensorBundle &bundle);
/// Writes `bundle` to `path`.
Status writeSafeTensors(const std::string &path, const TensorBundle &bundle);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_SAFETENSORS_H
