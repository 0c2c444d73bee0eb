//===- GeoDialect.cpp - Geometric sequence dialect ------------------------===//
//
// Registers the geo ops. The dialect has no types or attributes of its own:
// tensors are builtin and groups are `#lie.group<...>`.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoDialect.h"
#include "dialects/Geo/IR/GeoOps.h"

using namespace mlir;
using namespace torsor::geo;

#include "dialects/Geo/IR/GeoOpsDialect.cpp.inc"

void GeoDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Geo/IR/GeoOps.cpp.inc"
      >();
}
