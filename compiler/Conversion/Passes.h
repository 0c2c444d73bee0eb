//===- Passes.h - Torsor conversion passes ----------------------*- C++ -*-===//
//
// Declarations of every conversion pass (generated from Passes.td) and the
// populate* entry points each conversion folder exposes.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_CONVERSION_PASSES_H
#define TORSOR_COMPILER_CONVERSION_PASSES_H

#include "compiler/Conversion/LieToArith/LieToArith.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace torsor {

#define GEN_PASS_DECL
#include "compiler/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/Passes.h.inc"

} // namespace torsor

#endif // TORSOR_COMPILER_CONVERSION_PASSES_H
