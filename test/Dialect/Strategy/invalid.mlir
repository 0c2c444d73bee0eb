// RUN: torsor-opt %s --split-input-file --verify-diagnostics

// The strategy attributes reject tiles that cannot run.

// expected-error @+1 {{needs key_tile (6) to be a multiple of lanes (4)}}
func.func @ragged_key_tile() attributes {torsor.strategy = #strategy.vector_attention<lanes = 4, query_rows = 1, key_tile = 6>} { return }

// -----

// expected-error @+1 {{needs query_rows ≥ 1}}
func.func @no_rows() attributes {torsor.strategy = #strategy.vector_attention<lanes = 4, query_rows = 0, key_tile = 16>} { return }

// -----

// expected-error @+1 {{needs thread_rows | block_rows and thread_cols | block_cols, got block_rows = 64, thread_rows = 3, block_cols = 64, thread_cols = 4}}
func.func @ragged_thread_tile() attributes {torsor.strategy = #strategy.gpu_dense<threads_per_block = 256, block_rows = 64, block_cols = 64, block_depth = 16, thread_rows = 3, thread_cols = 4>} { return }

// -----

// expected-error @+1 {{needs score_chunk ≥ 1}}
func.func @no_chunk() attributes {torsor.strategy = #strategy.gpu_attention<threads = 64, rows_per_thread = 1, key_tile = 64, score_chunk = 0, shared_memory_bytes = 49152>} { return }

// -----

// expected-error @+1 {{needs cache_depth ≥ 1}}
func.func @no_depth() attributes {torsor.strategy = #strategy.dense<vector_bits = 512, task_rows = 32, cache_cols = 256, cache_depth = 0, register_rows = 8, register_vectors = 2, pack_transposed = true, row_task_rows = 16>} { return }

// -----

// vdpbf16ps sums pairs of keys.
// expected-error @+1 {{needs an even key_tile for products = bf16_dot (pairs of keys), got 3}}
func.func @odd_bf16_key_tile() attributes {torsor.strategy = #strategy.vector_attention<lanes = 1, query_rows = 1, key_tile = 3, products = bf16_dot>} { return }

// -----

// A score operation covers score_vectors whole vectors of keys.
// expected-error @+1 {{needs key_tile (24) to be a multiple of lanes × score_vectors (16)}}
func.func @ragged_score_vectors() attributes {torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 24, score_vectors = 2>} { return }

// -----

// Packed panels are read a register tile of columns at a time within a
// cache block of columns: the block must hold whole tiles (4 x 24 tiles with
// 256-column blocks gave wrong results before this check).
// expected-error @+1 {{cache_cols (256) must be a multiple of the register tile's width with pack_panels: register_vectors x vector_bits / 32 = 24 columns}}
func.func @ragged_panel_block() attributes {torsor.strategy = #strategy.dense<vector_bits = 256, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 4, register_vectors = 3, pack_transposed = true, row_task_rows = 16, pack_panels = true>} { return }

// -----

// expected-error @+1 {{vector_bits must be a multiple of 32, got 48}}
func.func @odd_vector_bits() attributes {torsor.strategy = #strategy.dense<vector_bits = 48, task_rows = 32, cache_cols = 256, cache_depth = 256, register_rows = 4, register_vectors = 2, pack_transposed = true, row_task_rows = 16>} { return }

// -----

// Cache blocks hold whole micro-kernels of rows.
// expected-error @+1 {{needs query_block (6) to be a multiple of query_rows (4)}}
func.func @ragged_query_block() attributes {torsor.strategy = #strategy.vector_attention<lanes = 16, query_rows = 4, key_tile = 64, query_block = 6, key_block = 128>} { return }

// -----

// ... and whole key tiles.
// expected-error @+1 {{needs key_block (100) to be a multiple of key_tile (32)}}
func.func @ragged_key_block() attributes {torsor.strategy = #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32, query_block = 16, key_block = 100>} { return }
