//===- FakeGpuModel.cpp - Hand-written stand-in for an nvptx model --------===//
//
// Implements compiled-model ABI 2 by hand, calling the runtime's mgpu*
// entry points in the order MLIR 22's gpu-to-llvm lowering does: a global
// constructor loads the embedded GPU binary (mgpuModuleLoad) and a global
// destructor unloads it; the entry point gets a stream, allocates a device
// temporary, copies, looks the kernel up, launches it, frees, synchronizes
// and destroys the stream. Manifest: fake_gpu_model.json.
//   out[l, j] = 2 * x[l, j] + w[j]     (f32, L x 8)
// The kernel, "torsor_fake_axpy", is emulated by the fake driver
// (FakeCuda.cpp), since no PTX can run without a GPU. With
// TORSOR_FAKE_GPU_GRAD (manifest fake_gpu_model_grad.json) it also has
// torsor_backward, the VJP (grad.x = 2 cot, grad.w = Σ_l cot) by the kernel
// "torsor_fake_axpy_grad".
// TORSOR_FAKE_GPU_BAD_ LAUNCH makes a variant that launches with a negative
// grid.
//
//===----------------------------------------------------------------------===//

#include <cstddef>
#include <cstdint>

extern "C" {
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
}

namespace {

/// MLIR's strided memref descriptor of rank R.
template <int R> struct Memref {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[R];
  int64_t strides[R];
};

/// Stands in for the embedded cubin.
unsigned char blob[16] = {0x7f, 'F', 'A', 'K', 'E'};
void *gpuModule = nullptr;

/// The constructor and destructor MLIR emits for an embedded binary.
struct LoadUnload {
  LoadUnload() { gpuModule = mgpuModuleLoad(blob, sizeof(blob)); }
  ~LoadUnload() { mgpuModuleUnload(gpuModule); }
} loadUnload;

} // namespace

extern "C" {

/// ABI version of this model: descriptors hold device pointers.
__attribute__((visibility("default"))) int32_t torsor_abi_version(void) {
  return 2;
}

/// The manifest, embedded as torsorc embeds it (fake_gpu_model.json).
__attribute__((visibility("default"))) const char *torsor_model_manifest(void) {
  return
#include "FakeGpuManifest.inc"
      ;
}

/// Entry point: descriptors of x (input), w (param), out (output).
__attribute__((visibility("default"))) void torsor_forward(void **d) {
  auto *x = static_cast<Memref<2> *>(d[0]);
  auto *w = static_cast<Memref<1> *>(d[1]);
  auto *out = static_cast<Memref<2> *>(d[2]);
  int64_t n = x->sizes[0] * x->sizes[1], dim = w->sizes[0];
  void *stream = mgpuStreamCreate();
  // A device temporary holding a copy of x, as a bufferized model makes.
  auto *tmp = static_cast<float *>(
      mgpuMemAlloc(static_cast<uint64_t>(n) * sizeof(float), stream, false));
  mgpuMemcpy(tmp, x->aligned, static_cast<size_t>(n) * sizeof(float), stream);
  void *fn = mgpuModuleGetFunction(gpuModule, "torsor_fake_axpy");
  // Kernel arguments expanded as MLIR does: three rank-1 memrefs, n, d.
  int64_t zero = 0, one = 1;
  float *inP = tmp, *wP = w->aligned, *outP = out->aligned;
  void *params[] = {&inP, &inP,  &zero, &n,    &one, &wP,  &wP, &zero, &dim,
                    &one, &outP, &outP, &zero, &n,   &one, &n,  &dim};
#ifdef TORSOR_FAKE_GPU_BAD_LAUNCH
  intptr_t grid = -1;
#else
  intptr_t grid = (n + 127) / 128; // 0 for L = 0: launches nothing
#endif
  mgpuLaunchKernel(fn, grid, 1, 1, 128, 1, 1, 0, stream, params, nullptr,
                   sizeof(params) / sizeof(params[0]));
  mgpuMemFree(tmp, stream);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

#ifdef TORSOR_FAKE_GPU_GRAD
/// Backward entry (torsorc --grad's ABI): descriptors of x, w, the
/// cotangent of out, then grad.x and grad.w, all device pointers.
__attribute__((visibility("default"))) void torsor_backward(void **d) {
  auto *x = static_cast<Memref<2> *>(d[0]);
  auto *w = static_cast<Memref<1> *>(d[1]);
  auto *cot = static_cast<Memref<2> *>(d[2]);
  auto *gx = static_cast<Memref<2> *>(d[3]);
  auto *gw = static_cast<Memref<1> *>(d[4]);
  int64_t n = x->sizes[0] * x->sizes[1], dim = w->sizes[0];
  void *stream = mgpuStreamCreate();
  void *fn = mgpuModuleGetFunction(gpuModule, "torsor_fake_axpy_grad");
  int64_t zero = 0, one = 1;
  float *cP = cot->aligned, *xP = gx->aligned, *wP = gw->aligned;
  void *params[] = {&cP,  &cP, &zero, &n,    &one, &xP,  &xP, &zero, &n,
                    &one, &wP, &wP,   &zero, &dim, &one, &n,  &dim};
  mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr,
                   sizeof(params) / sizeof(params[0]));
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}
#endif // TORSOR_FAKE_GPU_GRAD

} // extern "C"
