//===- StrategyAttrs.td - Typed tiling strategies ----------*- tablegen -*-===//
//
// One attribute per kind of schedule. A field is declared here once, with
// its meaning; the value each target gets is chosen in Strategy.cpp
// (select*), the only place with tile-size constants.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_STRATEGY_ATTRS
#define TORSOR_STRATEGY_ATTRS

include "dialects/Strategy/IR/StrategyDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Strategy_Attr<string name, string attrMnemonic>
    : AttrDef<Strategy_Dialect, name> {
  let mnemonic = attrMnemonic;
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Strategy_VectorAttentionAttr
    : Strategy_Attr<"VectorAttention", "vector_attention"> {
  let summary = "the fused Lie attention in vectors over keys";
  let description = [{
    The schedule of `geo-tile-attention`, `geo-decompose-attention` and
    `geo-decompose-attention-grad`: query tiles of `query_rows` rows share
    every key feature and value load; keys are processed `lanes` at a
    time, `key_tile` per online-softmax step (a multiple of `lanes`).

    ```mlir
    geo.flash_lie_attention ... {torsor.strategy =
        #strategy.vector_attention<lanes = 16, query_rows = 1, key_tile = 64>}
    ```
  }];
  let parameters = (ins
    "unsigned":$lanes,
    "unsigned":$query_rows,
    "unsigned":$key_tile
  );
}

def Strategy_GPUAttentionAttr
    : Strategy_Attr<"GPUAttention", "gpu_attention"> {
  let summary = "the fused Lie attention as one GPU kernel";
  let description = [{
    The schedule of `geo-map-attention-to-gpu`: a block of `threads`
    threads owns `threads × rows_per_thread` query rows (BQ); key and
    value tiles of `key_tile` keys (BK) are staged in at most
    `shared_memory_bytes` of shared memory; scores are held in registers
    `score_chunk` keys at a time (S, dividing BK).
  }];
  let parameters = (ins
    "unsigned":$threads,
    "unsigned":$rows_per_thread,
    "unsigned":$key_tile,
    "unsigned":$score_chunk,
    "unsigned":$shared_memory_bytes
  );
}

def Strategy_DenseAttr : Strategy_Attr<"Dense", "dense"> {
  let summary = "the CPU's dense and row kernels of one function";
  let description = [{
    The schedule of `torsor-tile-dense` and `torsor-fuse-rows`, stamped on
    a function: a BLIS-style nest, tasks of `task_rows` output rows, cache
    blocks of `cache_cols` columns × `cache_depth` depth, and a register
    tile of `register_rows` rows × `register_vectors` vectors of
    `vector_bits` bits. `pack_transposed` transposes a right operand
    stored `[n, k]` once before the product. Row kernels (norms, softmax)
    keep `row_task_rows` rows per task.
  }];
  let parameters = (ins
    "unsigned":$vector_bits,
    "unsigned":$task_rows,
    "unsigned":$cache_cols,
    "unsigned":$cache_depth,
    "unsigned":$register_rows,
    "unsigned":$register_vectors,
    "bool":$pack_transposed,
    "unsigned":$row_task_rows
  );
  let extraClassDeclaration = [{
    /// SIMD lanes for elements of `bits` width.
    unsigned lanes(unsigned bits) const {
      return getVectorBits() >= bits ? getVectorBits() / bits : 1;
    }
    /// Columns of the register tile for elements of `bits` width.
    unsigned registerCols(unsigned bits) const {
      return getRegisterVectors() * lanes(bits);
    }
  }];
}

def Strategy_GPUDenseAttr : Strategy_Attr<"GPUDense", "gpu_dense"> {
  let summary = "the GPU's dense and loop kernels of one function";
  let description = [{
    The schedule of `torsor-map-dense-to-gpu` and
    `torsor-map-parallel-loops-to-gpu`, stamped on a function: contractions
    in block tiles of `block_rows` × `block_cols` (BM × BN), `block_depth`
    (BK) deep per shared-memory tile, `thread_rows` × `thread_cols`
    (TM × TN) outputs per thread; other parallel loops in blocks of
    `threads_per_block` threads.
  }];
  let parameters = (ins
    "unsigned":$threads_per_block,
    "unsigned":$block_rows,
    "unsigned":$block_cols,
    "unsigned":$block_depth,
    "unsigned":$thread_rows,
    "unsigned":$thread_cols
  );
}

#endif // TORSOR_STRATEGY_ATTRS
