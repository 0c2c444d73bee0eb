//===- GenericGrad.cpp - Tangent spaces of declared groups ----------------===//
//
// The derivatives of a declared group need its tangent space at the
// identity only: the generators E_a (ξ ↦ hat(ξ)) and the dual basis D_a
// (coordinates of an algebra element). Both are constants of the model, so
// these builders are a few FMAs and need neither exp nor log, whose
// generic forms build loops. Specialised models delegate to the built-in.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Generic.h"

using namespace mlir;
using namespace torsor::lie;

Scalars GenericGroupModel::buildTangentPullback(ScalarBuilder &m,
                                                ValueRange entries) const {
  if (special)
    return special->buildTangentPullback(m, entries);
  // ⟨Ē, E_a⟩ for every generator.
  Scalars out;
  for (unsigned a = 0; a < dim; ++a) {
    Value acc = m.c(0.0);
    for (unsigned i = 0; i < n * n; ++i)
      if (gens[a][i] != 0)
        acc = m.fma(m.c(gens[a][i]), entries[i], acc);
    out.push_back(acc);
  }
  return out;
}

Scalars GenericGroupModel::buildAlgebraCotangent(ScalarBuilder &m,
                                                 ValueRange c) const {
  if (special)
    return special->buildAlgebraCotangent(m, c);
  // Σ_a c_a D_a: ⟨D_a, E_b⟩ = δ_ab, so it pairs with hat(ξ) as c·ξ.
  Scalars out;
  for (unsigned i = 0; i < n * n; ++i) {
    Value acc = m.c(0.0);
    for (unsigned a = 0; a < dim; ++a)
      if (dual[a][i] != 0)
        acc = m.fma(m.c(dual[a][i]), c[a], acc);
    out.push_back(acc);
  }
  return out;
}
