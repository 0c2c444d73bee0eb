//===- GeoGradOps.cpp - Verifiers of the geo backward ops -----------------===//
//
// geo.flash_lie_attention_grad: the forward's operands ([batch...] x L x
// F, one rank for all), its result and cotangent, the optional per-row
// log-sum-exp, and gradients of the forward operands' types. Heads, τ and λ
// are checked by the scores' verifier (verifyScores, GeoAttrs.cpp).
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"

using namespace mlir;
using namespace torsor::geo;

LogicalResult FlashLieAttentionGradOp::verify() {
  if (failed(verifyScores(*this, getScores())))
    return failure();
  auto q = cast<RankedTensorType>(getQueries().getType());
  auto k = cast<RankedTensorType>(getKeys().getType());
  auto v = cast<RankedTensorType>(getValues().getType());
  auto o = cast<RankedTensorType>(getOut().getType());
  auto dO = cast<RankedTensorType>(getOutGrad().getType());
  const torsor::lie::GroupModel &model = getGroup().getModel();
  int64_t rank = v.getRank();
  for (RankedTensorType t : {q, k, v, o, dO})
    if (rank < 2 || t.getRank() != rank ||
        t.getElementType() != v.getElementType())
      return emitOpError() << "expects operands of one rank >= 2 and one "
                              "element type, got "
                           << t << " and " << v;
  if (q.getDimSize(rank - 1) != model.getQueryFeatureCount() ||
      k.getDimSize(rank - 2) != model.getKeyFeatureCount())
    return emitOpError() << "expects " << model.getQueryFeatureCount()
                         << " query and " << model.getKeyFeatureCount()
                         << " key features for group " << model.getDisplayName()
                         << ", got " << q << " and " << k;
  auto same = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (!same(q.getDimSize(i), k.getDimSize(i)) ||
        !same(q.getDimSize(i), v.getDimSize(i)))
      return emitOpError() << "expects the operands to agree on batch dims, "
                              "got "
                           << q << ", " << k << " and " << v;
  // With offsets, queries and keys are two token sets (Lq and Lk);
  // without, one sequence.
  bool cross = static_cast<bool>(getQueryOffset());
  if (cross != static_cast<bool>(getKeyOffset()))
    return emitOpError() << "expects both offsets or neither";
  if (!same(k.getDimSize(rank - 1), v.getDimSize(rank - 2)) ||
      (!cross && !same(q.getDimSize(rank - 2), k.getDimSize(rank - 1))))
    return emitOpError() << "expects as many queries as keys and values"
                         << (cross ? " (keys and values, with offsets)" : "")
                         << ", got " << q << ", " << k << " and " << v;
  bool rowsOk = o == dO && o.getElementType() == v.getElementType() &&
                same(o.getDimSize(rank - 2), q.getDimSize(rank - 2)) &&
                o.getDimSize(rank - 1) == v.getDimSize(rank - 1);
  for (int64_t i = 0; rowsOk && i + 2 < rank; ++i)
    rowsOk = same(o.getDimSize(i), v.getDimSize(i));
  if (!rowsOk)
    return emitOpError() << "expects out and out_grad of one type, [batch...] "
                            "x rows x D of the queries and values, got "
                         << o << " and " << dO;
  if (getQueriesGrad().getType() != q || getKeysGrad().getType() != k ||
      getValuesGrad().getType() != v)
    return emitOpError() << "expects results of the types of queries, keys "
                            "and values";
  int64_t dim = v.getDimSize(rank - 1), heads = getHeads();
  if (ShapedType::isDynamic(dim) || dim % heads != 0)
    return emitOpError() << "expects a static value feature dim divisible by "
                            "heads ("
                         << heads << "), got " << v;
  if (Value lse = getLse()) {
    auto l = cast<RankedTensorType>(lse.getType());
    bool ok = l.getRank() == rank && l.getElementType() == v.getElementType() &&
              l.getDimSize(rank - 1) == heads;
    for (int64_t i = 0; ok && i + 1 < rank; ++i)
      ok = same(l.getDimSize(i), o.getDimSize(i));
    if (!ok)
      return emitOpError() << "expects lse of [batch...] x L x heads (" << heads
                           << "), got " << l;
  }
  return success();
}
