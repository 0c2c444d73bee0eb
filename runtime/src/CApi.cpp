//===- CApi.cpp - The runtime's C API -------------------------------------===//
//
// The `extern "C"` functions of torsor/runtime.h over Module.h. Each checks
// its pointers, claims the module where the call reads or changes its
// state (one call at a time per module: a second concurrent call is
// refused with TORSOR_FAILED_PRECONDITION, never raced), and converts the
// internal Status, and any C++ exception, into a TorsorStatus: nothing
// throws across the C API.
//
//===----------------------------------------------------------------------===//

#include "torsor/runtime.h"

#include "Module.h"
#include "ThreadPool.h"
#include "cuda/GpuModule.h"

#include <algorithm>
#include <cstring>
#include <new>

using namespace torsor::rt;

namespace {

/// Converts an internal Status into the C form (NULL on success).
TorsorStatus *toC(const Status &s) {
  if (s.ok())
    return nullptr;
  return new TorsorStatus{s.code, s.message};
}

/// Runs `body` (returning a C status) with C++ exceptions turned into
/// statuses: nothing may throw across the C API.
template <typename F> TorsorStatus *guarded(F body) {
#if defined(__cpp_exceptions)
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return new (std::nothrow)
        TorsorStatus{TORSOR_OUT_OF_MEMORY, "out of memory"};
  } catch (const std::exception &e) {
    return new (std::nothrow) TorsorStatus{
        TORSOR_INVALID_ARGUMENT, std::string("internal error: ") + e.what()};
  }
#else
  return body();
#endif
}

/// The spec list of `kind`, or nullptr for a bad module or kind.
const std::vector<TensorSpec> *specList(const TorsorModule *m,
                                        TorsorTensorKind kind) {
  if (!m || kind < TORSOR_INPUT || kind > TORSOR_OUTPUT)
    return nullptr;
  return &m->manifest.list(kind);
}

/// Spec `index` of `kind`, or nullptr.
const TensorSpec *spec(const TorsorModule *m, TorsorTensorKind kind,
                       int32_t index) {
  const std::vector<TensorSpec> *list = specList(m, kind);
  if (!list || index < 0 || static_cast<size_t>(index) >= list->size())
    return nullptr;
  return &(*list)[index];
}

/// Shared body of the two bind functions.
TorsorStatus *bind(TorsorModule *m, int kind, const char *name,
                   const TorsorTensor *t) {
  if (!m || !name)
    return toC(invalidArg("module or name is NULL"));
  Claim claim(m);
  return toC(claim ? bindHost(*m, kind, name, t) : busyError());
}

/// Shared body of the two device-bind functions.
TorsorStatus *bindOnDevice(TorsorModule *m, int kind, const char *name,
                           const TorsorTensor *t) {
  if (!m || !name || !t)
    return toC(invalidArg("module, name or tensor is NULL"));
  if (!m->gpu)
    return toC(Status(TORSOR_FAILED_PRECONDITION,
                      format("model '%s' runs on the CPU (target '%s'); "
                             "bind host memory with torsorModuleBind%s",
                             m->soPath.c_str(), m->manifest.target.c_str(),
                             kind == TORSOR_INPUT ? "Input" : "Param")));
  Claim claim(m);
  return toC(claim ? bindDevice(*m, kind, name, t) : busyError());
}

/// Describes a row-major tensor in device memory at `address` for the
/// caller of a *Device getter (torsorModuleGetOutputDevice,
/// torsorModuleGetGradientDevice).
TorsorStatus *describeDevice(uint64_t address,
                             const std::vector<int64_t> &shape, int32_t dtype,
                             TorsorTensor *tensor) {
  tensor->data = reinterpret_cast<void *>(static_cast<uintptr_t>(address));
  tensor->shape = shape.data();
  tensor->strides = nullptr;
  tensor->rank = static_cast<int32_t>(shape.size());
  tensor->dtype = dtype;
  return nullptr;
}

} // namespace

extern "C" {

TorsorStatusCode torsorStatusCode(const TorsorStatus *status) {
  return status ? status->code : TORSOR_OK;
}

const char *torsorStatusMessage(const TorsorStatus *status) {
  return status ? status->message.c_str() : "";
}

void torsorStatusFree(TorsorStatus *status) { delete status; }

const char *torsorDTypeName(int32_t dtype) { return dtypeName(dtype); }

TorsorStatus *torsorModuleLoad(const char *soPath, TorsorModule **module) {
  if (!soPath || !module)
    return toC(invalidArg("model path or output pointer is NULL"));
  *module = nullptr;
  return guarded([&]() -> TorsorStatus * {
    std::unique_ptr<TorsorModule> m(new TorsorModule());
    Status s = loadModule(soPath, *m);
    if (!s.ok())
      return toC(s);
    *module = m.release();
    return nullptr;
  });
}

void torsorModuleFree(TorsorModule *module) { delete module; }

const char *torsorModuleName(const TorsorModule *module) {
  return module ? module->manifest.model.c_str() : nullptr;
}

int32_t torsorModuleNumTensors(const TorsorModule *module,
                               TorsorTensorKind kind) {
  const std::vector<TensorSpec> *list = specList(module, kind);
  return list ? static_cast<int32_t>(list->size()) : 0;
}

const char *torsorModuleTensorName(const TorsorModule *module,
                                   TorsorTensorKind kind, int32_t index) {
  const TensorSpec *s = spec(module, kind, index);
  return s ? s->name.c_str() : nullptr;
}

int32_t torsorModuleTensorDType(const TorsorModule *module,
                                TorsorTensorKind kind, int32_t index) {
  const TensorSpec *s = spec(module, kind, index);
  return s ? s->dtype : -1;
}

int32_t torsorModuleTensorRank(const TorsorModule *module,
                               TorsorTensorKind kind, int32_t index) {
  const TensorSpec *s = spec(module, kind, index);
  return s ? static_cast<int32_t>(s->shape.size()) : -1;
}

int64_t torsorModuleTensorDimExtent(const TorsorModule *module,
                                    TorsorTensorKind kind, int32_t index,
                                    int32_t dim) {
  const TensorSpec *s = spec(module, kind, index);
  if (!s || dim < 0 || static_cast<size_t>(dim) >= s->shape.size())
    return -1;
  return s->shape[dim].isSymbolic() ? -1 : s->shape[dim].extent;
}

const char *torsorModuleTensorDimSymbol(const TorsorModule *module,
                                        TorsorTensorKind kind, int32_t index,
                                        int32_t dim) {
  const TensorSpec *s = spec(module, kind, index);
  if (!s || dim < 0 || static_cast<size_t>(dim) >= s->shape.size() ||
      !s->shape[dim].isSymbolic())
    return nullptr;
  return s->shape[dim].symbol.c_str();
}

const char *torsorModuleTensorGroup(const TorsorModule *module,
                                    TorsorTensorKind kind, int32_t index) {
  const TensorSpec *s = spec(module, kind, index);
  return s && !s->group.empty() ? s->group.c_str() : nullptr;
}

TorsorStatus *torsorModuleBindInput(TorsorModule *module, const char *name,
                                    const TorsorTensor *tensor) {
  return guarded([&] { return bind(module, TORSOR_INPUT, name, tensor); });
}

TorsorStatus *torsorModuleBindParam(TorsorModule *module, const char *name,
                                    const TorsorTensor *tensor) {
  return guarded([&] { return bind(module, TORSOR_PARAM, name, tensor); });
}

void torsorModuleUnbindInputs(TorsorModule *module) {
  if (!module)
    return;
  for (BoundTensor &b : module->inputs)
    b = BoundTensor();
  if (module->gpu)
    module->gpu->unbindInputs();
}

TorsorStatus *torsorModuleLoadWeights(TorsorModule *module,
                                      const char *safetensorsPath) {
  if (!module || !safetensorsPath)
    return toC(invalidArg("module or weights path is NULL"));
  return guarded([&] {
    Claim claim(module);
    return toC(claim ? loadWeights(*module, safetensorsPath) : busyError());
  });
}

TorsorStatus *torsorModuleLoadWeightsConverting(TorsorModule *module,
                                                const char *safetensorsPath,
                                                TorsorNoteFn note,
                                                void *context) {
  if (!module || !safetensorsPath)
    return toC(invalidArg("module or weights path is NULL"));
  return guarded([&] {
    RoundingNote sink = [&](const std::string &message) {
      if (note)
        note(message.c_str(), context);
    };
    Claim claim(module);
    return toC(claim ? loadWeights(*module, safetensorsPath, &sink)
                     : busyError());
  });
}

void torsorModuleSetCheckGroups(TorsorModule *module, int32_t enable,
                                double tol) {
  if (!module)
    return;
  module->checkGroups = enable != 0;
  module->groupTol = tol;
}

TorsorStatus *torsorModuleRun(TorsorModule *module) {
  if (!module)
    return toC(invalidArg("module is NULL"));
  return guarded([&] {
    Claim claim(module);
    return toC(claim ? runModule(*module) : busyError());
  });
}

void torsorModuleSetMemoryLimit(TorsorModule *module, uint64_t bytes) {
  if (!module)
    return;
  module->memoryLimit = bytes;
  // What the cache may keep follows the largest peak; under a limit that
  // is at most the limit.
  if (bytes) {
    module->largestPeak = std::min(module->largestPeak.load(), bytes);
    module->buffers.trim(bytes);
  }
}

void torsorModuleSetBufferCache(TorsorModule *module, int32_t enable) {
  if (!module)
    return;
  module->cacheBuffers = enable != 0;
  if (!enable)
    module->buffers.trim(0);
}

void torsorModuleReleaseBuffers(TorsorModule *module) {
  if (module)
    module->buffers.trim(0);
}

uint64_t torsorModuleCachedBytes(const TorsorModule *module) {
  return module ? module->buffers.bytes() : 0;
}

uint64_t torsorModulePeakBytes(const TorsorModule *module) {
  return module ? module->lastPeak : 0;
}

TorsorStatus *torsorModuleGetOutput(const TorsorModule *module,
                                    const char *name, TorsorTensor *tensor) {
  if (!module || !name || !tensor)
    return toC(invalidArg("module, name or tensor is NULL"));
  size_t index;
  Status s = findTensor(module->manifest.outputs, TORSOR_OUTPUT, name, index);
  if (!s.ok())
    return toC(s);
  if (!module->haveOutputs)
    return toC(Status(TORSOR_FAILED_PRECONDITION,
                      format("output '%s' is not available: the model has "
                             "not run successfully",
                             name)));
  if (module->gpu && !module->gpu->hostCopies())
    return toC(Status(TORSOR_FAILED_PRECONDITION,
                      format("output '%s' stayed on the device "
                             "(torsorModuleSetHostOutputs(module, 0)); read "
                             "it with torsorModuleGetOutputDevice",
                             name)));
  *tensor = module->outputs[index].view(module->outputStrides[index]);
  return nullptr;
}

TorsorStatus *torsorSetNumThreads(int32_t n) {
  if (n > 4096)
    return toC(
        invalidArg(format("thread count %d is too large (max 4096)", n)));
  return guarded([&] { return toC(setGlobalThreadCount(n)); });
}

int32_t torsorGetNumThreads(void) { return globalThreadCount(); }

TorsorStatus *torsorCudaAvailable(void) {
  const cuda::Device *device = nullptr;
  return toC(cuda::openDevice(device));
}

int32_t torsorModuleDevice(const TorsorModule *module) {
  if (!module)
    return -1;
  return module->gpu ? TORSOR_DEVICE_CUDA : TORSOR_DEVICE_CPU;
}

const char *torsorModuleTarget(const TorsorModule *module) {
  return module ? module->manifest.target.c_str() : nullptr;
}

const char *torsorModuleGpuArch(const TorsorModule *module) {
  return module && !module->manifest.gpuArch.empty()
             ? module->manifest.gpuArch.c_str()
             : nullptr;
}

void *torsorModuleCudaStream(const TorsorModule *module) {
  return module && module->gpu ? module->gpu->stream() : nullptr;
}

TorsorStatus *torsorModuleBindInputDevice(TorsorModule *module,
                                          const char *name,
                                          const TorsorTensor *tensor) {
  return guarded(
      [&] { return bindOnDevice(module, TORSOR_INPUT, name, tensor); });
}

TorsorStatus *torsorModuleBindParamDevice(TorsorModule *module,
                                          const char *name,
                                          const TorsorTensor *tensor) {
  return guarded(
      [&] { return bindOnDevice(module, TORSOR_PARAM, name, tensor); });
}

TorsorStatus *torsorModuleSetHostOutputs(TorsorModule *module, int32_t enable) {
  if (!module)
    return toC(invalidArg("module is NULL"));
  if (!module->gpu)
    return enable ? nullptr
                  : toC(Status(TORSOR_FAILED_PRECONDITION,
                               "model '" + module->soPath +
                                   "' runs on the CPU: its outputs are "
                                   "always in host memory"));
  module->gpu->setHostCopies(enable != 0);
  module->haveOutputs = false; // the host copies no longer follow runs
  return nullptr;
}

TorsorStatus *torsorModuleGetOutputDevice(const TorsorModule *module,
                                          const char *name,
                                          TorsorTensor *tensor) {
  if (!module || !name || !tensor)
    return toC(invalidArg("module, name or tensor is NULL"));
  size_t index;
  Status s = findTensor(module->manifest.outputs, TORSOR_OUTPUT, name, index);
  if (!s.ok())
    return toC(s);
  if (!module->gpu)
    return toC(Status(TORSOR_FAILED_PRECONDITION,
                      "model '" + module->soPath +
                          "' runs on the CPU: read its outputs with "
                          "torsorModuleGetOutput"));
  if (!module->haveOutputs)
    return toC(Status(TORSOR_FAILED_PRECONDITION,
                      format("output '%s' is not available: the model has "
                             "not run successfully",
                             name)));
  return describeDevice(module->gpu->outputPtr(index),
                        module->outputShapes[index],
                        module->manifest.outputs[index].dtype, tensor);
}

int32_t torsorModuleHasBackward(const TorsorModule *module) {
  return module && module->backwardEntry ? 1 : 0;
}

int32_t torsorModuleNumGradients(const TorsorModule *module) {
  return module ? static_cast<int32_t>(module->manifest.gradients.size()) : 0;
}

const char *torsorModuleGradientName(const TorsorModule *module,
                                     int32_t index) {
  if (!module || index < 0 ||
      static_cast<size_t>(index) >= module->manifest.gradients.size())
    return nullptr;
  return module->manifest.gradients[index].name.c_str();
}

TorsorStatus *torsorModuleRunBackward(TorsorModule *module,
                                      const TorsorTensor *cotangents,
                                      int32_t numCotangents) {
  if (!module)
    return toC(invalidArg("module is NULL"));
  return guarded([&] {
    Claim claim(module);
    return toC(claim ? runModuleBackward(*module, cotangents, numCotangents)
                     : busyError());
  });
}

TorsorStatus *torsorModuleGetGradient(const TorsorModule *module,
                                      const char *name, TorsorTensor *tensor) {
  if (!module || !name || !tensor)
    return toC(invalidArg("module, name or tensor is NULL"));
  const std::vector<TensorSpec> &list = module->manifest.gradients;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].name != name)
      continue;
    if (!module->haveGradients)
      return toC(Status(TORSOR_FAILED_PRECONDITION,
                        format("gradient '%s' is not available: backward has "
                               "not run successfully",
                               name)));
    if (!module->gradientsOnHost)
      return toC(Status(TORSOR_FAILED_PRECONDITION,
                        format("gradient '%s' stayed on the device (the "
                               "backward ran on device cotangents, "
                               "torsorModuleRunBackwardDevice); read it with "
                               "torsorModuleGetGradientDevice",
                               name)));
    *tensor = module->gradients[i].view(module->gradientStrides[i]);
    return nullptr;
  }
  return toC(invalidArg(format("unknown gradient '%s'", name)));
}

TorsorStatus *torsorModuleRunBackwardDevice(TorsorModule *module,
                                            const TorsorTensor *cotangents,
                                            int32_t numCotangents) {
  if (!module)
    return toC(invalidArg("module is NULL"));
  if (!module->gpu)
    return toC(Status(TORSOR_FAILED_PRECONDITION,
                      format("model '%s' runs on the CPU (target '%s'); run "
                             "its backward on host cotangents with "
                             "torsorModuleRunBackward",
                             module->soPath.c_str(),
                             module->manifest.target.c_str())));
  return guarded([&] {
    Claim claim(module);
    return toC(claim ? runModuleBackward(*module, cotangents, numCotangents,
                                         /*onDevice=*/true)
                     : busyError());
  });
}

TorsorStatus *torsorModuleGetGradientDevice(const TorsorModule *module,
                                            const char *name,
                                            TorsorTensor *tensor) {
  if (!module || !name || !tensor)
    return toC(invalidArg("module, name or tensor is NULL"));
  if (!module->gpu)
    return toC(Status(TORSOR_FAILED_PRECONDITION,
                      "model '" + module->soPath +
                          "' runs on the CPU: read its gradients with "
                          "torsorModuleGetGradient"));
  const std::vector<TensorSpec> &list = module->manifest.gradients;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].name != name)
      continue;
    if (!module->haveGradients)
      return toC(Status(TORSOR_FAILED_PRECONDITION,
                        format("gradient '%s' is not available: backward has "
                               "not run successfully",
                               name)));
    return describeDevice(module->gpu->gradientPtr(i),
                          module->gradientShapes[i], list[i].dtype, tensor);
  }
  return toC(invalidArg(format("unknown gradient '%s'", name)));
}

} // extern "C"
