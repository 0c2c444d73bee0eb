// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 avx512bf16=true" | FileCheck %s --check-prefix=DOT
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 amx=true avx512bf16=true" | FileCheck %s --check-prefix=DOT
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16" | FileCheck %s --check-prefix=F32
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=256 compute=bf16 avx512bf16=true" | FileCheck %s --check-prefix=F32
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=f32 amx=true avx512bf16=true" | FileCheck %s --check-prefix=F32

// compute=bf16 gives the fused forward's P·V bf16 products (products =
// bf16_dot: vdpbf16ps) where the CPU has AVX512-BF16 on 512-bit vectors,
// AMX CPUs included; f64 values, the backward, CPUs without AVX512-BF16
// and compute=f32 keep f32 products (the field's default, not printed).

// DOT-LABEL: func.func @attention
//       DOT: geo.flash_lie_attention {{.*}}#strategy.vector_attention<lanes = 16, query_rows = 4, key_tile = 64, products = bf16_dot, query_block = 16, key_block = 768>
//       DOT: geo.flash_lie_attention_grad {{.*}}#strategy.vector_attention<lanes = 16, query_rows = 4, key_tile = 64>}
//       DOT: geo.flash_lie_attention {{.*}}#strategy.vector_attention<lanes = 8, query_rows = 4, key_tile = 32, query_block = 16, key_block = 1344>}
// F32-LABEL: func.func @attention
//   F32-NOT: products
//       F32: return
func.func @attention(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x64xf32>,
                     %init: tensor<?x64xf32>, %do: tensor<?x64xf32>,
                     %q64: tensor<?x9xf64>, %k64: tensor<9x?xf64>, %v64: tensor<?x8xf64>,
                     %init64: tensor<?x8xf64>)
    -> (tensor<?x64xf32>, tensor<?x9xf32>, tensor<?x8xf64>) {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<?x64xf32>) -> tensor<?x64xf32>
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>)
  %o64 = geo.flash_lie_attention %q64, %k64, %v64, %c0, %init64 {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf64>, tensor<9x?xf64>, tensor<?x8xf64>, index, tensor<?x8xf64>) -> tensor<?x8xf64>
  return %o, %dq, %o64 : tensor<?x64xf32>, tensor<?x9xf32>, tensor<?x8xf64>
}
