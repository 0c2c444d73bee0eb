//===- Manifest.cpp - Compiled-model manifest (OUT.json) ------------------===//
//
// Schema validation of the manifest. Unknown keys are ignored so newer
// compilers can add fields, but every known field is type-checked, every
// symbolic dim must be declared in "dims", names must be unique across all
// three lists, and a group tensor's trailing dims must be its n x n matrix.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "GroupCheck.h"
#include "Json.h"
#include "Npy.h"

#include <set>

namespace torsor::rt {

std::string TensorSpec::shapeString() const {
  if (shape.empty())
    return "scalar";
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    out += i ? " x " : "";
    out += shape[i].isSymbolic() ? shape[i].symbol
                                 : std::to_string(shape[i].extent);
  }
  return out;
}

namespace {

/// Schema checker with the file path for messages.
class Reader {
public:
  /// Checks a manifest read from `path`.
  explicit Reader(const std::string &path) : path(path) {}

  /// An error at value `v` about field `field`.
  Status error(const json::Value &v, const std::string &field,
               const std::string &what) const {
    return ioError(path + ":" + v.where() + ": " + field + ": " + what);
  }

  /// Fetches required member `key` of `obj` of kind `kind`.
  Status require(const json::Value &obj, const std::string &prefix,
                 const std::string &key, json::Value::Kind kind,
                 const json::Value *&out) const {
    out = obj.get(key);
    std::string field = prefix + key;
    if (!out)
      return ioError(path + ":" + obj.where() + ": missing field '" + field +
                     "'");
    if (out->kind != kind)
      return error(*out, field,
                   std::string("expected ") + json::Value::kindName(kind) +
                       ", got " + json::Value::kindName(out->kind));
    return Status();
  }

  /// Reads one tensor entry `v` (at `field`, e.g. "inputs[1]").
  Status tensor(const json::Value &v, const std::string &field,
                const std::set<std::string> &dims, TensorSpec &out) const {
    if (v.kind != json::Value::Object)
      return error(v, field, "expected an object");
    const json::Value *name, *dtype, *shape;
    Status s = require(v, field + ".", "name", json::Value::String, name);
    if (s.ok())
      s = require(v, field + ".", "dtype", json::Value::String, dtype);
    if (s.ok())
      s = require(v, field + ".", "shape", json::Value::Array, shape);
    if (!s.ok())
      return s;
    out.name = name->string;
    if (out.name.empty())
      return error(*name, field + ".name", "must not be empty");
    if (!parseDType(dtype->string, out.dtype))
      return error(*dtype, field + ".dtype",
                   "unknown dtype '" + dtype->string +
                       "'; expected f32, f64 or i64");
    for (size_t i = 0; i < shape->elements.size(); ++i) {
      const json::Value &d = shape->elements[i];
      std::string dfield = format("%s.shape[%zu]", field.c_str(), i);
      DimSpec dim;
      if (d.kind == json::Value::String) {
        if (!dims.count(d.string))
          return error(d, dfield,
                       "symbolic dim '" + d.string +
                           "' is not declared in \"dims\"");
        dim.symbol = d.string;
      } else if (d.kind == json::Value::Number && d.isInteger &&
                 d.integer >= 0) {
        dim.extent = d.integer;
      } else {
        return error(d, dfield,
                     "expected a non-negative integer or a symbolic dim "
                     "name");
      }
      out.shape.push_back(dim);
    }
    return group(v, field, out);
  }

  /// Reads the optional group annotation and checks the matrix dims.
  Status group(const json::Value &v, const std::string &field,
               TensorSpec &out) const {
    const json::Value *g = v.get("group");
    const json::Value *li = v.get("left_invariant");
    const json::Value *gn = v.get("group_n");
    if (li && li->kind != json::Value::Bool)
      return error(*li, field + ".left_invariant", "expected a boolean");
    out.leftInvariant = li && li->boolean;
    const json::Value *res = v.get("residual");
    if (res && res->kind != json::Value::Bool)
      return error(*res, field + ".residual", "expected a boolean");
    out.residual = res && res->boolean;
    const json::Value *cond = v.get("residual_conditioned");
    if (cond && cond->kind != json::Value::Bool)
      return error(*cond, field + ".residual_conditioned",
                   "expected a boolean");
    out.residualConditioned = cond && cond->boolean;
    if (!g)
      return Status();
    if (g->kind != json::Value::String || g->string.empty())
      return error(*g, field + ".group", "expected a group name");
    out.group = g->string;
    out.groupN = builtinGroupMatrixSize(out.group);
    if (gn) {
      if (gn->kind != json::Value::Number || !gn->isInteger || gn->integer < 1)
        return error(*gn, field + ".group_n", "expected a positive integer");
      if (out.groupN && gn->integer != out.groupN)
        return error(*gn, field + ".group_n",
                     format("built-in group %s is %dx%d, got %lld",
                            out.group.c_str(), out.groupN, out.groupN,
                            (long long)gn->integer));
      out.groupN = static_cast<int>(gn->integer);
    }
    if (!out.groupN)
      return error(*g, field + ".group",
                   "user group '" + out.group +
                       "' needs \"group_n\" (its matrix size)");
    size_t r = out.shape.size();
    auto fixedN = [&](size_t i) {
      return !out.shape[i].isSymbolic() && out.shape[i].extent == out.groupN;
    };
    if (r < 2 || !fixedN(r - 1) || !fixedN(r - 2))
      return error(v, field + ".shape",
                   format("group %s elements are %dx%d matrices, but the "
                          "shape is %s",
                          out.group.c_str(), out.groupN, out.groupN,
                          out.shapeString().c_str()));
    return Status();
  }

  /// Reads the required tensor list `key` of the manifest.
  Status tensorList(const json::Value &root, const std::string &key,
                    const std::set<std::string> &dims,
                    std::vector<TensorSpec> &out) const {
    const json::Value *list;
    Status s = require(root, "", key, json::Value::Array, list);
    if (!s.ok())
      return s;
    for (size_t i = 0; i < list->elements.size(); ++i) {
      out.emplace_back();
      s = tensor(list->elements[i], format("%s[%zu]", key.c_str(), i), dims,
                 out.back());
      if (!s.ok())
        return s;
    }
    return Status();
  }

private:
  const std::string &path;
};

} // namespace

Status parseManifest(const std::string &text, const std::string &path,
                     Manifest &out) {
  out = Manifest();
  out.path = path;
  json::Value root;
  Status s = json::parse(text, root);
  if (!s.ok())
    return s.withPrefix(path + ":");
  Reader r(path);
  if (root.kind != json::Value::Object)
    return r.error(root, "manifest", "expected a JSON object");
  const json::Value *model, *target, *abi, *dims;
  s = r.require(root, "", "model", json::Value::String, model);
  if (s.ok())
    s = r.require(root, "", "target", json::Value::String, target);
  if (s.ok())
    s = r.require(root, "", "abi", json::Value::Number, abi);
  if (s.ok())
    s = r.require(root, "", "dims", json::Value::Array, dims);
  if (!s.ok())
    return s;
  out.model = model->string;
  out.target = target->string;
  if (!abi->isInteger)
    return r.error(*abi, "abi", "expected an integer");
  out.abi = abi->integer;
  if (out.abi < TORSOR_ABI_VERSION_MIN || out.abi > TORSOR_ABI_VERSION)
    return r.error(*abi, "abi",
                   format("manifest is for ABI version %lld, this runtime "
                          "supports versions %d to %d",
                          (long long)out.abi, TORSOR_ABI_VERSION_MIN,
                          TORSOR_ABI_VERSION));
  if (const json::Value *arch = root.get("gpu_arch")) {
    if (arch->kind != json::Value::String || arch->string.empty())
      return r.error(*arch, "gpu_arch", "expected an arch like \"sm_90\"");
    out.gpuArch = arch->string;
  }
  if (const json::Value *compute = root.get("compute")) {
    if (compute->kind != json::Value::String ||
        (compute->string != "f32" && compute->string != "bf16"))
      return r.error(*compute, "compute", "expected \"f32\" or \"bf16\"");
    out.compute = compute->string;
  }
  if (const json::Value *amx = root.get("amx")) {
    if (amx->kind != json::Value::Bool)
      return r.error(*amx, "amx", "expected true or false");
    out.amx = amx->boolean;
  }
  out.entry = "torsor_forward";
  if (const json::Value *entry = root.get("entry")) {
    if (entry->kind != json::Value::String || entry->string.empty())
      return r.error(*entry, "entry", "expected a symbol name");
    out.entry = entry->string;
  }
  if (const json::Value *res = root.get("group_residual")) {
    if (res->kind != json::Value::String || res->string.empty())
      return r.error(*res, "group_residual", "expected a symbol name");
    out.groupResidual = res->string;
  }
  if (const json::Value *dtype = root.get("dtype")) {
    if (dtype->kind != json::Value::String)
      return r.error(*dtype, "dtype", "expected a string");
    out.dtype = dtype->string;
  }
  std::set<std::string> dimSet;
  for (size_t i = 0; i < dims->elements.size(); ++i) {
    const json::Value &d = dims->elements[i];
    if (d.kind != json::Value::String || d.string.empty())
      return r.error(d, format("dims[%zu]", i), "expected a dim name");
    if (!dimSet.insert(d.string).second)
      return r.error(d, format("dims[%zu]", i),
                     "duplicate dim '" + d.string + "'");
    out.dims.push_back(d.string);
  }
  s = r.tensorList(root, "inputs", dimSet, out.inputs);
  if (s.ok())
    s = r.tensorList(root, "params", dimSet, out.params);
  if (s.ok())
    s = r.tensorList(root, "outputs", dimSet, out.outputs);
  if (!s.ok())
    return s;
  if (const json::Value *bw = root.get("backward")) {
    const json::Value *entry;
    if (bw->kind != json::Value::Object)
      return r.error(*bw, "backward", "expected an object");
    s = r.require(*bw, "backward.", "entry", json::Value::String, entry);
    if (s.ok())
      s = r.tensorList(*bw, "cotangents", dimSet, out.cotangents);
    if (s.ok())
      s = r.tensorList(*bw, "gradients", dimSet, out.gradients);
    if (!s.ok())
      return s;
    if (out.cotangents.size() != out.outputs.size())
      return r.error(*bw, "backward.cotangents", "expected one per output");
    out.backwardEntry = entry->string;
  }
  if (const json::Value *prep = root.get("prepare")) {
    const json::Value *entry, *bytes;
    if (prep->kind != json::Value::Object)
      return r.error(*prep, "prepare", "expected an object");
    s = r.require(*prep, "prepare.", "entry", json::Value::String, entry);
    if (s.ok())
      s = r.require(*prep, "prepare.", "bytes", json::Value::Number, bytes);
    if (!s.ok())
      return s;
    // Packed params are the size of the params: 1 TiB bounds a hostile
    // manifest's allocation.
    if (entry->string.empty())
      return r.error(*entry, "prepare.entry", "expected a symbol name");
    if (!bytes->isInteger || bytes->integer < 0 || bytes->integer > (1ll << 40))
      return r.error(*bytes, "prepare.bytes",
                     "expected a byte count from 0 to 2^40");
    out.prepareEntry = entry->string;
    out.prepareBytes = bytes->integer;
  }
  std::set<std::string> names;
  for (int kind : {TORSOR_INPUT, TORSOR_PARAM, TORSOR_OUTPUT})
    for (const TensorSpec &t : out.list(kind))
      if (!names.insert(t.name).second)
        return ioError(path + ": tensor name '" + t.name +
                       "' is declared more than once");
  return Status();
}

Status readManifest(const std::string &path, Manifest &out) {
  std::string text;
  // A manifest is a few KB; 16 MiB bounds what a hostile one can cost.
  Status s = readFile(path, text, 16ull << 20);
  if (!s.ok())
    return s;
  return parseManifest(text, path, out);
}

} // namespace torsor::rt
