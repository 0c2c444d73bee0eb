//===- GroupReport.h - What the compiler derived for groups --*- C++ -*-===//
//
// `torsorc --report=groups`: for every declared group a model uses, which
// built-in's closed forms serve it and through which basis change (or why
// none does), and the pairwise form fused attention gets (GroupStructure.h).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_ANALYSIS_GROUPREPORT_H
#define TORSOR_COMPILER_ANALYSIS_GROUPREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace torsor {

/// Writes one paragraph per declared group of `module` (in first-use
/// order) to `os`, or a line saying there is none.
void writeGroupReport(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace torsor

#endif // TORSOR_COMPILER_ANALYSIS_GROUPREPORT_H
