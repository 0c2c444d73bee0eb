//===- Pipelines.h - Torsor's pass pipelines --------------------*- C++ -*-===//
//
// Each pipeline is one top-to-bottom function (as Halide's Lower.cpp or
// Triton's make_ttgir) and is also registered as a torsor-opt flag, so any
// stage can be replayed by hand. The pipelines have parts, as MLIR's
// GPUToNVVMPipeline and Triton's backends (`add_stages`) split theirs:
//   common  simplify, the runtime's ABI, geo/lie lowering (CommonPipeline.cpp)
//   CPU     vector kernels, thread-pool tasks, LLVM (CPUPipeline.cpp)
//   GPU     gpu.launch kernels in one gpu.module, and the target-free part
//           of the LLVM lowering, for every GPU target (GPUPipeline.cpp)
//   NVPTX   the NVVM part: target, NVVM, a cubin from ptxas
//           (NVPTXPipeline.cpp); a second GPU target adds such a part
// torsorc picks the target part through compiler/Target/Target.h.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_PIPELINES_PIPELINES_H
#define TORSOR_COMPILER_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace torsor {

/// Options shared by every pipeline (mirrors torsorc's flags). Registered
/// with both torsor-opt pipelines, e.g.
/// `--torsor-nvptx-pipeline="opt-level=0 gpu-arch=sm_80"`.
struct PipelineOptions : mlir::PassPipelineOptions<PipelineOptions> {
  /// 0 keeps the straightforward unfused lowering (the oracle).
  Option<unsigned> optLevel{*this, "opt-level",
                            llvm::cl::desc("Optimization level 0-3 (0: the "
                                           "unfused oracle lowering)"),
                            llvm::cl::init(2)};
  /// SIMD width of the target in bits (torsor-select-strategy); the
  /// portable 128 by default. Ops stamped with a strategy keep it.
  Option<unsigned> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("CPU SIMD width in bits (at least 128; ops already "
                     "stamped with a strategy keep theirs)"),
      llvm::cl::init(128)};
  /// Precision of matrix products: "f32" (the reference) or "bf16" (bf16
  /// operands, f32 accumulation; docs/precision.md).
  Option<std::string> compute{
      *this, "compute",
      llvm::cl::desc("Matrix products in f32 (default) or bf16 (bf16 "
                     "operands, f32 accumulation)"),
      llvm::cl::init("f32")};
  /// CPU features the strategy picks bf16 products' unit from (torsorc
  /// reads them off --mcpu).
  Option<bool> amx{*this, "amx",
                   llvm::cl::desc("CPU has AMX-BF16 tiles (with "
                                  "compute=bf16: products on AMX)"),
                   llvm::cl::init(false)};
  Option<bool> avx512bf16{*this, "avx512bf16",
                          llvm::cl::desc("CPU has AVX512-BF16 (with "
                                         "compute=bf16: vdpbf16ps)"),
                          llvm::cl::init(false)};
  /// NVPTX: the chip ptxas assembles for (sm_75 or newer).
  Option<std::string> gpuArch{*this, "gpu-arch",
                              llvm::cl::desc("NVPTX: GPU chip, e.g. sm_90"),
                              llvm::cl::init("sm_90")};
  /// NVPTX: the CUDA toolkit (ptxas, libdevice); empty means $CUDA_HOME,
  /// else /usr/local/cuda (resolveCUDAPath).
  Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("NVPTX: CUDA toolkit root (default: $CUDA_HOME, else "
                     "/usr/local/cuda)"),
      llvm::cl::init("")};
  /// NVPTX: what gpu-module-to-binary embeds: "bin" (a cubin from ptxas,
  /// what the runtime loads) or "isa" (PTX text, for tests and reading).
  Option<std::string> gpuFormat{
      *this, "gpu-format",
      llvm::cl::desc("NVPTX: embed a cubin (bin, default) or PTX (isa)"),
      llvm::cl::init("bin")};
};

//===----------------------------------------------------------------------===//
// Common part (CommonPipeline.cpp)
//===----------------------------------------------------------------------===//

/// Torsor's own simplifications on lie/geo/linalg (what --emit=opt shows).
void buildTorsorOptimizationPipeline(mlir::OpPassManager &pm,
                                     const PipelineOptions &options);

/// The runtime's calling convention (torsor-wrap-model, inlined) and the
/// target's strategy (`target` is "cpu" or "nvptx").
void buildModelABIPipeline(mlir::OpPassManager &pm,
                           const PipelineOptions &options,
                           llvm::StringRef target);

/// torsor-select-strategy for `target` ("cpu" or "nvptx"): stamps the ops
/// created since it last ran (fused attention, outlined functions).
void addSelectStrategy(mlir::OpPassManager &pm, const PipelineOptions &options,
                       llvm::StringRef target);

/// geo → linalg and lie → scalar loops on tensors (Grassmann mixing takes
/// its fused form above -O0).
void buildGeoLieLoweringPipeline(mlir::OpPassManager &pm,
                                 const PipelineOptions &options);

/// Tensors to buffers (identity layouts at function boundaries: the
/// runtime's descriptor ABI) and the buffer deallocation pipeline.
void buildBufferizationPipeline(mlir::OpPassManager &pm);

//===----------------------------------------------------------------------===//
// Target parts
//===----------------------------------------------------------------------===//

/// lie/geo/linalg on tensors → LLVM dialect, for the CPU.
void buildCPULoweringPipeline(mlir::OpPassManager &pm,
                              const PipelineOptions &options);

/// lie/geo/linalg on tensors → host code in the LLVM dialect that launches
/// kernels of an embedded cubin (gpu.binary), for NVIDIA GPUs: the
/// GPU-common parts below around the NVVM part.
void buildNVPTXLoweringPipeline(mlir::OpPassManager &pm,
                                const PipelineOptions &options);

//===----------------------------------------------------------------------===//
// GPU-common part (GPUPipeline.cpp), shared by every GPU target
//===----------------------------------------------------------------------===//

/// The model ABI with `target`'s GPU strategy, attention, dense
/// contractions and parallel loops mapped onto gpu.launch kernels, the
/// rest of the data accesses into one-thread kernels, all outlined into
/// one gpu.module; fails when host code still touches tensor data.
void buildGPUMappingPipeline(mlir::OpPassManager &pm,
                             const PipelineOptions &options,
                             llvm::StringRef target);

/// Host and kernels to the LLVM dialect where no target is involved
/// (loops, memref metadata, functions, arithmetic); the target part then
/// lowers the kernels' gpu ops and math, and the launches.
void buildGPUToLLVMCommonPipeline(mlir::OpPassManager &pm);

//===----------------------------------------------------------------------===//
// NVVM part (NVPTXPipeline.cpp)
//===----------------------------------------------------------------------===//

/// nvvm-attach-target for `gpu-arch`, with the PTX ISA that chip needs.
void buildNVVMAttachTargetPipeline(mlir::OpPassManager &pm,
                                   const PipelineOptions &options);

/// Kernels to NVVM (math → libdevice) and a cubin (or PTX, `gpu-format`)
/// by gpu-module-to-binary, host launches to mgpu* calls, the rest to the
/// LLVM dialect, and the ABI-2 entry points.
void buildNVVMBinaryPipeline(mlir::OpPassManager &pm,
                             const PipelineOptions &options);

/// The CUDA toolkit root: `requested` when given, else $CUDA_HOME, else
/// /usr/local/cuda.
std::string resolveCUDAPath(llvm::StringRef requested);

/// The SM number of a chip name ("sm_90" → 90, "sm_90a" → 90); 0 when the
/// name is not of that form.
unsigned parseSMVersion(llvm::StringRef chip);

/// Lowest chip CUDA 13's ptxas assembles for.
constexpr unsigned kMinimumSMVersion = 75;

/// Registers `torsor-cpu-pipeline` and `torsor-nvptx-pipeline`
/// (optimization + the target's lowering, with PipelineOptions).
void registerPipelines();

} // namespace torsor

#endif // TORSOR_COMPILER_PIPELINES_PIPELINES_H
