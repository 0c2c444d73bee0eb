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
