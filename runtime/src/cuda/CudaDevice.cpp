//===- CudaDevice.cpp - GPU context, per-call state and errors ------------===//
//
// See CudaDevice.h. Every failure message names the driver call, the CUDA
// error (name and text) and the runtime operation it happened in, e.g.
// "CUDA error in cuMemAlloc of 4096 bytes while running model 'm.so':
// CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaDevice.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace torsor::rt::cuda {

namespace {

/// The current call of each thread.
thread_local CallState *tlsCall = nullptr;

/// The outcome of opening the device.
struct Opened {
  Device device;
  Status status;
  bool ok = false;
};

/// Picks the ordinal from TORSOR_CUDA_DEVICE.
Status deviceOrdinal(int count, int &ordinal) {
  ordinal = 0;
  const char *env = std::getenv(kDeviceEnv);
  if (env && *env) {
    char *end = nullptr;
    errno = 0;
    long v = std::strtol(env, &end, 10);
    if (*end || errno || v < 0 || v > 1 << 20)
      return invalidArg(
          format("%s='%s' is not a device ordinal", kDeviceEnv, env));
    ordinal = static_cast<int>(v);
  }
  if (ordinal >= count)
    return Status(TORSOR_UNAVAILABLE,
                  format("%s=%d, but the CUDA driver reports %d GPU%s",
                         kDeviceEnv, ordinal, count, count == 1 ? "" : "s"));
  return Status();
}

/// Loads the driver and retains the device's primary context.
Opened open() {
  Opened o;
  Device &d = o.device;
  o.status = loadDriver(d.driver);
  if (!o.status.ok())
    return o;
  const Driver &drv = *d.driver;
  CUresult r = drv.cuInit(0);
  if (r == kCudaErrorNoDevice) {
    o.status = Status(TORSOR_UNAVAILABLE,
                      "no GPU: the CUDA driver is installed but reports no "
                      "CUDA device (cuInit: " +
                          errorText(r) +
                          "); --device cuda needs an NVIDIA GPU, or run a "
                          "model compiled with --target=cpu");
    return o;
  }
  if (r != kCudaSuccess) {
    o.status = Status(TORSOR_UNAVAILABLE,
                      "cannot initialize the CUDA driver: cuInit failed with " +
                          errorText(r));
    return o;
  }
  int count = 0;
  if ((r = drv.cuDeviceGetCount(&count)) != kCudaSuccess || count <= 0) {
    o.status = Status(TORSOR_UNAVAILABLE,
                      "no GPU: the CUDA driver reports no CUDA device");
    return o;
  }
  if (!(o.status = deviceOrdinal(count, d.ordinal)).ok())
    return o;
  char name[256] = {0};
  if ((r = drv.cuDeviceGet(&d.device, d.ordinal)) != kCudaSuccess ||
      (r = drv.cuDeviceGetName(name, sizeof(name) - 1, d.device)) !=
          kCudaSuccess ||
      (r = drv.cuDeviceGetAttribute(&d.ccMajor, kAttrComputeCapabilityMajor,
                                    d.device)) != kCudaSuccess ||
      (r = drv.cuDeviceGetAttribute(&d.ccMinor, kAttrComputeCapabilityMinor,
                                    d.device)) != kCudaSuccess) {
    o.status =
        Status(TORSOR_UNAVAILABLE,
               format("cannot query GPU %d: ", d.ordinal) + errorText(r));
    return o;
  }
  d.name = name;
  if ((r = drv.cuDevicePrimaryCtxRetain(&d.context, d.device)) !=
      kCudaSuccess) {
    o.status = Status(TORSOR_UNAVAILABLE,
                      format("cannot create a CUDA context on GPU %d '%s': ",
                             d.ordinal, name) +
                          errorText(r));
    return o;
  }
  // The primary context stays retained for the life of the process: models
  // unload in static destructors, after which releasing it would race them.
  o.ok = true;
  return o;
}

/// Parses "sm_90" / "sm_90a" into the compute capability.
bool parseArch(const std::string &arch, int &major, int &minor, bool &exact) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
    return false;
  size_t i = 3, n = 0;
  while (i < arch.size() && arch[i] >= '0' && arch[i] <= '9' && i < 7)
    n = n * 10 + (arch[i++] - '0');
  if (i < 5)
    return false;
  exact = false;
  if (i < arch.size()) {
    if (i + 1 != arch.size() || (arch[i] != 'a' && arch[i] != 'f'))
      return false;
    exact = arch[i] == 'a';
  }
  major = static_cast<int>(n / 10);
  minor = static_cast<int>(n % 10);
  return true;
}

} // namespace

Status openDevice(const Device *&device) {
  // Never destroyed: models unload from static destructors that may run
  // after this function's statics would have been.
  static const Opened *o = new Opened(open());
  device = o->ok ? &o->device : nullptr;
  return o->status;
}

Status checkArch(const std::string &gpuArch, const Device &device,
                 const std::string &model) {
  int major, minor;
  bool exact;
  if (!parseArch(gpuArch, major, minor, exact))
    return Status(TORSOR_ABI_ERROR,
                  format("model '%s': manifest gpu_arch '%s' is not an "
                         "NVIDIA arch like 'sm_90'",
                         model.c_str(), gpuArch.c_str()));
  bool runs = major == device.ccMajor &&
              (exact ? minor == device.ccMinor : minor <= device.ccMinor);
  if (runs)
    return Status();
  return Status(
      TORSOR_FAILED_PRECONDITION,
      format("model '%s' was compiled for %s (compute capability %d.%d), but "
             "GPU %d '%s' has compute capability %d.%d; recompile it with "
             "torsorc --target=nvptx --gpu-arch=sm_%d%d",
             model.c_str(), gpuArch.c_str(), major, minor, device.ordinal,
             device.name.c_str(), device.ccMajor, device.ccMinor,
             device.ccMajor, device.ccMinor));
}

CallScope::CallScope(const Device &device, CallState &state)
    : device(device), previous(tlsCall) {
  tlsCall = &state;
  pushed = check(device.driver->cuCtxPushCurrent(device.context),
                 "cuCtxPushCurrent");
}

CallScope::~CallScope() {
  if (pushed) {
    CUcontext popped = nullptr;
    check(device.driver->cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
  }
  tlsCall = previous;
}

CallState *currentCall() { return tlsCall; }

void recordError(const Status &status) {
  if (CallState *call = tlsCall) {
    if (call->error.ok())
      call->error = call->what.empty()
                        ? status
                        : Status(status.code, status.message + " (while " +
                                                  call->what + ")");
    return;
  }
  std::fprintf(stderr, "torsor runtime: %s\n", status.message.c_str());
}

bool callFailed() { return tlsCall && !tlsCall->error.ok(); }

bool check(CUresult result, const std::string &call) {
  if (result == kCudaSuccess)
    return true;
  recordError(Status(TORSOR_DEVICE_ERROR,
                     "CUDA error in " + call + ": " + errorText(result)));
  return false;
}

} // namespace torsor::rt::cuda
