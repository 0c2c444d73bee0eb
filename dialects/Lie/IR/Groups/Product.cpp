//===- Product.cpp - Declared groups that are direct sums of ideals -------===//
//
// The builders of a GenericGroupModel whose algebra is a direct sum of
// ideals on disjoint blocks of matrix coordinates (Recognition::Product,
// GroupStructure.h). Every element is block diagonal (an affine group's
// blocks share the homogeneous coordinate), so each group operation is its
// factors' on their blocks, the identity elsewhere:
//
//   log g      w = T⁺·[w_B,c]_c, w_B,c the factor's host coordinates of g_c:
//              a host's closed-form log of diag(g_c, I), ln g_c of a 1×1
//              block of scalings, the exact series of a nilpotent block;
//   exp v      the factors' exp of their slices of T·v, scattered;
//   inverse    the factors' inverses (host closed forms, 1/g_c, Horner);
//   compose    block by block;
//   pair form  the factors' features side by side (a host's factored form;
//              ln g_c; a nilpotent block of index 2, where log(a⁻¹b) =
//              log b − log a exactly, its coordinates; otherwise a_c⁻¹ and
//              b_c with the series per pair), the declared block norms
//              mixed from all the factors' host block norms at once;
//   residual   the largest of the factors' residuals, the entries outside
//              the blocks (which must be the identity's) and the part of
//              w_B outside the image of T.
//
// Everything is straight-line, so the pair form runs on the SIMD lanes and
// every gradient differentiates it formula by formula.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Generic.h"
#include "dialects/Lie/IR/Groups/MatrixFunctions.h"

using namespace mlir;
using namespace torsor::lie;
using torsor::lie::algebra::Factor;

namespace {

/// ⟨D_a, X⟩ for every dual matrix D_a.
Scalars dualCoordinates(ScalarBuilder &m,
                        const std::vector<algebra::Matrix> &dual,
                        ValueRange x) {
  Scalars w;
  for (const algebra::Matrix &d : dual) {
    Value acc;
    for (unsigned i = 0; i < d.size(); ++i)
      if (d[i] != 0)
        acc = acc ? m.fma(m.c(d[i]), x[i], acc) : m.mul(m.c(d[i]), x[i]);
    w.push_back(acc ? acc : m.c(0.0));
  }
  return w;
}

/// `g` (size×size) minus the identity.
Scalars minusIdentity(ScalarBuilder &m, ValueRange g, unsigned size) {
  Scalars x(g.begin(), g.end());
  for (unsigned i = 0; i < size; ++i)
    x[i * size + i] = m.sub(x[i * size + i], m.c(1.0));
  return x;
}

/// The size×size product ab.
Scalars multiply(ScalarBuilder &m, unsigned size, ValueRange a, ValueRange b) {
  Scalars c(size * size);
  for (unsigned i = 0; i < size; ++i)
    for (unsigned j = 0; j < size; ++j) {
      Value acc = m.mul(a[i * size], b[j]);
      for (unsigned l = 1; l < size; ++l)
        acc = m.fma(a[i * size + l], b[l * size + j], acc);
      c[i * size + j] = acc;
    }
  return c;
}

/// (I + N)⁻¹ = Σ_{k<index} (−N)^k for N^index = 0, by Horner.
Scalars unipotentInverse(ScalarBuilder &m, unsigned size, ValueRange g,
                         unsigned index) {
  unsigned nn = size * size;
  Scalars negN(nn), r(nn);
  for (unsigned i = 0; i < nn; ++i) {
    bool diag = i % (size + 1) == 0;
    negN[i] = diag ? m.sub(m.c(1.0), g[i]) : m.neg(g[i]);
    r[i] = m.c(diag ? 1.0 : 0.0);
  }
  for (unsigned step = 1; step < index; ++step) {
    Scalars p = multiply(m, size, negN, r);
    for (unsigned i = 0; i < nn; ++i)
      r[i] = i % (size + 1) == 0 ? m.add(p[i], m.c(1.0)) : p[i];
  }
  return r;
}

/// `gc` (size×size) as the host's bigN×bigN element diag(gc, I).
Scalars embedIn(ScalarBuilder &m, ValueRange gc, unsigned size, unsigned bigN) {
  if (bigN == size)
    return Scalars(gc.begin(), gc.end());
  Scalars big(bigN * bigN);
  for (unsigned i = 0; i < bigN; ++i)
    for (unsigned j = 0; j < bigN; ++j)
      big[i * bigN + j] =
          i < size && j < size ? gc[i * size + j] : m.c(i == j ? 1 : 0);
  return big;
}

/// The top-left size×size block of a bigN×bigN host element.
Scalars extractFrom(ValueRange big, unsigned size, unsigned bigN) {
  Scalars gc(size * size);
  for (unsigned i = 0; i < size; ++i)
    for (unsigned j = 0; j < size; ++j)
      gc[i * size + j] = big[i * bigN + j];
  return gc;
}

/// Whether the pair form of a nilpotent factor is the difference of its
/// tokens' coordinates (index 2: log(a⁻¹b) = log b − log a exactly).
bool isDifference(const Factor &f) {
  return f.kind == Factor::Nilpotent && f.nilpotencyIndex <= 2;
}

} // namespace

Scalars GenericGroupModel::restrictToFactor(ValueRange g, unsigned c) const {
  const std::vector<unsigned> &idx = structure.factors[c].indices;
  unsigned size = idx.size();
  Scalars gc(size * size);
  for (unsigned i = 0; i < size; ++i)
    for (unsigned j = 0; j < size; ++j)
      gc[i * size + j] = g[idx[i] * n + idx[j]];
  return gc;
}

Scalars
GenericGroupModel::scatterFactors(ScalarBuilder &m,
                                  ArrayRef<Scalars> blocksOfFactors) const {
  Scalars out(n * n);
  for (unsigned c = 0; c < structure.factors.size(); ++c) {
    const std::vector<unsigned> &idx = structure.factors[c].indices;
    unsigned size = idx.size();
    for (unsigned i = 0; i < size; ++i) {
      if (affine && idx[i] == n - 1)
        continue; // The fixed last row, below.
      for (unsigned j = 0; j < size; ++j)
        out[idx[i] * n + idx[j]] = blocksOfFactors[c][i * size + j];
    }
  }
  for (unsigned i = 0; i < n * n; ++i)
    if (!out[i])
      out[i] = m.c(i % (n + 1) == 0 ? 1.0 : 0.0);
  return out;
}

Scalars GenericGroupModel::buildFactorLog(ScalarBuilder &m, ValueRange gc,
                                          unsigned c) const {
  const Factor &f = structure.factors[c];
  unsigned size = f.indices.size();
  switch (f.kind) {
  case Factor::Scalar:
    return {m.log(gc[0])};
  case Factor::Nilpotent:
    return dualCoordinates(
        m, f.dual,
        f.nilpotencyIndex <= 2
            ? minusIdentity(m, gc, size)
            : buildMatrixLog(m, size, gc, f.nilpotencyIndex));
  case Factor::Host:
    break;
  }
  return factorHosts[c]->buildLog(m, embedIn(m, gc, size, f.hostN));
}

Scalars GenericGroupModel::buildProductCompose(ScalarBuilder &m, ValueRange a,
                                               ValueRange b) const {
  SmallVector<Scalars> parts;
  for (unsigned c = 0; c < structure.factors.size(); ++c) {
    const std::vector<unsigned> &idx = structure.factors[c].indices;
    unsigned size = idx.size();
    Scalars p(size * size);
    for (unsigned i = 0; i < size; ++i) {
      if (affine && idx[i] == n - 1)
        continue;
      for (unsigned j = 0; j < size; ++j) {
        Value acc;
        for (unsigned l = 0; l < size; ++l) {
          if (affine && idx[l] == n - 1) {
            // b's fixed last row: only the translation column picks a_{i,n−1}.
            if (idx[j] == n - 1)
              acc = acc ? m.add(acc, a[idx[i] * n + n - 1])
                        : a[idx[i] * n + n - 1];
            continue;
          }
          Value x = a[idx[i] * n + idx[l]], y = b[idx[l] * n + idx[j]];
          acc = acc ? m.fma(x, y, acc) : m.mul(x, y);
        }
        p[i * size + j] = acc;
      }
    }
    parts.push_back(std::move(p));
  }
  return scatterFactors(m, parts);
}

Scalars GenericGroupModel::buildProductInverse(ScalarBuilder &m,
                                               ValueRange g) const {
  SmallVector<Scalars> parts;
  for (unsigned c = 0; c < structure.factors.size(); ++c) {
    const Factor &f = structure.factors[c];
    unsigned size = f.indices.size();
    Scalars gc = restrictToFactor(g, c);
    switch (f.kind) {
    case Factor::Scalar:
      parts.push_back({m.div(m.c(1.0), gc[0])});
      break;
    case Factor::Nilpotent:
      parts.push_back(unipotentInverse(m, size, gc, f.nilpotencyIndex));
      break;
    case Factor::Host:
      parts.push_back(extractFrom(
          factorHosts[c]->buildInverse(m, embedIn(m, gc, size, f.hostN)), size,
          f.hostN));
      break;
    }
  }
  return scatterFactors(m, parts);
}

Scalars GenericGroupModel::buildProductLog(ScalarBuilder &m,
                                           ValueRange g) const {
  Scalars wB;
  for (unsigned c = 0; c < structure.factors.size(); ++c) {
    Scalars w = buildFactorLog(m, restrictToFactor(g, c), c);
    wB.append(w.begin(), w.end());
  }
  return applyConstant(m, structure.fromBuiltin, dim, wB);
}

Scalars GenericGroupModel::buildProductExp(ScalarBuilder &m,
                                           ValueRange v) const {
  Scalars wB = applyConstant(m, structure.toBuiltin, structure.builtinDim, v);
  SmallVector<Scalars> parts;
  for (unsigned c = 0; c < structure.factors.size(); ++c) {
    const Factor &f = structure.factors[c];
    unsigned size = f.indices.size();
    ValueRange w = ValueRange(wB).slice(f.offset, f.hostDim);
    switch (f.kind) {
    case Factor::Scalar:
      parts.push_back({m.exp(w[0])});
      break;
    case Factor::Nilpotent: {
      Scalars x(size * size);
      for (unsigned e = 0; e < size * size; ++e) {
        Value acc;
        for (unsigned i = 0; i < f.hostDim; ++i) {
          double b = f.hostBasis[i][e];
          if (b != 0)
            acc = acc ? m.fma(m.c(b), w[i], acc) : m.mul(m.c(b), w[i]);
        }
        x[e] = acc ? acc : m.c(0.0);
      }
      parts.push_back(buildMatrixExp(m, size, x, f.nilpotencyIndex));
      break;
    }
    case Factor::Host:
      parts.push_back(
          extractFrom(factorHosts[c]->buildExp(m, w), size, f.hostN));
      break;
    }
  }
  return scatterFactors(m, parts);
}

Value GenericGroupModel::buildProductResidual(ScalarBuilder &m,
                                              ValueRange g) const {
  // The entries outside the blocks are the identity's.
  std::vector<bool> inBlock(n * n, false);
  for (const Factor &f : structure.factors)
    for (unsigned i : f.indices)
      for (unsigned j : f.indices)
        inBlock[i * n + j] = !(affine && i == n - 1);
  Value off = m.c(0.0), norm2 = m.c(0.0);
  for (unsigned e = 0; e < n * n; ++e) {
    norm2 = m.fma(g[e], g[e], norm2);
    if (inBlock[e])
      continue;
    Value d = e % (n + 1) == 0 ? m.sub(g[e], m.c(1.0)) : g[e];
    off = m.fma(d, d, off);
  }
  Value residual = m.div(m.sqrt(off), m.max(m.c(1.0), m.sqrt(norm2)));

  // Each factor in its host group, and w_B in the image of T: the part
  // o = w_B − T T⁺ w_B as matrices of the factors' host bases.
  Scalars wB;
  for (unsigned c = 0; c < structure.factors.size(); ++c) {
    const Factor &f = structure.factors[c];
    unsigned size = f.indices.size();
    Scalars gc = restrictToFactor(g, c);
    Value r;
    switch (f.kind) {
    case Factor::Scalar:
      // e^u > 0; ln of anything else is NaN, which the check rejects.
      r = m.select(m.gt(gc[0], m.c(0.0)), m.c(0.0), m.c(NAN));
      break;
    case Factor::Nilpotent: {
      // The round trip through the exact series.
      Scalars w = buildFactorLog(m, gc, c);
      Scalars x(size * size);
      for (unsigned e = 0; e < size * size; ++e) {
        Value acc = m.c(0.0);
        for (unsigned i = 0; i < f.hostDim; ++i)
          if (f.hostBasis[i][e] != 0)
            acc = m.fma(m.c(f.hostBasis[i][e]), w[i], acc);
        x[e] = acc;
      }
      Scalars back = buildMatrixExp(m, size, x, f.nilpotencyIndex);
      Value d2 = m.c(0.0), n2 = m.c(0.0);
      for (unsigned e = 0; e < size * size; ++e) {
        Value d = m.sub(back[e], gc[e]);
        d2 = m.fma(d, d, d2);
        n2 = m.fma(gc[e], gc[e], n2);
      }
      r = m.div(m.sqrt(d2), m.max(m.c(1.0), m.sqrt(n2)));
      break;
    }
    case Factor::Host:
      r = factorHosts[c]->buildMembershipResidual(
          m, embedIn(m, gc, size, f.hostN));
      break;
    }
    residual = m.max(residual, r);
    Scalars w = buildFactorLog(m, gc, c);
    wB.append(w.begin(), w.end());
  }
  unsigned kB = structure.builtinDim;
  if (kB == dim)
    return residual;
  SmallVector<std::pair<const std::vector<algebra::Matrix> *, unsigned>> hosts;
  for (const Factor &f : structure.factors)
    hosts.push_back({&f.hostBasis, f.offset});
  return m.max(residual, buildOutsideSpan(m, wB, hosts));
}

bool GenericGroupModel::isProductInsideChart(ArrayRef<double> v) const {
  unsigned kB = structure.builtinDim;
  SmallVector<double> wB(kB, 0.0);
  for (unsigned i = 0; i < kB; ++i)
    for (unsigned a = 0; a < dim; ++a)
      wB[i] += structure.toBuiltin[i * dim + a] * v[a];
  for (unsigned c = 0; c < structure.factors.size(); ++c) {
    const Factor &f = structure.factors[c];
    if (f.kind == Factor::Host &&
        !factorHosts[c]->isInsideChart(
            ArrayRef<double>(wB).slice(f.offset, f.hostDim)))
      return false;
  }
  return true;
}

unsigned GenericGroupModel::getFactorFeatureCount(unsigned c,
                                                  bool query) const {
  const Factor &f = structure.factors[c];
  unsigned size = f.indices.size();
  if (f.kind == Factor::Scalar || isDifference(f))
    return f.hostDim;
  if (f.kind == Factor::Nilpotent || !structure.isBlockIsotropic())
    return size * size;
  return query ? factorHosts[c]->getQueryFeatureCount()
               : factorHosts[c]->getKeyFeatureCount();
}

Scalars GenericGroupModel::buildProductFeatures(ScalarBuilder &m, ValueRange g,
                                                bool query) const {
  // Per factor: its host coordinates when log(a⁻¹b) is their difference;
  // the host's factored features when the block norms mix the hosts';
  // otherwise a_c⁻¹ and b_c for the factor's log of their product.
  Scalars features;
  for (unsigned c = 0; c < structure.factors.size(); ++c) {
    const Factor &f = structure.factors[c];
    unsigned size = f.indices.size();
    Scalars gc = restrictToFactor(g, c);
    Scalars part;
    if (f.kind == Factor::Scalar || isDifference(f)) {
      part = buildFactorLog(m, gc, c);
    } else if (f.kind == Factor::Host && structure.isBlockIsotropic()) {
      Scalars big = embedIn(m, gc, size, f.hostN);
      part = query ? factorHosts[c]->buildQueryFeatures(m, big)
                   : factorHosts[c]->buildKeyFeatures(m, big);
    } else if (!query) {
      part = gc;
    } else if (f.kind == Factor::Nilpotent) {
      part = unipotentInverse(m, size, gc, f.nilpotencyIndex);
    } else {
      part = extractFrom(
          factorHosts[c]->buildInverse(m, embedIn(m, gc, size, f.hostN)), size,
          f.hostN);
    }
    features.append(part.begin(), part.end());
  }
  return features;
}

Scalars GenericGroupModel::buildProductPairBlockNorms(ScalarBuilder &m,
                                                      ValueRange q,
                                                      ValueRange k) const {
  // Block-isotropic: every factor's host block norms, mixed by the caller.
  // Otherwise: w_B of a⁻¹b factor by factor, w = T⁺w_B, and the declared
  // block norms of w.
  bool isotropic = structure.isBlockIsotropic();
  Scalars norms, wB;
  unsigned qOff = 0, kOff = 0;
  for (unsigned c = 0; c < structure.factors.size(); ++c) {
    const Factor &f = structure.factors[c];
    unsigned size = f.indices.size();
    unsigned nq = getFactorFeatureCount(c, true);
    unsigned nk = getFactorFeatureCount(c, false);
    ValueRange qc = q.slice(qOff, nq), kc = k.slice(kOff, nk);
    qOff += nq;
    kOff += nk;
    if (isotropic && f.kind == Factor::Host) {
      Scalars part = factorHosts[c]->buildPairBlockNorms(m, qc, kc);
      norms.append(part.begin(), part.end());
      continue;
    }
    Scalars w;
    if (f.kind == Factor::Scalar || isDifference(f)) {
      for (unsigned i = 0; i < nq; ++i)
        w.push_back(m.sub(kc[i], qc[i]));
    } else if (f.kind == Factor::Nilpotent) {
      Scalars prod = multiply(m, size, qc, kc);
      w = dualCoordinates(m, f.dual,
                          buildMatrixLog(m, size, prod, f.nilpotencyIndex));
    } else {
      Scalars prod = multiply(m, size, qc, kc);
      w = factorHosts[c]->buildLog(m, embedIn(m, prod, size, f.hostN));
    }
    if (isotropic) {
      for (Value x : w)
        norms.push_back(m.mul(x, x));
    } else {
      wB.append(w.begin(), w.end());
    }
  }
  if (isotropic)
    return norms;
  return buildBlockNorms(m, applyConstant(m, structure.fromBuiltin, dim, wB));
}
