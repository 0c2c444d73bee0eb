//===- CudaDevice.h - GPU context, per-call state and errors ----*- C++ -*-===//
//
// One process-wide device: the driver's primary context of GPU 0 (or of
// TORSOR_CUDA_DEVICE), retained on first use and pushed on the calling thread
// around every runtime operation, so a host that has its own context current
// (PyTorch, JAX) gets it back afterwards.
//
// MLIR's mgpu* entry points return void, so driver errors inside a model's
// host code cannot be returned to their caller. Instead each runtime
// operation that may run model code (load, run, unload) installs a CallState
// on its thread: the model's stream, a description of the operation, and the
// first error. mgpu* wrappers record into it and, once it holds an error,
// skip further work (frees excepted), so one failure gives one message and
// no cascade; the runtime returns that error from the operation.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_CUDA_CUDADEVICE_H
#define TORSOR_RUNTIME_CUDA_CUDADEVICE_H

#include "cuda/CudaDriver.h"

#include <string>

namespace torsor::rt::cuda {

/// The GPU the runtime uses.
struct Device {
  const Driver *driver = nullptr;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  int ccMajor = 0, ccMinor = 0;
  std::string name;
};

/// Loads the driver, initializes it and retains the primary context of the
/// chosen device, once per process; later calls return the cached outcome.
/// Fails with TORSOR_UNAVAILABLE and a message saying what is missing.
Status openDevice(const Device *&device);

/// The environment variable choosing the device ordinal (default 0).
inline constexpr const char *kDeviceEnv = "TORSOR_CUDA_DEVICE";

/// While one lives on a thread, mgpuModuleLoad and mgpuModuleLoadJIT return
/// NULL without touching the driver: a model library is opened only to read
/// its embedded manifest (its constructor would load a GPU binary that may
/// not be for this GPU).
class InspectOnly {
public:
  InspectOnly();
  ~InspectOnly();
  InspectOnly(const InspectOnly &) = delete;
  InspectOnly &operator=(const InspectOnly &) = delete;
  /// Whether the calling thread is inspecting.
  static bool active();

private:
  bool previous;
};

/// Checks that code compiled for `gpuArch` ("sm_90", "sm_90a") runs on
/// `device`: same major compute capability and a minor no newer than the
/// device's ("a" variants need the exact chip). `model` labels the message.
Status checkArch(const std::string &gpuArch, const Device &device,
                 const std::string &model);

/// The state of one runtime operation on one thread.
struct CallState {
  CUstream stream = nullptr; ///< handed out by mgpuStreamCreate
  std::string what;          ///< "running model 'm.so'", for messages
  Status error;              ///< the first error, if any
};

/// While alive, makes the device's context current on this thread and
/// `state` this thread's current call (restoring both afterwards).
class CallScope {
public:
  CallScope(const Device &device, CallState &state);
  ~CallScope();
  CallScope(const CallScope &) = delete;
  CallScope &operator=(const CallScope &) = delete;

private:
  const Device &device;
  CallState *previous;
  bool pushed = false;
};

/// This thread's current call, or nullptr outside any runtime operation.
CallState *currentCall();

/// Records `status` as the current call's error unless it already has one.
/// Outside a call (a model used without the runtime's scopes) the message
/// goes to stderr, as MLIR's own wrappers do.
void recordError(const Status &status);

/// True when the current call already failed (later work is skipped).
bool callFailed();

/// Records a failing driver `result` of `call` ("cuMemAlloc of 4096 bytes")
/// and returns false; returns true on success.
bool check(CUresult result, const std::string &call);
/// The same for a literal description (no string is built on success).
inline bool check(CUresult result, const char *call) {
  return result == kCudaSuccess || check(result, std::string(call));
}

/// As check(), but builds the description only on failure (`describe()`
/// returns it), so hot paths such as launches format nothing on success.
template <typename Describe>
bool checkLazy(CUresult result, Describe describe) {
  return result == kCudaSuccess || check(result, describe());
}

} // namespace torsor::rt::cuda

#endif // TORSOR_RUNTIME_CUDA_CUDADEVICE_H
