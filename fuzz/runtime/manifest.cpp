//===- manifest.cpp - libFuzzer target: the manifest reader ---------------===//
//
// Feeds arbitrary bytes to parseManifest (OUT.json next to every model),
// then compares the result with itself as the runtime compares a manifest
// with the model's embedded copy. Every error must name the file.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"
#include "ManifestMatch.h"

#include <cstdlib>

using namespace torsor::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  Manifest m;
  Status s = parseManifest(text, "fuzz.json", m);
  if (!s.ok()) {
    if (s.message.compare(0, 9, "fuzz.json") != 0)
      std::abort(); // errors are located in the file
    return 0;
  }
  if (!matchManifests(m, m, "fuzz.so").ok())
    std::abort();
  for (int kind : {TORSOR_INPUT, TORSOR_PARAM, TORSOR_OUTPUT})
    for (const TensorSpec &t : m.list(kind))
      (void)t.shapeString();
  return 0;
}
