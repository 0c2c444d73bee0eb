//===- GpuModule.h - Device state of one loaded nvptx model -----*- C++ -*-===//
//
// What the runtime keeps per nvptx model (compiled-model ABI version 2,
// whose descriptors hold device pointers): the model's stream, the device
// buffers for inputs, params and outputs (reused across runs while their
// size fits), which tensors the caller bound as device pointers, and the
// run sequence: upload host-bound inputs (and params bound since the last
// upload), call the entry point with device descriptors, synchronize the
// stream, and copy the outputs back unless the caller keeps them on the
// device. docs/runtime.md describes the lifecycle.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_CUDA_GPUMODULE_H
#define TORSOR_RUNTIME_CUDA_GPUMODULE_H

#include "Binding.h"
#include "cuda/CudaDevice.h"

#include <functional>
#include <memory>
#include <vector>

namespace torsor::rt::cuda {

/// A device allocation owned by a GpuModule.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
};

/// The device side of one loaded nvptx model.
class GpuModule {
public:
  /// Opens the device and creates the model's stream. `soPath` labels
  /// messages. The caller checks `manifest.gpuArch` against device() (with
  /// checkArch) once OUT.json is known to match the library.
  static Status create(const Manifest &manifest, const std::string &soPath,
                       std::unique_ptr<GpuModule> &out);
  /// Frees the buffers and the stream.
  ~GpuModule();

  /// Runs `fn` (dlopen or dlclose of the model, whose constructors and
  /// destructors load and unload its GPU binary) with the device current
  /// and errors captured; returns the first error.
  Status scoped(const std::string &what, const std::function<void()> &fn);

  /// Notes that tensor `index` of `kind` (input or param) was bound, on the
  /// device (`onDevice`) or in host memory (uploaded at the next run).
  void noteBound(int kind, size_t index, bool onDevice);
  /// Forgets device bindings of inputs (torsorModuleUnbindInputs).
  void unbindInputs();

  /// One run: see the file comment. `hostOutputs` receive the results when
  /// hostCopies() is on; `outputShapes` are the resolved output shapes.
  Status run(void (*entry)(void **), const std::vector<BoundTensor> &inputs,
             const std::vector<BoundTensor> &params,
             const std::vector<std::vector<int64_t>> &outputShapes,
             const std::vector<int32_t> &outputDTypes,
             std::vector<HostTensor> &hostOutputs, const std::string &what);

  /// One backward run (torsorc --grad's entry): inputs and params as in
  /// run(). Host cotangents are uploaded and the gradients copied back
  /// into `hostGradients`; device cotangents (`cotangentsOnDevice`) are
  /// used in place and the gradients stay on the device (gradientPtr()).
  Status runBackward(void (*entry)(void **),
                     const std::vector<BoundTensor> &inputs,
                     const std::vector<BoundTensor> &params,
                     const std::vector<BoundTensor> &cotangents,
                     bool cotangentsOnDevice,
                     const std::vector<std::vector<int64_t>> &gradientShapes,
                     const std::vector<int32_t> &gradientDTypes,
                     std::vector<HostTensor> &hostGradients,
                     const std::string &what);

  /// Whether runs copy outputs back to host memory (default on).
  bool hostCopies() const { return copyOutputs; }
  void setHostCopies(bool on) { copyOutputs = on; }
  /// Device address of output `index` after a run.
  CUdeviceptr outputPtr(size_t index) const {
    return index < outputs.size() ? outputs[index].ptr : 0;
  }
  /// Device address of gradient `index` after a backward run.
  CUdeviceptr gradientPtr(size_t index) const {
    return index < gradients.size() ? gradients[index].ptr : 0;
  }
  /// True when input `index` is bound as a device pointer.
  bool inputOnDevice(size_t index) const {
    return index < inputDevice.size() && inputDevice[index];
  }
  /// The model's stream.
  CUstream stream() const { return modelStream; }
  const Device &device() const { return *dev; }

private:
  GpuModule() = default;
  /// run() and runBackward(): stages inputs, params and `extra` tensors
  /// (the cotangents: uploaded, or used in place when `extraOnDevice`),
  /// sizes `results` to `resultShapes`, calls `entry` and copies the
  /// results into `hostResults` when `copyBack`.
  Status call(void (*entry)(void **), const std::vector<BoundTensor> &inputs,
              const std::vector<BoundTensor> &params,
              const std::vector<BoundTensor> &extra, bool extraOnDevice,
              const std::vector<std::vector<int64_t>> &resultShapes,
              const std::vector<int32_t> &resultDTypes,
              std::vector<DeviceBuffer> &results,
              const std::vector<std::string> &resultLabels, bool copyBack,
              std::vector<HostTensor> &hostResults, const std::string &what);
  /// Grows `buf` to at least `bytes` (freeing the old allocation).
  bool ensure(DeviceBuffer &buf, size_t bytes, const std::string &label);
  /// Uploads host tensor `t` into `buf`.
  bool upload(const BoundTensor &t, DeviceBuffer &buf,
              const std::string &label);

  const Device *dev = nullptr;
  CUstream modelStream = nullptr;
  std::vector<DeviceBuffer> inputs, params, outputs, cotangents, gradients;
  std::vector<char> inputDevice, paramDevice, paramStale;
  bool copyOutputs = true;
  /// "input 'x'" per tensor of each kind, for messages.
  std::vector<std::string> labels[3];
  std::vector<std::string> cotangentLabels, gradientLabels;
};

} // namespace torsor::rt::cuda

#endif // TORSOR_RUNTIME_CUDA_GPUMODULE_H
