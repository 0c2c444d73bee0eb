//===- GroupCheck.h - Membership checks for built-in groups ---*- C++ -*-===//
//
// Optional validation that group-element inputs really are elements of
// their built-in matrix group (homogeneous n x n matrices, row-major), up to
// an absolute tolerance: a pose with a sheared rotation block silently
// produces garbage attention scores, so torsor-run --check-groups catches it
// at the boundary, and so does an Aff2 or Sim3 scale outside the range
// the model's dtype computes in. User-declared groups are checked by their
// residual entry (Module.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_GROUPCHECK_H
#define TORSOR_RUNTIME_GROUPCHECK_H

#include "Support.h"

#include <string>

namespace torsor::rt {

/// Matrix size n of built-in group `name` (SO2 2, SE2 3, SO3 3, SE3 4,
/// Aff2 3, Sim3 4), or 0 if `name` is not a built-in group.
int builtinGroupMatrixSize(const std::string &name);

/// R of the range [1/R, R] the singular values of an Aff2 or Sim3 linear
/// part must lie in for a model computing in `dtype` (GroupCheck.cpp).
double scaleRange(int32_t dtype);

/// Checks one n x n row-major matrix `m` against built-in group `group`,
/// for a model computing in `dtype` (the range of Aff2 and Sim3 scales).
/// Returns "" if it is a member within `tol`, else the reason, e.g.
/// "rotation block not orthonormal (error 2.1e-01 > tol 1e-04)".
std::string checkGroupMatrix(const std::string &group, const double *m,
                             double tol, int32_t dtype = TORSOR_DTYPE_F64);

/// Checks every n x n element of `tensor` (last two dims; strides may be
/// NULL for row-major). `label` is e.g. "input 'pose'". Does nothing for
/// groups that are not built in.
Status checkGroupTensor(const std::string &label, const std::string &group,
                        const TorsorTensor &tensor, double tol);

/// Reads element `e` (over the leading dims) of the n x n matrices in the
/// last two dims of `tensor` into `m` (row-major, as doubles).
void readGroupElement(const TorsorTensor &tensor, int n, int64_t e, double *m);

/// The tolerance a declared group's membership residual of the n x n
/// element `g` is compared with, for a model computing in `dtype`
/// (docs/groups/declared.md, "Membership check"):
///   max(tol, 8·n·ε·κ(g)),  κ(g) = ‖g‖_F·‖(g + c·I)⁻¹‖_F,  c = |det g|^(1/n),
/// with ε the dtype's machine epsilon. κ(g) estimates the condition number
/// of the principal log at g: it grows as 1/(π − θ) when g has a rotation
/// by θ near π (an eigenvalue pair near −c), where the residual of a valid
/// element grows the same way. Where κ(g) ≥ 1/ε, g is at the log's branch
/// cut within rounding (a rotation by π), its residual has no digits and
/// may be NaN: +inf (accept). Returns a negative value when det g ≤ 0 (no
/// element of a connected matrix group has one).
double declaredResidualTolerance(double tol, int32_t dtype, const double *g,
                                 int n);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_GROUPCHECK_H
