//===- LieInterfaces.h - Lie dialect op interfaces --------------*- C++ -*-===//
//
// The element-op interface (generated from LieInterfaces.td) and the one
// type its methods share: an operand with its element rank.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_LIEINTERFACES_H
#define TORSOR_DIALECTS_LIE_IR_LIEINTERFACES_H

#include "dialects/Lie/IR/GroupModel.h"

#include "mlir/IR/OpDefinition.h"

namespace torsor::lie {

/// One operand of an element-wise op: its value and how many trailing dims
/// form one element (2 for matrices, 1 for vectors, 0 for scalars).
struct ElementOperand {
  mlir::Value value;
  unsigned trailing;
};

} // namespace torsor::lie

#include "dialects/Lie/IR/LieInterfaces.h.inc"

#endif // TORSOR_DIALECTS_LIE_IR_LIEINTERFACES_H
