//===- LieDialect.h - Lie group dialect -------------------------*- C++ -*-===//
//
// The `lie` dialect declaration (generated from LieDialect.td).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_LIEDIALECT_H
#define TORSOR_DIALECTS_LIE_IR_LIEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Lie/IR/LieOpsDialect.h.inc"

#endif // TORSOR_DIALECTS_LIE_IR_LIEDIALECT_H
