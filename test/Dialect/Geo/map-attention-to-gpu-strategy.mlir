// RUN: torsor-opt %s --geo-map-attention-to-gpu | FileCheck %s
// RUN: torsor-opt %s --geo-map-attention-to-gpu="threads=16 key-tile=16" | FileCheck %s --check-prefix=OPT

// The kernel's tiles come from the op's typed strategy
// (#strategy.gpu_attention): T = 32 threads with R = 2 rows per thread is
// BQ = 64 query rows, BK = 32 keys of
// 9 features and 64 values is a 32 · 73 = 2336-element shared tile, and the
// softmax steps over S = 8 keys. Pass options override single fields
// (threads=16 keeps R = 2).
// CHECK: memref.global "private" @__torsor_attention_tile : memref<2336xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.launch blocks({{.*}}) threads({{.*}}) in ({{.*}} = %c32{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c32{{.*}} step %c8
// OPT: memref.global "private" @__torsor_attention_tile : memref<1168xf32, #gpu.address_space<workgroup>>
// OPT: gpu.launch blocks({{.*}}) threads({{.*}}) in ({{.*}} = %c16{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
module {
  func.func @so3(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
    %c0 = arith.constant 0 : index
    %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, torsor.strategy = #strategy.gpu_attention<threads = 32, rows_per_thread = 2, key_tile = 32, score_chunk = 8, shared_memory_bytes = 49152>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<?x64xf32>) -> tensor<?x64xf32>
    return %o : tensor<?x64xf32>
  }
}
