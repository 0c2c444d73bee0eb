// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=512 | FileCheck %s --check-prefix=AVX512
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=vector-bits=256 | FileCheck %s --check-prefix=AVX2
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy | FileCheck %s --check-prefix=PORTABLE
// RUN: torsor-opt %s --split-input-file --torsor-select-strategy=target=nvptx | FileCheck %s --check-prefix=NVPTX

// Every function gets the dense schedule of the target, every fused
// attention the attention schedule for its element type and value width:
// f32 with 64 value features at 512 bits is 16 lanes, 4 vectors of keys
// per step, and 4 rows (4 accumulator vectors each, 16 of 32 registers);
// at 256 bits the rows' 8 vectors each leave room for one row only, whose
// score loop then covers two vectors of keys per operation
// (score_vectors = 2). The backward takes the same lanes and key tile,
// but on a CPU at least 2 rows (it keeps no value accumulators in
// registers, so the forward's 1 row at 256 bits would make every row pay
// dv's loads and stores alone) and no score_vectors. Only the CPU forward
// gets cache blocks: ops of 16 query rows, run in micro-kernels of
// query_rows rows over blocks of keys whose values and features take
// 256 KiB (key_block: 768 keys of 64 f32 values in tiles of 64, 800 in
// tiles of 32, 1344 keys of 8 f64 values in tiles of 32). For the GPU the
// forward gets the thread-block schedule and the backward runs on one
// lane per thread.

// AVX512-LABEL: func.func @attention
//  AVX512-SAME: torsor.strategy = #strategy.dense<vector_bits = 512, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 8, register_vectors = 2, pack_transposed = true, row_task_rows = 16, pack_panels = true>
//       AVX512: geo.flash_lie_attention {{.*}}torsor.strategy = #strategy.vector_attention<lanes = 16, query_rows = 4, key_tile = 64, query_block = 16, key_block = 768>
//       AVX512: geo.flash_lie_attention_grad {{.*}}torsor.strategy = #strategy.vector_attention<lanes = 16, query_rows = 4, key_tile = 64>
//       AVX512: geo.flash_lie_attention {{.*}}torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 4, key_tile = 32, query_block = 16, key_block = 1344>

// AVX2-LABEL: func.func @attention
//  AVX2-SAME: #strategy.dense<vector_bits = 256, task_rows = 32, {{.*}}register_rows = 4, register_vectors = 2, {{.*}}pack_panels = true>
//       AVX2: geo.flash_lie_attention {{.*}}#strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32, score_vectors = 2, query_block = 16, key_block = 800>
//       AVX2: geo.flash_lie_attention_grad {{.*}}#strategy.vector_attention<lanes = 8, query_rows = 2, key_tile = 32>}
//       AVX2: geo.flash_lie_attention {{.*}}#strategy.vector_attention<lanes = 4, query_rows = 4, key_tile = 16, query_block = 16, key_block = 1360>

// PORTABLE-LABEL: func.func @attention
//  PORTABLE-SAME: #strategy.dense<vector_bits = 128, {{.*}}register_rows = 4, register_vectors = 2
//       PORTABLE: geo.flash_lie_attention {{.*}}#strategy.vector_attention<lanes = 4, query_rows = 1, key_tile = 16, score_vectors = 2, query_block = 16, key_block = 816>

// NVPTX-LABEL: func.func @attention
//  NVPTX-SAME: torsor.strategy = #strategy.gpu_dense<threads_per_block = 256, block_rows = 64, block_cols = 64, block_depth = 16, thread_rows = 4, thread_cols = 4>
//       NVPTX: geo.flash_lie_attention {{.*}}torsor.strategy = #strategy.gpu_attention<threads = 64, rows_per_thread = 1, key_tile = 64, score_chunk = 16, shared_memory_bytes = 49152>
//       NVPTX: geo.flash_lie_attention_grad {{.*}}torsor.strategy = #strategy.vector_attention<lanes = 1, query_rows = 1, key_tile = 4, backward = two_pass>
func.func @attention(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x64xf32>, %init: tensor<?x64xf32>, %do: tensor<?x64xf32>,
                     %q64: tensor<?x9xf64>, %k64: tensor<9x?xf64>, %v64: tensor<?x8xf64>, %init64: tensor<?x8xf64>)
    -> (tensor<?x64xf32>, tensor<?x9xf32>, tensor<?x8xf64>) {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<?x64xf32>) -> tensor<?x64xf32>
  %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) -> (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>)
  %o64 = geo.flash_lie_attention %q64, %k64, %v64, %c0, %init64 {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf64>, tensor<9x?xf64>, tensor<?x8xf64>, index, tensor<?x8xf64>) -> tensor<?x8xf64>
  return %o, %dq, %o64 : tensor<?x64xf32>, tensor<?x9xf32>, tensor<?x8xf64>
}

// -----

// The block backward of two token sets gets the backward's strategy too
// (geo-decompose-attention-grad hands it to the flash backward it becomes).

// AVX512-LABEL: func.func @cross_block_grad
//       AVX512: geo.lie_cross_attention_grad {{.*}}torsor.strategy = #strategy.vector_attention<lanes = 16, query_rows = 4, key_tile = 64>
// AVX2-LABEL: func.func @cross_block_grad
//       AVX2: geo.lie_cross_attention_grad {{.*}}#strategy.vector_attention<lanes = 8, query_rows = 2, key_tile = 32>}
func.func @cross_block_grad(%gq: tensor<?x4x4xf32>, %gk: tensor<?x4x4xf32>, %v: tensor<?x64xf32>,
                            %o: tensor<?x64xf32>, %lse: tensor<?x4xf32>, %do: tensor<?x64xf32>,
                            %qo: index, %ko: index)
    -> (tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x64xf32>) {
  %dgq, %dgk, %dv = geo.lie_cross_attention_grad %gq, %gk, %v, %o, %lse, %do, %qo, %ko {
      scores = #geo.scores<group = #lie.group<se3>, heads = 4, tau = [1.0, 1.0, 1.0, 1.0],
      lambda = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], causal>}
      : (tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x64xf32>, tensor<?x64xf32>,
         tensor<?x4xf32>, tensor<?x64xf32>, index, index)
        -> (tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x64xf32>)
  return %dgq, %dgk, %dv : tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x64xf32>
}

// -----

// An op that carries a strategy keeps it: a test (or a user) can pin one,
// and the pipelines run this pass again after passes that create ops.

// AVX512-LABEL: func.func @pinned
//  AVX512-SAME: #strategy.dense<vector_bits = 256, task_rows = 8,
//       AVX512: #strategy.vector_attention<lanes = 2, query_rows = 3, key_tile = 6>
// NVPTX-LABEL: func.func @pinned
//  NVPTX-SAME: #strategy.dense<vector_bits = 256, task_rows = 8,
func.func @pinned(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32>
    attributes {torsor.strategy = #strategy.dense<vector_bits = 256, task_rows = 8, cache_cols = 64, cache_depth = 64, register_rows = 2, register_vectors = 1, pack_transposed = false, row_task_rows = 4>} {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, torsor.strategy = #strategy.vector_attention<lanes = 2, query_rows = 3, key_tile = 6>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %o : tensor<?x64xf32>
}

// -----

// RUN: not torsor-opt %s --split-input-file --torsor-select-strategy=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: torsor-select-strategy: unknown target 'tpu' (expected cpu or nvptx)
func.func @h() { return }
