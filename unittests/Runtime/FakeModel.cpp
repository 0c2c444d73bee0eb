//===- FakeModel.cpp - Hand-written stand-in for a compiled model ---------===//
//
// Until torsorc emits shared libraries, the runtime is tested against this
// model, which implements the compiled-model ABI by hand (see
// fake_model.json for its manifest):
//   out[l, j]    = 2 * x[l, j] + pose[l, 0, 0] + w[j]     (f32, L x 8)
//   rowsum[l]    = sum_j out[l, j]                          (f64, L)
// Rows are spread with torsor_parallel_for, resolved from libtorsor_runtime
// at dlopen time exactly as compiled code will be. Compile definitions make
// broken variants: TORSOR_FAKE_NO_ABI (no torsor_abi_version),
// TORSOR_FAKE_ABI=N (reports version N) and TORSOR_FAKE_NO_MANIFEST (no
// embedded manifest, like a library not built by torsorc).
// Like compiled code, every row chunk takes a scratch buffer of its rows
// from torsor_alloc (so the runtime's out-of-memory path is tested), and a
// test hook runs at the start of each forward call (to test concurrent
// calls deterministically).
//
//===----------------------------------------------------------------------===//

#include "torsor/runtime.h"

#include <cstdint>

namespace {

/// MLIR's strided memref descriptor of rank R.
template <typename T, int R> struct Memref {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[R];
  int64_t strides[R];
};

/// Arguments shared by the parallel loop body.
struct Args {
  Memref<float, 3> *pose;
  Memref<float, 2> *x;
  Memref<float, 1> *w;
  Memref<float, 2> *out;
  Memref<double, 1> *rowsum;
};

/// The test hook (torsor_fake_set_hook).
void (*gHook)(void *) = nullptr;
void *gHookCtx = nullptr;

/// Computes rows [lo, hi).
void body(int64_t lo, int64_t hi, void *ctx) {
  Args &a = *static_cast<Args *>(ctx);
  int64_t d = a.x->sizes[1];
  // One f32 per element of the chunk, as compiled code would allocate a
  // tile buffer.
  void *scratch = torsor_alloc((hi - lo) * d * 4, "FakeModel.cpp:scratch");
  for (int64_t l = lo; l < hi; ++l) {
    float p = a.pose->aligned[a.pose->offset + l * a.pose->strides[0]];
    double sum = 0;
    for (int64_t j = 0; j < d; ++j) {
      float v = 2.0f * a.x->aligned[a.x->offset + l * a.x->strides[0] +
                                    j * a.x->strides[1]] +
                p + a.w->aligned[a.w->offset + j * a.w->strides[0]];
      a.out->aligned[a.out->offset + l * a.out->strides[0] +
                     j * a.out->strides[1]] = v;
      sum += v;
    }
    a.rowsum->aligned[a.rowsum->offset + l * a.rowsum->strides[0]] = sum;
  }
  torsor_free(scratch);
}

} // namespace

extern "C" {

#ifndef TORSOR_FAKE_NO_ABI
#ifndef TORSOR_FAKE_ABI
#define TORSOR_FAKE_ABI 1
#endif
/// ABI version of this model.
__attribute__((visibility("default"))) int32_t torsor_abi_version(void) {
  return TORSOR_FAKE_ABI;
}
#endif

#ifndef TORSOR_FAKE_NO_MANIFEST
/// The manifest, embedded as torsorc embeds it (fake_model.json).
__attribute__((visibility("default"))) const char *torsor_model_manifest(void) {
  return
#include "FakeManifest.inc"
      ;
}
#endif

/// Installs `hook(ctx)`, called at the start of every forward call.
__attribute__((visibility("default"))) void
torsor_fake_set_hook(void (*hook)(void *), void *ctx) {
  gHook = hook;
  gHookCtx = ctx;
}

/// Entry point: descriptors of pose, x (inputs), w (param), out, rowsum.
__attribute__((visibility("default"))) void torsor_forward(void **descriptors) {
  if (gHook)
    gHook(gHookCtx);
  Args a{static_cast<Memref<float, 3> *>(descriptors[0]),
         static_cast<Memref<float, 2> *>(descriptors[1]),
         static_cast<Memref<float, 1> *>(descriptors[2]),
         static_cast<Memref<float, 2> *>(descriptors[3]),
         static_cast<Memref<double, 1> *>(descriptors[4])};
  torsor_parallel_for(0, a.x->sizes[0], body, &a);
}

} // extern "C"
