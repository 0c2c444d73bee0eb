// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=512 | FileCheck %s --check-prefix=AVX512
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=256 | FileCheck %s --check-prefix=AVX2
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy | FileCheck %s --check-prefix=KEEP

// A module without a strategy gets the one for the given width, or the
// portable 128-bit one.

// AVX512: module attributes {torsor.strategy = {attention_key_vectors = 4 : i64, attention_max_query_rows = 4 : i64, matmul_cache_cols = 256 : i64, matmul_cache_depth = 256 : i64, matmul_pack_transposed = 1 : i64, matmul_register_rows = 8 : i64, matmul_register_vectors = 2 : i64, matmul_task_rows = 32 : i64, row_task_rows = 16 : i64, target = "cpu", vector_bits = 512 : i64, vector_registers = 32 : i64}}
// AVX2:   module attributes {torsor.strategy = {{.*}}matmul_register_rows = 4 : i64, matmul_register_vectors = 2 : i64{{.*}}vector_bits = 256 : i64, vector_registers = 16 : i64}}
// KEEP:   module attributes {torsor.strategy = {{.*}}vector_bits = 128 : i64, vector_registers = 16 : i64}}
module {
  func.func @f() { return }
}

// -----

// A strategy already there is kept when no width is given (KEEP), and
// replaced when one is.

// AVX512: vector_bits = 512
// AVX2:   vector_bits = 256
// KEEP:   module attributes {torsor.strategy = {attention_key_vectors = 3 : i64, vector_bits = 64 : i64}}
module attributes {torsor.strategy = {attention_key_vectors = 3 : i64, vector_bits = 64 : i64}} {
  func.func @g() { return }
}

// -----

// target=nvptx writes the GPU strategy: the CPU fields for one thread plus
// the gpu_* fields, replacing whatever was there.
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy="target=nvptx gpu-arch=sm_80" | FileCheck %s --check-prefix=NVPTX
// NVPTX: module attributes {torsor.strategy = {{{.*}}gpu_arch = "sm_80", gpu_attention_key_tile = 64 : i64, gpu_attention_query_rows = 64 : i64, gpu_attention_rows_per_thread = 1 : i64, gpu_attention_score_chunk = 16 : i64, gpu_matmul_block_cols = 64 : i64, gpu_matmul_block_depth = 16 : i64, gpu_matmul_block_rows = 64 : i64, gpu_matmul_thread_cols = 4 : i64, gpu_matmul_thread_rows = 4 : i64, gpu_shared_memory_bytes = 49152 : i64, gpu_threads_per_block = 256 : i64, gpu_warp_size = 32 : i64{{.*}}target = "nvptx"
module attributes {torsor.strategy = {vector_bits = 512 : i64}} {
  func.func @h() { return }
}
