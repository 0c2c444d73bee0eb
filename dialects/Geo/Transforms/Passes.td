//===- Passes.td - Geo transformations ---------------------*- tablegen -*-===//
//
// The fused attention pipeline (docs/compiler.md): fuse → tile → decompose,
// after IREE's online attention. Each step is a pass of its own with its
// own lit test; tile sizes come from each op's typed strategy
// (`torsor.strategy`, dialects/Strategy).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_GEO_TRANSFORMS_PASSES
#define TORSOR_GEO_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def GeoFuseAttention : Pass<"geo-fuse-attention"> {
  let summary = "Rewrite geo.lie_attention into pair features and an "
                "online-softmax attention";
  let description = [{
    Replaces every `geo.lie_attention` by the group model's per-token
    pair features (`lie.pair_features`, once per token for the queries and
    once for the keys, the keys transposed feature-major) and one
    `geo.flash_lie_attention` over them. No L × L tensor remains: the
    pairwise block norms are recomputed per tile from the features. When
    a `geo.flash_lie_attention_grad` of the same attention (features of
    the same poses, same values and attributes: what the gradient rule
    emits) takes the result as `out`, the fused op also returns the
    per-row log-sum-exp (`lse`) and the gradient takes it, so the backward
    does not recompute the softmax statistics (both attention kernels,
    CPU and GPU, write it). `lse=false` leaves the gradient to recompute
    them.

    Before:
    ```mlir
    %o = geo.lie_attention %g, %v {scores = #geo.scores<
           group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>}
        : (tensor<?x3x3xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
    After:
    ```mlir
    %q = lie.pair_features %g {group = #lie.group<so3>} : tensor<?x3x3xf32> -> tensor<?x9xf32>
    %k = lie.pair_features %g {group = #lie.group<so3>, key} : tensor<?x3x3xf32> -> tensor<?x9xf32>
    %kt = linalg.transpose ins(%k : tensor<?x9xf32>) outs(%e : tensor<9x?xf32>) permutation = [1, 0]
    %o = geo.flash_lie_attention %q, %kt, %v, %c0, %init {...}
    ```
  }];
  let dependentDialects = ["::torsor::lie::LieDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
  let options = [
    Option<"lse", "lse", "bool", /*default=*/"true",
           "Hand the forward's log-sum-exp to the gradient of the same "
           "attention">,
  ];
}

def GeoTileAttention : Pass<"geo-tile-attention"> {
  let summary = "Tile geo.flash_lie_attention into parallel query tiles";
  let description = [{
    Splits each untiled `geo.flash_lie_attention` into query tiles of R
    rows and sets `key_tile` (keys per online-softmax step), both from the
    op's `#strategy.vector_attention` (R: as many rows as keep the
    accumulators in registers; the portable CPU choice without one). The
    tiles carry the strategy on. The
    batch dims and the query tiles are flattened into one `scf.for` marked
    `torsor.parallel`, so the tiles run on the runtime's thread pool; the
    rows left over when R does not divide L run as 1-row tiles in a second
    such loop. With cache blocks (the strategy's `query_block` and
    `key_block`) the tiles are `query_block` rows, ceil(L / query_block)
    of them, the last one moved back to end at row L: it recomputes rows
    of its neighbour, bit for bit, instead of remainder tiles that would
    each be another copy of the kernel; only L < query_block runs as 1-row
    tiles (which `geo-decompose-attention` runs fully masked). Each tile
    reads all keys and values and writes its own rows only (rows two
    tiles share get the same bits from both). An `lse` result is carried through the
    same loops and written row for row like the output.

    After (R = 4, 16 lanes, 2 key vectors):
    ```mlir
    %r = scf.for %t = %c0 to %tiles step %c1 iter_args(%out = %init) {
      %qs = tensor.extract_slice %q[%row, 0] [4, 9] [1, 1]
      %o = geo.flash_lie_attention %qs, %k, %v, %row, %os {..., key_tile = 32 : i64}
      %next = tensor.insert_slice %o into %out[%row, 0] [4, 64] [1, 1]
      scf.yield %next
    } {torsor.parallel}
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::torsor::strategy::StrategyDialect"];
}

def GeoDecomposeAttention : Pass<"geo-decompose-attention"> {
  let summary = "Lower tiled geo.flash_lie_attention to loops over vectors";
  let description = [{
    Turns each tiled `geo.flash_lie_attention` (static rows, `key_tile`
    set) into a loop over key tiles carrying, per row and head, the
    running sum (one lane each) and the output accumulators, all in
    vector registers:
      1. key features of `lanes` consecutive keys are vector loads;
      2. the group model's pairwise block norms are built on vectors (one
         pair per lane), once per pair for every head;
      3. softmax: every c_hb = −λ_hb/τ_h ≤ 0, so every score is ≤ 0 and
         the self pair's is 0: the row max is 0, p = exp(s) needs no
         running max, no horizontal max and no rescaling, and heads with
         equal coefficients share one exp. A loop over the tile's key
         vectors scores each vector and stores its probabilities at once
         (one copy of the pair form per row). Coefficients of either sign
         would get the online softmax's running max (one horizontal max
         per tile and head, rescaling of sum and accumulators);
      4. P·V as vector FMAs of each value row into the accumulators; with
         the strategy's `products = bf16_dot` (`--compute=bf16` on a CPU
         with AVX512-BF16), V is rounded to bf16 and packed in pairs of
         keys once per call, P is rounded to bf16, and each pair of keys
         is one `x86vector.avx512.dot` (vdpbf16ps, f32 sums) per chunk;
         the softmax statistics stay f32.
    With an `lse` result, log Σ l (m + log Σ l with a running max) per
    row and head is written too.
    Keys that no row of the tile may see (causal) are never visited; key
    tiles that need masking (the causal diagonal and the sequence end) run
    in a second, masked loop. For f32, the kernel's atan2 and exp are
    polynomials (KernelMath.h; accuracy in docs/geo.md); f64 keeps
    libm. Models whose pairwise form is not straight-line (declared groups
    with iterative logs) compute it per lane with scalar code, in one
    private function per group and element type. The math is
    AttentionKernel.h's, shared with the backward and the GPU kernel.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::x86vector::X86VectorDialect",
                           "::torsor::strategy::StrategyDialect"];
}

def GeoDecomposeAttentionGrad : Pass<"geo-decompose-attention-grad"> {
  let summary = "Lower geo.flash_lie_attention_grad to parallel vector loops";
  let description = [{
    The flash-style backward of Lie attention (FlashAttention-2's, without
    atomics). A row pass over (batch element, query tile) pairs
    (`torsor.parallel`) stores D = ⟨dO, O⟩ per row and head and the lse:
    the op's `lse` operand (the fused forward's) or, without one, a
    recompute from the pair features — without a running max when every
    c_hb = −λ_hb/τ_h ≤ 0 (then every score is ≤ 0 and the always-visible
    self pair scores 0, so the row max is 0 and Σ exp(s) ≥ 1), with the
    online softmax's running max otherwise.

    On the CPU one parallel loop over (batch element, key chunk) pairs
    (8 chunks; chunk c takes key blocks c and 15 − c of every 16, which
    balances them under a causal mask) then evaluates each pair's form once: per key block
    (`key_tile` keys) and row block (`query_rows` rows), per key vector,
    P = exp(s − lse) (with the known max, e^s · e^{−lse}), dP = dO·v,
    dS = P(dP − D) and the adjoint of the group model's pair form; dk and
    dv accumulate per lane in a stack scratch of the block (which also
    holds the block's keys and values, packed per key vector), dq per lane
    over the block and then into the chunk's partial, [chunks, Lq, Fq],
    which a last parallel loop over rows sums. With vectors of one lane
    (the GPU's strategy: a thread per key) the backward keeps two passes:
    pass A over query tiles for dq, pass B over (batch element, key
    vector) pairs for dk and dv. Batch dims are indexed directly (the flat
    loop index is split into batch indices), never reshaped. Memory beyond
    the inputs and gradients is O(L·(heads + chunks · Fq)); no L × L
    tensor exists.

    Before:
    ```mlir
    %dq, %dk, %dv = geo.flash_lie_attention_grad %q, %k, %v, %o, %do {...}
    ```
    After (sketch, CPU, no `lse` operand, λ ≥ 0):
    ```mlir
    %a:3 = scf.for %t = %c0 to %tiles step %c1 iter_args(%dq0 = %e0, %lse0 = %e1, %d0 = %e2) {
      %st:8 = scf.for %j = %c0 to %end step %c8 ... // sums of exp(s)
      ...
    } {torsor.parallel}
    %b:3 = scf.for %t = %c0 to %chunks step %c1 iter_args(%p0 = %z0, %dk0 = %z1, %dv0 = %z2) {
      %scratch = memref.alloca() : memref<964xf32>
      scf.for %blk = %chunk to %blocks step %c8 ... {   // key blocks
        scf.for %i = %first to %len step %c4 ... {       // row blocks
          scf.for %kv = %c0 to %vectors step %c1 { ... } // P, dP, dS, adjoint
          ... // the row block's dq into the chunk's partial
        }
        ... // the block's dk, dv out of the scratch
      }
    } {torsor.parallel}
    %dq = scf.for %t = %c0 to %rows step %c1 ... // Σ over chunks
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::torsor::strategy::StrategyDialect"];
}

def GeoMapAttentionToGPU : Pass<"geo-map-attention-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Map untiled geo.flash_lie_attention onto a gpu.launch "
                "kernel (blocks of query rows, one thread per row)";
  let description = [{
    The GPU counterpart of `geo-tile-attention` + `geo-decompose-attention`,
    at the same point of the pipeline (after `geo-fuse-attention`, on
    tensors). Each untiled `geo.flash_lie_attention` becomes one
    `gpu.launch` over buffers (`bufferization.to_buffer` of its operands, a
    fresh output buffer read back with `bufferization.to_tensor restrict`):

      * grid (⌈Lq / BQ⌉, Π batch), block (T); thread t of block (x, y)
        owns query rows x·BQ + t + i·T, i < R, of batch element y, and
        holds their running max, running sum and D accumulators per head
        in registers (BQ = T·R);
      * per key tile of BK keys: `gpu.barrier`, the block copies the tile's
        key features and values into one shared buffer cooperatively
        (consecutive threads, consecutive addresses); the buffer is a
        16-byte aligned `memref.global` in the workgroup address space
        (a launch attribution carries no alignment, and the value loads
        are 16 bytes wide),
        `gpu.barrier`; every thread then walks the tile in steps of S
        keys: the group model's pair block norms (its ScalarBuilder
        formulas, scalar mode), the λ-weighted score of every head, an
        online-softmax step (one rescale per S keys) and P·V;
      * key tiles beyond a block's last row (causal) are never visited;
        the tiles that need masking (causal diagonal, sequence end) run in
        a second loop whose keys are masked per row;
      * `out = acc / sum` for the rows inside the sequence, and with an
        `lse` result (a flash backward's) `lse = max + log sum` per row
        and head.

    T, R, BQ, BK, S and the shared-memory budget come from the
    op's `#strategy.gpu_attention` (`torsor.strategy`; the default
    schedule without one), each overridable by an option. For f32 the kernel's atan2 and exp are
    the same polynomial forms as on the CPU (KernelMath.h).

    `cpu-emulation` emits the very same per-thread code with the block and
    thread structure as host loops instead: `scf.parallel` over blocks,
    one `scf.for` over the threads per phase between two barriers, the
    shared tile a stack buffer and the registers that live across a
    barrier spilled to a per-block array. It runs through the CPU pipeline
    and tests the kernel's math, tiling and masking against `-O0` on
    machines without a GPU.

    After (T = 64, BK = 64):
    ```mlir
    memref.global "private" @__torsor_attention_tile
        : memref<5632xf32, #gpu.address_space<workgroup>> {alignment = 16}
    ...
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %tiles, %gy = %batch, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
      %tile = memref.get_global @__torsor_attention_tile
          : memref<5632xf32, #gpu.address_space<workgroup>>
      %st = scf.for %k0 = %c0 to %full step %c64 iter_args(...) {
        gpu.barrier
        scf.for %i = %tx to %c4096 step %c64 { ... memref.store ... %tile }
        gpu.barrier
        ...
      }
      gpu.terminator
    }
    ```
  }];
  let options = [
    Option<"cpuEmulation", "cpu-emulation", "bool", /*default=*/"false",
           "Emit the blocks and threads as host loops (tests the kernel "
           "on the CPU)">,
    Option<"threadsPerBlock", "threads", "unsigned", /*default=*/"0",
           "Threads per block T (0: from the strategy)">,
    Option<"rowsPerThread", "rows-per-thread", "unsigned", /*default=*/"0",
           "Query rows per thread R (0: from the strategy)">,
    Option<"keyTile", "key-tile", "unsigned", /*default=*/"0",
           "Keys per shared-memory tile BK (0: from the strategy)">,
    Option<"scoreChunk", "score-chunk", "unsigned", /*default=*/"0",
           "Keys per online-softmax step S (0: from the strategy)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::torsor::strategy::StrategyDialect"];
}

#endif // TORSOR_GEO_TRANSFORMS_PASSES
