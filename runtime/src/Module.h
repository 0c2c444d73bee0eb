//===- Module.h - A loaded model and what it runs ---------------*- C++ -*-===//
//
// The module behind the C API (torsor/runtime.h): the manifest, the loaded
// library and its entry points, the bound inputs and params, the outputs and
// gradients of the last run. Module.cpp loads, binds and runs it; CApi.cpp
// holds the `extern "C"` shims, which check their arguments, convert
// statuses and exceptions, and own the lifetime rules (one call at a time
// per module, see Claim).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_MODULE_H
#define TORSOR_RUNTIME_MODULE_H

#include "torsor/runtime.h"

#include "Binding.h"
#include "Manifest.h"
#include "ModelMemory.h"
#include "Support.h"
#include "cuda/GpuModule.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

/// The C status object: a code and a message.
struct TorsorStatus {
  TorsorStatusCode code;
  std::string message;
};

/// A loaded model and its bindings.
struct TorsorModule {
  torsor::rt::Manifest manifest;
  std::string soPath;
  void *handle = nullptr;
  void (*entry)(void **) = nullptr;
  /// Measures declared-group inputs (null when the model has none).
  void (*residualEntry)(void **) = nullptr;
  /// torsorc --grad's torsor_backward, and the gradients of its last run.
  void (*backwardEntry)(void **) = nullptr;
  std::vector<torsor::rt::HostTensor> gradients;
  std::vector<std::vector<int64_t>> gradientStrides;
  /// Gradient shapes of the last backward run.
  std::vector<std::vector<int64_t>> gradientShapes;
  bool haveGradients = false;
  /// False after a backward run of an nvptx model on device cotangents:
  /// its gradients stayed on the device (torsorModuleGetGradientDevice).
  bool gradientsOnHost = true;
  std::vector<torsor::rt::BoundTensor> inputs, params;
  /// `--compute=bf16`: the entry that packs the params (manifest
  /// "prepare"), the model-owned buffer it writes and every forward call
  /// reads, and whether a param was bound or loaded since it last ran (it
  /// runs before the next forward call then).
  void (*prepareEntry)(void **) = nullptr;
  torsor::rt::HostTensor prepared;
  bool paramsChanged = true;
  std::vector<torsor::rt::HostTensor> outputs;
  std::vector<std::vector<int64_t>> outputStrides;
  /// Output shapes of the last run of an nvptx model.
  std::vector<std::vector<int64_t>> outputShapes;
  bool haveOutputs = false;
  /// On by default: a malformed pose gives garbage silently otherwise.
  bool checkGroups = true;
  double groupTol = 1e-4;
  /// Device state of an nvptx model (ABI 2); null for CPU models.
  std::unique_ptr<torsor::rt::cuda::GpuModule> gpu;
  /// Set while a call owns the module (run, bind, load weights): a module
  /// runs one call at a time, and a second one is refused, not raced.
  std::atomic<bool> busy{false};
  /// Most bytes compiled code may hold during a run (0: no limit), the
  /// peak of the last run and the largest peak of any run (ModelMemory.h).
  uint64_t memoryLimit = 0;
  uint64_t lastPeak = 0;
  /// Set by the run, read and lowered by torsorModuleSetMemoryLimit,
  /// which may be called from another thread (as may the cache's switch).
  std::atomic<uint64_t> largestPeak{0};
  /// Large buffers earlier runs freed, for the next runs (ModelMemory.h);
  /// on unless torsorModuleSetBufferCache turned it off.
  torsor::rt::BufferCache buffers;
  std::atomic<bool> cacheBuffers{true};

  /// Unloads the model library (outputs and owned params free themselves).
  /// An nvptx model's destructors unload its GPU binary, so they run with
  /// the device current.
  ~TorsorModule();
};

namespace torsor::rt {

/// The manifest path for a model path: "m.so" -> "m.json".
std::string manifestPathFor(const std::string &soPath);

/// Reads the manifest beside `soPath`, dlopens the model and checks its ABI
/// and its embedded manifest against OUT.json.
Status loadModule(const std::string &soPath, TorsorModule &m);

/// Validates `t` against the manifest's `kind` tensor `name` and binds it
/// (host memory).
Status bindHost(TorsorModule &m, int kind, const char *name,
                const TorsorTensor *t);

/// The same checks as bindHost, but `t->data` is a device address of an
/// nvptx model and must be row-major.
Status bindDevice(TorsorModule &m, int kind, const char *name,
                  const TorsorTensor *t);

/// Checks a device tensor `t` against `spec` (dtype, rank, fixed extents,
/// row-major) and describes it in `out` without reading it.
Status bindDeviceTensor(int kind, const TensorSpec &spec, const TorsorTensor *t,
                        BoundTensor &out);

/// Receives the message of each conversion that rounds (loadWeights).
using RoundingNote = std::function<void(const std::string &)>;

/// Binds every tensor of a .safetensors bundle as a param. With `note`,
/// under the hosts' dtype policy: float tensors of the other float dtype
/// are converted (convertFloatForModel), each rounding one reported to
/// `note`; without it, dtypes must match (f16/bf16 storage is widened).
Status loadWeights(TorsorModule &m, const char *safetensorsPath,
                   const RoundingNote *note = nullptr);

/// Validates the bindings, allocates the outputs and calls the entry point.
Status runModule(TorsorModule &m);

/// Calls torsor_backward with `n` cotangents (one per output, in order).
/// With `onDevice` (nvptx models only) the cotangents are device memory
/// and the gradients stay on the device.
Status runModuleBackward(TorsorModule &m, const TorsorTensor *cots, int32_t n,
                         bool onDevice = false);

/// Claims a module for one call; a second concurrent call is refused.
class Claim {
public:
  explicit Claim(TorsorModule *m) : m(m), owned(!m->busy.exchange(true)) {}
  ~Claim() {
    if (owned)
      m->busy.store(false);
  }
  Claim(const Claim &) = delete;
  Claim &operator=(const Claim &) = delete;
  /// False when another call holds the module.
  explicit operator bool() const { return owned; }

private:
  TorsorModule *m;
  bool owned;
};

/// The error for a call that finds the module busy.
Status busyError();

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_MODULE_H
