//===- safetensors.cpp - libFuzzer target: the .safetensors reader --------===//
//
// Feeds arbitrary bytes to parseSafeTensors (the --weights reader, which
// includes the strict JSON parser). Accepted bundles must tile their data
// exactly, so the sum of their byte sizes can never exceed the input; they
// are written back and re-read, which must round-trip.
//
//===----------------------------------------------------------------------===//

#include "SafeTensors.h"

#include <cstdlib>

using namespace torsor::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  TensorBundle bundle;
  Status s = parseSafeTensors(bytes, "fuzz.safetensors", bundle);
  if (!s.ok()) {
    if (s.message.empty())
      std::abort();
    return 0;
  }
  uint64_t total = 0;
  bool half = false;
  for (const auto &entry : bundle) {
    total += entry.second.byteSize();
    half |= entry.second.widenedFromHalf();
  }
  // f16/bf16 data doubles in size when widened to f32.
  if (total > 2 * static_cast<uint64_t>(size))
    std::abort();
  if (!half) {
    TensorBundle back;
    if (!parseSafeTensors(serializeSafeTensors(bundle), "again", back).ok() ||
        back.size() != bundle.size())
      std::abort();
  }
  return 0;
}
