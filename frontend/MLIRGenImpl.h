//===- MLIRGenImpl.h - Torsor MLIRGen internals ----------------*- C++ -*-===//
//
// The emitter class shared by MLIRGen.cpp (functions, blocks, statements,
// lie/geo ops) and MLIRGenDense.cpp (dense layers on linalg/tensor/arith/
// math). Private to the frontend.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_MLIRGENIMPL_H
#define TORSOR_FRONTEND_MLIRGENIMPL_H

#include "dialects/Lie/IR/LieAttrs.h"
#include "frontend/MLIRGen.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace torsor::frontend {

/// Values visible while emitting one model or one block instance.
struct Env {
  llvm::StringMap<mlir::Value> values;
  const Env *parent = nullptr; ///< Model env (params) for block bodies.
  mlir::Value lookup(llvm::StringRef name) const {
    auto it = values.find(name);
    if (it != values.end())
      return it->second;
    return parent ? parent->lookup(name) : mlir::Value();
  }
};

/// Emits MLIR for one Module.
class MLIRGenImpl {
public:
  MLIRGenImpl(mlir::MLIRContext &ctx, MLIRDiagnosticEngine &diags)
      : ctx(ctx), b(&ctx), diags(diags) {}

  mlir::OwningOpRef<mlir::ModuleOp> emitModule(const Module &module);
  void emitModel(const ModelDecl &model);

  // Types and helpers (MLIRGen.cpp).
  mlir::Location loc(llvm::SMLoc l) { return diags.translateLocation(l); }
  mlir::Type elementType(DType dtype);
  mlir::RankedTensorType tensorType(const Type &type);
  /// `index` value of a symbolic dim, or a constant for a fixed one.
  mlir::Value dimValue(const Dim &dim, mlir::Location l);
  /// `tensor.empty` of a frontend type.
  mlir::Value emptyTensor(const Type &type, mlir::Location l);
  /// A scalar float constant of `dtype`.
  mlir::Value floatConst(DType dtype, double v, mlir::Location l);

  // Expressions.
  mlir::Value emitExpr(const Expr &expr, const Env &env);
  mlir::Value emitCall(const CallExpr &call, const Env &env);
  mlir::Value emitBlockCall(const CallExpr &call, const Env &env);
  mlir::Value emitGroupOp(const CallExpr &call, const Env &env);
  mlir::Value emitGeoLayer(const CallExpr &call, const Env &env);
  /// lie_attention's two-set form and lie_attention_grad; records the
  /// results after the first in `extraResults`.
  mlir::Value emitCrossAttention(const CallExpr &call,
                                 llvm::ArrayRef<mlir::Value> operands,
                                 torsor::lie::GroupAttr group,
                                 mlir::UnitAttr causal, const Env &env);
  /// Binds the names of `let a, b, ... = call` after the first.
  void bindExtraResults(const BindStmt &bind, Env &env);
  /// The results after the first of multi-result calls
  /// (CallExpr::extraTypes), for `let a, b = ...`.
  llvm::DenseMap<const CallExpr *, llvm::SmallVector<mlir::Value>> extraResults;
  /// `#lie.group<...>`, or null after reporting (declared groups).
  torsor::lie::GroupAttr groupAttr(const GroupInfo &group, llvm::SMLoc l);

  // Dense layers (MLIRGenDense.cpp).
  /// One operand of an elementwise op: a tensor or a folded constant.
  struct Operand {
    mlir::Value value; ///< Null for a constant.
    const Type *type = nullptr;
    double constant = 0;
  };
  Operand emitOperand(const Expr &expr, const Env &env);
  using ScalarFn = llvm::function_ref<mlir::Value(
      mlir::OpBuilder &, mlir::Location, llvm::ArrayRef<mlir::Value>)>;
  /// A `linalg.generic` computing `fn` elementwise with broadcasting.
  mlir::Value elementwise(const Type &result, llvm::ArrayRef<Operand> ops,
                          mlir::Location l, ScalarFn fn);
  mlir::Value emitBinary(const BinaryExpr &expr, const Env &env);
  mlir::Value emitMatmul(const BinaryExpr &expr, mlir::Value lhs,
                         mlir::Value rhs);
  mlir::Value emitDense(const CallExpr &call, const Env &env);
  /// embedding, cross_entropy, mse (MLIRGenTrain.cpp).
  mlir::Value emitTraining(const CallExpr &call, const Env &env);
  /// Sum over the last dim of `x` of fn(x) → a tensor without that dim.
  mlir::Value reduceLast(mlir::Value x, const Type &type, mlir::Location l,
                         ScalarFn fn);
  mlir::Value emitNorm(const CallExpr &call, const Env &env);
  /// A parallel `linalg.generic` over `result` with explicit input maps.
  mlir::Value generic(const Type &result, mlir::ValueRange inputs,
                      llvm::ArrayRef<mlir::AffineMap> maps, mlir::Location l,
                      ScalarFn fn);
  /// `linalg.transpose` of `x` (frontend type `type`) by `perm`.
  mlir::Value transpose(mlir::Value x, const Type &type,
                        llvm::ArrayRef<int64_t> perm, mlir::Location l);

  /// `value` as an attribute of `ft`, or a located error when it does not
  /// fit: λ = 1e300 in an f32 model would become +inf and turn every score
  /// into NaN, so out-of-range constants are rejected at compile time.
  mlir::FloatAttr checkedFloatAttr(mlir::FloatType ft, double value,
                                   mlir::Location l, llvm::StringRef what);
  /// Checks that λ, τ and the score coefficients −λ/τ fit `elt`.
  bool checkAttentionConstants(const CallExpr &call, mlir::Type elt);

  mlir::MLIRContext &ctx;
  mlir::OpBuilder b;
  MLIRDiagnosticEngine &diags;
  bool hadError = false;
  /// torsorc --dtype: keep float types as written, or make them all one.
  FloatDType floatDType = FloatDType::AsWritten;

  // Per-function state.
  mlir::func::FuncOp func;
  llvm::SmallVector<mlir::Type> argTypes;
  llvm::SmallVector<mlir::NamedAttrList> argAttrs;
  llvm::StringMap<mlir::Value> symDims;
  mlir::Operation *lastDimOp = nullptr;
  const Env *modelEnv = nullptr;
  /// Instance path of the block being emitted ("" at model level).
  std::string path;
  llvm::StringMap<unsigned> instanceCount;

  /// Adds a function argument for a param or input.
  mlir::Value addArgument(llvm::StringRef name, const Type &type,
                          llvm::StringRef kind, llvm::SMLoc l);
};

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_MLIRGENIMPL_H
