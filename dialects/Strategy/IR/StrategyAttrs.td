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
include "mlir/IR/EnumAttr.td"

class Strategy_Attr<string name, string attrMnemonic>
    : AttrDef<Strategy_Dialect, name> {
  let mnemonic = attrMnemonic;
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Strategy_GradSchedule : I32EnumAttr<"GradSchedule",
    "how the fused attention's backward visits the pairs", [
  I32EnumAttrCase<"OnePass", 0, "one_pass">,
  I32EnumAttrCase<"TwoPass", 1, "two_pass">
]> {
  let cppNamespace = "::torsor::strategy";
  let genSpecializedAttr = 0;
}

def Strategy_AttentionProducts : I32EnumAttr<"AttentionProducts",
    "how the fused Lie attention multiplies probabilities by values", [
  I32EnumAttrCase<"F32", 0, "f32">,
  I32EnumAttrCase<"BF16Dot", 1, "bf16_dot">
]> {
  let cppNamespace = "::torsor::strategy";
  let genSpecializedAttr = 0;
}

def Strategy_GradScheduleParameter : EnumParameter<Strategy_GradSchedule> {
  let defaultValue = "::torsor::strategy::GradSchedule::OnePass";
}

def Strategy_AttentionProductsParameter
    : EnumParameter<Strategy_AttentionProducts> {
  let defaultValue = "::torsor::strategy::AttentionProducts::F32";
}

def Strategy_VectorAttentionAttr
    : Strategy_Attr<"VectorAttention", "vector_attention"> {
  let summary = "the fused Lie attention in vectors over keys";
  let description = [{
    The schedule of `geo-tile-attention`, `geo-decompose-attention` and
    `geo-decompose-attention-grad`: query tiles of `query_rows` rows share
    every key feature and value load; keys are processed `lanes` at a
    time, `key_tile` per online-softmax step (a multiple of `lanes`).

    `backward` chooses the backward's schedule (the forward ignores it).
    `one_pass` (the default, the CPU's): one parallel loop over key chunks
    evaluates each pair's form and exp once; dk and dv of a block of
    `key_tile` keys accumulate in a stack scratch, dq in per-chunk
    partials that a last loop sums. `two_pass` (a GPU thread's): pass A
    over query rows accumulates dq, pass B over key vectors dk and dv, so
    every pair is evaluated twice but each pass has a thread per row or
    per key.

    `products` is how the forward multiplies probabilities by values:
    `f32` (the default: vector FMAs on f32 P and V) or, under
    `--compute=bf16` on a CPU with AVX512-BF16, `bf16_dot`: P rounded to
    bf16, V rounded to bf16 once per call and packed in pairs of keys
    (VNNI), the products summed in f32 by `vdpbf16ps`
    (`x86vector.avx512.dot`); the online softmax and the lse stay f32
    (docs/precision.md).

    `score_vectors` (default 1) is how many vectors of `lanes` keys one
    operation of the forward's score loop covers (the pair form, the
    scores, the exps and the row sums; P·V keeps vectors of `lanes`
    columns): with 2, each operation is two machine vectors, so that the
    pair form's long dependency chain (division, polynomials, exp) of two
    key vectors interleaves, which a single query row (`query_rows = 1`)
    otherwise leaves to the out-of-order window. `key_tile` is a multiple
    of `lanes × score_vectors`; the backward ignores it.

    `query_block` and `key_block` (default 0: none) block the forward for
    the cache, as a GEMM's nest does: `geo-tile-attention` gives each
    tiled op `query_block` rows (a multiple of `query_rows`), and
    `geo-decompose-attention` runs its micro-kernels of `query_rows` rows
    over one block of `key_block` keys (a multiple of `key_tile`) after
    another, every micro-kernel of the op over a block before the next
    block, with the rows' running state in a stack buffer between blocks.
    A block's key features and values are then read from memory once per
    `query_block` rows and from L2 by the other micro-kernels, where
    without blocks every `query_rows` rows stream all keys and values
    (1.2 MiB at L = 4096 and dv = 64 in f32, more than a 1 MiB L2). The
    backward ignores both.

    ```mlir
    geo.flash_lie_attention ... {torsor.strategy =
        #strategy.vector_attention<lanes = 16, query_rows = 1, key_tile = 64>}
    geo.flash_lie_attention_grad ... {torsor.strategy =
        #strategy.vector_attention<lanes = 1, query_rows = 1, key_tile = 4,
                                   backward = two_pass>}
    geo.flash_lie_attention ... {torsor.strategy =
        #strategy.vector_attention<lanes = 16, query_rows = 4, key_tile = 64,
                                   products = bf16_dot>}
    geo.flash_lie_attention ... {torsor.strategy =
        #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32,
                                   score_vectors = 2>}
    geo.flash_lie_attention ... {torsor.strategy =
        #strategy.vector_attention<lanes = 8, query_rows = 1, key_tile = 32,
                                   score_vectors = 2, query_block = 16,
                                   key_block = 800>}
    ```
  }];
  let parameters = (ins
    "unsigned":$lanes,
    "unsigned":$query_rows,
    "unsigned":$key_tile,
    Strategy_GradScheduleParameter:$backward,
    Strategy_AttentionProductsParameter:$products,
    DefaultValuedParameter<"unsigned", "1">:$score_vectors,
    DefaultValuedParameter<"unsigned", "0">:$query_block,
    DefaultValuedParameter<"unsigned", "0">:$key_block
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

def Strategy_MatmulUnit : I32EnumAttr<"MatmulUnit",
    "the unit that runs bf16 matrix products", [
  I32EnumAttrCase<"FMA", 0, "fma">,
  I32EnumAttrCase<"AVX512BF16", 1, "avx512bf16">,
  I32EnumAttrCase<"AMX", 2, "amx">
]> {
  let cppNamespace = "::torsor::strategy";
  let genSpecializedAttr = 0;
}

def Strategy_BF16ProductsAttr
    : Strategy_Attr<"BF16Products", "bf16_products"> {
  let summary = "matrix products with bf16 operands and f32 sums";
  let description = [{
    `torsorc --compute=bf16` (docs/precision.md): the function's dense
    products round their operands to bf16 and accumulate in f32, on
    `unit`: `amx` (tile registers, `tdpbf16ps`), `avx512bf16`
    (`vdpbf16ps` on vectors) or `fma` (operands rounded to bf16, then the
    f32 kernel). For the first two, operands are packed to multiples of a
    register block: `block_rows` × `block_cols` C tiles of `tile_rows` ×
    `tile_cols` f32, `tile_depth` bf16 deep per tile product. The packed
    operands are tile-contiguous (A `[Mp/T, Kp/D, T, D/2, 2]`, B
    `[Np/T', Kp/D, D/2, T', 2]`), so each tile load reads one block of
    16 rows of 64 bytes. A task computes `task_rows` rows of C; within it
    the depth is split into blocks of `cache_depth` (the A block of the
    task's rows stays in L2, one block column of B in L1 while every row
    block of the task reads it).
  }];
  let parameters = (ins
    EnumParameter<Strategy_MatmulUnit>:$unit,
    "unsigned":$tile_rows,
    "unsigned":$tile_cols,
    "unsigned":$tile_depth,
    "unsigned":$block_rows,
    "unsigned":$block_cols,
    DefaultValuedParameter<"unsigned", "128">:$task_rows,
    DefaultValuedParameter<"unsigned", "256">:$cache_depth
  );
  let extraClassDeclaration = [{
    /// Whether the products run on packed bf16 operands (AMX or
    /// AVX512-BF16), i.e. torsor-tile-dense packs them and
    /// torsor-lower-dense-bf16 lowers the packed product.
    bool packs() const { return getUnit() != MatmulUnit::FMA; }
    /// Rows, columns and depth the packed operands are padded to a
    /// multiple of: one register block (the AVX512-BF16 kernel uses the
    /// same packing).
    unsigned blockRows() const { return getTileRows() * getBlockRows(); }
    unsigned blockCols() const { return getTileCols() * getBlockCols(); }
    unsigned blockDepth() const { return getTileDepth(); }
  }];
}

def Strategy_DenseAttr : Strategy_Attr<"Dense", "dense"> {
  let summary = "the CPU's dense and row kernels of one function";
  let description = [{
    The schedule of `torsor-tile-dense` and `torsor-fuse-rows`, stamped on
    a function: a BLIS-style nest, tasks of `task_rows` output rows, cache
    blocks of `cache_cols` columns × `cache_depth` depth, and a register
    tile of `register_rows` rows × `register_vectors` vectors of
    `vector_bits` bits. `pack_transposed` transposes a right operand
    stored `[n, k]` once before the product. `pack_panels` instead packs
    a right operand (stored `[k, n]` or `[n, k]`) into panels of one
    register tile's columns, `[ceil(n / nr), k, nr]`, so the micro-kernel
    reads it as one contiguous stream; where it reads params only, the
    packing runs once per model load (torsor-hoist-packed-params).
    Row kernels (norms, softmax)
    keep `row_task_rows` rows per task. With `bf16`
    (`#strategy.bf16_products`), products take bf16 operands; without it
    they are f32.
  }];
  let parameters = (ins
    "unsigned":$vector_bits,
    "unsigned":$task_rows,
    "unsigned":$cache_cols,
    "unsigned":$cache_depth,
    "unsigned":$register_rows,
    "unsigned":$register_vectors,
    "bool":$pack_transposed,
    "unsigned":$row_task_rows,
    OptionalParameter<"BF16ProductsAttr">:$bf16,
    DefaultValuedParameter<"bool", "false">:$pack_panels
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
