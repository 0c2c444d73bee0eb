//===- GeoDialect.h - Geometric sequence dialect ----------------*- C++ -*-===//
//
// The `geo` dialect declaration (generated from GeoDialect.td). Geo ops carry
// `#lie.group<...>` attributes, so the lie dialect is a dependent dialect.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_GEO_IR_GEODIALECT_H
#define TORSOR_DIALECTS_GEO_IR_GEODIALECT_H

#include "dialects/Lie/IR/LieDialect.h"

#include "mlir/IR/Dialect.h"

#include "dialects/Geo/IR/GeoOpsDialect.h.inc"

#endif // TORSOR_DIALECTS_GEO_IR_GEODIALECT_H
