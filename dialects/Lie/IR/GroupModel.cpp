//===- GroupModel.cpp - Defaults shared by every group model --------------===//
//
// Generic builders (dense compose, homogeneous action, dist2 through
// inverse/compose/log) and the registry of built-in models. Models override
// a default only when they have something cheaper or more accurate.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/GroupModel.h"
#include "dialects/Lie/IR/Groups/Groups.h"

using namespace mlir;
using namespace torsor::lie;

GroupModel::~GroupModel() = default;

SmallVector<double> GroupModel::getIdentity() const {
  unsigned n = getMatrixSize();
  SmallVector<double> id(n * n, 0.0);
  for (unsigned i = 0; i < n; ++i)
    id[i * n + i] = 1.0;
  return id;
}

Scalars GroupModel::buildCompose(ScalarBuilder &m, ValueRange a,
                                 ValueRange b) const {
  unsigned n = getMatrixSize();
  Scalars c(n * n);
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j) {
      Value acc = m.mul(a[i * n], b[j]);
      for (unsigned k = 1; k < n; ++k)
        acc = m.fma(a[i * n + k], b[k * n + j], acc);
      c[i * n + j] = acc;
    }
  return c;
}

Scalars GroupModel::buildAct(ScalarBuilder &m, ValueRange g,
                             ValueRange p) const {
  unsigned n = getMatrixSize();
  unsigned d = getPointDim();
  bool homogeneous = d + 1 == n;
  Scalars q(d);
  for (unsigned i = 0; i < d; ++i) {
    Value acc = homogeneous ? g[i * n + d] : Value();
    for (unsigned k = 0; k < d; ++k)
      acc = acc ? m.fma(g[i * n + k], p[k], acc) : m.mul(g[i * n + k], p[k]);
    q[i] = acc;
  }
  return q;
}

Scalars GroupModel::buildBlockNorms(ScalarBuilder &m, ValueRange w) const {
  Scalars norms;
  for (const AlgebraBlock &block : getBlocks()) {
    Value sum = m.sqr(w[block.offset]);
    for (unsigned k = 1; k < block.size; ++k)
      sum = m.fma(w[block.offset + k], w[block.offset + k], sum);
    norms.push_back(sum);
  }
  return norms;
}

Value GroupModel::buildWeightedNorm2(ScalarBuilder &m, ValueRange w,
                                     ValueRange lambda) const {
  Value total;
  for (auto [sum, weight] : llvm::zip_equal(buildBlockNorms(m, w), lambda)) {
    Value term = m.mul(weight, sum);
    total = total ? m.add(total, term) : term;
  }
  return total;
}

Value GroupModel::buildDist2(ScalarBuilder &m, ValueRange a, ValueRange b,
                             ValueRange lambda) const {
  Scalars rel = buildCompose(m, buildInverse(m, a), b);
  return buildWeightedNorm2(m, buildLog(m, rel), lambda);
}

unsigned GroupModel::getQueryFeatureCount() const {
  return getMatrixSize() * getMatrixSize();
}

unsigned GroupModel::getKeyFeatureCount() const {
  return getMatrixSize() * getMatrixSize();
}

Scalars GroupModel::buildQueryFeatures(ScalarBuilder &m, ValueRange a) const {
  return buildInverse(m, a);
}

Scalars GroupModel::buildKeyFeatures(ScalarBuilder &, ValueRange b) const {
  return Scalars(b.begin(), b.end());
}

Scalars GroupModel::buildPairBlockNorms(ScalarBuilder &m, ValueRange q,
                                        ValueRange k) const {
  return buildBlockNorms(m, buildLog(m, buildCompose(m, q, k)));
}

Value GroupModel::buildMembershipResidual(ScalarBuilder &m,
                                          ValueRange g) const {
  Scalars back = buildExp(m, buildLog(m, g));
  Value diff2 = m.c(0.0), norm2 = m.c(0.0);
  for (auto [x, y] : llvm::zip_equal(back, g)) {
    Value d = m.sub(x, y);
    diff2 = m.fma(d, d, diff2);
    norm2 = m.fma(y, y, norm2);
  }
  return m.div(m.sqrt(diff2), m.max(m.c(1.0), m.sqrt(norm2)));
}

const GroupModel *torsor::lie::lookupBuiltinGroupModel(StringRef name) {
  for (const GroupModel *model : getBuiltinGroupModels())
    if (model->getName() == name)
      return model;
  return nullptr;
}

ArrayRef<StringRef> torsor::lie::getBuiltinGroupNames() {
  static const SmallVector<StringRef> names = [] {
    SmallVector<StringRef> result;
    for (const GroupModel *model : getBuiltinGroupModels())
      result.push_back(model->getName());
    return result;
  }();
  return names;
}
