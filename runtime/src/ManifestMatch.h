//===- ManifestMatch.h - Manifest file vs. the model's own copy -*- C++ -*-===//
//
// torsorc embeds the manifest in the model library too, behind the exported
// `const char *torsor_model_manifest(void)`. The runtime reads OUT.json and
// the embedded copy and requires them to agree on everything the calling
// convention depends on: entry symbols, and every tensor's kind, order,
// name, dtype, shape and group. A manifest edited by hand or taken from
// another build is then an error naming the first difference, instead of a
// crash inside the model (a wrong extent or a dropped tensor shifts every
// descriptor the model reads).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_MANIFESTMATCH_H
#define TORSOR_RUNTIME_MANIFESTMATCH_H

#include "Manifest.h"

namespace torsor::rt {

/// Compares `file` (OUT.json) with `embedded` (the library's copy); the
/// error names the first difference. `model` names the library.
Status matchManifests(const Manifest &file, const Manifest &embedded,
                      const std::string &model);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_MANIFESTMATCH_H
