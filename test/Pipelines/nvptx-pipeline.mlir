// REQUIRES: ptxas, libdevice
// RUN: torsor-opt %s --torsor-nvptx-pipeline | FileCheck %s
// RUN: torsor-opt %s --torsor-nvptx-pipeline | FileCheck %s --check-prefix=BIN
// RUN: torsor-opt %s --torsor-nvptx-pipeline="gpu-format=isa gpu-arch=sm_80" | FileCheck %s --check-prefix=PTX --implicit-check-not=.extern

// The whole NVPTX pipeline on one lie op: the batch loop of lie.log is one
// kernel; the host code is LLVM that launches it from one embedded cubin
// (one gpu.module after merging) assembled for sm_90, and touches no data.
// CHECK-LABEL: llvm.func @log_so2
//   CHECK-NOT:   lie.
//   CHECK-NOT:   memref.
//       CHECK:   llvm.call @mgpuMemAlloc
//       CHECK:   gpu.launch_func @torsor_kernels::@log_so2_kernel
// CHECK-LABEL: llvm.func @_mlir_ciface_log_so2
// BIN:     gpu.binary @torsor_kernels {{ *}}[#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, {{.*}}bin = "
// BIN-NOT: gpu.binary
// BIN-NOT: gpu.module

// The PTX (gpu-format=isa) is for the requested chip and has libdevice's
// atan2 linked in: no `.extern .func` is left for the driver to resolve.
// PTX: gpu.binary @torsor_kernels {{ *}}[#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">, {{.*}}assembly = "
// PTX-SAME: .target sm_80
// PTX-SAME: .visible .entry log_so2_kernel(
// PTX-NOT: .extern .func
func.func @log_so2(%g: memref<?x2x2xf32>, %out: memref<?x1xf32>) attributes {llvm.emit_c_interface} {
  %t = bufferization.to_tensor %g restrict : memref<?x2x2xf32> to tensor<?x2x2xf32>
  %w = lie.log %t {group = #lie.group<so2>} : tensor<?x2x2xf32> -> tensor<?x1xf32>
  bufferization.materialize_in_destination %w in restrict writable %out : (tensor<?x1xf32>, memref<?x1xf32>) -> ()
  return
}
