//===- GeoGradOps.cpp - Verifiers of the geo backward ops -----------------===//
//
// geo.flash_lie_attention_grad: the forward's operands (rank 2, no batch
// dims), its result and cotangent, and gradients of the forward operands'
// types.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"

using namespace mlir;
using namespace torsor::geo;

LogicalResult FlashLieAttentionGradOp::verify() {
  auto q = cast<RankedTensorType>(getQueries().getType());
  auto k = cast<RankedTensorType>(getKeys().getType());
  auto v = cast<RankedTensorType>(getValues().getType());
  auto o = cast<RankedTensorType>(getOut().getType());
  auto dO = cast<RankedTensorType>(getOutGrad().getType());
  const torsor::lie::GroupModel &model = getGroup().getModel();
  for (RankedTensorType t : {q, k, v, o, dO})
    if (t.getRank() != 2 || t.getElementType() != v.getElementType())
      return emitOpError() << "expects rank-2 operands of one element type "
                              "(no batch dims), got "
                           << t;
  if (q.getDimSize(1) != model.getQueryFeatureCount() ||
      k.getDimSize(0) != model.getKeyFeatureCount())
    return emitOpError() << "expects " << model.getQueryFeatureCount()
                         << " query and " << model.getKeyFeatureCount()
                         << " key features for group " << model.getDisplayName()
                         << ", got " << q << " and " << k;
  auto same = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  if (!same(q.getDimSize(0), k.getDimSize(1)) ||
      !same(q.getDimSize(0), v.getDimSize(0)))
    return emitOpError() << "expects as many queries as keys and values, got "
                         << q << ", " << k << " and " << v;
  if (o != v || dO != v)
    return emitOpError() << "expects out and out_grad of the values' type "
                         << v << ", got " << o << " and " << dO;
  if (getQueriesGrad().getType() != q || getKeysGrad().getType() != k ||
      getValuesGrad().getType() != v)
    return emitOpError() << "expects results of the types of queries, keys "
                            "and values";
  int64_t dim = v.getDimSize(1), heads = getHeads();
  if (heads < 1 || ShapedType::isDynamic(dim) || dim % heads != 0)
    return emitOpError() << "expects a static value feature dim divisible by "
                            "heads ("
                         << heads << "), got " << v;
  unsigned blocks = model.getBlocks().size();
  if (getTau().size() != static_cast<size_t>(heads) ||
      getLambda().size() != static_cast<size_t>(heads * blocks))
    return emitOpError() << "expects " << heads << " tau and " << heads * blocks
                         << " lambda values, got " << getTau().size()
                         << " and " << getLambda().size();
  for (double t : getTau())
    if (!(t > 0))
      return emitOpError() << "expects positive tau, got " << t;
  return success();
}
