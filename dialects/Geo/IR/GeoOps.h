//===- GeoOps.h - Geo dialect operations ------------------------*- C++ -*-===//
//
// The `geo` ops (generated from GeoOps.td): lie_attention, plucker,
// grassmann_mix, relational_attention and relational_norm.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_GEO_IR_GEOOPS_H
#define TORSOR_DIALECTS_GEO_IR_GEOOPS_H

#include "dialects/Geo/IR/GeoAttrs.h"
#include "dialects/Geo/IR/GeoDialect.h"
#include "dialects/Lie/IR/LieAttrs.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Geo/IR/GeoOps.h.inc"

#endif // TORSOR_DIALECTS_GEO_IR_GEOOPS_H
