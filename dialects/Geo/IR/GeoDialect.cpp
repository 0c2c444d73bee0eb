//===- GeoDialect.cpp - Geometric sequence dialect ------------------------===//
//
// Registers the geo ops and `#geo.scores` (GeoAttrs.cpp). Tensors are
// builtin and groups are `#lie.group<...>`.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoDialect.h"
#include "dialects/Geo/IR/GeoOps.h"

#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace torsor::geo;

#include "dialects/Geo/IR/GeoOpsDialect.cpp.inc"

namespace {
/// geo ops are pure and region-free, so inlining a call never changes what
/// they compute; without this interface the inliner leaves every function
/// holding a geo op alone (the model and its runtime wrapper).
struct GeoInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void GeoDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Geo/IR/GeoOps.cpp.inc"
      >();
  addInterfaces<GeoInlinerInterface>();
  registerAttributes();
}
