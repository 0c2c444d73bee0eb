//===- ManifestMatch.cpp - Manifest file vs. the model's own copy ---------===//
//
// Implements ManifestMatch.h. Fields that do not change how the model is
// called (model name, dtype label, left_invariant, specialized_to) may
// differ; everything else must be equal.
//
//===----------------------------------------------------------------------===//

#include "ManifestMatch.h"

#include "Binding.h"

namespace torsor::rt {

namespace {

/// "[L x 4 x 4]" or "[scalar]".
std::string shapeText(const TensorSpec &t) {
  return "[" + t.shapeString() + "]";
}

/// "group SE3" or "no group".
std::string groupText(const TensorSpec &t) {
  return t.group.empty() ? "no group" : "group " + t.group;
}

} // namespace

Status matchManifests(const Manifest &file, const Manifest &embedded,
                      const std::string &model) {
  std::string head =
      format("manifest '%s' does not match model '%s': ", file.path.c_str(),
             model.c_str());
  const char *tail = " (the manifest was edited or belongs to another build; "
                     "recompile the model with torsorc)";
  auto differ = [&](const std::string &what, const std::string &inFile,
                    const std::string &inModel) {
    return Status(TORSOR_ABI_ERROR, head + what + " is " + inFile +
                                        " in the manifest but " + inModel +
                                        " in the model" + tail);
  };
  if (file.abi != embedded.abi)
    return differ("the ABI version", std::to_string(file.abi),
                  std::to_string(embedded.abi));
  if (file.target != embedded.target)
    return differ("the target", "'" + file.target + "'",
                  "'" + embedded.target + "'");
  if (file.gpuArch != embedded.gpuArch)
    return differ("the GPU arch", "'" + file.gpuArch + "'",
                  "'" + embedded.gpuArch + "'");
  if (file.compute != embedded.compute)
    return differ("the compute precision", "'" + file.compute + "'",
                  "'" + embedded.compute + "'");
  if (file.amx != embedded.amx)
    return differ("the use of AMX tiles", file.amx ? "on" : "off",
                  embedded.amx ? "on" : "off");
  if (file.entry != embedded.entry)
    return differ("the entry point", "'" + file.entry + "'",
                  "'" + embedded.entry + "'");
  if (file.prepareEntry != embedded.prepareEntry ||
      file.prepareBytes != embedded.prepareBytes)
    return differ("the params' prepare entry",
                  "'" + file.prepareEntry + "' (" +
                      std::to_string(file.prepareBytes) + " bytes)",
                  "'" + embedded.prepareEntry + "' (" +
                      std::to_string(embedded.prepareBytes) + " bytes)");
  if (file.groupResidual != embedded.groupResidual)
    return differ("the group-residual entry", "'" + file.groupResidual + "'",
                  "'" + embedded.groupResidual + "'");
  for (int kind : {TORSOR_INPUT, TORSOR_PARAM, TORSOR_OUTPUT}) {
    const std::vector<TensorSpec> &a = file.list(kind),
                                  &b = embedded.list(kind);
    std::string plural = std::string(kindWord(kind)) + "s";
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      std::string what = format("%s #%zu", kindWord(kind), i);
      if (a[i].name != b[i].name)
        return differ(what, "'" + a[i].name + "'", "'" + b[i].name + "'");
      what = format("%s '%s'", kindWord(kind), a[i].name.c_str());
      if (a[i].dtype != b[i].dtype)
        return differ(what + "'s dtype", dtypeName(a[i].dtype),
                      dtypeName(b[i].dtype));
      if (a[i].shapeString() != b[i].shapeString())
        return differ(what + "'s shape", shapeText(a[i]), shapeText(b[i]));
      if (a[i].group != b[i].group || a[i].groupN != b[i].groupN)
        return differ(what + "'s group", groupText(a[i]), groupText(b[i]));
      if (a[i].residual != b[i].residual)
        return differ(what + "'s residual check", a[i].residual ? "on" : "off",
                      b[i].residual ? "on" : "off");
      if (a[i].residualConditioned != b[i].residualConditioned)
        return differ(what + "'s residual tolerance",
                      a[i].residualConditioned ? "conditioned" : "fixed",
                      b[i].residualConditioned ? "conditioned" : "fixed");
    }
    if (a.size() != b.size())
      return differ("the number of " + plural, std::to_string(a.size()),
                    std::to_string(b.size()));
  }
  return Status();
}

} // namespace torsor::rt
