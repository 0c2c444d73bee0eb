//===- GroupAlgebra.h - The analysis of declared generators ----*- C++ -*-===//
//
// A declared group (`group Heis3 { matrix 3; generator X = [...]; ... }` in a
// .tsr model, `#lie.group<"Heis3", n = 3, generators = ...>` in IR) is valid
// when its generators span a matrix Lie algebra: they are linearly
// independent and closed under the bracket [X, Y] = XY − YX. This header is
// the one implementation of that check, and of the facts derived from the
// generators (dual basis, nilpotency index, affine structure, orthogonal
// linear part). Sema reports its findings at source locations; the Lie
// dialect's GenericGroupModel builds kernels from its facts. Both therefore
// accept exactly the same declarations, with the same tolerances.
//
// Plain C++17 and the standard library only, so that tools without MLIR
// (and the runtime, should it ever need to) can use it.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_GROUPALGEBRA_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_GROUPALGEBRA_H

#include <string>
#include <vector>

namespace torsor::lie::algebra {

/// An n×n matrix, row-major.
using Matrix = std::vector<double>;

/// The smallest and largest matrix size n of a declared group.
inline constexpr unsigned kMinMatrixSize = 2;
inline constexpr unsigned kMaxMatrixSize = 8;

/// Relative tolerance of every span test: a matrix counts as in the span of
/// others when the norm of its remainder after projection is at most
/// kSpanTolerance · max(1, its norm). 1e-9 leaves room for generators written
/// with a dozen decimal digits while still catching a real bracket.
inline constexpr double kSpanTolerance = 1e-9;

/// What is wrong with a set of generators, if anything.
struct Problem {
  enum Kind {
    None,
    /// n outside [kMinMatrixSize, kMaxMatrixSize].
    MatrixSize,
    /// No generators, or more than n² of them.
    GeneratorCount,
    /// Generator `a` has a NaN or infinite entry.
    NonFinite,
    /// Generator `a` lies in the span of generators 0 … a−1.
    Dependent,
    /// The bracket [E_a, E_b] (in `bracket`) lies outside the span.
    NotClosed,
  };
  Kind kind = None;
  unsigned a = 0, b = 0;
  Matrix bracket;

  explicit operator bool() const { return kind != None; }
};

/// The facts derived from valid generators.
struct Facts {
  unsigned n = 0;
  /// Generators E_a, each n·n.
  std::vector<Matrix> generators;
  /// Dual basis D_a = Σ_b (G⁻¹)_ab E_b for the Frobenius Gram matrix G, so
  /// that the coordinates of X in the span are w_a = ⟨D_a, X⟩.
  std::vector<Matrix> dual;
  /// j > 0 when every product of j generators vanishes, 0 otherwise.
  unsigned nilpotencyIndex = 0;
  /// Every generator's last row is zero: elements are [[A, t], [0, 1]].
  bool affine = false;
  /// The linear part (the leading (n−1)² block when affine, else all of it)
  /// of every generator is antisymmetric, so every element's is orthogonal.
  bool orthogonal = false;

  /// The dimension of the points the group acts on.
  unsigned getPointDim() const { return affine ? n - 1 : n; }
};

/// Analyses `generators` (each n·n, row-major). On success returns a None
/// problem and fills `facts`; otherwise returns the first problem found, in
/// the order the kinds are listed above (generators in declaration order,
/// brackets in (a, b) lexicographic order).
Problem analyze(unsigned n, const std::vector<Matrix> &generators,
                Facts &facts);

/// A one-line description of `p` that reads after "declared group 'G' ",
/// naming generators by `names` when given (else E0, E1, …).
std::string describe(const Problem &p, unsigned n,
                     const std::vector<std::string> &names = {});

/// `[[0, 0, 1], [0, 0, 0], [0, 0, 0]]`: `m` with up to 4 significant digits,
/// entries below 1e-12 in magnitude shown as 0.
std::string formatMatrix(const Matrix &m, unsigned n);

/// ⟨a, b⟩_F = Σ a_i b_i.
double frobeniusDot(const Matrix &a, const Matrix &b);
/// ‖a‖_F, scaled by the largest entry first (no underflow or overflow for
/// entries of 1e±300).
double frobeniusNorm(const Matrix &a);

/// Inverse of the symmetric positive definite k×k matrix `a` (Gauss–Jordan
/// with partial pivoting).
Matrix invertSymmetric(unsigned k, Matrix a);

/// The n×n row-major product ab.
Matrix multiply(unsigned n, const Matrix &a, const Matrix &b);

} // namespace torsor::lie::algebra

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_GROUPALGEBRA_H
