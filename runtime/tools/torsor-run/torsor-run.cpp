//===- torsor-run.cpp - Run a compiled Torsor model -----------------------===//
//
// Command-line front end of the runtime (docs/runtime.md): loads OUT.so,
// binds inputs from .npy files and params from a .safetensors bundle, runs
// (optionally timed), and writes outputs as .npy or prints a summary. Every
// failure prints "torsor-run: error: <message>" and exits with status 1.
//
//===----------------------------------------------------------------------===//

#include "torsor/runtime.h"

#include "Binding.h"
#include "Half.h"
#include "Manifest.h"
#include "Npy.h"
#include "Options.h"
#include "StagedFiles.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

using namespace torsor;
using rt::format;
using rt::HostTensor;
using rt::Status;

namespace {

/// Prints the error and returns the exit code.
int fail(const std::string &message) {
  std::fprintf(stderr, "torsor-run: error: %s\n", message.c_str());
  return 1;
}

/// Owns a C status; converts it to the C++ form.
Status take(TorsorStatus *s) {
  Status out;
  if (s)
    out = Status(torsorStatusCode(s), torsorStatusMessage(s));
  torsorStatusFree(s);
  return out;
}

/// Deletes a module on scope exit.
struct ModuleDeleter {
  void operator()(TorsorModule *m) const { torsorModuleFree(m); }
};

/// Element `i` of a C tensor view as a double.
double element(const TorsorTensor &t, int64_t i) {
  switch (t.dtype) {
  case TORSOR_DTYPE_F32:
    return static_cast<const float *>(t.data)[i];
  case TORSOR_DTYPE_F64:
    return static_cast<const double *>(t.data)[i];
  default:
    return static_cast<double>(static_cast<const int64_t *>(t.data)[i]);
  }
}

/// Prints "name: f32 [10 x 64] min .. max .. mean .. first [..]".
void printSummary(const char *name, const TorsorTensor &t) {
  std::vector<int64_t> shape(t.shape, t.shape + t.rank);
  int64_t n = rt::numElements(shape);
  std::printf("%s: %s [%s]", name, torsorDTypeName(t.dtype),
              rt::shapeToString(shape).c_str());
  if (n <= 0) {
    std::printf(" (empty)\n");
    return;
  }
  double lo = element(t, 0), hi = lo, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = element(t, i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::printf(" min %.6g max %.6g mean %.6g first [", lo, hi, sum / n);
  int64_t shown = std::min<int64_t>(n, 6);
  for (int64_t i = 0; i < shown; ++i)
    std::printf("%s%.6g", i ? ", " : "", element(t, i));
  std::printf("%s]\n", n > shown ? ", ..." : "");
}

/// Names of the model's tensors of `kind`.
std::vector<rt::TensorSpec> tensorNames(const TorsorModule *m,
                                        TorsorTensorKind kind) {
  std::vector<rt::TensorSpec> specs(torsorModuleNumTensors(m, kind));
  for (size_t i = 0; i < specs.size(); ++i)
    specs[i].name = torsorModuleTensorName(m, kind, static_cast<int32_t>(i));
  return specs;
}

/// Checks that the model has a tensor `name` of `kind`; the message lists
/// the names it does have ("unknown input 'posee'; model inputs are: ...")
/// or says where a param given as an input (or the reverse) belongs.
Status checkName(const TorsorModule *m, TorsorTensorKind kind,
                 const std::string &name) {
  size_t index;
  Status s = rt::findTensor(tensorNames(m, kind), kind, name, index);
  if (s.ok() || kind == TORSOR_OUTPUT)
    return s;
  TorsorTensorKind other = kind == TORSOR_INPUT ? TORSOR_PARAM : TORSOR_INPUT;
  if (!rt::findTensor(tensorNames(m, other), other, name, index).ok())
    return s;
  if (kind == TORSOR_INPUT)
    return rt::invalidArg("'" + name +
                          "' is a param, not an input: bind it with "
                          "--weights W.safetensors or --param " +
                          name + "=FILE.npy");
  return rt::invalidArg("'" + name +
                        "' is an input, not a param: bind it "
                        "with --input " +
                        name + "=FILE.npy");
}

/// Prints a warning line on stderr (the run goes on).
void warn(const std::string &message) {
  std::fprintf(stderr, "torsor-run: warning: %s\n", message.c_str());
}

/// The dtype policy (docs/runtime.md, "dtypes"), shared with the Python
/// package: float data from `file` of the other float type is converted to
/// the dtype of tensor `label` (f16/bf16 and f32 -> f64 exactly, silently;
/// f64 -> f32 rounded, with a warning). Integers and floats never mix: the
/// binding reports that mismatch.
Status convertForModel(int32_t dtype, const std::string &label,
                       const std::string &file, HostTensor &t) {
  int32_t from = t.dtype();
  bool rounded = false;
  Status s = rt::convertFloatForModel(t, dtype, rounded);
  if (s.ok() && rounded)
    warn(label + ": converting " + torsorDTypeName(from) +
         " to the model's dtype " + torsorDTypeName(dtype) +
         " (rounded to nearest; from '" + file + "')");
  return s;
}

/// convertForModel for tensor `name` of `kind` (input or param).
Status convertForTensor(const TorsorModule *m, TorsorTensorKind kind,
                        const std::string &name, const std::string &file,
                        HostTensor &t) {
  for (int32_t i = 0; i < torsorModuleNumTensors(m, kind); ++i)
    if (name == torsorModuleTensorName(m, kind, i))
      return convertForModel(
          torsorModuleTensorDType(m, kind, i),
          std::string(kind == TORSOR_INPUT ? "input '" : "param '") + name +
              "'",
          file, t);
  return Status();
}

/// The note of torsorModuleLoadWeightsConverting: one warning per rounding.
void warnNote(const char *message, void *) { warn(message); }

/// True when `path` ends in `suffix`.
bool endsWith(const std::string &path, const char *suffix) {
  size_t n = std::strlen(suffix);
  return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
}

/// Checks `--device` against the target in the model's manifest: an nvptx
/// model needs --device cuda (and a CPU model the CPU), with the fix in the
/// message. An unreadable manifest is left to torsorModuleLoad to report.
Status checkDevice(const std::string &model, const std::string &device) {
  std::string json = model;
  if (endsWith(json, ".so"))
    json.erase(json.size() - 3);
  rt::Manifest manifest;
  if (!rt::readManifest(json + ".json", manifest).ok())
    return Status();
  const std::string &target = manifest.target;
  if (target == "nvptx" && device != "cuda")
    return rt::invalidArg(
        "model '" + model + "' was compiled for the GPU (target nvptx" +
        (manifest.gpuArch.empty() ? "" : ", " + manifest.gpuArch) +
        "); run it with --device cuda, or compile the model with "
        "torsorc --target=cpu to run it on the CPU");
  if (target == "cpu" && device == "cuda")
    return rt::invalidArg("model '" + model +
                          "' was compiled for the CPU (target cpu); run it "
                          "without --device cuda, or compile the model with "
                          "torsorc --target=nvptx to run it on the GPU");
  return Status();
}

/// Runs once and returns the wall time in milliseconds.
Status timedRun(TorsorModule *m, double &ms) {
  auto t0 = std::chrono::steady_clock::now();
  Status s = take(torsorModuleRun(m));
  auto t1 = std::chrono::steady_clock::now();
  ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  return s;
}

/// --cotangent and --gradient: the model has a backward entry, every
/// output has exactly one cotangent, and every gradient name exists.
Status checkBackwardOptions(const TorsorModule *m, const run::Options &opts) {
  if (opts.cotangents.empty())
    return Status();
  if (!torsorModuleHasBackward(m))
    return rt::invalidArg("--cotangent runs the backward entry, which this "
                          "model does not have; compile it with torsorc "
                          "--grad");
  Status s;
  for (const auto &[name, file] : opts.cotangents)
    if (!(s = checkName(m, TORSOR_OUTPUT, name)).ok())
      return s.withPrefix("--cotangent: ");
  std::string missing;
  for (int32_t i = 0; i < torsorModuleNumTensors(m, TORSOR_OUTPUT); ++i) {
    std::string name = torsorModuleTensorName(m, TORSOR_OUTPUT, i);
    bool given = false;
    for (const auto &p : opts.cotangents)
      given |= p.first == name;
    if (!given)
      missing += (missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty())
    return rt::invalidArg("the backward run needs a cotangent for every "
                          "output; missing: " +
                          missing + " (--cotangent NAME=FILE.npy)");
  std::vector<rt::TensorSpec> grads(torsorModuleNumGradients(m));
  std::string known;
  for (size_t i = 0; i < grads.size(); ++i) {
    grads[i].name = torsorModuleGradientName(m, static_cast<int32_t>(i));
    known += (i ? ", " : "") + grads[i].name;
  }
  for (const auto &[name, file] : opts.gradients) {
    bool found = false;
    for (const rt::TensorSpec &g : grads)
      found |= g.name == name;
    if (!found)
      return rt::invalidArg("--gradient: the model has no gradient '" + name +
                            "'; its gradients are " + known);
  }
  return Status();
}

/// Reads the cotangents (in output order) and runs the backward entry.
Status runBackward(TorsorModule *m, const run::Options &opts) {
  int32_t numOut = torsorModuleNumTensors(m, TORSOR_OUTPUT);
  std::vector<HostTensor> cots(numOut);
  std::vector<std::vector<int64_t>> strides(numOut);
  std::vector<TorsorTensor> views(numOut);
  for (int32_t i = 0; i < numOut; ++i) {
    std::string name = torsorModuleTensorName(m, TORSOR_OUTPUT, i);
    for (const auto &[given, file] : opts.cotangents) {
      if (given != name)
        continue;
      Status s = rt::readNpy(file, cots[i]);
      if (s.ok())
        s = convertForModel(torsorModuleTensorDType(m, TORSOR_OUTPUT, i),
                            "cotangent '" + name + "'", file, cots[i]);
      if (!s.ok())
        return s.withPrefix("--cotangent " + name + ": ");
      strides[i] = cots[i].strides();
      views[i] = cots[i].view(strides[i]);
    }
  }
  return take(torsorModuleRunBackward(m, views.data(), numOut));
}

/// Everything after option parsing; returns the exit code.
int runTool(const run::Options &opts) {
  Status s = take(torsorSetNumThreads(opts.threads));
  if (!s.ok())
    return fail(s.message);
  // Every destination is resolved before anything runs: two outputs that
  // would land in one file, a directory or a block device are refused up
  // front, not after a long run (StagedFiles.h).
  {
    std::vector<std::string> labels, paths;
    for (const auto &[name, file] : opts.outputs) {
      labels.push_back("--output " + name);
      paths.push_back(file);
    }
    for (const auto &[name, file] : opts.gradients) {
      labels.push_back("--gradient " + name);
      paths.push_back(file);
    }
    if (!(s = rt::checkDestinations(labels, paths)).ok())
      return fail(s.message);
  }
  // A model source is the most common first mistake: say what to run.
  if (endsWith(opts.model, ".tsr") || endsWith(opts.model, ".mlir")) {
    std::string so = opts.model.substr(0, opts.model.rfind('.')) + ".so";
    return fail("'" + opts.model +
                "' is a model source; compile it first: " + "torsorc " +
                opts.model + " -o " + so + ", then run " + "torsor-run " + so);
  }
  // The device must match the model's target; say which flag or target is
  // needed before loading (loading an nvptx model opens the GPU).
  if (!(s = checkDevice(opts.model, opts.device)).ok())
    return fail(s.message);
  TorsorModule *raw = nullptr;
  s = take(torsorModuleLoad(opts.model.c_str(), &raw));
  if (!s.ok())
    return fail(s.message);
  std::unique_ptr<TorsorModule, ModuleDeleter> module(raw);

  // Check every name before reading files or running, so a typo is
  // reported as such (and costs no run).
  for (const auto &[name, file] : opts.inputs)
    if (!(s = checkName(module.get(), TORSOR_INPUT, name)).ok())
      return fail(s.message);
  for (const auto &[name, file] : opts.params)
    if (!(s = checkName(module.get(), TORSOR_PARAM, name)).ok())
      return fail(s.message);
  for (const auto &[name, file] : opts.outputs)
    if (!(s = checkName(module.get(), TORSOR_OUTPUT, name)).ok())
      return fail(s.message);
  int32_t numOut = torsorModuleNumTensors(module.get(), TORSOR_OUTPUT);
  if (!(s = checkBackwardOptions(module.get(), opts)).ok())
    return fail(s.message);

  // Inputs stay alive until the runs are done (the runtime borrows them).
  std::vector<HostTensor> inputs(opts.inputs.size());
  std::vector<std::vector<int64_t>> strides(opts.inputs.size());
  for (size_t i = 0; i < opts.inputs.size(); ++i) {
    const auto &[name, file] = opts.inputs[i];
    s = rt::readNpy(file, inputs[i]);
    if (s.ok())
      s = convertForTensor(module.get(), TORSOR_INPUT, name, file, inputs[i]);
    if (!s.ok())
      return fail(s.message);
    strides[i] = inputs[i].strides();
    TorsorTensor view = inputs[i].view(strides[i]);
    s = take(torsorModuleBindInput(module.get(), name.c_str(), &view));
    if (!s.ok())
      return fail(s.message + " (from '" + file + "')");
  }
  if (!opts.weights.empty()) {
    s = take(torsorModuleLoadWeightsConverting(
        module.get(), opts.weights.c_str(), warnNote, nullptr));
    if (!s.ok())
      return fail(s.message);
  }
  // Single params after the bundle, so they override it.
  std::vector<HostTensor> params(opts.params.size());
  std::vector<std::vector<int64_t>> paramStrides(opts.params.size());
  for (size_t i = 0; i < opts.params.size(); ++i) {
    const auto &[name, file] = opts.params[i];
    s = rt::readNpy(file, params[i]);
    if (s.ok())
      s = convertForTensor(module.get(), TORSOR_PARAM, name, file, params[i]);
    if (!s.ok())
      return fail(s.message);
    paramStrides[i] = params[i].strides();
    TorsorTensor view = params[i].view(paramStrides[i]);
    s = take(torsorModuleBindParam(module.get(), name.c_str(), &view));
    if (!s.ok())
      return fail(s.message + " (from '" + file + "')");
  }
  torsorModuleSetCheckGroups(module.get(), opts.checkGroups, opts.groupTol);
  torsorModuleSetMemoryLimit(module.get(), opts.memoryLimit);
  torsorModuleSetBufferCache(module.get(), opts.bufferCache ? 1 : 0);

  double ms;
  s = timedRun(module.get(), ms);
  if (!s.ok()) {
    if (s.message.compare(0, 8, "missing ") == 0 &&
        s.message.find("param '") != std::string::npos)
      s.message += " (bind params with --weights W.safetensors or --param "
                   "NAME=FILE.npy)";
    return fail(s.message);
  }
  if (opts.timeRuns > 0) {
    std::vector<double> times;
    for (int r = 0; r < opts.timeRuns; ++r) {
      s = timedRun(module.get(), ms);
      if (!s.ok())
        return fail(s.message);
      times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    size_t k = times.size();
    double median =
        k % 2 ? times[k / 2] : (times[k / 2 - 1] + times[k / 2]) / 2;
    std::printf("time: median %.3f ms, min %.3f ms over %d runs (%d "
                "threads)\n",
                median, times.front(), opts.timeRuns, torsorGetNumThreads());
  }

  bool backward = !opts.cotangents.empty();
  if (backward && !(s = runBackward(module.get(), opts)).ok())
    return fail(s.message);

  if (opts.outputs.empty() && opts.gradients.empty()) {
    for (int32_t i = 0; i < numOut; ++i) {
      const char *name = torsorModuleTensorName(module.get(), TORSOR_OUTPUT, i);
      TorsorTensor t;
      s = take(torsorModuleGetOutput(module.get(), name, &t));
      if (!s.ok())
        return fail(s.message);
      printSummary(name, t);
    }
    for (int32_t i = 0; backward && i < torsorModuleNumGradients(module.get());
         ++i) {
      const char *name = torsorModuleGradientName(module.get(), i);
      TorsorTensor t;
      s = take(torsorModuleGetGradient(module.get(), name, &t));
      if (!s.ok())
        return fail(s.message);
      printSummary(name, t);
    }
    return 0;
  }
  // All files or none: each goes to a temporary beside its real target
  // (links resolved), and they are renamed into place once every one is
  // written; FIFOs and character devices are written in place last.
  rt::StagedFiles files;
  std::vector<std::pair<std::string, std::string>> written = opts.outputs;
  written.insert(written.end(), opts.gradients.begin(), opts.gradients.end());
  for (size_t k = 0; k < written.size(); ++k) {
    const auto &[name, file] = written[k];
    TorsorTensor t;
    s = take(k < opts.outputs.size()
                 ? torsorModuleGetOutput(module.get(), name.c_str(), &t)
                 : torsorModuleGetGradient(module.get(), name.c_str(), &t));
    if (!s.ok())
      return fail(s.message);
    HostTensor copy;
    s = HostTensor::create(
        t.dtype, std::vector<int64_t>(t.shape, t.shape + t.rank), copy);
    if (!s.ok())
      return fail(s.message);
    std::copy_n(static_cast<const char *>(t.data), copy.byteSize(),
                static_cast<char *>(copy.data()));
    s = files.stage(file, rt::serializeNpy(copy));
    if (!s.ok())
      return fail(s.message + " (no output was written)");
  }
  s = files.commit();
  if (!s.ok())
    return fail(s.message);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  run::Options opts;
  Status s = run::parseOptions(argc, argv, opts);
  if (!s.ok())
    return fail(s.message);
  if (opts.help) {
    std::fputs(run::usage(), stdout);
    return 0;
  }
  if (opts.version) {
    std::printf("Torsor version %s\n", TORSOR_VERSION);
    return 0;
  }
  return runTool(opts);
}
