//===- Passes.h - Reverse-mode differentiation ------------------*- C++ -*-===//
//
// Declarations generated from Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_AUTODIFF_PASSES_H
#define TORSOR_COMPILER_AUTODIFF_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace torsor {

#define GEN_PASS_DECL
#include "compiler/Autodiff/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Autodiff/Passes.h.inc"

} // namespace torsor

#endif // TORSOR_COMPILER_AUTODIFF_PASSES_H
