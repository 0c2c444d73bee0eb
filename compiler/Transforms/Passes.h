//===- Passes.h - Torsor model-level passes ---------------------*- C++ -*-===//
//
// Declarations generated from Passes.td, plus the helper that finds the
// model function the frontend emitted.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TRANSFORMS_PASSES_H
#define TORSOR_COMPILER_TRANSFORMS_PASSES_H

#include "compiler/Transforms/LoopAttributes.h"
#include "dialects/Lie/IR/LieAttrs.h"
#include "dialects/Strategy/IR/Strategy.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace torsor {

/// Version of the compiled-model ABI (docs/runtime.md) of CPU models.
constexpr int kModelABIVersion = 1;
/// ABI version of NVPTX models: every tensor descriptor points to device
/// memory, and the host code calls the runtime's mgpu* entry points.
constexpr int kGPUModelABIVersion = 2;
/// Name of the destination-passing wrapper torsor-wrap-model creates.
constexpr llvm::StringLiteral kModelWrapperName = "torsor_model";

/// The entry point the runtime calls the model's forward through
/// (torsor-emit-entry).
constexpr llvm::StringLiteral kForwardEntryName = "torsor_forward";

/// The backward function torsor-differentiate adds (compiler/Autodiff), the
/// unit attribute that marks it, its destination-passing wrapper, and the
/// entry point the runtime calls it through (docs/runtime.md).
constexpr llvm::StringLiteral kBackwardFunctionName = "torsor_model_backward";
constexpr llvm::StringLiteral kBackwardAttrName = "torsor.backward";
constexpr llvm::StringLiteral kBackwardWrapperName = "torsor_backward_model";
constexpr llvm::StringLiteral kBackwardEntryName = "torsor_backward";

/// Packed params (`--compute=bf16`, docs/precision.md): the wrapper's
/// attribute giving its params' argument range [begin, end)
/// (torsor-wrap-model), the function torsor-hoist-packed-params moves the
/// packing of params into (params, then the model-owned buffer of packed
/// copies), the entry the runtime calls it through, and the module
/// attribute that holds the buffer's size in bytes.
constexpr llvm::StringLiteral kParamArgsAttrName = "torsor.param_args";
constexpr llvm::StringLiteral kPrepareWrapperName = "torsor_prepare_model";
constexpr llvm::StringLiteral kPrepareEntryName = "torsor_prepare";
constexpr llvm::StringLiteral kPreparedBytesAttrName = "torsor.prepared_bytes";

/// Prefix of the launcher declarations torsor-outline-parallel-loops emits
/// and torsor-lower-parallel-launch replaces.
constexpr llvm::StringLiteral kParallelLauncherPrefix = "__torsor_launch_";

/// The model function: the public func.func whose arguments carry
/// `torsor.name`. Null when the module has none (plain MLIR input); an
/// error when it has several.
mlir::FailureOr<mlir::func::FuncOp> findModelFunction(mlir::ModuleOp module);

/// Name of the function that measures how far declared-group inputs are
/// from their group (GroupResidual.cpp), and of the entry point the runtime
/// calls it through (one memref descriptor per checked input, then one per
/// residual), as torsor_model is called through torsor_forward.
constexpr llvm::StringLiteral kResidualWrapperName = "torsor_residual";
constexpr llvm::StringLiteral kResidualEntryName = "torsor_group_residual";

/// One model input the runtime checks through the residual function.
struct ResidualCheck {
  unsigned input;       ///< argument index in the model function
  lie::GroupAttr group; ///< its declared group
  /// The residual is the generic model's (the off-span part of the matrix
  /// log), whose rounding error grows with the log's conditioning; the
  /// runtime scales its tolerance for it (manifest "residual_conditioned").
  bool conditioned = false;
};

/// The inputs of `model` in a declared group, in argument order.
llvm::SmallVector<ResidualCheck>
collectResidualChecks(mlir::func::FuncOp model);

/// Adds the destination-passing `torsor_group_residual` function for the
/// inputs collectResidualChecks finds (none: adds nothing).
mlir::LogicalResult buildGroupResidualWrapper(mlir::ModuleOp module,
                                              mlir::func::FuncOp model);

#define GEN_PASS_DECL
#include "compiler/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"

} // namespace torsor

#endif // TORSOR_COMPILER_TRANSFORMS_PASSES_H
