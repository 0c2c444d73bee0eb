//===- MgpuWrappers.cpp - The mgpu* entry points of GPU host code ---------===//
//
// MLIR's gpu-to-llvm lowering turns gpu.alloc, gpu.memcpy, gpu.launch_func
// and friends into calls to mgpu* functions, and the embedded kernel binary
// into a global constructor that calls mgpuModuleLoad. Upstream implements
// them in libmlir_cuda_runtime, which Debian does not ship and which would
// tie models to LLVM; the runtime exports them instead, with exactly the
// signatures LLVM 22's lowering emits (mlir/lib/ExecutionEngine/
// CudaRuntimeWrappers.cpp), over the dlopen'ed driver. A compiled nvptx
// model leaves them undefined and resolves them from libtorsor_runtime at
// dlopen time, like torsor_parallel_for.
//
// Differences from upstream, on purpose:
// - Streams: inside a runtime operation, mgpuStreamCreate hands out the
//   model's own stream (created at load) and mgpuStreamDestroy of it is a
//   no-op, so all of a model's work is ordered on one stream that the
//   runtime synchronizes and that callers can order their own work against.
// - Errors are recorded in the current call (CudaDevice.h) instead of being
//   printed; after the first one, work is skipped and the run returns it.
// - A zero-byte mgpuMemAlloc returns null instead of failing.
// Not provided: the cuSPARSE/cuSPARSELt wrappers and TMA descriptor
// encoding, which Torsor's pipelines do not emit.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaDevice.h"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>

using namespace torsor::rt;
using namespace torsor::rt::cuda;

namespace {

/// Kernel names by function handle, for launch error messages.
/// (Never destroyed: models call in from static destructors at exit.)
std::mutex &namesMutexRef() {
  static auto *m = new std::mutex();
  return *m;
}
std::map<CUfunction, std::string> &kernelNames() {
  static auto *names = new std::map<CUfunction, std::string>();
  return *names;
}

/// The name of `f` for messages.
std::string kernelName(CUfunction f) {
  std::lock_guard<std::mutex> lock(namesMutexRef());
  auto it = kernelNames().find(f);
  return it == kernelNames().end() ? std::string("?") : it->second;
}

/// Makes the device usable for one wrapper call. Inside a runtime
/// operation the context is already current; outside one (a model used
/// without the runtime's scopes) it opens the device and pushes the
/// context for the duration of the wrapper.
class Enter {
public:
  Enter() {
    if (currentCall()) {
      openDevice(device); // cached; succeeded before the call began
      return;
    }
    Status s = openDevice(device);
    if (!s.ok()) {
      recordError(s);
      device = nullptr;
      return;
    }
    scope.emplace(*device, ownState);
  }
  ~Enter() {
    scope.reset();
    if (!ownState.error.ok())
      std::fprintf(stderr, "torsor runtime: %s\n",
                   ownState.error.message.c_str());
  }
  /// The driver, or null when the device cannot be used (error recorded)
  /// or the current call already failed (work is skipped).
  const Driver *driver() const {
    return device && !callFailed() ? device->driver : nullptr;
  }
  /// The driver even after a failure, for frees and destroys.
  const Driver *cleanupDriver() const {
    return device ? device->driver : nullptr;
  }

private:
  const Device *device = nullptr;
  CallState ownState;
  std::optional<CallScope> scope;
};

/// Converts an MLIR index launch extent to the driver's unsigned.
bool extent(intptr_t v, unsigned &out) {
  if (v <= 0 || v > static_cast<intptr_t>(UINT_MAX))
    return false;
  out = static_cast<unsigned>(v);
  return true;
}

/// "grid 4x1x1, block 128x1x1, 0 bytes shared" for messages.
std::string launchText(CUfunction f, const unsigned g[3], const unsigned b[3],
                       int32_t smem) {
  return format("kernel '%s' (grid %ux%ux%u, block %ux%ux%u, %d bytes "
                "shared)",
                kernelName(f).c_str(), g[0], g[1], g[2], b[0], b[1], b[2],
                smem);
}

/// Checks and converts the six grid and block extents. Returns false, with
/// nothing recorded, for an empty grid (a zero extent: e.g. L = 0 rows),
/// which launches nothing, and false with an error for a negative extent, an
/// empty block or an extent past the driver's unsigned range.
bool launchExtents(CUfunction f, const intptr_t in[6], unsigned g[3],
                   unsigned b[3]) {
  bool ok = true, empty = false;
  for (int i = 0; i < 3; ++i) {
    empty = empty || in[i] == 0;
    ok = (in[i] == 0 || extent(in[i], g[i])) && extent(in[3 + i], b[i]) && ok;
  }
  if (!ok)
    recordError(
        Status(TORSOR_DEVICE_ERROR,
               format("invalid launch of kernel '%s': grid %ldx%ldx%ld, block "
                      "%ldx%ldx%ld (grid extents must be in [0, 2^32), block "
                      "extents in [1, 2^32))",
                      kernelName(f).c_str(), (long)in[0], (long)in[1],
                      (long)in[2], (long)in[3], (long)in[4], (long)in[5])));
  return ok && !empty;
}

} // namespace

#define TORSOR_MGPU extern "C" __attribute__((visibility("default")))

namespace torsor::rt::cuda {
namespace {
thread_local bool inspecting = false;
} // namespace
InspectOnly::InspectOnly() : previous(inspecting) { inspecting = true; }
InspectOnly::~InspectOnly() { inspecting = previous; }
bool InspectOnly::active() { return inspecting; }
} // namespace torsor::rt::cuda

TORSOR_MGPU void *mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  if (InspectOnly::active())
    return nullptr;
  Enter e;
  const Driver *d = e.driver();
  if (!d)
    return nullptr;
  CUmodule module = nullptr;
  checkLazy(d->cuModuleLoadData(&module, data), [&] {
    return format("cuModuleLoadData of the model's %zu-byte GPU binary",
                  gpuBlobSize);
  });
  return module;
}

TORSOR_MGPU void *mgpuModuleLoadJIT(void *data, int optLevel) {
  if (InspectOnly::active())
    return nullptr;
  Enter e;
  const Driver *d = e.driver();
  if (!d)
    return nullptr;
  CUmodule module = nullptr;
  int options[] = {kJitOptimizationLevel};
  void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  check(d->cuModuleLoadDataEx(&module, data, 1, options, values),
        "cuModuleLoadDataEx (JIT of the model's PTX)");
  return module;
}

TORSOR_MGPU void mgpuModuleUnload(void *module) {
  if (!module)
    return; // nothing was loaded (InspectOnly, or a failed load)
  Enter e;
  if (const Driver *d = e.cleanupDriver(); d && module)
    check(d->cuModuleUnload(static_cast<CUmodule>(module)), "cuModuleUnload");
}

TORSOR_MGPU void *mgpuModuleGetFunction(void *module, const char *name) {
  Enter e;
  const Driver *d = e.driver();
  if (!d)
    return nullptr;
  if (!module) {
    recordError(Status(TORSOR_DEVICE_ERROR,
                       format("kernel '%s' requested from a GPU module that "
                              "failed to load",
                              name ? name : "?")));
    return nullptr;
  }
  CUfunction f = nullptr;
  if (checkLazy(
          d->cuModuleGetFunction(&f, static_cast<CUmodule>(module), name),
          [&] { return format("cuModuleGetFunction of kernel '%s'", name); })) {
    std::lock_guard<std::mutex> lock(namesMutexRef());
    kernelNames()[f] = name;
  }
  return f;
}

TORSOR_MGPU void mgpuLaunchKernel(void *function, intptr_t gridX,
                                  intptr_t gridY, intptr_t gridZ,
                                  intptr_t blockX, intptr_t blockY,
                                  intptr_t blockZ, int32_t smem, void *stream,
                                  void **params, void **extra,
                                  size_t /*paramsCount*/) {
  Enter e;
  const Driver *d = e.driver();
  auto f = static_cast<CUfunction>(function);
  if (!d || !f)
    return;
  intptr_t in[6] = {gridX, gridY, gridZ, blockX, blockY, blockZ};
  unsigned g[3], b[3];
  if (!launchExtents(f, in, g, b))
    return;
  checkLazy(d->cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2],
                              static_cast<unsigned>(smem),
                              static_cast<CUstream>(stream), params, extra),
            [&] { return "cuLaunchKernel of " + launchText(f, g, b, smem); });
}

TORSOR_MGPU void mgpuLaunchClusterKernel(void *function, intptr_t clusterX,
                                         intptr_t clusterY, intptr_t clusterZ,
                                         intptr_t gridX, intptr_t gridY,
                                         intptr_t gridZ, intptr_t blockX,
                                         intptr_t blockY, intptr_t blockZ,
                                         int32_t smem, void *stream,
                                         void **params, void **extra) {
  Enter e;
  const Driver *d = e.driver();
  auto f = static_cast<CUfunction>(function);
  if (!d || !f)
    return;
  intptr_t in[6] = {gridX, gridY, gridZ, blockX, blockY, blockZ};
  unsigned g[3], b[3], c[3];
  if (!launchExtents(f, in, g, b))
    return;
  if (!extent(clusterX, c[0]) || !extent(clusterY, c[1]) ||
      !extent(clusterZ, c[2])) {
    recordError(
        Status(TORSOR_DEVICE_ERROR,
               "invalid cluster shape for kernel '" + kernelName(f) + "'"));
    return;
  }
  if (!d->cuLaunchKernelEx) {
    recordError(Status(TORSOR_UNAVAILABLE,
                       "kernel '" + kernelName(f) +
                           "' uses thread-block clusters, which need "
                           "cuLaunchKernelEx (CUDA driver >= 11.8)"));
    return;
  }
  CUlaunchAttribute attr{};
  attr.id = kLaunchAttributeClusterDimension;
  attr.value.clusterDim = {c[0], c[1], c[2]};
  CUlaunchConfig config{g[0],
                        g[1],
                        g[2],
                        b[0],
                        b[1],
                        b[2],
                        static_cast<unsigned>(smem),
                        static_cast<CUstream>(stream),
                        &attr,
                        1};
  checkLazy(d->cuLaunchKernelEx(&config, f, params, extra), [&] {
    return "cuLaunchKernelEx of " + launchText(f, g, b, smem) +
           format(" with clusters %ux%ux%u", c[0], c[1], c[2]);
  });
}

TORSOR_MGPU void *mgpuStreamCreate() {
  if (CallState *call = currentCall(); call && call->stream)
    return call->stream; // the model's stream, owned by the runtime
  Enter e;
  const Driver *d = e.driver();
  if (!d)
    return nullptr;
  CUstream stream = nullptr;
  check(d->cuStreamCreate(&stream, kStreamNonBlocking), "cuStreamCreate");
  return stream;
}

TORSOR_MGPU void mgpuStreamDestroy(void *stream) {
  if (CallState *call = currentCall(); call && call->stream == stream)
    return; // the runtime destroys the model's stream when it unloads it
  Enter e;
  if (const Driver *d = e.cleanupDriver(); d && stream)
    check(d->cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy");
}

TORSOR_MGPU void mgpuStreamSynchronize(void *stream) {
  Enter e;
  if (const Driver *d = e.driver())
    check(d->cuStreamSynchronize(static_cast<CUstream>(stream)),
          "cuStreamSynchronize (waiting for the model's GPU work)");
}

TORSOR_MGPU void mgpuStreamWaitEvent(void *stream, void *event) {
  Enter e;
  if (const Driver *d = e.driver())
    check(d->cuStreamWaitEvent(static_cast<CUstream>(stream),
                               static_cast<CUevent>(event), 0),
          "cuStreamWaitEvent");
}

TORSOR_MGPU void *mgpuEventCreate() {
  Enter e;
  const Driver *d = e.driver();
  if (!d)
    return nullptr;
  CUevent event = nullptr;
  check(d->cuEventCreate(&event, kEventDisableTiming), "cuEventCreate");
  return event;
}

TORSOR_MGPU void mgpuEventDestroy(void *event) {
  Enter e;
  if (const Driver *d = e.cleanupDriver(); d && event)
    check(d->cuEventDestroy(static_cast<CUevent>(event)), "cuEventDestroy");
}

TORSOR_MGPU void mgpuEventSynchronize(void *event) {
  Enter e;
  if (const Driver *d = e.driver())
    check(d->cuEventSynchronize(static_cast<CUevent>(event)),
          "cuEventSynchronize");
}

TORSOR_MGPU void mgpuEventRecord(void *event, void *stream) {
  Enter e;
  if (const Driver *d = e.driver())
    check(d->cuEventRecord(static_cast<CUevent>(event),
                           static_cast<CUstream>(stream)),
          "cuEventRecord");
}

TORSOR_MGPU void *mgpuMemAlloc(uint64_t sizeBytes, void * /*stream*/,
                               bool isHostShared) {
  Enter e;
  const Driver *d = e.driver();
  if (!d || sizeBytes == 0)
    return nullptr;
  CUdeviceptr ptr = 0;
  if (isHostShared) {
    if (!d->cuMemAllocManaged) {
      recordError(Status(TORSOR_UNAVAILABLE,
                         "gpu.alloc host_shared needs cuMemAllocManaged, "
                         "which this CUDA driver lacks"));
      return nullptr;
    }
    checkLazy(d->cuMemAllocManaged(&ptr, sizeBytes, /*CU_MEM_ATTACH_GLOBAL=*/1),
              [&] {
                return format("cuMemAllocManaged of %llu bytes",
                              (unsigned long long)sizeBytes);
              });
  } else {
    checkLazy(d->cuMemAlloc(&ptr, sizeBytes), [&] {
      return format("cuMemAlloc of %llu bytes", (unsigned long long)sizeBytes);
    });
  }
  return reinterpret_cast<void *>(static_cast<uintptr_t>(ptr));
}

TORSOR_MGPU void mgpuMemFree(void *ptr, void * /*stream*/) {
  Enter e;
  if (const Driver *d = e.cleanupDriver(); d && ptr)
    check(d->cuMemFree(reinterpret_cast<uintptr_t>(ptr)), "cuMemFree");
}

TORSOR_MGPU void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                            void *stream) {
  Enter e;
  const Driver *d = e.driver();
  if (!d || sizeBytes == 0)
    return;
  checkLazy(d->cuMemcpyAsync(reinterpret_cast<uintptr_t>(dst),
                             reinterpret_cast<uintptr_t>(src), sizeBytes,
                             static_cast<CUstream>(stream)),
            [&] { return format("cuMemcpyAsync of %zu bytes", sizeBytes); });
}

TORSOR_MGPU void mgpuMemset32(void *dst, unsigned int value, size_t count,
                              void *stream) {
  Enter e;
  const Driver *d = e.driver();
  if (!d || count == 0)
    return;
  checkLazy(d->cuMemsetD32Async(reinterpret_cast<uintptr_t>(dst), value, count,
                                static_cast<CUstream>(stream)),
            [&] { return format("cuMemsetD32Async of %zu words", count); });
}

TORSOR_MGPU void mgpuMemset16(void *dst, unsigned short value, size_t count,
                              void *stream) {
  Enter e;
  const Driver *d = e.driver();
  if (!d || count == 0)
    return;
  checkLazy(
      d->cuMemsetD16Async(reinterpret_cast<uintptr_t>(dst), value, count,
                          static_cast<CUstream>(stream)),
      [&] { return format("cuMemsetD16Async of %zu half-words", count); });
}

TORSOR_MGPU void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  Enter e;
  const Driver *d = e.driver();
  if (!d)
    return;
  if (!d->cuMemHostRegister) {
    recordError(Status(TORSOR_UNAVAILABLE,
                       "host registration needs cuMemHostRegister_v2, which "
                       "this CUDA driver lacks"));
    return;
  }
  check(
      d->cuMemHostRegister(ptr, sizeBytes, 0),
      format("cuMemHostRegister of %llu bytes", (unsigned long long)sizeBytes));
}

TORSOR_MGPU void mgpuMemHostUnregister(void *ptr) {
  Enter e;
  if (const Driver *d = e.cleanupDriver(); d && d->cuMemHostUnregister)
    check(d->cuMemHostUnregister(ptr), "cuMemHostUnregister");
}

namespace {
/// The prefix shared by every ranked memref descriptor.
struct DescriptorHead {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizes[1];
};

/// Bytes of a dense memref (sizes[0] * ... * sizes[rank-1] * elemSize).
uint64_t denseBytes(int64_t rank, const DescriptorHead *desc,
                    int64_t elementSizeBytes) {
  uint64_t n = static_cast<uint64_t>(elementSizeBytes);
  for (int64_t i = 0; i < rank; ++i)
    n *= static_cast<uint64_t>(desc->sizes[i]);
  return n;
}
} // namespace

TORSOR_MGPU void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                                           int64_t elementSizeBytes) {
  auto *desc = static_cast<DescriptorHead *>(descriptor);
  mgpuMemHostRegister(desc->aligned + desc->offset * elementSizeBytes,
                      denseBytes(rank, desc, elementSizeBytes));
}

TORSOR_MGPU void mgpuMemHostUnregisterMemRef(int64_t /*rank*/, void *descriptor,
                                             int64_t elementSizeBytes) {
  auto *desc = static_cast<DescriptorHead *>(descriptor);
  mgpuMemHostUnregister(desc->aligned + desc->offset * elementSizeBytes);
}

TORSOR_MGPU void mgpuSetDefaultDevice(int32_t device) {
  // The runtime picks the device once per process (TORSOR_CUDA_DEVICE); a
  // model asking for another one is reported rather than silently ignored.
  const Device *d = nullptr;
  if (openDevice(d).ok() && d->ordinal != device)
    recordError(Status(TORSOR_UNAVAILABLE,
                       format("the model asks for GPU %d, but the runtime "
                              "uses GPU %d (set %s=%d)",
                              device, d->ordinal, kDeviceEnv, device)));
}
