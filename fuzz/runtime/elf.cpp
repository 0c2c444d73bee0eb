//===- elf.cpp - libFuzzer target: the model-file check before dlopen -----===//
//
// Feeds arbitrary bytes to checkElfBytes, the header check that stands
// between a (possibly truncated or forged) model file and dlopen. It must
// answer every input with ok or an error, reading only inside the bytes.
//
//===----------------------------------------------------------------------===//

#include "ElfCheck.h"

#include <cstdlib>

using namespace torsor::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Status s = checkElfBytes(data, size, "model 'fuzz.so'");
  if (!s.ok() && s.message.compare(0, 15, "model 'fuzz.so'") != 0)
    std::abort();
  return 0;
}
