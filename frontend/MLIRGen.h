//===- MLIRGen.h - Torsor AST to MLIR --------------------------*- C++ -*-===//
//
// Entry points of the MLIR half of the frontend, used by `torsorc`: the
// DiagnosticEngine that forwards frontend errors to `mlir::emitError` with
// a FileLineColLoc (so MLIR's SourceMgr handlers print carets and verify
// `expected-error`), the AST dump behind `--emit=ast`, and MLIRGen, which
// turns a checked Module into one `func.func` per model.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_MLIRGEN_H
#define TORSOR_FRONTEND_MLIRGEN_H

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

namespace torsor::frontend {

/// Reports frontend errors as MLIR diagnostics at FileLineColLocs.
class MLIRDiagnosticEngine : public DiagnosticEngine {
public:
  MLIRDiagnosticEngine(const llvm::SourceMgr &srcMgr, mlir::MLIRContext &ctx)
      : srcMgr(srcMgr), ctx(ctx) {}
  /// The FileLineColLoc of a source position (CIRCT's translateLocation).
  mlir::Location translateLocation(llvm::SMLoc loc) const;

protected:
  void report(llvm::SMLoc loc, const llvm::Twine &msg) override;

private:
  const llvm::SourceMgr &srcMgr;
  mlir::MLIRContext &ctx;
};

/// What torsorc --dtype asks of the model's floating-point types.
enum class FloatDType { AsWritten, F32, F64 };

/// Emits a checked module as MLIR: one `func.func @<Model>` per model.
/// Returns null after reporting through `diags` (e.g. a group attribute the
/// lie dialect rejects). The result is verified.
/// `floatDType` is torsorc's --dtype: AsWritten keeps every type as the
/// source writes it; F32 or F64 turns every f32 and f64 of the model
/// (tensors, group elements, constants) into that one. f16, bf16 and the
/// integer types never change.
mlir::OwningOpRef<mlir::ModuleOp>
mlirGen(mlir::MLIRContext &ctx, const Module &module,
        MLIRDiagnosticEngine &diags,
        FloatDType floatDType = FloatDType::AsWritten);

/// Parses, checks and emits the main buffer of `srcMgr` (driver entry).
mlir::OwningOpRef<mlir::ModuleOp>
importTorsorSource(llvm::SourceMgr &srcMgr, mlir::MLIRContext &ctx,
                   FloatDType floatDType = FloatDType::AsWritten);

/// Parses and checks the main buffer of `srcMgr` and prints its AST
/// (`torsorc --emit=ast`).
mlir::LogicalResult dumpTorsorAST(llvm::SourceMgr &srcMgr,
                                  mlir::MLIRContext &ctx,
                                  llvm::raw_ostream &os);

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_MLIRGEN_H
