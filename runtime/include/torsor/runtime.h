/*===- runtime.h - Torsor runtime C API ---------------------------*- C -*-===*\
|*                                                                            *|
|* The one public header of the runtime: load a compiled model (OUT.so plus   *|
|* its OUT.json manifest), bind input and parameter tensors by name, run it   *|
|* and read the outputs. Plain C with opaque handles and status objects       *|
|* (Halide's HalideRuntime.h pattern); no LLVM/MLIR. docs/runtime.md has the  *|
|* full contract, including the descriptor ABI the compiled model exports.    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef TORSOR_RUNTIME_H
#define TORSOR_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Newest compiled-model ABI this runtime understands. A model's
/// `torsor_abi_version()` and its manifest's "abi" must agree and lie in
/// [TORSOR_ABI_VERSION_MIN, TORSOR_ABI_VERSION]. Version 1: CPU models, host
/// pointers in every descriptor. Version 2: nvptx models ("target":
/// "nvptx"), CUDA device pointers in every descriptor.
#define TORSOR_ABI_VERSION 2
/// Oldest compiled-model ABI still accepted (v1 CPU models keep working).
#define TORSOR_ABI_VERSION_MIN 1
/// Version of this header's C API: 2 added the device functions
/// (torsorModuleDevice ... torsorCudaAvailable); 3 added the device
/// backward (torsorModuleRunBackwardDevice, torsorModuleGetGradientDevice)
/// and torsorModuleLoadWeightsConverting; 4 added the buffer cache
/// (torsorModuleSetBufferCache, torsorModuleReleaseBuffers,
/// torsorModuleCachedBytes).
/// Every earlier function is unchanged.
#define TORSOR_RUNTIME_API_VERSION 4

/// Element types a tensor may have (manifest spelling in comments).
typedef enum TorsorDType {
  TORSOR_DTYPE_F32 = 0, ///< "f32", IEEE binary32
  TORSOR_DTYPE_F64 = 1, ///< "f64", IEEE binary64
  TORSOR_DTYPE_I64 = 2  ///< "i64", two's complement 64-bit
} TorsorDType;

/// The three lists of tensors a manifest declares, in ABI order.
typedef enum TorsorTensorKind {
  TORSOR_INPUT = 0,  ///< bound by the caller per run; fix the symbolic dims
  TORSOR_PARAM = 1,  ///< weights, bound by name (e.g. from .safetensors)
  TORSOR_OUTPUT = 2, ///< allocated by the runtime, read after a run
  /// Not kinds: they widen the enum's range to every int32_t, so an invalid
  /// kind passed from C is a checked error, not undefined behaviour in C++.
  TORSOR_TENSOR_KIND_MIN_ENUM = -0x7fffffff - 1,
  TORSOR_TENSOR_KIND_MAX_ENUM = 0x7fffffff
} TorsorTensorKind;

/// Status codes; every failing call also carries a human-readable message.
typedef enum TorsorStatusCode {
  TORSOR_OK = 0,                  ///< success (represented by a NULL status)
  TORSOR_INVALID_ARGUMENT = 1,    ///< wrong name, rank, extent, dtype, value
  TORSOR_IO_ERROR = 2,            ///< missing, unreadable or malformed file
  TORSOR_ABI_ERROR = 3,           ///< model .so does not match this runtime
  TORSOR_UNAVAILABLE = 4,         ///< feature or device not in this build
  TORSOR_FAILED_PRECONDITION = 5, ///< e.g. run before every input is bound
  TORSOR_DEVICE_ERROR = 6,        ///< the CUDA driver failed (API version 2)
  TORSOR_OUT_OF_MEMORY = 7, ///< an allocation (file, tensor, model) failed
  /// Not codes: keep the enum's range every int32_t (see TorsorTensorKind).
  TORSOR_STATUS_CODE_MIN_ENUM = -0x7fffffff - 1,
  TORSOR_STATUS_CODE_MAX_ENUM = 0x7fffffff
} TorsorStatusCode;

/// Where a model's tensors live (API version 2).
typedef enum TorsorDevice {
  TORSOR_DEVICE_CPU = 0, ///< host memory: "target": "cpu" models (ABI 1)
  TORSOR_DEVICE_CUDA = 1 ///< CUDA device memory: "target": "nvptx" (ABI 2)
} TorsorDevice;

/// A loaded model with its bound tensors and its outputs (opaque).
typedef struct TorsorModule TorsorModule;

/// An error: a code plus a message. Functions return NULL on success and a
/// heap-allocated status on failure, which the caller frees with
/// torsorStatusFree().
typedef struct TorsorStatus TorsorStatus;

/// A view of a dense tensor. `shape` and `strides` have `rank` entries;
/// strides count elements and may be NULL for row-major contiguous data.
/// `dtype` is a TorsorDType. The runtime never frees `data`.
typedef struct TorsorTensor {
  void *data;             ///< first element
  const int64_t *shape;   ///< extents, outermost first
  const int64_t *strides; ///< element strides, or NULL for row-major
  int32_t rank;           ///< number of dims (0 for a scalar)
  int32_t dtype;          ///< a TorsorDType
} TorsorTensor;

/// Returns the code of `status`; TORSOR_OK for NULL.
TorsorStatusCode torsorStatusCode(const TorsorStatus *status);

/// Returns the message of `status` ("" for NULL); valid until it is freed.
const char *torsorStatusMessage(const TorsorStatus *status);

/// Frees a status returned by any runtime function; NULL is a no-op.
void torsorStatusFree(TorsorStatus *status);

/// Returns "f32", "f64" or "i64" for a TorsorDType, "?" otherwise.
const char *torsorDTypeName(int32_t dtype);

/// Loads the compiled model at `soPath` and the manifest next to it (the same
/// path with ".so" replaced by ".json"). Checks the manifest and the model's
/// `torsor_abi_version()`. On success stores a new module in `*module`.
TorsorStatus *torsorModuleLoad(const char *soPath, TorsorModule **module);

/// Unloads the model and frees everything the module owns (outputs, copied
/// params). NULL is a no-op.
void torsorModuleFree(TorsorModule *module);

/// Returns the manifest's "model" name.
const char *torsorModuleName(const TorsorModule *module);

/// Returns how many tensors of `kind` the model declares.
int32_t torsorModuleNumTensors(const TorsorModule *module,
                               TorsorTensorKind kind);

/// Returns the name of tensor `index` of `kind`, or NULL if out of range.
const char *torsorModuleTensorName(const TorsorModule *module,
                                   TorsorTensorKind kind, int32_t index);

/// Returns the TorsorDType of tensor `index` of `kind`, or -1 if out of range.
int32_t torsorModuleTensorDType(const TorsorModule *module,
                                TorsorTensorKind kind, int32_t index);

/// Returns the rank of tensor `index` of `kind`, or -1 if out of range.
int32_t torsorModuleTensorRank(const TorsorModule *module,
                               TorsorTensorKind kind, int32_t index);

/// Returns the fixed extent of dim `dim` of tensor `index` of `kind`, or -1
/// when that dim is symbolic (see torsorModuleTensorDimSymbol) or out of range.
int64_t torsorModuleTensorDimExtent(const TorsorModule *module,
                                    TorsorTensorKind kind, int32_t index,
                                    int32_t dim);

/// Returns the symbolic name (e.g. "L") of dim `dim` of tensor `index` of
/// `kind`, or NULL when that dim has a fixed extent or is out of range.
const char *torsorModuleTensorDimSymbol(const TorsorModule *module,
                                        TorsorTensorKind kind, int32_t index,
                                        int32_t dim);

/// Returns the group name (e.g. "SE3") of tensor `index` of `kind`, or NULL
/// if it is not a group-element tensor.
const char *torsorModuleTensorGroup(const TorsorModule *module,
                                    TorsorTensorKind kind, int32_t index);

/// Binds input `name` to `tensor` without copying contiguous data: the memory
/// must stay valid until the next torsorModuleRun() returns. Rank, dtype and
/// fixed extents are checked now; symbolic dims are reconciled at run time.
TorsorStatus *torsorModuleBindInput(TorsorModule *module, const char *name,
                                    const TorsorTensor *tensor);

/// Binds param `name` to `tensor`; same rules as torsorModuleBindInput().
TorsorStatus *torsorModuleBindParam(TorsorModule *module, const char *name,
                                    const TorsorTensor *tensor);

/// Forgets every bound input, so the next torsorModuleRun() reports each one
/// as missing until it is bound again. Hosts that lend memory for one call
/// only (Python's package) call it after each run, so a later call that
/// omits an input gets an error instead of reading freed memory. Params,
/// outputs and the group-check setting are kept. NULL is a no-op.
void torsorModuleUnbindInputs(TorsorModule *module);

/// Reads a .safetensors bundle and binds every tensor in it to the param of
/// the same name (the module keeps the data). A tensor that names no param is
/// an error; params the bundle lacks stay unbound.
TorsorStatus *torsorModuleLoadWeights(TorsorModule *module,
                                      const char *safetensorsPath);

/// Receives one message per conversion that rounds (API version 3), e.g.
/// "w.safetensors: param 'w': converting f64 to the model's dtype f32
/// (rounded to nearest)"; `context` is the caller's pointer.
typedef void (*TorsorNoteFn)(const char *message, void *context);

/// Reads a .safetensors bundle as torsorModuleLoadWeights() does, but
/// under the hosts' dtype policy (API version 3; docs/runtime.md,
/// "dtypes"; torsor-run and the Python package use it): a float tensor of
/// the other float dtype is converted to its param's dtype, f32 -> f64
/// exactly and silently, f64 -> f32 rounded to nearest with a call of
/// `note(message, context)` (`note` may be NULL). Integer and float
/// tensors are still never converted.
TorsorStatus *torsorModuleLoadWeightsConverting(TorsorModule *module,
                                                const char *safetensorsPath,
                                                TorsorNoteFn note,
                                                void *context);

/// Enables (`enable` != 0) or disables the group-membership check that
/// torsorModuleRun() applies to group inputs, with absolute tolerance `tol`.
/// On by default, with tol 1e-4: built-in groups by closed-form tests,
/// declared groups through the model's own membership residual. The check
/// reads each group input once per run (docs/runtime.md gives its cost).
void torsorModuleSetCheckGroups(TorsorModule *module, int32_t enable,
                                double tol);

/// Resolves the symbolic dims from the bound tensors, validates them,
/// allocates the outputs and calls the model's entry point.
TorsorStatus *torsorModuleRun(TorsorModule *module);

/// Describes output `name` of the last successful run in `*tensor`
/// (row-major; the memory is owned by the module and valid until the next run
/// or torsorModuleFree()).
TorsorStatus *torsorModuleGetOutput(const TorsorModule *module,
                                    const char *name, TorsorTensor *tensor);

/// Caps the bytes the model's compiled code may hold at once during a run
/// (its intermediate buffers, allocated per call through torsor_alloc; the
/// outputs and bound tensors are not counted). 0, the default, means no cap.
/// A run that needs more stops with TORSOR_OUT_OF_MEMORY and a message
/// saying how much was needed and where, exactly as when the system itself
/// refuses the memory. NULL is a no-op.
void torsorModuleSetMemoryLimit(TorsorModule *module, uint64_t bytes);

/// The most bytes the model's compiled code held at once during the last
/// run (0 before any run). Sizes are computed inside the compiled code from
/// the dims, so this is known after a run, not before: run once at the
/// sizes you need to learn the working set (it repeats for the same dims
/// and thread count).
uint64_t torsorModulePeakBytes(const TorsorModule *module);

/// Buffer cache (API version 4). Large intermediate buffers (64 KiB and
/// up) a run frees are kept by the module and reused by its next runs, so a
/// model called again and again at the same dims does not take its working
/// set from the system (and page-fault it in) on every call. The cache
/// keeps at most what makes the module's buffers, in use and kept, reach
/// the largest peak any of its runs needed (torsorModulePeakBytes of that
/// run; under a memory limit, at most the limit), and it is freed with the
/// module. It is on by default.
/// torsorModuleSetBufferCache(m, 0) turns it off and frees what it keeps;
/// 1 turns it back on. NULL is a no-op.
void torsorModuleSetBufferCache(TorsorModule *module, int32_t enable);
/// Frees the buffers the cache keeps now (e.g. when a model that ran at a
/// large size will next run small, or not for a while). NULL is a no-op.
void torsorModuleReleaseBuffers(TorsorModule *module);
/// The bytes the cache keeps now (0 for NULL).
uint64_t torsorModuleCachedBytes(const TorsorModule *module);

/// Returns 1 if the model was compiled with `torsorc --grad` and exports the
/// backward entry `torsor_backward`, else 0 (docs/runtime.md, "Gradients").
int32_t torsorModuleHasBackward(const TorsorModule *module);

/// Returns how many gradients the backward entry computes (one per float
/// input and param), 0 without one.
int32_t torsorModuleNumGradients(const TorsorModule *module);

/// Returns the name of gradient `index` ("grad.<tensor>"), or NULL if out of
/// range.
const char *torsorModuleGradientName(const TorsorModule *module, int32_t index);

/// Runs the backward entry on the bound inputs and params with
/// `cotangents[i]`, the cotangent of output i (manifest order, the output's
/// dtype and shape), and keeps the gradients for torsorModuleGetGradient().
/// The backward entry recomputes the forward pass: no torsorModuleRun() is
/// needed first. Group inputs get left-trivialised gradients in algebra
/// coordinates (shape [..., k]).
TorsorStatus *torsorModuleRunBackward(TorsorModule *module,
                                      const TorsorTensor *cotangents,
                                      int32_t numCotangents);

/// Describes gradient `name` ("grad.W") of the last successful backward run,
/// as torsorModuleGetOutput() does for outputs.
TorsorStatus *torsorModuleGetGradient(const TorsorModule *module,
                                      const char *name, TorsorTensor *tensor);

/// Sets the size of the runtime's thread pool used by torsor_parallel_for
/// (including the calling thread); `n` <= 0 selects the hardware concurrency.
/// Must not be called while a model runs.
TorsorStatus *torsorSetNumThreads(int32_t n);

/// Returns the current size of the runtime's thread pool.
int32_t torsorGetNumThreads(void);

/// Runs `body(lo, hi, ctx)` over disjoint chunks that together cover
/// [begin, end) exactly once, on the runtime's thread pool, and returns when
/// all are done. Compiled models call this for their parallel loops. Nested
/// or concurrent calls run inline on the calling thread.
void torsor_parallel_for(int64_t begin, int64_t end,
                         void (*body)(int64_t lo, int64_t hi, void *ctx),
                         void *ctx);

/*===-- Devices (API version 2) -------------------------------------------===*/
/* An nvptx model (ABI 2) runs on the GPU: the runtime opens the CUDA driver
 * (dlopen("libcuda.so.1")) when the model is loaded. Tensors bound with the
 * version-1 functions are host memory, copied to the device at each run
 * (params once after they are bound); outputs are copied back so that
 * torsorModuleGetOutput() works as on the CPU. The functions below bind
 * device memory directly and read outputs on the device, with no copies. */

/// Returns NULL when a CUDA GPU can be used, otherwise a status whose
/// message says what is missing (driver library, GPU). Never loads a model.
TorsorStatus *torsorCudaAvailable(void);

/// Returns where `module`'s tensors live (a TorsorDevice), -1 for NULL.
int32_t torsorModuleDevice(const TorsorModule *module);

/// Returns the manifest's "target" ("cpu", "nvptx").
const char *torsorModuleTarget(const TorsorModule *module);

/// Returns the manifest's "gpu_arch" (e.g. "sm_90"), or NULL for CPU models.
const char *torsorModuleGpuArch(const TorsorModule *module);

/// Returns the CUstream the model's work is ordered on (NULL for CPU
/// models). A run synchronizes it before returning; a caller that writes
/// device inputs on its own stream must finish that work first.
void *torsorModuleCudaStream(const TorsorModule *module);

/// Binds input `name` of a CUDA model to device memory: `tensor->data` is a
/// CUdeviceptr (cast to void *) of row-major data (`strides` NULL or
/// row-major), borrowed until the next run returns. No copy is made. The
/// group-membership check (which reads host memory) skips such inputs.
TorsorStatus *torsorModuleBindInputDevice(TorsorModule *module,
                                          const char *name,
                                          const TorsorTensor *tensor);

/// Binds param `name` of a CUDA model to device memory; as above.
TorsorStatus *torsorModuleBindParamDevice(TorsorModule *module,
                                          const char *name,
                                          const TorsorTensor *tensor);

/// Chooses whether runs of a CUDA model copy the outputs back to host memory
/// (`enable` != 0, the default). With 0, outputs stay on the device: read
/// them with torsorModuleGetOutputDevice(); torsorModuleGetOutput() fails.
TorsorStatus *torsorModuleSetHostOutputs(TorsorModule *module, int32_t enable);

/// Describes output `name` of the last successful run of a CUDA model in
/// device memory: `tensor->data` is a CUdeviceptr owned by the module, valid
/// until the next run or torsorModuleFree().
TorsorStatus *torsorModuleGetOutputDevice(const TorsorModule *module,
                                          const char *name,
                                          TorsorTensor *tensor);

/// Runs the backward entry of a CUDA model (API version 3) as
/// torsorModuleRunBackward() does, but `cotangents[i].data` is a
/// CUdeviceptr (cast to void *) of row-major data, borrowed for the call,
/// and the gradients stay on the device: read them with
/// torsorModuleGetGradientDevice() (torsorModuleGetGradient() fails until
/// the next host backward run). With inputs and params bound as device
/// memory too, nothing is copied between host and device. The NaN/Inf
/// check of cotangents (which reads host memory) skips device cotangents.
/// CPU models refuse this call (TORSOR_FAILED_PRECONDITION).
TorsorStatus *torsorModuleRunBackwardDevice(TorsorModule *module,
                                            const TorsorTensor *cotangents,
                                            int32_t numCotangents);

/// Describes gradient `name` of the last successful backward run of a CUDA
/// model in device memory (API version 3): `tensor->data` is a CUdeviceptr
/// owned by the module, valid until the next backward run or
/// torsorModuleFree(). Works after either backward call.
TorsorStatus *torsorModuleGetGradientDevice(const TorsorModule *module,
                                            const char *name,
                                            TorsorTensor *tensor);

/// Allocation entry points of compiled models (docs/runtime.md, "Memory"):
/// `torsor_alloc(bytes, what)` returns `bytes` of memory for the buffer
/// described by `what` (a source location), or, when that fails inside a
/// run, unwinds to the runtime, which returns TORSOR_OUT_OF_MEMORY from
/// torsorModuleRun; `torsor_free` releases it. Models declare both weak
/// and fall back to malloc/free when loaded without the runtime.
void *torsor_alloc(int64_t bytes, const char *what);
void torsor_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* TORSOR_RUNTIME_H */
