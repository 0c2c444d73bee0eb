//===- CudaDriver.cpp - Load libcuda.so.1 with dlopen ---------------------===//
//
// Opens the driver library once per process (RTLD_LOCAL: its symbols must
// not leak into models) and resolves every entry point by its real, possibly
// versioned, symbol name. A missing library is the normal case on a machine
// without a GPU, so its message says what is missing and what to do instead.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace torsor::rt::cuda {

namespace {

/// The process-wide driver table and the outcome of loading it.
struct Loaded {
  Driver driver{};
  Status status;
  bool ok = false;
};

/// Resolves `name` into `slot`; a required symbol that is missing fails.
template <typename Fn>
bool resolve(void *lib, const char *name, Fn &slot, bool required,
             std::string &missing) {
  slot = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!slot && required) {
    missing += missing.empty() ? name : std::string(", ") + name;
    return false;
  }
  return true;
}

/// Opens the library and fills the table.
Loaded load() {
  Loaded l;
  const char *override = std::getenv(kDriverPathEnv);
  bool custom = override && *override;
  const char *path = custom ? override : "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    if (custom)
      l.status = Status(TORSOR_UNAVAILABLE,
                        format("CUDA driver not found: cannot load '%s' "
                               "(from %s): %s",
                               path, kDriverPathEnv, dlerror()));
    else
      l.status = Status(
          TORSOR_UNAVAILABLE,
          "CUDA driver not found: cannot load libcuda.so.1, so this machine "
          "has no NVIDIA driver (or no NVIDIA GPU). --device cuda needs an "
          "NVIDIA GPU with its driver installed; on this machine compile "
          "with torsorc --target=cpu and run with --device cpu");
    return l;
  }
  Driver &d = l.driver;
  std::string missing;
  resolve(lib, "cuInit", d.cuInit, true, missing);
  resolve(lib, "cuDriverGetVersion", d.cuDriverGetVersion, true, missing);
  resolve(lib, "cuGetErrorName", d.cuGetErrorName, true, missing);
  resolve(lib, "cuGetErrorString", d.cuGetErrorString, true, missing);
  resolve(lib, "cuDeviceGetCount", d.cuDeviceGetCount, true, missing);
  resolve(lib, "cuDeviceGet", d.cuDeviceGet, true, missing);
  resolve(lib, "cuDeviceGetName", d.cuDeviceGetName, true, missing);
  resolve(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, true, missing);
  resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, true,
          missing);
  resolve(lib, "cuDevicePrimaryCtxRelease_v2", d.cuDevicePrimaryCtxRelease,
          true, missing);
  resolve(lib, "cuCtxPushCurrent_v2", d.cuCtxPushCurrent, true, missing);
  resolve(lib, "cuCtxPopCurrent_v2", d.cuCtxPopCurrent, true, missing);
  resolve(lib, "cuModuleLoadData", d.cuModuleLoadData, true, missing);
  resolve(lib, "cuModuleLoadDataEx", d.cuModuleLoadDataEx, true, missing);
  resolve(lib, "cuModuleUnload", d.cuModuleUnload, true, missing);
  resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction, true, missing);
  resolve(lib, "cuLaunchKernel", d.cuLaunchKernel, true, missing);
  resolve(lib, "cuLaunchKernelEx", d.cuLaunchKernelEx, false, missing);
  resolve(lib, "cuStreamCreate", d.cuStreamCreate, true, missing);
  resolve(lib, "cuStreamDestroy_v2", d.cuStreamDestroy, true, missing);
  resolve(lib, "cuStreamSynchronize", d.cuStreamSynchronize, true, missing);
  resolve(lib, "cuStreamWaitEvent", d.cuStreamWaitEvent, true, missing);
  resolve(lib, "cuEventCreate", d.cuEventCreate, true, missing);
  resolve(lib, "cuEventDestroy_v2", d.cuEventDestroy, true, missing);
  resolve(lib, "cuEventSynchronize", d.cuEventSynchronize, true, missing);
  resolve(lib, "cuEventRecord", d.cuEventRecord, true, missing);
  resolve(lib, "cuMemAlloc_v2", d.cuMemAlloc, true, missing);
  resolve(lib, "cuMemAllocManaged", d.cuMemAllocManaged, false, missing);
  resolve(lib, "cuMemFree_v2", d.cuMemFree, true, missing);
  resolve(lib, "cuMemcpyAsync", d.cuMemcpyAsync, true, missing);
  resolve(lib, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync, true, missing);
  resolve(lib, "cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync, true, missing);
  resolve(lib, "cuMemsetD32Async", d.cuMemsetD32Async, true, missing);
  resolve(lib, "cuMemsetD16Async", d.cuMemsetD16Async, true, missing);
  resolve(lib, "cuMemHostRegister_v2", d.cuMemHostRegister, false, missing);
  resolve(lib, "cuMemHostUnregister", d.cuMemHostUnregister, false, missing);
  if (!missing.empty()) {
    l.status = Status(TORSOR_UNAVAILABLE,
                      format("the CUDA driver '%s' is too old or not a CUDA "
                             "driver: it lacks %s; update the NVIDIA driver",
                             path, missing.c_str()));
    return l; // the library stays open; it is tiny next to a failed run
  }
  l.ok = true;
  return l;
}

/// The cached load (thread-safe first use; never destroyed, since models
/// may call in from static destructors at exit).
const Loaded &loaded() {
  static const Loaded *l = new Loaded(load()); // never destroyed, as above
  return *l;
}

} // namespace

Status loadDriver(const Driver *&driver) {
  const Loaded &l = loaded();
  driver = l.ok ? &l.driver : nullptr;
  return l.status;
}

std::string errorText(CUresult result) {
  const Loaded &l = loaded();
  const char *name = nullptr, *text = nullptr;
  if (l.ok) {
    l.driver.cuGetErrorName(result, &name);
    l.driver.cuGetErrorString(result, &text);
  }
  std::string out = name ? name : format("CUDA error %d", result);
  if (text)
    out += format(" (%s)", text);
  return out;
}

} // namespace torsor::rt::cuda
