//===- GPUKernelBuilder.h - One GPU kernel: launch, tiles, emulation -*- C++
//-*-===//
//
// The scaffolding every hand-built GPU kernel of Torsor shares, below both
// the dialects' transforms (geo-map-attention-to-gpu) and compiler/
// (torsor-map-dense-to-gpu): the empty-grid guard, the shared-memory tiles
// as module-level workgroup globals, the gpu.launch with its block and
// thread ids, the barriers between a block's phases, and the same kernel
// emulated by host loops (`cpu-emulation`), where blocks are an
// scf.parallel and barriers become loop boundaries. The kernels differ only
// in what one thread computes; each builds its thread's code once and hands
// it to either form.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_SUPPORT_GPUKERNELBUILDER_H
#define TORSOR_DIALECTS_SUPPORT_GPUKERNELBUILDER_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace torsor {

/// The ids one thread of a launched (or emulated) kernel runs as.
struct KernelIds {
  mlir::Value blockX, blockY, blockZ; ///< the block in the grid
  mlir::Value thread;                 ///< the thread in the block (x)
};

/// Builds one kernel of a grid of blocks of `threads` threads, on the GPU
/// (gpu.launch, workgroup tiles, gpu.barrier) or, emulated, as host loops
/// that run through the CPU pipeline, so that a kernel's math, tiling and
/// masks are tested without a GPU.
class GPUKernelBuilder {
public:
  /// A kernel built beside `anchor` (its tiles go into anchor's module).
  GPUKernelBuilder(mlir::Operation *anchor, bool emulate)
      : module(anchor->getParentOfType<mlir::ModuleOp>()), emulate(emulate) {}

  /// Whether the kernel is built as host loops (cpu-emulation).
  bool isEmulated() const { return emulate; }

  /// Builds `scf.if (every grid extent > 0)` at `b` and returns a builder
  /// inside it: a 0-block grid is a CUDA error, so an empty output
  /// launches nothing. `zero` is an index 0.
  mlir::ImplicitLocOpBuilder guardNonEmptyGrid(mlir::ImplicitLocOpBuilder &b,
                                               mlir::ValueRange grid,
                                               mlir::Value zero) const;

  /// A block-shared tile of `elements` values of `elt` named `name`
  /// (renamed if taken): a private module-level workgroup global, 16-byte
  /// aligned (only a global carries an alignment, and 16-byte vector loads
  /// need one; kernel outlining clones it into the kernel's module).
  mlir::memref::GlobalOp declareSharedTile(mlir::Location loc,
                                           llvm::StringRef name,
                                           int64_t elements, mlir::Type elt);

  /// One thread's share of the block's cooperative copy into a shared
  /// tile: entries `from`, `from + step`, ... below `count`, each built by
  /// `copyOne` from its entry index. On the GPU `from` is the thread id and
  /// `step` the block's thread count, so consecutive threads copy
  /// consecutive entries (coalesced loads, conflict-free stores); a thread
  /// that owns its copy of the tile (emulated) copies from 0 by 1.
  static void buildStagingLoop(
      mlir::ImplicitLocOpBuilder &b, mlir::Value from, mlir::Value count,
      mlir::Value step,
      llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, mlir::Value)>
          copyOne);

  /// `gpu.launch` of grid (gridX, gridY, gridZ) with `threads` threads in
  /// x (`one` the index 1 of the unused block dims): `body` builds one
  /// thread's code at the start of the launch, with its ids and the
  /// `tiles` bound in order; the terminator follows.
  void buildLaunch(mlir::ImplicitLocOpBuilder &b, mlir::Value gridX,
                   mlir::Value gridY, mlir::Value gridZ, mlir::Value threads,
                   mlir::Value one,
                   llvm::ArrayRef<mlir::memref::GlobalOp> tiles,
                   llvm::function_ref<void(mlir::ImplicitLocOpBuilder &,
                                           const KernelIds &, mlir::ValueRange)>
                       body) const;

  /// Emulated blocks (and whatever else runs independently): one host
  /// scf.parallel from `lower` to `upper` by `steps`, `body` building one
  /// iteration from its ivs.
  void buildHostParallel(
      mlir::ImplicitLocOpBuilder &b, mlir::ValueRange lower,
      mlir::ValueRange upper, mlir::ValueRange steps,
      llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, mlir::ValueRange)>
          body) const;

  /// One emulated phase of a block: a loop over its `threads` threads, each
  /// iteration built by `body` from the thread id. Successive phases are
  /// what the barriers separate on the GPU.
  void buildThreadLoop(
      mlir::ImplicitLocOpBuilder &b, int64_t threads,
      llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, mlir::Value)> body)
      const;

  /// A barrier between two phases of a block: gpu.barrier on the GPU;
  /// nothing emulated, where phases are loop boundaries (or each thread
  /// owns its copy of the tiles).
  void barrier(mlir::ImplicitLocOpBuilder &b) const;

private:
  mlir::ModuleOp module;
  bool emulate;
};

} // namespace torsor

#endif // TORSOR_DIALECTS_SUPPORT_GPUKERNELBUILDER_H
