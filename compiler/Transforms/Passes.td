//===- Passes.td - Torsor model-level passes ---------------*- tablegen -*-===//
//
// Passes that shape a whole compiled model for the runtime's ABI
// (docs/runtime.md "Compiled-model ABI").
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_TRANSFORMS_PASSES
#define TORSOR_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def TorsorWrapModel : Pass<"torsor-wrap-model", "::mlir::ModuleOp"> {
  let summary = "Wrap the model function in destination-passing style";
  let description = [{
    The frontend emits the model as one function on tensors whose arguments
    (inputs, then params) and results (outputs) carry `torsor.name`. The
    runtime allocates every tensor itself, so this pass adds
    `@torsor_model`, taking one memref per input, param and output (in that
    order) with the C interface, and makes the model private so the inliner
    folds it in. Modules without a model function are left alone.

    Before:
    ```mlir
    func.func @M(%x: tensor<?x8xf32> {torsor.name = "x"}) -> (tensor<?x8xf32> {torsor.name = "y"})
    ```
    After:
    ```mlir
    func.func private @M(...)
    func.func @torsor_model(%x: memref<?x8xf32>, %y: memref<?x8xf32>) attributes {llvm.emit_c_interface} {
      %t = bufferization.to_tensor %x restrict : memref<?x8xf32> to tensor<?x8xf32>
      %r = call @M(%t) : (tensor<?x8xf32>) -> tensor<?x8xf32>
      bufferization.materialize_in_destination %r in restrict writable %y : (tensor<?x8xf32>, memref<?x8xf32>) -> ()
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TorsorEmitEntry : Pass<"torsor-emit-entry", "::mlir::ModuleOp"> {
  let summary = "Emit the runtime entry points around the lowered model";
  let description = [{
    Runs on the LLVM dialect, after `torsor-wrap-model` and the lowering.
    Adds `torsor_forward(void **descriptors)`, which loads one memref
    descriptor pointer per tensor and calls `_mlir_ciface_torsor_model`, and
    `torsor_abi_version()`, which returns the ABI version (`abi-version`:
    1 for CPU models, 2 for NVPTX models, whose descriptors point to device
    memory). The runtime calls nothing else.

    After:
    ```mlir
    llvm.func @torsor_forward(%descs: !llvm.ptr) {
      %p0 = llvm.getelementptr %descs[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
      %d0 = llvm.load %p0 : !llvm.ptr -> !llvm.ptr
      ...
      llvm.call @_mlir_ciface_torsor_model(%d0, ...) : (!llvm.ptr, ...) -> ()
      llvm.return
    }
    llvm.func @torsor_abi_version() -> i32
    ```
  }];
  let options = [
    Option<"abiVersion", "abi-version", "unsigned", /*default=*/"1",
           "What torsor_abi_version() returns: 1 for host buffers (CPU "
           "models), 2 for device buffers (NVPTX models)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TorsorSelectStrategy : Pass<"torsor-select-strategy", "::mlir::ModuleOp"> {
  let summary = "Stamp each op a tiling pass lowers with its typed strategy";
  let description = [{
    Chooses how each kernel is tiled for the target and writes it on the op
    as `torsor.strategy`, a typed attribute of the `strategy` dialect
    (dialects/Strategy/IR/StrategyAttrs.td): `#strategy.vector_attention`
    on each `geo.flash_lie_attention` (CPU) and `geo.flash_lie_attention_grad`
    (both targets), `#strategy.gpu_attention` on each
    `geo.flash_lie_attention` (nvptx), and `#strategy.dense` (CPU) or
    `#strategy.gpu_dense` (nvptx) on each function. The tiling passes read
    the attribute of the op they lower; no pass keeps constants of its own.

    An op that already carries a strategy keeps it, so a test can pin one
    by hand and the pipelines run this pass again after the passes that
    create ops (geo-fuse-attention, outlining).

    After (`--torsor-select-strategy=vector-bits=512`), for an f32 SO(3)
    attention with 64 value features:
    ```mlir
    func.func @f(...) attributes {torsor.strategy = #strategy.dense<
        vector_bits = 512, task_rows = 32, cache_cols = 256,
        cache_depth = 256, register_rows = 8, register_vectors = 2,
        pack_transposed = true, row_task_rows = 16>} {
      %o = geo.flash_lie_attention ... {torsor.strategy =
          #strategy.vector_attention<lanes = 16, query_rows = 4,
                                     key_tile = 64>, ...}
    ```
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"128",
           "SIMD register width of the CPU in bits (at least 128)">,
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "cpu, or nvptx for the GPU schedules (thread blocks, shared "
           "memory tiles)">,
    Option<"compute", "compute", "std::string", /*default=*/"\"f32\"",
           "Precision of matrix products: f32 (default) or bf16 (bf16 "
           "operands, f32 accumulation)">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "cpu: the CPU has AMX-BF16 (bf16 products on tile registers)">,
    Option<"avx512bf16", "avx512bf16", "bool", /*default=*/"false",
           "cpu: the CPU has AVX512-BF16 (vdpbf16ps)">,
  ];
  let dependentDialects = ["::torsor::strategy::StrategyDialect"];
}

def TorsorLowerExactMath : Pass<"torsor-lower-exact-math", "::mlir::ModuleOp"> {
  let summary = "Lower exactly rounded math ops to LLVM intrinsics";
  let description = [{
    Runs before `convert-math-to-libm`: `math.fma`, `sqrt`, `absf`,
    `copysign`, `floor`, `ceil`, `trunc` and `roundeven` (scalars or
    vectors) become `llvm.intr.*`, i.e. instructions, instead of libm calls
    per element. Every other math op is left for math-to-libm, which keeps
    libm's accuracy (math-to-llvm would rewrite expm1 and log1p
    inaccurately).

    Before / after:
    ```mlir
    %r = math.fma %a, %b, %c : vector<16xf32>
    %r = llvm.intr.fma(%a, %b, %c) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TorsorOutlineParallelLoops
    : Pass<"torsor-outline-parallel-loops", "::mlir::ModuleOp"> {
  let summary = "Move outermost parallel loops into runtime tasks";
  let description = [{
    First half of CPU multithreading through the runtime's thread pool
    (marked loops become `scf.parallel` first, in
    `torsor-parallelize-marked-loops`). Every outermost
    `scf.parallel` without reductions (on buffers, after
    bufferization) moves into a private function `<f>_parallel<N>(lo, hi,
    captured...)` running iterations [lo, hi) of its first dimension (the
    other dimensions stay an `scf.parallel` inside), and is replaced by a
    call of the declaration `__torsor_launch_<f>_parallel<N>(trips,
    captured...)`, which `torsor-lower-parallel-launch` turns into a
    `torsor_parallel_for` call once memrefs are LLVM values. A body
    identical to one outlined before (same type and ops, locations aside:
    a repeated layer's loops) reuses that function and its launcher, so
    each distinct kernel is compiled once. Finally,
    fixed-size `memref.alloca`s inside loops move to their function's entry
    block, so that per-iteration scratch does not grow the stack (each task
    has its own frame).

    Before:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      ... %buf ...
    }
    ```
    After:
    ```mlir
    %trips = arith.ceildivsi %extent, %c1 : index
    call @__torsor_launch_f_parallel0(%trips, %buf) : (index, memref<?xf32>) -> ()
    ...
    func.func private @f_parallel0(%lo: index, %hi: index, %buf: memref<?xf32>) {
      scf.for %k = %lo to %hi step %c1 { ... }
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TorsorParallelizeMarkedLoops
    : Pass<"torsor-parallelize-marked-loops", "::mlir::ModuleOp"> {
  let summary = "Turn loops marked torsor.parallel into scf.parallel";
  let description = [{
    An `scf.for` marked `torsor.parallel` by a lowering that knows its
    iterations are independent (convert-lie-to-arith's batch loops,
    geo-tile-attention's query tiles) becomes an `scf.parallel` once
    bufferization has left it without results, innermost first. Both
    targets run it before mapping parallel loops: the CPU outlines them
    into runtime tasks (torsor-outline-parallel-loops), the GPU maps them
    onto blocks and threads (torsor-map-parallel-loops-to-gpu). Marked
    loops that still carry results, and unmarked loops, are left alone.

    Before:
    ```mlir
    scf.for %i = %c0 to %n step %c1 { ... } {torsor.parallel}
    ```
    After:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) { ... }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def TorsorMapParallelLoopsToGPU
    : Pass<"torsor-map-parallel-loops-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Map outermost parallel loops onto gpu.launch";
  let description = [{
    NVPTX only; runs on buffers. First every `memref.copy` between buffers
    becomes a parallel loop of loads and stores (device memory cannot be
    copied by the host code). Then every outermost `scf.parallel` without
    reductions becomes one `gpu.launch`: its N-dimensional iteration space
    is flattened (row-major, last dimension fastest, so neighbouring
    threads touch neighbouring elements), cut into tiles of
    `threads_per_block` iterations (the function's `#strategy.gpu_dense`,
    or the default schedule without one); tiles are
    blocks and the iterations of a tile (the lanes) are threads. Each
    thread delinearizes its index, skips it past the end, and runs the
    body; parallel loops nested in the body run sequentially per thread.
    Static-size `memref.alloc`s in the body become per-thread
    `memref.alloca`s (registers or local memory) and their deallocs go.

    Before:
    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%m, %n) step (%c1, %c1) {
      memref.store %x, %buf[%i, %j] : memref<?x?xf32>
    }
    ```
    After:
    ```mlir
    %total = arith.muli %m, %n : index
    %blocks = arith.ceildivui %total, %c256 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %blocks, ...)
               threads(%tx, %ty, %tz) in (%sx = %c256, ...) {
      %id = ... %bx * 256 + %tx ...
      scf.if (%id < %total) {
        %i = arith.divui %id, %n
        %j = arith.remui %id, %n
        memref.store %x, %buf[%i, %j] : memref<?x?xf32>
      }
      gpu.terminator
    }
    ```
  }];
  let dependentDialects = ["::torsor::strategy::StrategyDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def TorsorMapDenseToGPU
    : Pass<"torsor-map-dense-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Map matmul-like contractions onto shared-memory tiled "
                "gpu.launch kernels";
  let description = [{
    NVPTX only, above -O0; runs on buffers, before linalg becomes loops.
    Every linalg contraction with one n and one k loop and any number of
    m and batch loops (projected-permutation maps, float output) becomes
    one `gpu.launch`; the innermost m loop is tiled and the other m loops
    index blocks like batch loops. Block (x, y, z) computes the BM × BN
    output tile at rows y·BM, columns x·BN of batch element z; each of its
    (BM/TM)·(BN/TN) threads holds TM × TN accumulators in registers
    (rows and columns strided by BM/TM and BN/TN, so neighbouring threads
    store neighbouring columns). Per depth tile of BK: `gpu.barrier`, the
    block copies the A tile [BM][BK] and the B tile [BK][BN] into two
    16-byte aligned workgroup globals (consecutive threads along each
    operand's contiguous dim, so `x Wᵀ` loads coalesce too),
    `gpu.barrier`, then BK steps of TM + TN shared loads and TM·TN copies
    of the op's own scalar body. Loads clamp their indices, the depth loop
    stops at K, and only outputs inside the result are stored; the
    accumulators start from the output buffer (a fill or bias is kept).
    BM, BN, BK, TM, TN are the block_* and thread_* fields of the
    function's `#strategy.gpu_dense` (the default schedule without one).

    `cpu-emulation` emits the same per-thread code as one host
    `scf.parallel` over (blocks, threads) instead, each thread staging the
    whole tile into its own stack buffer (no barriers needed): it runs on
    the CPU and tests the kernel's indexing, clamping and edges without a
    GPU.

    After (BM = BN = 64, BK = 16, TM = TN = 4):
    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %ncols, %gy = %nrows, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %acc:16 = scf.for %k0 = %c0 to %k step %c16 iter_args(...) {
        gpu.barrier
        scf.for %i = %tx to %c1024 step %c256 { ... memref.store ... %a_tile }
        scf.for %i = %tx to %c1024 step %c256 { ... memref.store ... %b_tile }
        gpu.barrier
        scf.for %kk = %c0 to %kend step %c1 iter_args(...) { ... arith.mulf ... arith.addf ... }
      }
      ... scf.if (inside) { memref.store ... }
      gpu.terminator
    }
    ```
  }];
  let options = [
    Option<"cpuEmulation", "cpu-emulation", "bool", /*default=*/"false",
           "Emit the blocks and threads as host loops (tests the kernel "
           "on the CPU)">,
  ];
  let dependentDialects = ["::torsor::strategy::StrategyDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def TorsorMapSerialCodeToGPU
    : Pass<"torsor-map-serial-code-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Move the remaining tensor-data accesses into GPU kernels";
  let description = [{
    NVPTX only; runs after `torsor-map-parallel-loops-to-gpu`. The host
    code of an NVPTX model may only control the device: every operation
    left on the host that reads or writes tensor data (a serial loop of
    loads and stores, a call, a vector transfer) moves into a `gpu.launch`
    of one block of one thread, as whole as possible (an `scf.for` or
    `scf.if` whose body also launches kernels is entered instead). Host
    `memref.alloc`/`dealloc` become `gpu.alloc`/`gpu.dealloc` (device
    memory; in the asynchronous form gpu-to-llvm lowers, on a stream waited
    for at once), and `memref.get_global`s used by a kernel are re-created in
    it, so the constant lives in the GPU module. Data accesses whose
    results the host needs cannot move; `torsor-verify-gpu-host-code`
    reports them.

    Before:
    ```mlir
    %buf = memref.alloc(%n) : memref<?xf32>
    scf.for %i = %c1 to %n step %c1 {   // a scan: each step reads the last
      ...memref.load / memref.store...
    }
    ```
    After:
    ```mlir
    %s = gpu.wait async
    %buf, %t = gpu.alloc async [%s] (%n) : memref<?xf32>
    gpu.wait [%t]
    gpu.launch blocks(...) in (%gx = %c1, ...) threads(...) in (%sx = %c1, ...) {
      scf.for %i = %c1 to %n step %c1 { ... }
      gpu.terminator
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TorsorMergeGPUModules
    : Pass<"torsor-merge-gpu-modules", "::mlir::ModuleOp"> {
  let summary = "Put every outlined kernel into one gpu.module";
  let description = [{
    `gpu-kernel-outlining` gives each kernel a `gpu.module` of its own, and
    `gpu-module-to-binary` runs ptxas once per module, each embedded as its
    own cubin with its own load at startup: a model with 200 kernels took
    200 ptxas runs. This pass moves every kernel into one module,
    `@torsor_kernels`, each kernel renamed after its old module (outlining
    may give kernels of different modules the same name; module names are
    unique), keeps helpers and globals cloned into several modules once,
    and points each `gpu.launch_func` at it: one ptxas run and one cubin
    per model.

    Before:
    ```mlir
    gpu.module @f_kernel { gpu.func @f_kernel(...) kernel { ... } }
    gpu.module @f_kernel_0 { gpu.func @f_kernel(...) kernel { ... } }
    gpu.launch_func @f_kernel_0::@f_kernel ...
    ```
    After:
    ```mlir
    gpu.module @torsor_kernels {
      gpu.func @f_kernel(...) kernel { ... }
      gpu.func @f_kernel_0(...) kernel { ... }
    }
    gpu.launch_func @torsor_kernels::@f_kernel_0 ...
    ```
  }];
}

def TorsorVerifyGPUHostCode
    : Pass<"torsor-verify-gpu-host-code", "::mlir::ModuleOp"> {
  let summary = "Fail when an NVPTX model's host code touches tensor data";
  let description = [{
    NVPTX only; runs after `gpu-kernel-outlining`. Nothing may run on the
    host silently: outside `gpu.module`s, no operation may read or write
    the contents of a buffer (`memref.load`/`store`, vector transfers and
    loads, `memref.copy`, `memref.alloca`, linalg ops, atomics), because
    in an ABI 2 model every buffer is device memory. Host code may
    allocate, free, copy through `gpu.memcpy`, read shapes (`memref.dim`,
    views) and launch kernels. Each offending operation is an error at its
    location, naming the op, and the pass fails.

    ```mlir
    func.func @f(%buf: memref<?xf32>) {
      // error: NVPTX host code would read or write tensor data here ('memref.load')
      %x = memref.load %buf[%c0] : memref<?xf32>
    ```
  }];
}

def TorsorLowerParallelLaunch
    : Pass<"torsor-lower-parallel-launch", "::mlir::ModuleOp"> {
  let summary = "Turn launcher calls into torsor_parallel_for tasks";
  let description = [{
    Second half of CPU multithreading; runs on the LLVM dialect. Each call
    `__torsor_launch_<body>(trips, args...)` stores `args` into a context
    struct allocated once in the caller's entry block and calls
    `__torsor_parallel_dispatch(0, trips, @<body>_task, ctx)`. `<body>_task`
    unpacks the struct and calls `<body>`. The dispatcher calls the
    runtime's `torsor_parallel_for`, declared `extern_weak`: loaded without
    the runtime, the model runs the task inline (serially). Tasks and the
    dispatcher are `noinline`, so each launch stays one call in the
    caller's code (a backward has hundreds of them).

    After:
    ```mlir
    llvm.call @__torsor_parallel_dispatch(%c0, %trips, %task, %ctx)
        : (i64, i64, !llvm.ptr, !llvm.ptr) -> ()
    llvm.func internal @f_parallel0_task(%lo: i64, %hi: i64, %ctx: !llvm.ptr)
    llvm.func extern_weak @torsor_parallel_for(i64, i64, !llvm.ptr, !llvm.ptr)
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TorsorTestMatrixFunctions
    : Pass<"torsor-test-matrix-functions", "::mlir::ModuleOp"> {
  let summary = "Test only: expand calls of @torsor_expm/@torsor_logm";
  let description = [{
    Lets the numerics test compile the matrix exp/log builders of
    dialects/Lie/IR/Groups/MatrixFunctions.h without a group model. Each
    `func.call @torsor_expm` / `@torsor_logm` on a `tensor<...xNxNxf32|f64>`
    becomes a loop nest over the batch dims running `buildMatrixExp` /
    `buildMatrixLog` per N×N element; an optional `index` attribute on the
    call passes the nilpotent / unipotent index. The private declarations
    are erased.

    Before:
    ```mlir
    func.func private @torsor_logm(tensor<?x3x3xf64>) -> tensor<?x3x3xf64>
    %l = call @torsor_logm(%a) {index = 3 : i64}
        : (tensor<?x3x3xf64>) -> tensor<?x3x3xf64>
    ```
    After:
    ```mlir
    %l = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> ... {
      %a00 = tensor.extract %a[%i, %c0, %c0] : tensor<?x3x3xf64>
      ...   // the (A − I) series
      %r = tensor.insert %l22 into %acc2[%i, %c2, %c2] : tensor<?x3x3xf64>
      scf.yield %r : tensor<?x3x3xf64>
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TorsorTestKernelMath : Pass<"torsor-test-kernel-math", "::mlir::ModuleOp"> {
  let summary = "Test only: rewrite every math op with the fused kernels' "
                "polynomial f32 forms";
  let description = [{
    Lets test/Numerics/kernel-math.py measure the branch-free f32 math of
    dialects/Geo/Transforms/KernelMath.h (exp, expm1, log, log1p, atan2)
    over the whole f32 range: fused attention kernels apply it only to
    their own ops, this pass to every math op of the module. f64 ops and
    the ops the patterns do not cover keep libm.

    Before:
    ```mlir
    %y = math.expm1 %x : f32
    ```
    After:
    ```mlir
    %p = math.fma %x, %c, %c1 : f32   // ... x·P(x) and e^x − 1, selected
    %y = arith.select %small, %series, %direct : f32
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def GeoRelationalizeAttention
    : Pass<"geo-relationalize-attention", "::mlir::ModuleOp"> {
  let summary = "Rewrite standard multi-head attention into "
                "geo.relational_attention";
  let description = [{
    Finds every attention block of a model function written the standard
    way, `merge_heads(softmax(heads(x @ Wq, H) @ transpose(heads(x @ Wk, H))
    * s) @ heads(x @ Wv, H)) @ Wo` (compiler/Analysis/AttentionMatch.h), and
    replaces it by `geo.relational_attention` on the per-head invariants
    G_QK^h = W_Q^h W_K^hᵀ and G_VO^h = W_V^h W_O^h (docs/relational.md).
    The model's params change: two new `[H, d, d]` params, named after the
    block's prefix (`blocks.0.g_qk`, `blocks.0.g_vo`) and carrying
    `torsor.relational = {form, from, heads}`, replace W_Q, W_K, W_V and W_O
    once nothing else uses those. `torsorc --relationalize
    --convert-weights=OUT.safetensors --weights=IN.safetensors` forms the new
    params from a checkpoint. A block is left alone (with a remark) when its
    Q, K and V read different inputs, its output size differs from d, or a
    weight is not a model param.

    Before:
    ```mlir
    func.func @M(%x: tensor<?x8xf32> {torsor.name = "x"},
                 %wq: tensor<8x8xf32> {torsor.name = "Wq"}, ...) {
      %q = linalg.matmul ins(%x, %wq ...)   // heads(x @ Wq, 2) ...
      ...                                   // softmax(q @ transpose(k) * 0.5)
      %y = linalg.matmul ins(%merged, %wo ...)
    ```
    After:
    ```mlir
    func.func @M(%x: tensor<?x8xf32> {torsor.name = "x"},
                 %gqk: tensor<2x8x8xf32> {torsor.name = "g_qk", ...},
                 %gvo: tensor<2x8x8xf32> {torsor.name = "g_vo", ...}) {
      %y = geo.relational_attention %x, %gqk, %gvo
             {heads = 2 : i64, scale = 5.000000e-01 : f64}
          : (tensor<?x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>)
            -> tensor<?x8xf32>
    ```
  }];
  let dependentDialects = ["::torsor::geo::GeoDialect"];
}

def TorsorTileDense : Pass<"torsor-tile-dense", "::mlir::func::FuncOp"> {
  let summary = "Tile and vectorize matmul-like contractions into FMA kernels";
  let description = [{
    Every float contraction on tensors with one row, column and depth dim
    (`linalg.matmul`, batched or transposed generics) becomes a BLIS-style
    nest built with upstream tiling, peeling and vectorization: an
    `scf.forall` over row blocks (threads), cache blocks of columns and
    depth, register tiles of mr × nr, and a k loop whose
    `[mr, nr, 1]` `vector.contract` is lowered to outer products, i.e.
    `vector.fma`. The accumulator tile is hoisted out of the k loop. A
    right operand stored `[n, k]` is transposed once into `[k, n]`. All
    sizes come from the function's `#strategy.dense` (`torsor.strategy`;
    the portable 128-bit choice without one); ragged edges stay scalar
    loops.

    Glue: chains of elementwise generics are fused first (upstream
    elementwise fusion, all-parallel consumers only), and the elementwise
    chain consuming a contraction (bias, activation, residual) is tiled
    with it into the same `scf.forall` task, together with the
    accumulator's `linalg.fill`, so it runs on the task's row block while
    that is in cache.

    After (mr = 8, nr = 32):
    ```mlir
    scf.forall (%i) = (0) to (%L) step (32) shared_outs(%o = %init) {
      scf.for %j0 ... { scf.for %k0 ... { scf.for %i1 ... { scf.for %j1 ...
        %acc = vector.transfer_read ... : vector<8x32xf32>
        %r = scf.for %k ... iter_args(%a = %acc) -> vector<8x32xf32> {
          ... vector.fma ... : vector<32xf32>
        }
        vector.transfer_write %r, ...
    ```
  }];
  let dependentDialects = ["::torsor::strategy::StrategyDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
}

def TorsorHoistPackedParams
    : Pass<"torsor-hoist-packed-params", "::mlir::ModuleOp"> {
  let summary = "Pack dense products' param operands once per model load";
  let description = [{
    Runs after torsor-tile-dense. Each packed right operand (the op
    marked `torsor.packed_operand`: f32 column panels, or bf16 VNNI pairs
    under `--compute=bf16`) of the model
    wrapper that is computed from params alone moves, with what it reads,
    into `torsor_prepare_model(params..., memref<?xi8>)`, which writes it
    at a 64-byte aligned offset of one byte buffer; the wrapper takes that
    buffer as a new last argument and reads the packed copy through a
    `memref.view`. The module attribute `torsor.prepared_bytes` is the
    buffer's size. The runtime allocates the buffer once per load and
    calls `torsor_prepare` before the first run and after params change
    (docs/runtime.md). Without such operands the pass changes nothing.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def TorsorLowerDenseBF16
    : Pass<"torsor-lower-dense-bf16", "::mlir::func::FuncOp"> {
  let summary = "Lower packed bf16 products to AMX tiles or AVX512-BF16 dots";
  let description = [{
    Runs after bufferization under `--compute=bf16`. Each
    `linalg.generic {torsor.bf16_product}` torsor-tile-dense packed
    (tile-contiguous A `[Mp/16, Kp/32, 16, 16, 2]` and VNNI B
    `[Np/16, Kp/32, 16, 16, 2]` in bf16, C `[Mp/16, 16, Np/16, 16]` in
    f32, for the strategy's 16 × 16 × 32 tiles) becomes a kernel for the
    strategy's unit: `amx` (tile loads, `amx.tile_mulf`, tile stores over
    a block of `block_rows` × `block_cols` C tiles, each A and B tile one
    contiguous KiB) or `avx512bf16` (`x86vector.avx512.dot` on
    `vector<32xbf16>` pairs into `vector<16xf32>` accumulators). Tasks of
    `task_rows` rows are an `scf.parallel` (thread-pool tasks); inside one,
    for both units, the depth runs in blocks of `cache_depth`, then the
    columns in register blocks, then the task's rows, so one block column
    of B stays in L1 while every row block of the task reads it. Where a
    `linalg.fill` of zeros writes C just before the product (and nothing
    else touches C in between), the first depth block starts from zero
    accumulators (`amx.tile_zero`, zero vectors) instead of loading C, and
    the fill is dropped. With `avx512bf16`, when A's tiles come from one
    packing `linalg.generic` (f32 rows rounded to bf16, 2-d products only),
    each task packs just the rows and depth block it multiplies next into
    a per-task stack buffer (`task_rows` × `cache_depth` bf16) instead: the
    same bf16 values, A read once, the whole-matrix buffer and its pass
    gone (PackBF16Rows.h). With any other unit the pass does nothing and
    the generic's loops compute the product.

    After (`unit = amx`, C collapsed back to `[Mp, Np]`):
    ```mlir
    scf.parallel (%i0) = (%c0) to (%Mp) step (%c128) {
      scf.for %k0 = %c0 to %Ko step %c8 {
        scf.for %j = %c0 to %Np step %c32 {
          scf.for %i = %i0 to %iEnd step %c32 {
            %c = amx.tile_load %C[%i, %j] : memref<?x64xf32> into !amx.tile<16x16xf32>
            %r = scf.for %k = %k0 to %kEnd step %c1 iter_args(%acc = %c, ...) {
              %a = amx.tile_load %A[%it, %k, %c0, %c0] : ... into !amx.tile<16x32xbf16>
              %b = amx.tile_load %B[%jt, %k, %c0, %c0] : ... into !amx.tile<16x32xbf16>
              %p = amx.tile_mulf %a, %b, %acc : ...
    ```
  }];
  let dependentDialects = ["::mlir::amx::AMXDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect"];
}

def TorsorFuseRows : Pass<"torsor-fuse-rows", "::mlir::func::FuncOp"> {
  let summary = "Fuse row reductions and their elementwise consumers into row-block tasks";
  let description = [{
    LayerNorm, RMS norm and softmax reach linalg as a chain of generics:
    row reductions over the last dim (sum, sum of squares, max) and
    elementwise generics that read the rows and their statistics. Each
    generic is a pass over the whole tensor. This pass makes every such
    chain one row kernel: the last elementwise generic of the chain is
    tiled by blocks of `row_task_rows` rows (the function's
    `#strategy.dense`) into an `scf.forall`, and its producers (the
    reductions, the elementwise generics between them, their fills) are
    fused into the same task with upstream tile-and-fuse. A task reads its
    rows from memory once; the other passes over them hit L1.
    Contractions are never fused (torsor-tile-dense owns them). The
    reductions' combiners get `fastmath<reassoc>` so that LLVM vectorizes
    them (a lane-wise sum, not the serial left-to-right one of -O0).

    Before (LayerNorm, as the frontend emits it):
    ```mlir
    %sum = linalg.generic {iterator_types = ["parallel", "reduction"]} ...
    %xc  = linalg.generic {iterator_types = ["parallel", "parallel"]} ...
    %ss  = linalg.generic {iterator_types = ["parallel", "reduction"]} ...
    %y   = linalg.generic {iterator_types = ["parallel", "parallel"]} ...
    ```
    After:
    ```mlir
    %y = scf.forall (%i) = (0) to (%L) step (16) shared_outs(%o = %init) {
      %sum = linalg.generic ... -> tensor<?xf32>     // the block's rows
      %xc  = linalg.generic ...
      %ss  = linalg.generic ...
      %yb  = linalg.generic ...
      scf.forall.in_parallel { tensor.parallel_insert_slice %yb ... }
    }
    ```
  }];
  let dependentDialects = ["::torsor::strategy::StrategyDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TorsorResolveDims : Pass<"torsor-resolve-dims", "::mlir::func::FuncOp"> {
  let summary = "Dims of loop results and destinations from the tensors they were built on";
  let description = [{
    Runs right before one-shot bufferization. Each `tensor.dim` of a
    dynamic dim whose tensor is a destination-style result (linalg,
    `tensor.insert`, `tensor.insert_slice`, ...), an `scf.forall` result
    or shared_outs argument, an `scf.for` result or iter_arg whose yielded
    value keeps its shape that way, or an `scf.if` result whose branches
    both yield a tensor of the shape of one defined above the if, takes
    the same dim of that tensor instead; the dim of a `tensor.empty` is
    replaced by its size operand. The sizes are equal, so the program is
    the same.

    One-shot bufferization proves the slices of tiled kernels equal with
    `ValueBoundsConstraintSet`; a slice size bounded by the dim of a loop
    result made it re-prove that dim loop-invariant through the whole loop
    body at every query (most of a `--grad` compile's bufferization time:
    the backward's recomputed forward feeds the dense kernels such
    loops). A dim of a function argument ends each query at once.

    Before:
    ```mlir
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %init)
        -> (tensor<?x64xf32>) {
      %u = tensor.insert %x into %t[%i, %c0] : tensor<?x64xf32>
      scf.yield %u : tensor<?x64xf32>
    }
    %d = tensor.dim %r, %c0 : tensor<?x64xf32>
    ```
    After (`%init = tensor.empty(%len)`): `%d` is `%len`.
  }];
}

def TorsorSplitSharedFills
    : Pass<"torsor-split-shared-fills", "::mlir::func::FuncOp"> {
  let summary = "One fill of its own empty tensor per use of a shared fill";
  let description = [{
    Runs right before empty-tensor elimination and one-shot bufferization.
    A `linalg.fill` of a `tensor.empty` with several uses (CSE merges the
    identical zero fills of accumulators) becomes one fill of a fresh
    empty tensor per use, placed where the original was. The values are
    the same. Bufferization then gives each accumulator its own filled
    buffer instead of a copy of the shared one, and empty-tensor
    elimination (which makes the root of a chain that ends in an output
    that output's buffer) rewrites only fills that the chain alone uses:
    on a shared fill it made the other users' accumulators the output's
    buffer.

    Before:
    ```mlir
    %e = tensor.empty() : tensor<64xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
    %a = linalg.reduce ins(%x : tensor<?x64xf32>) outs(%z : tensor<64xf32>) dimensions = [0] ...
    %b = linalg.reduce ins(%y : tensor<?x64xf32>) outs(%z : tensor<64xf32>) dimensions = [0] ...
    ```
    After: `%b` reads `%z2 = linalg.fill ins(%zero : f32) outs(%e2 :
    tensor<64xf32>)` of its own `%e2 = tensor.empty()`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // TORSOR_TRANSFORMS_PASSES
