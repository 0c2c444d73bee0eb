//===- FakeCuda.cpp - A stand-in libcuda.so.1 for tests without a GPU -----===//
//
// Built as <build>/lib/fakecuda/libcuda.so.1 and loaded by the runtime when
// TORSOR_CUDA_DRIVER points at it, so the whole ABI-2 path (driver loading,
// context, stream, device allocations, copies both ways, kernel launches,
// synchronization, error messages, arch checks) runs on a machine with no
// GPU. Device memory is host memory handed out as integer addresses; every
// copy, memset and free is checked against the live allocations, so the
// runtime passing a host pointer where a device address belongs is caught.
// PTX cannot run here: a launch is recorded, and one kernel name,
// "torsor_fake_axpy", is emulated so numbers flow end to end:
//   out[i] = 2 * in[i] + w[i % d]   for i < n
// with MLIR's expanded kernel arguments (in, w, out as rank-1 memrefs of 5
// fields each, then n and d).
//
// Knobs (environment, read at each call):
//   FAKE_CUDA_LOG=FILE     append one line per interesting call
//   FAKE_CUDA_CC=M.m       compute capability (default 9.0)
//   FAKE_CUDA_NO_DEVICE=1  cuInit fails with CUDA_ERROR_NO_DEVICE
//   FAKE_CUDA_FAIL=NAME    the named entry point fails (OOM for allocations,
//                          CUDA_ERROR_LAUNCH_FAILED for launches, otherwise
//                          CUDA_ERROR_INVALID_VALUE)
// At exit it logs "exit live=N", the allocations never freed.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2,
                   kNoDevice = 100, kInvalidHandle = 400, kLaunchFailed = 719;

/// A fake module or function handle.
struct Module {
  size_t bytes;
};
struct Function {
  std::string name;
};

std::mutex mutex;
/// Live device allocations: address -> size.
std::map<CUdeviceptr, size_t> &allocations() {
  static std::map<CUdeviceptr, size_t> a;
  return a;
}

/// Appends a line to FAKE_CUDA_LOG.
void log(const std::string &line) {
  const char *path = std::getenv("FAKE_CUDA_LOG");
  if (!path || !*path)
    return;
  if (FILE *f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

/// True when FAKE_CUDA_FAIL names `entry`.
bool failing(const char *entry) {
  const char *f = std::getenv("FAKE_CUDA_FAIL");
  return f && std::strcmp(f, entry) == 0;
}

/// True when [p, p + n) lies inside one live allocation.
bool inDevice(CUdeviceptr p, size_t n) {
  std::lock_guard<std::mutex> lock(mutex);
  auto &a = allocations();
  auto it = a.upper_bound(p);
  if (it == a.begin())
    return false;
  --it;
  return p >= it->first && p + n <= it->first + it->second;
}

/// Logs leaks when the process ends.
struct AtExit {
  ~AtExit() { log("exit live=" + std::to_string(allocations().size())); }
} atExit;

/// Reads a kernel argument of type T from the launch's params array.
template <typename T> T arg(void **params, int i) {
  return *static_cast<T *>(params[i]);
}

} // namespace

#define FAKE extern "C" __attribute__((visibility("default")))

/// Test hook (not a driver function): live allocations right now.
FAKE int fakeCudaLiveAllocations() {
  std::lock_guard<std::mutex> lock(mutex);
  return static_cast<int>(allocations().size());
}

FAKE CUresult cuInit(unsigned) {
  const char *nd = std::getenv("FAKE_CUDA_NO_DEVICE");
  return nd && *nd == '1' ? kNoDevice : kSuccess;
}
FAKE CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return kSuccess;
}
FAKE CUresult cuGetErrorName(CUresult r, const char **name) {
  switch (r) {
  case kSuccess:
    *name = "CUDA_SUCCESS";
    return kSuccess;
  case kInvalidValue:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return kSuccess;
  case kOutOfMemory:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return kSuccess;
  case kNoDevice:
    *name = "CUDA_ERROR_NO_DEVICE";
    return kSuccess;
  case kInvalidHandle:
    *name = "CUDA_ERROR_INVALID_HANDLE";
    return kSuccess;
  case kLaunchFailed:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    return kSuccess;
  default:
    *name = nullptr;
    return kInvalidValue;
  }
}
FAKE CUresult cuGetErrorString(CUresult r, const char **text) {
  switch (r) {
  case kSuccess:
    *text = "no error";
    return kSuccess;
  case kInvalidValue:
    *text = "invalid argument";
    return kSuccess;
  case kOutOfMemory:
    *text = "out of memory";
    return kSuccess;
  case kNoDevice:
    *text = "no CUDA-capable device is detected";
    return kSuccess;
  case kInvalidHandle:
    *text = "invalid resource handle";
    return kSuccess;
  case kLaunchFailed:
    *text = "unspecified launch failure";
    return kSuccess;
  default:
    *text = nullptr;
    return kInvalidValue;
  }
}
FAKE CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return kSuccess;
}
FAKE CUresult cuDeviceGet(int *d, int ordinal) {
  if (ordinal != 0)
    return kInvalidValue;
  *d = 0;
  return kSuccess;
}
FAKE CUresult cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, len, "Fake GPU");
  return kSuccess;
}
FAKE CUresult cuDeviceGetAttribute(int *v, int attr, int) {
  const char *cc = std::getenv("FAKE_CUDA_CC");
  int major = 9, minor = 0;
  if (cc && *cc)
    std::sscanf(cc, "%d.%d", &major, &minor);
  if (attr == 75)
    *v = major;
  else if (attr == 76)
    *v = minor;
  else
    return kInvalidValue;
  return kSuccess;
}
FAKE CUresult cuDevicePrimaryCtxRetain(void **ctx, int) {
  static int context;
  *ctx = &context;
  log("cuDevicePrimaryCtxRetain");
  return kSuccess;
}
FAKE CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
FAKE CUresult cuCtxPushCurrent_v2(void *) { return kSuccess; }
FAKE CUresult cuCtxPopCurrent_v2(void **ctx) {
  if (ctx)
    *ctx = nullptr;
  return kSuccess;
}
FAKE CUresult cuModuleLoadData(void **module, const void *image) {
  if (failing("cuModuleLoadData"))
    return kInvalidValue;
  *module = new Module{0};
  log("cuModuleLoadData");
  (void)image;
  return kSuccess;
}
FAKE CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned,
                                 int *, void **) {
  return cuModuleLoadData(module, image);
}
FAKE CUresult cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  log("cuModuleUnload");
  return kSuccess;
}
FAKE CUresult cuModuleGetFunction(void **f, void *module, const char *name) {
  if (!module)
    return kInvalidHandle;
  *f = new Function{name}; // leaked on purpose: lives as long as the module
  log(std::string("cuModuleGetFunction ") + name);
  return kSuccess;
}
FAKE CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz,
                             unsigned bx, unsigned by, unsigned bz,
                             unsigned smem, void *stream, void **params,
                             void **) {
  auto *f = static_cast<Function *>(fn);
  log("cuLaunchKernel " + f->name + " grid=" + std::to_string(gx) + "," +
      std::to_string(gy) + "," + std::to_string(gz) + " block=" +
      std::to_string(bx) + "," + std::to_string(by) + "," + std::to_string(bz) +
      " smem=" + std::to_string(smem) + (stream ? " stream" : " nullstream"));
  if (failing("cuLaunchKernel"))
    return kLaunchFailed;
  if (f->name == "torsor_fake_axpy") {
    // in: params[0..4], w: params[5..9], out: params[10..14], n, d.
    auto in = arg<CUdeviceptr>(params, 1), w = arg<CUdeviceptr>(params, 6),
         out = arg<CUdeviceptr>(params, 11);
    auto n = arg<int64_t>(params, 15), d = arg<int64_t>(params, 16);
    size_t nb = static_cast<size_t>(n) * sizeof(float);
    if (d <= 0 || !inDevice(in, nb) || !inDevice(out, nb) ||
        !inDevice(w, static_cast<size_t>(d) * sizeof(float)))
      return kLaunchFailed; // an illegal address on a real GPU
    auto *pin = reinterpret_cast<const float *>(static_cast<uintptr_t>(in));
    auto *pw = reinterpret_cast<const float *>(static_cast<uintptr_t>(w));
    auto *pout = reinterpret_cast<float *>(static_cast<uintptr_t>(out));
    for (int64_t i = 0; i < n; ++i)
      pout[i] = 2.0f * pin[i] + pw[i % d];
  } else if (f->name == "torsor_fake_axpy_grad") {
    // The VJP of out = 2 x + w: cot: params[0..4], gx: params[5..9],
    // gw: params[10..14], n, d. gx = 2 cot, gw[j] = Σ_l cot[l, j].
    auto cot = arg<CUdeviceptr>(params, 1), gx = arg<CUdeviceptr>(params, 6),
         gw = arg<CUdeviceptr>(params, 11);
    auto n = arg<int64_t>(params, 15), d = arg<int64_t>(params, 16);
    size_t nb = static_cast<size_t>(n) * sizeof(float);
    if (d <= 0 || !inDevice(cot, nb) || !inDevice(gx, nb) ||
        !inDevice(gw, static_cast<size_t>(d) * sizeof(float)))
      return kLaunchFailed;
    auto *pc = reinterpret_cast<const float *>(static_cast<uintptr_t>(cot));
    auto *px = reinterpret_cast<float *>(static_cast<uintptr_t>(gx));
    auto *pw = reinterpret_cast<float *>(static_cast<uintptr_t>(gw));
    for (int64_t j = 0; j < d; ++j)
      pw[j] = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      px[i] = 2.0f * pc[i];
      pw[i % d] += pc[i];
    }
  }
  return kSuccess;
}
FAKE CUresult cuStreamCreate(void **stream, unsigned) {
  static int streams[64];
  static int next;
  *stream = &streams[next++ % 64];
  log("cuStreamCreate");
  return kSuccess;
}
FAKE CUresult cuStreamDestroy_v2(void *) {
  log("cuStreamDestroy");
  return kSuccess;
}
FAKE CUresult cuStreamSynchronize(void *) {
  if (failing("cuStreamSynchronize"))
    return kLaunchFailed;
  log("cuStreamSynchronize");
  return kSuccess;
}
FAKE CUresult cuStreamWaitEvent(void *, void *, unsigned) { return kSuccess; }
FAKE CUresult cuEventCreate(void **e, unsigned) {
  static int event;
  *e = &event;
  return kSuccess;
}
FAKE CUresult cuEventDestroy_v2(void *) { return kSuccess; }
FAKE CUresult cuEventSynchronize(void *) { return kSuccess; }
FAKE CUresult cuEventRecord(void *, void *) { return kSuccess; }
FAKE CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  if (failing("cuMemAlloc") || bytes == 0)
    return bytes == 0 ? kInvalidValue : kOutOfMemory;
  void *mem = std::calloc(1, bytes);
  if (!mem)
    return kOutOfMemory;
  *p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(mem));
  {
    std::lock_guard<std::mutex> lock(mutex);
    allocations()[*p] = bytes;
  }
  log("cuMemAlloc " + std::to_string(bytes));
  return kSuccess;
}
FAKE CUresult cuMemFree_v2(CUdeviceptr p) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!allocations().erase(p))
      return kInvalidValue;
  }
  std::free(reinterpret_cast<void *>(static_cast<uintptr_t>(p)));
  log("cuMemFree");
  return kSuccess;
}
FAKE CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
                            void *) {
  if (!inDevice(dst, n) || !inDevice(src, n))
    return kInvalidValue;
  std::memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(dst)),
              reinterpret_cast<void *>(static_cast<uintptr_t>(src)), n);
  log("cuMemcpyAsync " + std::to_string(n));
  return kSuccess;
}
FAKE CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n,
                                   void *) {
  if (failing("cuMemcpyHtoDAsync") || !inDevice(dst, n))
    return kInvalidValue;
  std::memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(dst)), src, n);
  log("cuMemcpyHtoDAsync " + std::to_string(n));
  return kSuccess;
}
FAKE CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n,
                                   void *) {
  if (!inDevice(src, n))
    return kInvalidValue;
  std::memcpy(dst, reinterpret_cast<void *>(static_cast<uintptr_t>(src)), n);
  log("cuMemcpyDtoHAsync " + std::to_string(n));
  return kSuccess;
}
FAKE CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned v, size_t n, void *) {
  if (!inDevice(dst, n * 4))
    return kInvalidValue;
  auto *p = reinterpret_cast<uint32_t *>(static_cast<uintptr_t>(dst));
  for (size_t i = 0; i < n; ++i)
    p[i] = v;
  log("cuMemsetD32Async " + std::to_string(n));
  return kSuccess;
}
FAKE CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n,
                               void *) {
  if (!inDevice(dst, n * 2))
    return kInvalidValue;
  auto *p = reinterpret_cast<uint16_t *>(static_cast<uintptr_t>(dst));
  for (size_t i = 0; i < n; ++i)
    p[i] = v;
  return kSuccess;
}
