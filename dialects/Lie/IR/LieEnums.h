//===- LieEnums.h - Lie dialect enums ---------------------------*- C++ -*-===//
//
// The enums of the lie dialect (generated from LieEnums.td): PullbackKind,
// the lie op a lie.pullback differentiates.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_LIEENUMS_H
#define TORSOR_DIALECTS_LIE_IR_LIEENUMS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

#include "dialects/Lie/IR/LieEnums.h.inc"

#endif // TORSOR_DIALECTS_LIE_IR_LIEENUMS_H
