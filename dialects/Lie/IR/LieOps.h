//===- LieOps.h - Lie dialect operations ------------------------*- C++ -*-===//
//
// The `lie` ops (generated from LieOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_LIEOPS_H
#define TORSOR_DIALECTS_LIE_IR_LIEOPS_H

#include "dialects/Lie/IR/LieAttrs.h"
#include "dialects/Lie/IR/LieDialect.h"
#include "dialects/Lie/IR/LieEnums.h"
#include "dialects/Lie/IR/LieInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Lie/IR/LieOps.h.inc"

#endif // TORSOR_DIALECTS_LIE_IR_LIEOPS_H
