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

/// Emits a checked module as MLIR: one `func.func @<Model>` per model.
/// Returns null after reporting through `diags` (e.g. a group attribute the
/// lie dialect rejects). The result is verified.
/// With `useF64` (torsorc --dtype=f64), every f32 in the model (tensors
/// and group elements) is emitted as f64.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &ctx,
                                          const Module &module,
                                          MLIRDiagnosticEngine &diags,
                                          bool useF64 = false);

/// Parses, checks and emits the main buffer of `srcMgr` (driver entry).
mlir::OwningOpRef<mlir::ModuleOp> importTorsorSource(llvm::SourceMgr &srcMgr,
                                                     mlir::MLIRContext &ctx,
                                                     bool useF64 = false);

/// Parses and checks the main buffer of `srcMgr` and prints its AST
/// (`torsorc --emit=ast`).
mlir::LogicalResult dumpTorsorAST(llvm::SourceMgr &srcMgr,
                                  mlir::MLIRContext &ctx,
                                  llvm::raw_ostream &os);

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_MLIRGEN_H
