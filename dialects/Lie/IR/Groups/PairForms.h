//===- PairForms.h - Shared pieces of the factored pairwise forms -*- C++
//-*-===//
//
// The closed pairwise forms of SO(2)/SE(2) and SO(3)/SE(3) share their
// rotation part: the relative angle of two tokens from dot products of
// their per-token features (MATH.md §1, docs/geo.md), never from a formed
// relative element. Both the scalar and the vector (one pair per lane)
// ScalarBuilder build them.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_PAIRFORMS_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_PAIRFORMS_H

#include "dialects/Lie/IR/GroupModel.h"

namespace torsor::lie {

/// The relative rotation of a pair: its angle θ ∈ [0, π] (or (−π, π] in the
/// plane) and unnormalised cos/sin with atan2(sinT, cosT) = θ.
struct PairAngle {
  mlir::Value theta, cosT, sinT;
};

/// (c, s) = ((R₀₀ + R₁₁)/2, (R₁₀ − R₀₁)/2): the rotation part of a 2×2
/// block, so the pair angle is that of the nearest rotations (as SO2's log).
Scalars buildPlanarFeatures(ScalarBuilder &m, mlir::Value r00, mlir::Value r01,
                            mlir::Value r10, mlir::Value r11);
/// θ of R(θ_i)ᵀR(θ_j) from (c, s) features: two 2-dot products.
PairAngle buildPlanarPairAngle(ScalarBuilder &m, mlir::ValueRange q,
                               mlir::ValueRange k);

/// θ of R_iᵀR_j from the 9 row-major entries of each: tr(R_iᵀR_j) and
/// a = vee(M − Mᵀ) = 2 sin θ n are bilinear in (R_i, R_j); `axis` gets a.
PairAngle buildSpatialPairAngle(ScalarBuilder &m, mlir::ValueRange ri,
                                mlir::ValueRange rj, mlir::Value axis[3]);

/// The VJP (r̄_i, r̄_j) of θ = buildSpatialPairAngle(m, ri, rj, axis).theta
/// for a cotangent `thetaBar`, from that evaluation's `angle` and `axis`.
/// By hand, as one chain: with θ = atan2(s, c), s = ½‖a‖, c = ½(tr − 1)
/// and r² = s² + c², ā = θ̄ c/(4 s r²) · a and t̄r = −θ̄ s/(2 r²) share one
/// reciprocal 1/(s r²) (the formula's op-by-op adjoint takes c/r², s/r²
/// and ½/‖a‖ apart, each guarded), then the bilinear adjoints of tr and a.
/// At s = 0 (θ = 0 or π exactly, a = 0) the part through a is 0, as the
/// op-by-op adjoint's (Derivatives.h).
std::pair<Scalars, Scalars>
buildSpatialPairAngleVJP(ScalarBuilder &m, mlir::ValueRange ri,
                         mlir::ValueRange rj, const PairAngle &angle,
                         const mlir::Value axis[3], mlir::Value thetaBar);

/// f(θ) = ((θ/2) / sin(θ/2))², the factor of V⁻¹ on the translation part,
/// from θ and its unnormalised cos/sin (r = √(cos² + sin²)). sin²(θ/2) is
/// sin²θ / (2(1 + cos θ)) for cos θ ≥ 0 and (1 − cos θ)/2 otherwise, so
/// neither side cancels; below a small angle its Taylor series in θ/2.
mlir::Value buildHalfAngleRatio2(ScalarBuilder &m, const PairAngle &angle);

/// log(a⁻¹b) = (θ, ρ₁, ρ₂) in SE(2)'s coordinates from the SE(2) pair
/// features (c, s, t₁, t₂) of a (`q`) and b (`k`), without forming a⁻¹b
/// and without a sin or cos: u = R_aᵀ(t_b − t_a) is a⁻¹b's translation and
/// V(θ)⁻¹ = (x/sin x)·R(−x) = x cot x·I − x·J (x = θ/2, J the quarter
/// turn), so ρ = x cot x·u + x·(u₂, −u₁). x cot x is x·(r + cos)/sin for
/// cos θ ≥ 0 and x·sin/(r − cos) otherwise (no cancellation on either
/// side; 0 at θ = π), its Taylor series below |x| = 0.1 (f32) or 1e-2.
/// For the declared groups whose block norms are a non-isotropic quadratic
/// form in SE(2)'s coordinates (a sheared translation basis).
Scalars buildPlanarPairLog(ScalarBuilder &m, mlir::ValueRange q,
                           mlir::ValueRange k);

} // namespace torsor::lie

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_PAIRFORMS_H
