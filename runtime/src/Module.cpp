//===- Module.cpp - Load, bind and run a compiled model -------------------===//
//
// Implements Module.h: loads OUT.so with dlopen and OUT.json beside it,
// keeps the bound inputs/params, and on run resolves the symbolic dims,
// optionally checks group inputs, allocates the outputs and calls the
// model's entry point with one MLIR strided-memref descriptor per tensor
// ({allocated, aligned, offset, sizes[rank], strides[rank]}) in the order
// inputs, params, outputs. The C API over it is CApi.cpp.
//
//===----------------------------------------------------------------------===//

#include "Module.h"

#include "ElfCheck.h"
#include "GroupCheck.h"
#include "Half.h"
#include "ManifestMatch.h"
#include "MatrixUnits.h"
#include "ModelMemory.h"
#include "NonFinite.h"
#include "SafeTensors.h"
#include "cuda/CudaDevice.h"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

using namespace torsor::rt;

TorsorModule::~TorsorModule() {
  if (handle && gpu) {
    Status s = gpu->scoped("unloading model '" + soPath + "'",
                           [this] { dlclose(handle); });
    if (!s.ok())
      std::fprintf(stderr, "torsor runtime: %s\n", s.message.c_str());
  } else if (handle) {
    dlclose(handle);
  }
}

namespace torsor::rt {

std::string manifestPathFor(const std::string &soPath) {
  std::string base = soPath;
  if (base.size() > 3 && base.compare(base.size() - 3, 3, ".so") == 0)
    base.erase(base.size() - 3);
  return base + ".json";
}

namespace {

/// Makes this runtime library's symbols (torsor_parallel_for) visible to
/// models loaded later, even when a host loaded the runtime RTLD_LOCAL
/// (e.g. Python's ctypes): re-open ourselves RTLD_GLOBAL | RTLD_NOLOAD.
void promoteRuntimeSymbols() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&torsor_parallel_for), &info) &&
      info.dli_fname) {
    void *self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    (void)self; // stays open for the life of the process on purpose
  }
}

/// Checks that the manifest's target is one this runtime runs and agrees
/// with its ABI version: "cpu" is ABI 1 (host pointers), "nvptx" is ABI 2
/// (device pointers) and names its "gpu_arch".
Status checkTarget(const std::string &soPath, const Manifest &mf) {
  if (mf.target != "cpu" && mf.target != "nvptx")
    return Status(TORSOR_UNAVAILABLE,
                  "model '" + soPath + "' targets '" + mf.target +
                      "'; this runtime runs 'cpu' and 'nvptx' models");
  int64_t want = mf.target == "cpu" ? 1 : 2;
  if (mf.abi != want)
    return Status(TORSOR_ABI_ERROR,
                  format("model '%s': target '%s' needs \"abi\": %lld in "
                         "its manifest, found %lld",
                         soPath.c_str(), mf.target.c_str(), (long long)want,
                         (long long)mf.abi));
  if (mf.target == "nvptx" && mf.gpuArch.empty())
    return Status(TORSOR_ABI_ERROR,
                  "model '" + soPath +
                      "': an nvptx manifest must name its \"gpu_arch\" "
                      "(e.g. \"sm_90\")");
  return Status();
}

/// Looks up `name` in the model library itself: dlsym on a handle also
/// searches the library's dependencies, so a plain library that links
/// something exporting the name would otherwise pass for a model.
void *ownSymbol(void *handle, const char *name) {
  void *sym = dlsym(handle, name);
  Dl_info info;
  struct link_map *own = nullptr;
  if (!sym || !dladdr(sym, &info) || !info.dli_fname ||
      dlinfo(handle, RTLD_DI_LINKMAP, &own) != 0 || !own || !own->l_name)
    return nullptr;
  // dladdr names the object by its link-map name, the same string.
  return std::strcmp(info.dli_fname, own->l_name) == 0 ? sym : nullptr;
}

/// Requires the manifest the compiler embedded in the library behind
/// `handle` (`torsor_model_manifest()`) and checks OUT.json (`file`)
/// against it.
TORSOR_CALLS_COMPILED_CODE Status checkEmbeddedManifest(
    void *handle, const Manifest &file, const std::string &soPath) {
  auto embedded = reinterpret_cast<const char *(*)()>(
      ownSymbol(handle, "torsor_model_manifest"));
  if (!embedded)
    return Status(TORSOR_ABI_ERROR,
                  "model '" + soPath +
                      "' does not export torsor_model_manifest(): it is not "
                      "a Torsor model, or was built by an older torsorc "
                      "(recompile it)");
  const char *text = embedded();
  Manifest own;
  Status s =
      parseManifest(text ? text : "", soPath + " (embedded manifest)", own);
  if (!s.ok())
    return Status(TORSOR_ABI_ERROR, s.message);
  return matchManifests(file, own, soPath);
}

/// Opens an nvptx model only to compare OUT.json with its embedded
/// manifest, with its GPU binary left unloaded (cuda::InspectOnly): used
/// when OUT.json's gpu_arch does not run on this GPU, so that an edited
/// arch is reported as an edit and not stated as fact.
Status inspectEmbeddedManifest(const std::string &openPath,
                               const std::string &soPath,
                               const Manifest &file) {
  cuda::InspectOnly inspect;
  void *handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return Status(TORSOR_ABI_ERROR,
                  "cannot load model '" + soPath + "': " + dlerror());
  Status s = checkEmbeddedManifest(handle, file, soPath);
  dlclose(handle);
  return s;
}

} // namespace

TORSOR_CALLS_COMPILED_CODE Status loadModule(const std::string &soPath,
                                             TorsorModule &m) {
  struct stat st;
  if (stat(soPath.c_str(), &st) != 0)
    return ioError("cannot open model '" + soPath + "': no such file");
  std::string jsonPath = manifestPathFor(soPath);
  if (stat(jsonPath.c_str(), &st) != 0)
    return ioError("cannot find the manifest '" + jsonPath +
                   "' next to model '" + soPath + "'");
  Status s = readManifest(jsonPath, m.manifest);
  if (!s.ok())
    return s;
  if (!(s = checkTarget(soPath, m.manifest)).ok())
    return s;
  promoteRuntimeSymbols();
  // A bare name would make dlopen search the library path instead.
  std::string openPath =
      soPath.find('/') == std::string::npos ? "./" + soPath : soPath;
  // A truncated file would SIGBUS inside dlopen: check its headers first.
  s = checkElfFile(openPath, "model '" + soPath + "'");
  if (!s.ok())
    return s;
  // An nvptx model loads its GPU binary from a constructor (mgpuModuleLoad)
  // while dlopen runs, so the device must be ready, and errors captured,
  // before the library is opened.
  if (m.manifest.target == "nvptx") {
    if (!(s = cuda::GpuModule::create(m.manifest, soPath, m.gpu)).ok())
      return s;
    // The arch comes from OUT.json: before saying the model was compiled
    // for it, check OUT.json against the library's own manifest.
    Status arch = cuda::checkArch(m.manifest.gpuArch, m.gpu->device(), soPath);
    if (!arch.ok()) {
      Status own = inspectEmbeddedManifest(openPath, soPath, m.manifest);
      return own.ok() ? arch : own;
    }
  }
  m.soPath = soPath;
  Status gpuLoad;
  if (m.gpu)
    gpuLoad = m.gpu->scoped("loading model '" + soPath + "'", [&] {
      m.handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    });
  else
    m.handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m.handle)
    return Status(TORSOR_ABI_ERROR,
                  "cannot load model '" + soPath + "': " + dlerror());
  if (!gpuLoad.ok())
    return gpuLoad;
  auto version = reinterpret_cast<int32_t (*)()>(
      ownSymbol(m.handle, "torsor_abi_version"));
  if (!version)
    return Status(TORSOR_ABI_ERROR,
                  "model '" + soPath +
                      "' does not export torsor_abi_version(); was it built "
                      "by torsorc?");
  int32_t v = version();
  if (v < TORSOR_ABI_VERSION_MIN || v > TORSOR_ABI_VERSION)
    return Status(TORSOR_ABI_ERROR,
                  format("model '%s' has ABI version %d, this runtime "
                         "supports versions %d to %d",
                         soPath.c_str(), v, TORSOR_ABI_VERSION_MIN,
                         TORSOR_ABI_VERSION));
  if (v != m.manifest.abi)
    return Status(TORSOR_ABI_ERROR,
                  format("model '%s' has ABI version %d, but its manifest "
                         "'%s' says %lld; rebuild both with torsorc",
                         soPath.c_str(), v, jsonPath.c_str(),
                         (long long)m.manifest.abi));
  if (!(s = checkEmbeddedManifest(m.handle, m.manifest, soPath)).ok())
    return s;
  // AMX models need the process's tile state before their first run
  // (MatrixUnits.h); the manifests agree on "amx" (matchManifests).
  if (m.manifest.amx && !(s = requestAMXTiles(soPath)).ok())
    return s;
  m.entry = reinterpret_cast<void (*)(void **)>(
      ownSymbol(m.handle, m.manifest.entry.c_str()));
  if (!m.entry)
    return Status(TORSOR_ABI_ERROR,
                  "model '" + soPath + "' does not export its entry point '" +
                      m.manifest.entry + "' named in " + jsonPath);
  // The optional entries the manifest names, defined by this library
  // itself (ownSymbol: not a same-named symbol of another library).
  auto optionalEntry = [&](const std::string &symbol,
                           void (*&entry)(void **)) -> Status {
    if (symbol.empty())
      return Status();
    entry = reinterpret_cast<void (*)(void **)>(
        ownSymbol(m.handle, symbol.c_str()));
    if (!entry)
      return Status(TORSOR_ABI_ERROR, "model '" + soPath +
                                          "' does not export '" + symbol +
                                          "' named in " + jsonPath);
    return Status();
  };
  if (!(s = optionalEntry(m.manifest.groupResidual, m.residualEntry)).ok() ||
      !(s = optionalEntry(m.manifest.backwardEntry, m.backwardEntry)).ok() ||
      !(s = optionalEntry(m.manifest.prepareEntry, m.prepareEntry)).ok())
    return s;
  // The params' packed copies: one buffer for the module's lifetime.
  if (m.prepareEntry &&
      !(s = HostTensor::create(TORSOR_DTYPE_I64,
                               {(m.manifest.prepareBytes + 7) / 8}, m.prepared))
           .ok())
    return s.withPrefix("the params' packed copies: ");
  m.inputs.resize(m.manifest.inputs.size());
  m.params.resize(m.manifest.params.size());
  return Status();
}

namespace {

/// Appends the memref descriptor of a row-major tensor to `storage`.
void appendDescriptor(std::vector<int64_t> &storage, void *data,
                      const std::vector<int64_t> &shape,
                      const std::vector<int64_t> &strides) {
  static_assert(sizeof(void *) == sizeof(int64_t), "64-bit hosts only");
  int64_t ptr = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
  storage.push_back(ptr); // allocated
  storage.push_back(ptr); // aligned
  storage.push_back(0);   // offset
  storage.insert(storage.end(), shape.begin(), shape.end());
  storage.insert(storage.end(), strides.begin(), strides.end());
}

/// Calls compiled code with its allocations tracked (ModelMemory.h): a
/// failed allocation anywhere inside returns here as TORSOR_OUT_OF_MEMORY,
/// with what the run held freed.
Status callIntoModel(TorsorModule &m, void (*fn)(void **), void **args) {
  RunMemory memory(m.memoryLimit, m.cacheBuffers ? &m.buffers : nullptr,
                   m.largestPeak);
  RunMemory *outer = setCurrentRun(&memory);
  bool ok = callModel(fn, args);
  setCurrentRun(outer);
  m.lastPeak = memory.peak();
  m.largestPeak = std::max(m.largestPeak.load(), m.lastPeak);
  if (!ok || memory.failed())
    return Status(TORSOR_OUT_OF_MEMORY, memory.failureMessage());
  return Status();
}

/// Checks declared-group inputs with the model's own residual function:
/// ‖part of log g outside the algebra‖ per element, against the tolerance.
Status checkResiduals(TorsorModule &m) {
  if (!m.residualEntry)
    return Status();
  std::vector<size_t> checked;
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (m.manifest.inputs[i].residual)
      checked.push_back(i);
  std::vector<HostTensor> residuals(checked.size());
  for (size_t k = 0; k < checked.size(); ++k) {
    const BoundTensor &b = m.inputs[checked[k]];
    std::vector<int64_t> shape(b.shape.begin(), b.shape.end() - 2);
    Status s = HostTensor::create(b.dtype, shape, residuals[k]);
    if (!s.ok())
      return s;
  }
  std::vector<int64_t> storage;
  std::vector<size_t> starts;
  for (size_t i : checked) {
    starts.push_back(storage.size());
    appendDescriptor(storage, m.inputs[i].data, m.inputs[i].shape,
                     m.inputs[i].strides);
  }
  for (HostTensor &r : residuals) {
    starts.push_back(storage.size());
    appendDescriptor(storage, r.data(), r.shape(), r.strides());
  }
  std::vector<void *> args;
  for (size_t start : starts)
    args.push_back(storage.data() + start);
  Status s = callIntoModel(m, m.residualEntry, args.data());
  if (!s.ok())
    return s.withPrefix("group check: ");
  // Each residual of a generic-model group against the tolerance scaled by
  // the dtype and the log's conditioning at that element
  // (declaredResidualTolerance, GroupCheck.h); others against groupTol.
  for (size_t k = 0; k < checked.size(); ++k) {
    const TensorSpec &spec = m.manifest.inputs[checked[k]];
    const HostTensor &r = residuals[k];
    TorsorTensor input = m.inputs[checked[k]].view();
    int n = static_cast<int>(input.shape[input.rank - 1]);
    std::vector<double> g(n * n);
    for (int64_t e = 0; e < r.numel(); ++e) {
      double v = r.dtype() == TORSOR_DTYPE_F32
                     ? static_cast<const float *>(r.data())[e]
                     : static_cast<const double *>(r.data())[e];
      double tol = m.groupTol;
      if (spec.residualConditioned) {
        readGroupElement(input, n, e, g.data());
        tol = declaredResidualTolerance(m.groupTol, r.dtype(), g.data(), n);
      }
      if (std::isinf(tol))
        continue; // at the branch cut within rounding (GroupCheck.h)
      if (tol < 0)
        return invalidArg(format(
            "input '%s' element %lld is not in %s: det <= 0 (every element "
            "of a group declared by generators is an exp, det e^X = e^tr X > "
            "0; a reflection or a singular matrix?)",
            spec.name.c_str(), (long long)e, spec.group.c_str()));
      if (!(v <= tol))
        return invalidArg(format(
            "input '%s' element %lld is not in %s: membership residual %.1e > "
            "tol %g (lie.membership_residual of the declared group, against "
            "max(tol, 8·n·eps·cond(g)) with tol %g, docs/groups/declared.md; "
            "NaN: no principal log)",
            spec.name.c_str(), (long long)e, spec.group.c_str(), v, tol,
            m.groupTol));
    }
  }
  return Status();
}

/// The run of an nvptx model once its dims are resolved: checks host-bound
/// group inputs on the host (device-bound ones cannot be read here, and the
/// declared-group residual entry is not run on the GPU path yet), allocates
/// host outputs when they are copied back, and lets the GpuModule upload,
/// call and copy.
Status runOnDevice(TorsorModule &m,
                   const std::map<std::string, int64_t> &dims) {
  Status s;
  if (m.checkGroups)
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      const TensorSpec &spec = m.manifest.inputs[i];
      if (spec.group.empty() || spec.residual || m.gpu->inputOnDevice(i))
        continue;
      s = checkGroupTensor("input '" + spec.name + "'", spec.group,
                           m.inputs[i].view(), m.groupTol);
      if (!s.ok())
        return s;
    }
  size_t numOut = m.manifest.outputs.size();
  std::vector<std::vector<int64_t>> shapes(numOut);
  std::vector<int32_t> dtypes(numOut);
  m.outputs.resize(numOut);
  m.outputStrides.resize(numOut);
  for (size_t i = 0; i < numOut; ++i) {
    const TensorSpec &spec = m.manifest.outputs[i];
    if (!(s = outputShape(spec, dims, shapes[i])).ok())
      return s;
    dtypes[i] = spec.dtype;
    if (!m.gpu->hostCopies() ||
        (m.outputs[i].data() && m.outputs[i].shape() == shapes[i]))
      continue;
    s = HostTensor::create(spec.dtype, shapes[i], m.outputs[i]);
    if (!s.ok())
      return s.withPrefix("output '" + spec.name + "': ");
    m.outputStrides[i] = m.outputs[i].strides();
  }
  std::vector<HostTensor> none;
  s = m.gpu->run(m.entry, m.inputs, m.params, shapes, dtypes,
                 m.gpu->hostCopies() ? m.outputs : none,
                 "running model '" + m.soPath + "'");
  if (!s.ok())
    return s;
  m.outputShapes = std::move(shapes);
  m.haveOutputs = true;
  return Status();
}

/// Checks every float input and param for NaN and Inf (NonFinite.h).
Status checkInputsFinite(const TorsorModule &m) {
  for (int kind : {TORSOR_INPUT, TORSOR_PARAM}) {
    const std::vector<BoundTensor> &list =
        kind == TORSOR_INPUT ? m.inputs : m.params;
    for (size_t i = 0; i < list.size(); ++i) {
      Status s = checkFinite(format("%s '%s'", kindWord(kind),
                                    m.manifest.list(kind)[i].name.c_str()),
                             list[i]);
      if (!s.ok())
        return s;
    }
  }
  return Status();
}

/// The input checks of a CPU run (on while checkGroups is set): group
/// membership of built-in and declared group inputs, then NaN and Inf in
/// every float input and param.
Status checkHostInputs(TorsorModule &m) {
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const TensorSpec &spec = m.manifest.inputs[i];
    if (spec.group.empty())
      continue;
    Status s = checkGroupTensor("input '" + spec.name + "'", spec.group,
                                m.inputs[i].view(), m.groupTol);
    if (!s.ok())
      return s;
  }
  Status s = checkResiduals(m);
  return s.ok() ? checkInputsFinite(m) : s;
}

} // namespace

Status runModule(TorsorModule &m) {
  m.haveOutputs = false;
  std::map<std::string, int64_t> dims;
  Status s = resolveDims(m.manifest, m.inputs, m.params, dims);
  if (!s.ok())
    return s;
  if (m.gpu)
    return runOnDevice(m, dims);
  if (m.checkGroups && !(s = checkHostInputs(m)).ok())
    return s;
  size_t numOut = m.manifest.outputs.size();
  m.outputs.resize(numOut);
  m.outputStrides.resize(numOut);
  for (size_t i = 0; i < numOut; ++i) {
    const TensorSpec &spec = m.manifest.outputs[i];
    std::vector<int64_t> shape;
    s = outputShape(spec, dims, shape);
    if (!s.ok())
      return s;
    if (m.outputs[i].data() && m.outputs[i].shape() == shape)
      continue; // reuse the buffer of the previous run
    s = HostTensor::create(spec.dtype, shape, m.outputs[i]);
    if (!s.ok())
      return s.withPrefix("output '" + spec.name + "': ");
    m.outputStrides[i] = m.outputs[i].strides();
  }
  // Descriptors live in one vector; pointers are taken after it is filled.
  std::vector<int64_t> storage;
  std::vector<size_t> starts;
  for (const std::vector<BoundTensor> *list : {&m.inputs, &m.params})
    for (const BoundTensor &b : *list) {
      starts.push_back(storage.size());
      appendDescriptor(storage, b.data, b.shape, b.strides);
    }
  for (size_t i = 0; i < numOut; ++i) {
    starts.push_back(storage.size());
    appendDescriptor(storage, m.outputs[i].data(), m.outputs[i].shape(),
                     m.outputStrides[i]);
  }
  // The params' packed copies, after the outputs (HoistPackedParams.cpp).
  std::vector<int64_t> preparedShape = {m.manifest.prepareBytes};
  if (m.prepareEntry) {
    starts.push_back(storage.size());
    appendDescriptor(storage, m.prepared.data(), preparedShape, {1});
  }
  std::vector<void *> args;
  for (size_t start : starts)
    args.push_back(storage.data() + start);
  if (m.prepareEntry && m.paramsChanged) {
    // prepare(params..., packed): the params' descriptors, then the last.
    std::vector<void *> prepareArgs(args.begin() + m.inputs.size(),
                                    args.begin() + m.inputs.size() +
                                        m.params.size());
    prepareArgs.push_back(args.back());
    if (!(s = callIntoModel(m, m.prepareEntry, prepareArgs.data())).ok())
      return s;
    m.paramsChanged = false;
  }
  if (!(s = callIntoModel(m, m.entry, args.data())).ok())
    return s;
  m.haveOutputs = true;
  return Status();
}

Status busyError() {
  return Status(TORSOR_FAILED_PRECONDITION,
                "the module is busy: another call is running it (a module "
                "runs one call at a time; load the model once per thread to "
                "run it concurrently)");
}

Status bindHost(TorsorModule &m, int kind, const char *name,
                const TorsorTensor *t) {
  const std::vector<TensorSpec> &list = m.manifest.list(kind);
  size_t index;
  Status s = findTensor(list, kind, name, index);
  if (!s.ok())
    return s;
  std::vector<BoundTensor> &bound = kind == TORSOR_INPUT ? m.inputs : m.params;
  BoundTensor b;
  s = bindTensor(kind, list[index], t, b);
  if (!s.ok())
    return s;
  bound[index] = std::move(b);
  if (kind == TORSOR_PARAM)
    m.paramsChanged = true;
  if (m.gpu)
    m.gpu->noteBound(kind, index, /*onDevice=*/false);
  return Status();
}

Status bindDeviceTensor(int kind, const TensorSpec &spec, const TorsorTensor *t,
                        BoundTensor &out) {
  const char *name = spec.name.c_str();
  if (t->rank < 0 || (t->rank > 0 && !t->shape))
    return invalidArg(
        format("%s '%s': bad rank or NULL shape", kindWord(kind), name));
  std::vector<int64_t> shape(t->shape, t->shape + t->rank);
  Status s = checkAgainstSpec(kind, spec, t->dtype, shape);
  if (!s.ok())
    return s;
  std::vector<int64_t> strides = rowMajorStrides(shape);
  if (t->strides && !std::equal(strides.begin(), strides.end(), t->strides))
    return invalidArg(format("%s '%s': device memory must be row-major "
                             "(the runtime cannot re-layout it)",
                             kindWord(kind), name));
  out = BoundTensor();
  out.bound = true;
  out.dtype = t->dtype;
  out.shape = std::move(shape);
  out.strides = std::move(strides);
  out.data = t->data;
  return Status();
}

Status bindDevice(TorsorModule &m, int kind, const char *name,
                  const TorsorTensor *t) {
  const std::vector<TensorSpec> &list = m.manifest.list(kind);
  size_t index;
  Status s = findTensor(list, kind, name, index);
  if (!s.ok())
    return s;
  BoundTensor b;
  if (!(s = bindDeviceTensor(kind, list[index], t, b)).ok())
    return s;
  (kind == TORSOR_INPUT ? m.inputs : m.params)[index] = std::move(b);
  m.gpu->noteBound(kind, index, /*onDevice=*/true);
  return Status();
}

Status loadWeights(TorsorModule &m, const char *safetensorsPath,
                   const RoundingNote *note) {
  TensorBundle bundle;
  Status s = readSafeTensors(safetensorsPath, bundle);
  if (!s.ok())
    return s;
  std::string prefix = std::string(safetensorsPath) + ": ";
  for (auto &[name, tensor] : bundle) {
    size_t index;
    s = findTensor(m.manifest.params, TORSOR_PARAM, name, index);
    if (!s.ok())
      return s.withPrefix(prefix);
    if (note) {
      const TensorSpec &spec = m.manifest.params[index];
      int32_t from = tensor.dtype();
      bool rounded = false;
      if (!(s = convertFloatForModel(tensor, spec.dtype, rounded)).ok())
        return s.withPrefix(prefix);
      if (rounded)
        (*note)(prefix + "param '" + name + "': converting " + dtypeName(from) +
                " to the model's dtype " + dtypeName(spec.dtype) +
                " (rounded to nearest)");
    }
    s = bindOwned(TORSOR_PARAM, m.manifest.params[index], std::move(tensor),
                  m.params[index]);
    if (!s.ok())
      return s.withPrefix(prefix);
    m.paramsChanged = true;
    if (m.gpu)
      m.gpu->noteBound(TORSOR_PARAM, index, /*onDevice=*/false);
  }
  return Status();
}

/// Arguments: inputs, params, cotangents, then gradients.
Status runModuleBackward(TorsorModule &m, const TorsorTensor *cots, int32_t n,
                         bool onDevice) {
  m.haveGradients = false;
  if (!m.backwardEntry)
    return Status(TORSOR_UNAVAILABLE,
                  "model '" + m.soPath +
                      "' has no backward entry; compile it with torsorc "
                      "--grad");
  if (n != static_cast<int32_t>(m.manifest.cotangents.size()) ||
      (n > 0 && !cots))
    return invalidArg(format("backward needs %zu cotangents (one per "
                             "output), got %d",
                             m.manifest.cotangents.size(), n));
  std::map<std::string, int64_t> dims;
  Status s = resolveDims(m.manifest, m.inputs, m.params, dims);
  if (!s.ok())
    return s;
  std::vector<BoundTensor> bound(n);
  for (int32_t i = 0; i < n; ++i) {
    const TensorSpec &spec = m.manifest.cotangents[i];
    s = onDevice ? bindDeviceTensor(TORSOR_OUTPUT, spec, &cots[i], bound[i])
                 : bindTensor(TORSOR_OUTPUT, spec, &cots[i], bound[i]);
    // Checked like an output, but named as what it is.
    if (!s.ok() && s.message.rfind("output '", 0) == 0)
      s.message.replace(0, 6, "cotangent");
    std::vector<int64_t> want;
    if (s.ok())
      s = outputShape(spec, dims, want);
    if (s.ok() && want != bound[i].shape)
      s = invalidArg(format("cotangent '%s' does not have the shape of its "
                            "output (%s with this run's dims)",
                            spec.name.c_str(), spec.shapeString().c_str()));
    // A NaN or Inf cotangent makes every gradient NaN: refused like a
    // non-finite input while input checks are on (host memory only: the
    // check cannot read device cotangents).
    if (s.ok() && m.checkGroups && !onDevice)
      s = checkFinite("cotangent '" + spec.name + "'", bound[i]);
    if (!s.ok())
      return s;
  }
  // The backward reads the inputs too, and may run without a forward run.
  if (m.checkGroups && !m.gpu && !(s = checkHostInputs(m)).ok())
    return s;
  size_t numGrads = m.manifest.gradients.size();
  m.gradients.resize(numGrads);
  m.gradientStrides.resize(numGrads);
  m.gradientShapes.assign(numGrads, {});
  std::vector<int32_t> gradDTypes(numGrads);
  for (size_t i = 0; i < numGrads; ++i) {
    std::vector<int64_t> &shape = m.gradientShapes[i];
    gradDTypes[i] = m.manifest.gradients[i].dtype;
    s = outputShape(m.manifest.gradients[i], dims, shape);
    // Gradients kept on the device need no host buffers.
    if (s.ok() && !onDevice &&
        !(m.gradients[i].data() && m.gradients[i].shape() == shape))
      s = HostTensor::create(m.manifest.gradients[i].dtype, shape,
                             m.gradients[i]);
    if (!s.ok())
      return s.withPrefix("gradient '" + m.manifest.gradients[i].name + "': ");
    m.gradientStrides[i] = m.gradients[i].strides();
  }
  if (m.gpu) {
    // nvptx: device buffers for everything; the gradients are copied back
    // unless the cotangents came as device memory (then they stay there).
    s = m.gpu->runBackward(m.backwardEntry, m.inputs, m.params, bound, onDevice,
                           m.gradientShapes, gradDTypes, m.gradients,
                           "running the backward of model '" + m.soPath + "'");
    if (!s.ok())
      return s;
    m.gradientsOnHost = !onDevice;
    m.haveGradients = true;
    return Status();
  }
  std::vector<int64_t> storage;
  std::vector<size_t> starts;
  for (const std::vector<BoundTensor> *list : {&m.inputs, &m.params, &bound})
    for (const BoundTensor &b : *list) {
      starts.push_back(storage.size());
      appendDescriptor(storage, b.data, b.shape, b.strides);
    }
  for (HostTensor &g : m.gradients) {
    starts.push_back(storage.size());
    appendDescriptor(storage, g.data(), g.shape(), g.strides());
  }
  std::vector<void *> args;
  for (size_t start : starts)
    args.push_back(storage.data() + start);
  m.backwardEntry(args.data());
  m.gradientsOnHost = true;
  m.haveGradients = true;
  return Status();
}

} // namespace torsor::rt
