//===- MatrixTestUtils.h - Small matrices for the algebra tests -*- C++ -*-===//
//
// Row-major n×n matrices for GroupAlgebraTest and GroupStructureTest: unit
// matrices and sums, to write generators as the docs do.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_UNITTESTS_FRONTEND_MATRIXTESTUTILS_H
#define TORSOR_UNITTESTS_FRONTEND_MATRIXTESTUTILS_H

#include "dialects/Lie/IR/Groups/GroupAlgebra.h"

namespace torsor::lie::algebra::testing {

/// The n×n matrix with `v` at (i, j) and zeros elsewhere.
inline Matrix unit(unsigned n, unsigned i, unsigned j, double v = 1) {
  Matrix m(n * n, 0.0);
  m[i * n + j] = v;
  return m;
}

/// a + s·b.
inline Matrix plus(Matrix a, const Matrix &b, double s = 1) {
  for (size_t i = 0; i < a.size(); ++i)
    a[i] += s * b[i];
  return a;
}

} // namespace torsor::lie::algebra::testing

#endif // TORSOR_UNITTESTS_FRONTEND_MATRIXTESTUTILS_H
