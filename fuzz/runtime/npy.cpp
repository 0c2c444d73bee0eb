//===- npy.cpp - libFuzzer target: the .npy reader ------------------------===//
//
// Feeds arbitrary bytes to parseNpy (the reader behind every --input and
// --param file). Any input must give either a tensor whose size matches its
// header or an error status; a crash, hang, leak or sanitizer report is a
// bug. Accepted tensors are written back and re-read, which must round-trip.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cstdlib>
#include <cstring>

using namespace torsor::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  HostTensor t;
  Status s = parseNpy(bytes, "fuzz.npy", t);
  if (!s.ok()) {
    if (s.message.empty())
      std::abort(); // every error says what is wrong
    return 0;
  }
  if (numElements(t.shape()) != t.numel())
    std::abort();
  // What we write, we must read back identically.
  std::string again = serializeNpy(t);
  HostTensor back;
  if (!parseNpy(again, "again.npy", back).ok() || back.shape() != t.shape() ||
      back.dtype() != t.dtype() ||
      std::memcmp(back.data(), t.data(), t.byteSize()) != 0)
    std::abort();
  return 0;
}
