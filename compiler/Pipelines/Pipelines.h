//===- Pipelines.h - Torsor's pass pipelines --------------------*- C++ -*-===//
//
// Each pipeline is one top-to-bottom function (as Halide's Lower.cpp or
// Triton's make_ttgir) and is also registered as a torsor-opt flag, so any
// stage can be replayed by hand.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_PIPELINES_PIPELINES_H
#define TORSOR_COMPILER_PIPELINES_PIPELINES_H

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace torsor {

/// Options shared by the pipelines (mirrors torsorc's flags).
struct PipelineOptions {
  /// 0 keeps the straightforward unfused lowering (the oracle).
  unsigned optLevel = 2;
  /// SIMD width of the target in bits (torsor-select-strategy); 0 keeps a
  /// strategy already on the module, else the portable 128.
  unsigned vectorBits = 0;
};

/// Torsor's own simplifications on lie/geo/linalg (what --emit=opt shows).
void buildTorsorOptimizationPipeline(mlir::OpPassManager &pm,
                                     const PipelineOptions &options);

/// lie/geo/linalg on tensors → LLVM dialect, for the CPU.
void buildCPULoweringPipeline(mlir::OpPassManager &pm,
                              const PipelineOptions &options);

/// Registers `torsor-cpu-pipeline` (optimization + CPU lowering).
void registerPipelines();

} // namespace torsor

#endif // TORSOR_COMPILER_PIPELINES_PIPELINES_H
