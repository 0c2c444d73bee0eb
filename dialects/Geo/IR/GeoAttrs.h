//===- GeoAttrs.h - Geo dialect attributes ----------------------*- C++ -*-===//
//
// `#geo.scores<...>` (generated from GeoAttrs.td): the group, heads,
// temperatures, block weights and causality of a Lie attention's scores.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_GEO_IR_GEOATTRS_H
#define TORSOR_DIALECTS_GEO_IR_GEOATTRS_H

#include "dialects/Lie/IR/LieAttrs.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#define GET_ATTRDEF_CLASSES
#include "dialects/Geo/IR/GeoAttrs.h.inc"

namespace torsor::geo {
/// Checks `scores` as `ScoresAttr::verify` does, reporting through `op`
/// (`'geo.lie_attention' op expects ...`). Every attention op's verifier
/// calls it: a ScoresAttr built with `get` rather than parsed is checked
/// here.
mlir::LogicalResult verifyScores(mlir::Operation *op, ScoresAttr scores);
} // namespace torsor::geo

#endif // TORSOR_DIALECTS_GEO_IR_GEOATTRS_H
