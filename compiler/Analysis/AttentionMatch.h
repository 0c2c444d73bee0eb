//===- AttentionMatch.h - Find attention blocks in a model ------*- C++ -*-===//
//
// Recognises the attention blocks of a model function as MLIRGen emits them:
// either geo.relational_attention, or standard multi-head attention written
// in the language as
//
//   q = heads(x @ Wq, H); k = heads(x @ Wk, H); v = heads(x @ Wv, H)
//   y = merge_heads(softmax(q @ transpose(k) * s) @ v) @ Wo
//
// (`* s`, `/ s` or no scale). Blocks and `repeat` are inlined by MLIRGen, so
// every instance is found with its own params. The redundancy report and
// the geo-relationalize-attention pass share this matcher, so they agree on
// what counts as an attention block.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_ANALYSIS_ATTENTIONMATCH_H
#define TORSOR_COMPILER_ANALYSIS_ATTENTIONMATCH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace torsor {

/// One attention block of a model function.
struct AttentionBlock {
  enum class Form { Standard, Relational };
  Form form = Form::Standard;
  /// The output projection `... @ Wo` (standard) or the geo op (relational).
  mlir::Operation *root = nullptr;
  /// Inputs of the Q, K and V projections (relational: all three are x).
  mlir::Value xq, xk, xv;
  /// Standard form: the projection weights, [d, H·d_h] (Wo: [H·d_h, d_out]).
  mlir::Value wq, wk, wv, wo;
  /// Relational form: the per-head forms, [H, d, d].
  mlir::Value gqk, gvo;
  int64_t d = 0;     ///< feature size of x
  int64_t dOut = 0;  ///< feature size of the block's result
  int64_t heads = 0; ///< H
  int64_t dh = 0;    ///< d_h (standard form only; 0 for relational)
  double scale = 1.0;
  bool causal = false;
};

/// Every attention block of `func`, in program order.
llvm::SmallVector<AttentionBlock> findAttentionBlocks(mlir::func::FuncOp func);

/// The `torsor.name` of a model-function argument, or "" for other values.
std::string paramName(mlir::Value value);

} // namespace torsor

#endif // TORSOR_COMPILER_ANALYSIS_ATTENTIONMATCH_H
