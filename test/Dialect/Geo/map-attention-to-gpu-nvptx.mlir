// REQUIRES: ptxas, libdevice
// The GPU attention kernels go all the way to sm_90 code with the upstream
// GPU passes: bufferize, outline, NVVM, PTX (ptxas is not run for isa), and
// a cubin from CUDA's ptxas (bin). One kernel per attention op, its shared
// tile 16-byte aligned, two barriers per key tile, 16-byte shared loads of
// the values, libdevice linked (no external functions left).
// RUN: torsor-opt %s --geo-map-attention-to-gpu=score-chunk=4 --canonicalize --cse --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --gpu-kernel-outlining --symbol-dce --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" | FileCheck %s --check-prefix=PTX
// RUN: torsor-opt %s --geo-map-attention-to-gpu=score-chunk=4 --canonicalize --cse --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --gpu-kernel-outlining --symbol-dce --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=bin" | FileCheck %s --check-prefix=CUBIN

// PTX:       gpu.binary @so3_causal_kernel {{ *}}[#gpu.object<#nvvm.target<chip = "sm_90"{{.*}}assembly = "
// PTX-SAME:    .target sm_90
// PTX-NOT:     .extern .func
// PTX-SAME:    .entry so3_causal_kernel(
// PTX-SAME:    .maxntid 64, 1, 1
// PTX-SAME:    .shared .align 16 .b8 __torsor_attention_tile[18688]
// PTX-SAME:    bar.sync
// PTX-SAME:    st.shared
// PTX-SAME:    bar.sync
// PTX-SAME:    ld.shared.v4
// PTX-SAME:    fma.rn.f32
// PTX-SAME:    st.global
// PTX-NOT:     .extern .func
// PTX:       gpu.binary @se3_kernel {{ *}}[#gpu.object<#nvvm.target<chip = "sm_90"{{.*}}assembly = "
// PTX-SAME:    .entry se3_kernel(
// PTX-SAME:    .shared .align 16 .b8 __torsor_attention_tile{{(_0)?}}[19456]
// PTX-SAME:    bar.sync
// PTX-SAME:    ld.shared.v4
// PTX-NOT:     .extern .func
// PTX-NOT:   gpu.launch_func {{.*}}_kernel_0

// CUBIN: llvm.func @so3_causal
// CUBIN:   gpu.launch_func {{ *}}@so3_causal_kernel::@so3_causal_kernel
// CUBIN: gpu.binary @so3_causal_kernel {{ *}}[#gpu.object<#nvvm.target<chip = "sm_90"{{.*}}bin = "\7FELF
// CUBIN: llvm.func @se3
// CUBIN:   gpu.launch_func {{ *}}@se3_kernel::@se3_kernel
// CUBIN: gpu.binary @se3_kernel {{ *}}[#gpu.object<#nvvm.target<chip = "sm_90"{{.*}}bin = "\7FELF

func.func @so3_causal(%q: tensor<?x?x9xf32>, %k: tensor<?x9x?xf32>, %v: tensor<?x?x64xf32>, %init: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>} : (tensor<?x?x9xf32>, tensor<?x9x?xf32>, tensor<?x?x64xf32>, index, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %o : tensor<?x?x64xf32>
}

func.func @se3(%q: tensor<?x12xf32>, %k: tensor<12x?xf32>, %v: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<se3>, heads = 2, tau = [1.0, 0.5], lambda = [1.0, 1.0, 2.0, 0.5]>} : (tensor<?x12xf32>, tensor<12x?xf32>, tensor<?x64xf32>, index, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %o : tensor<?x64xf32>
}
