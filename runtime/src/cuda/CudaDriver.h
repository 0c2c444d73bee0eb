//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The runtime reaches CUDA only through dlopen("libcuda.so.1"), so it builds
// and its CPU path runs on machines without CUDA, and a built runtime runs on
// a GPU machine that has only the driver. This header declares, by hand, the
// few driver types and entry points the runtime uses (their layout is the
// driver's stable C ABI) and a table of function pointers filled by dlsym.
// Versioned symbols are looked up by their real names (cuMemAlloc_v2, ...),
// which cuda.h hides behind macros.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_CUDA_CUDADRIVER_H
#define TORSOR_RUNTIME_CUDA_CUDADRIVER_H

#include "Support.h"

#include <cstddef>
#include <cstdint>

namespace torsor::rt::cuda {

/// Driver result code; 0 is CUDA_SUCCESS.
using CUresult = int;
/// Device ordinal handle.
using CUdevice = int;
/// A device address (an integer, not a host pointer).
using CUdeviceptr = unsigned long long;
/// Opaque driver handles.
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

/// The result codes the runtime names itself (others go through
/// cuGetErrorName).
enum : CUresult {
  kCudaSuccess = 0,
  kCudaErrorInvalidValue = 1,
  kCudaErrorOutOfMemory = 2,
  kCudaErrorNotInitialized = 3,
  kCudaErrorNoDevice = 100,
};

/// Attribute ids, stream and event flags used by the runtime.
enum : int {
  kAttrComputeCapabilityMajor = 75,
  kAttrComputeCapabilityMinor = 76,
  kStreamNonBlocking = 1,
  kEventDisableTiming = 2,
  kJitOptimizationLevel = 7,
  kLaunchAttributeClusterDimension = 4,
};

/// CUlaunchAttribute: an id padded to 8 bytes, then a 64-byte value union
/// whose first member for the cluster attribute is {x, y, z}.
struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
  } value;
};

/// CUlaunchConfig, the argument of cuLaunchKernelEx.
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};

/// The driver entry points, as loaded from libcuda. Optional ones (used by
/// rarely-emitted mgpu* wrappers) may be null on old drivers.
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice); // _v2
  CUresult (*cuCtxPushCurrent)(CUcontext);         // _v2
  CUresult (*cuCtxPopCurrent)(CUcontext *);        // _v2
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **,
                               void **); // optional (CUDA >= 11.8)
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream); // _v2
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent); // _v2
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);                  // _v2
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned); // optional
  CUresult (*cuMemFree)(CUdeviceptr);                             // _v2
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t,
                                CUstream); // _v2
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t,
                                CUstream); // _v2
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*cuMemHostRegister)(void *, size_t, unsigned); // _v2, optional
  CUresult (*cuMemHostUnregister)(void *);                 // optional
};

/// The environment variable that overrides the driver library's path (the
/// tests point it at a fake driver); unset means "libcuda.so.1".
inline constexpr const char *kDriverPathEnv = "TORSOR_CUDA_DRIVER";

/// Loads the driver once per process and returns it, or the reason it cannot
/// be used (library missing, a symbol missing). The result is cached.
Status loadDriver(const Driver *&driver);

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a result code, using the
/// driver's own names when it is loaded.
std::string errorText(CUresult result);

} // namespace torsor::rt::cuda

#endif // TORSOR_RUNTIME_CUDA_CUDADRIVER_H
