//===- LieAttrs.h - Lie dialect attributes ----------------------*- C++ -*-===//
//
// `#lie.group<...>` (generated from LieAttrs.td).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_LIEATTRS_H
#define TORSOR_DIALECTS_LIE_IR_LIEATTRS_H

#include "dialects/Lie/IR/GroupModel.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#define GET_ATTRDEF_CLASSES
#include "dialects/Lie/IR/LieAttrs.h.inc"

#endif // TORSOR_DIALECTS_LIE_IR_LIEATTRS_H
