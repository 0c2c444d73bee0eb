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

/// Version of the compiled-model ABI this runtime understands; a model's
/// `torsor_abi_version()` and its manifest's "abi" must both equal it.
#define TORSOR_ABI_VERSION 1

/// Element types a tensor may have (manifest spelling in comments).
typedef enum TorsorDType {
  TORSOR_DTYPE_F32 = 0, ///< "f32", IEEE binary32
  TORSOR_DTYPE_F64 = 1, ///< "f64", IEEE binary64
  TORSOR_DTYPE_I64 = 2  ///< "i64", two's complement 64-bit
} TorsorDType;

/// The three lists of tensors a manifest declares, in ABI order.
typedef enum TorsorTensorKind {
  TORSOR_INPUT = 0, ///< bound by the caller per run; fix the symbolic dims
  TORSOR_PARAM = 1, ///< weights, bound by name (e.g. from .safetensors)
  TORSOR_OUTPUT = 2 ///< allocated by the runtime, read after a run
} TorsorTensorKind;

/// Status codes; every failing call also carries a human-readable message.
typedef enum TorsorStatusCode {
  TORSOR_OK = 0,                 ///< success (represented by a NULL status)
  TORSOR_INVALID_ARGUMENT = 1,   ///< wrong name, rank, extent, dtype, value
  TORSOR_IO_ERROR = 2,           ///< missing, unreadable or malformed file
  TORSOR_ABI_ERROR = 3,          ///< model .so does not match this runtime
  TORSOR_UNAVAILABLE = 4,        ///< feature or device not in this build
  TORSOR_FAILED_PRECONDITION = 5 ///< e.g. run before every input is bound
} TorsorStatusCode;

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

#ifdef __cplusplus
}
#endif

#endif /* TORSOR_RUNTIME_H */
