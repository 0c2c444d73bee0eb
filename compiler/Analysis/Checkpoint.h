//===- Checkpoint.h - Weights of attention blocks ---------------*- C++ -*-===//
//
// Binds model params to the tensors of a weight file (with located errors
// when one is missing or has the wrong shape), forms the per-head invariants
// G_QK^h = W_Q^h W_K^hᵀ and G_VO^h = W_V^h W_O^h in float64, and converts a
// checkpoint of a standard model into the parameters of its relationalized
// form (geo-relationalize-attention).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_ANALYSIS_CHECKPOINT_H
#define TORSOR_COMPILER_ANALYSIS_CHECKPOINT_H

#include "compiler/Analysis/Safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace torsor {

/// The tensor bound to model param `param` (a model-function argument with
/// `torsor.name`), checked against the param's static shape. Emits an error
/// at the param's location when the file lacks it or the shape differs.
mlir::FailureOr<const WeightTensor *>
lookupParam(const WeightFile &file, llvm::StringRef path, mlir::Value param);

/// Per-head G_QK^h = Wq[:, h·dh:(h+1)·dh] · Wk[:, h·dh:(h+1)·dh]ᵀ, as
/// [heads, d, d] row-major; Wq and Wk are [d, heads·dh].
std::vector<double> formQK(const WeightTensor &wq, const WeightTensor &wk,
                           int64_t heads);

/// Per-head G_VO^h = Wv[:, h·dh:(h+1)·dh] · Wo[h·dh:(h+1)·dh, :], as
/// [heads, d, d_out] row-major; Wv is [d, heads·dh], Wo [heads·dh, d_out].
std::vector<double> formVO(const WeightTensor &wv, const WeightTensor &wo,
                           int64_t heads);

/// Writes to `outPath` the checkpoint of every model function in `module`
/// (already rewritten by geo-relationalize-attention): params the pass made
/// (`torsor.relational`) are formed from their sources in `inPath`, every
/// other param is copied. The dtype of each new tensor is that of its
/// sources.
mlir::LogicalResult convertCheckpoint(mlir::ModuleOp module,
                                      llvm::StringRef inPath,
                                      llvm::StringRef outPath);

} // namespace torsor

#endif // TORSOR_COMPILER_ANALYSIS_CHECKPOINT_H
