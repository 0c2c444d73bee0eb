//===- GpuModule.cpp - Device state of one loaded nvptx model -------------===//
//
// See GpuModule.h. Copies use the model's stream; host memory is pageable
// (the caller's), so the driver stages it, which is the simple, always-valid
// choice; callers that care bind device pointers instead.
//
//===----------------------------------------------------------------------===//

#include "cuda/GpuModule.h"

#include <algorithm>
#include <cstdio>

namespace torsor::rt::cuda {

namespace {

/// Appends the memref descriptor of a row-major tensor at device address
/// `ptr` to `storage` ({allocated, aligned, offset, sizes, strides}).
void appendDescriptor(std::vector<int64_t> &storage, CUdeviceptr ptr,
                      const std::vector<int64_t> &shape) {
  auto p = static_cast<int64_t>(ptr);
  storage.push_back(p);
  storage.push_back(p);
  storage.push_back(0);
  storage.insert(storage.end(), shape.begin(), shape.end());
  std::vector<int64_t> strides = rowMajorStrides(shape);
  storage.insert(storage.end(), strides.begin(), strides.end());
}

/// Bytes of a bound tensor.
size_t bytesOf(const BoundTensor &t) {
  int64_t n = numElements(t.shape);
  return n > 0 ? static_cast<size_t>(n) * dtypeSize(t.dtype) : 0;
}

} // namespace

Status GpuModule::create(const Manifest &manifest, const std::string &soPath,
                         std::unique_ptr<GpuModule> &out) {
  const Device *device = nullptr;
  Status s = openDevice(device);
  if (!s.ok())
    return s.withPrefix("cannot run nvptx model '" + soPath + "': ");
  std::unique_ptr<GpuModule> m(new GpuModule());
  m->dev = device;
  m->inputs.resize(manifest.inputs.size());
  m->inputDevice.assign(manifest.inputs.size(), 0);
  m->params.resize(manifest.params.size());
  m->paramDevice.assign(manifest.params.size(), 0);
  m->paramStale.assign(manifest.params.size(), 1);
  m->outputs.resize(manifest.outputs.size());
  for (int kind : {TORSOR_INPUT, TORSOR_PARAM, TORSOR_OUTPUT})
    for (const TensorSpec &t : manifest.list(kind))
      m->labels[kind].push_back(std::string(kindWord(kind)) + " '" + t.name +
                                "'");
  m->cotangents.resize(manifest.cotangents.size());
  m->gradients.resize(manifest.gradients.size());
  for (const TensorSpec &t : manifest.cotangents)
    m->cotangentLabels.push_back("cotangent '" + t.name + "'");
  for (const TensorSpec &t : manifest.gradients)
    m->gradientLabels.push_back("gradient '" + t.name + "'");
  CallState state;
  state.what = "loading model '" + soPath + "'";
  {
    CallScope scope(*device, state);
    check(device->driver->cuStreamCreate(&m->modelStream, kStreamNonBlocking),
          "cuStreamCreate (the model's stream)");
  }
  if (!state.error.ok())
    return state.error;
  out = std::move(m);
  return Status();
}

GpuModule::~GpuModule() {
  CallState state; // errors while freeing have nowhere to go but stderr
  {
    CallScope scope(*dev, state);
    const Driver &d = *dev->driver;
    if (modelStream)
      d.cuStreamSynchronize(modelStream);
    for (auto *list : {&inputs, &params, &outputs, &cotangents, &gradients})
      for (DeviceBuffer &b : *list)
        if (b.ptr)
          check(d.cuMemFree(b.ptr), "cuMemFree");
    if (modelStream)
      check(d.cuStreamDestroy(modelStream), "cuStreamDestroy");
  }
  if (!state.error.ok())
    std::fprintf(stderr, "torsor runtime: %s\n", state.error.message.c_str());
}

Status GpuModule::scoped(const std::string &what,
                         const std::function<void()> &fn) {
  CallState state;
  state.stream = modelStream;
  state.what = what;
  {
    CallScope scope(*dev, state);
    fn();
  }
  return state.error;
}

void GpuModule::noteBound(int kind, size_t index, bool onDevice) {
  if (kind == TORSOR_INPUT && index < inputDevice.size()) {
    inputDevice[index] = onDevice;
  } else if (kind == TORSOR_PARAM && index < paramDevice.size()) {
    paramDevice[index] = onDevice;
    paramStale[index] = !onDevice;
  }
}

void GpuModule::unbindInputs() {
  std::fill(inputDevice.begin(), inputDevice.end(), 0);
}

bool GpuModule::ensure(DeviceBuffer &buf, size_t bytes,
                       const std::string &label) {
  if (buf.bytes >= bytes && (buf.ptr || bytes == 0))
    return true;
  const Driver &d = *dev->driver;
  if (buf.ptr &&
      !checkLazy(d.cuMemFree(buf.ptr), [&] { return "cuMemFree of " + label; }))
    return false;
  buf = DeviceBuffer();
  if (bytes == 0)
    return true;
  if (!checkLazy(d.cuMemAlloc(&buf.ptr, bytes), [&] {
        return format("cuMemAlloc of %zu bytes for ", bytes) + label;
      }))
    return false;
  buf.bytes = bytes;
  return true;
}

bool GpuModule::upload(const BoundTensor &t, DeviceBuffer &buf,
                       const std::string &label) {
  size_t bytes = bytesOf(t);
  if (!ensure(buf, bytes, label))
    return false;
  return bytes == 0 ||
         checkLazy(dev->driver->cuMemcpyHtoDAsync(buf.ptr, t.data, bytes,
                                                  modelStream),
                   [&] {
                     return format("cuMemcpyHtoDAsync of %zu bytes (", bytes) +
                            label + ", host to device)";
                   });
}

Status GpuModule::run(void (*entry)(void **),
                      const std::vector<BoundTensor> &boundInputs,
                      const std::vector<BoundTensor> &boundParams,
                      const std::vector<std::vector<int64_t>> &outputShapes,
                      const std::vector<int32_t> &outputDTypes,
                      std::vector<HostTensor> &hostOutputs,
                      const std::string &what) {
  return call(entry, boundInputs, boundParams, {}, false, outputShapes,
              outputDTypes, outputs, labels[TORSOR_OUTPUT], copyOutputs,
              hostOutputs, what);
}

Status GpuModule::runBackward(
    void (*entry)(void **), const std::vector<BoundTensor> &boundInputs,
    const std::vector<BoundTensor> &boundParams,
    const std::vector<BoundTensor> &boundCotangents, bool cotangentsOnDevice,
    const std::vector<std::vector<int64_t>> &gradientShapes,
    const std::vector<int32_t> &gradientDTypes,
    std::vector<HostTensor> &hostGradients, const std::string &what) {
  return call(entry, boundInputs, boundParams, boundCotangents,
              cotangentsOnDevice, gradientShapes, gradientDTypes, gradients,
              gradientLabels, /*copyBack=*/!cotangentsOnDevice, hostGradients,
              what);
}

Status GpuModule::call(void (*entry)(void **),
                       const std::vector<BoundTensor> &boundInputs,
                       const std::vector<BoundTensor> &boundParams,
                       const std::vector<BoundTensor> &boundCotangents,
                       bool cotangentsOnDevice,
                       const std::vector<std::vector<int64_t>> &resultShapes,
                       const std::vector<int32_t> &resultDTypes,
                       std::vector<DeviceBuffer> &results,
                       const std::vector<std::string> &resultLabels,
                       bool copyBack, std::vector<HostTensor> &hostResults,
                       const std::string &what) {
  CallState state;
  state.stream = modelStream;
  state.what = what;
  {
    CallScope scope(*dev, state);
    const Driver &d = *dev->driver;
    std::vector<int64_t> storage;
    std::vector<size_t> starts;
    // Inputs and params: the caller's device pointer, or an upload.
    auto stage =
        [&](const std::vector<BoundTensor> &bound,
            std::vector<DeviceBuffer> &bufs, const std::vector<char> &onDevice,
            const std::vector<std::string> &names, std::vector<char> *stale) {
          for (size_t i = 0; i < bound.size() && !callFailed(); ++i) {
            CUdeviceptr ptr;
            if (i < onDevice.size() && onDevice[i]) {
              ptr = static_cast<CUdeviceptr>(
                  reinterpret_cast<uintptr_t>(bound[i].data));
            } else {
              if (!stale || (*stale)[i])
                if (upload(bound[i], bufs[i], names[i]) && stale)
                  (*stale)[i] = 0;
              ptr = bufs[i].ptr;
            }
            starts.push_back(storage.size());
            appendDescriptor(storage, ptr, bound[i].shape);
          }
        };
    stage(boundInputs, inputs, inputDevice, labels[TORSOR_INPUT], nullptr);
    stage(boundParams, params, paramDevice, labels[TORSOR_PARAM], &paramStale);
    // Cotangents (backward only): the caller's device memory, or host
    // tensors uploaded every call.
    stage(boundCotangents, cotangents,
          std::vector<char>(boundCotangents.size(), cotangentsOnDevice),
          cotangentLabels, nullptr);
    for (size_t i = 0; i < resultShapes.size() && !callFailed(); ++i) {
      int64_t n = numElements(resultShapes[i]);
      size_t bytes =
          n > 0 ? static_cast<size_t>(n) * dtypeSize(resultDTypes[i]) : 0;
      ensure(results[i], bytes, resultLabels[i]);
      starts.push_back(storage.size());
      appendDescriptor(storage, results[i].ptr, resultShapes[i]);
    }
    if (!callFailed()) {
      std::vector<void *> args;
      for (size_t start : starts)
        args.push_back(storage.data() + start);
      entry(args.data());
    }
    // Always drain the stream, so no work is left touching caller memory.
    check(d.cuStreamSynchronize(modelStream),
          "cuStreamSynchronize (waiting for the model's GPU work)");
    if (copyBack && !callFailed()) {
      for (size_t i = 0; i < hostResults.size() && !callFailed(); ++i)
        if (hostResults[i].byteSize())
          checkLazy(d.cuMemcpyDtoHAsync(hostResults[i].data(), results[i].ptr,
                                        hostResults[i].byteSize(), modelStream),
                    [&] {
                      return format("cuMemcpyDtoHAsync of %zu bytes (",
                                    hostResults[i].byteSize()) +
                             resultLabels[i] + ", device to host)";
                    });
      check(d.cuStreamSynchronize(modelStream),
            "cuStreamSynchronize (after copying the results back)");
    }
  }
  return state.error;
}

} // namespace torsor::rt::cuda
