/*===- gpu_trampoline.c - ABI-2 entry points for gpu_axpy.mlir ------------===*\
|*                                                                            *|
|* What torsorc adds around a lowered model: the ABI version, the           *|
|* torsor_forward(void **) trampoline over the C interface of @forward, and *|
|* the embedded manifest (the fake GPU model's, FakeGpuManifest.inc).       *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#include <stdint.h>

/// The C interface MLIR emits for @forward (llvm.emit_c_interface).
void _mlir_ciface_forward(void *x, void *w, void *out);

/// ABI 2: every descriptor holds device pointers.
int32_t torsor_abi_version(void) { return 2; }

/// Descriptors of x, w, out in manifest order.
void torsor_forward(void **d) { _mlir_ciface_forward(d[0], d[1], d[2]); }

/// The manifest the runtime checks axpy.json against.
const char *torsor_model_manifest(void) {
  return
#include "FakeGpuManifest.inc"
      ;
}
