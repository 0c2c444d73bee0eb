//===- FuseGrassmann.cpp - Fused lowering of geo.grassmann_mix ------------===//
//
// geo-fuse-grassmann: geo.grassmann_mix without the L × |offsets| × C(r,2)
// Plücker tensor (MATH.md §3), for -O1 and above; -O0 keeps the unfused
// oracle of convert-geo-to-linalg.
//
// Two identities do the work. Lagrange: ‖u ∧ v‖² = ‖u‖²‖v‖² − (u·v)², so
// the normaliser of p_t^Δ = z_t ∧ z_{t∓Δ} needs three dot products, not
// C(r,2) coordinates. Bilinearity: W_plü (u ∧ v) = B(u) v with B(u) linear
// in v, so the offsets' normalised terms of token t share B(z_t), and
// since B(z_t) is linear their sum is one product:
//
//   Σ_Δ W_plü (z_t ∧ z_Δ) / n_Δ = B(z_t) Σ_Δ z_Δ / n_Δ = W_plü (z_t ∧ w_t),
//   w_t = Σ_Δ c_Δ z_Δ,  c_Δ = 1 / max(‖z_t ∧ z_Δ‖, ε)   (valid Δ only).
//
// So B(z_t) is applied once per token, through the C(r,2)-wide
// contraction q W_plüᵀ with q_t = z_t ∧ w_t: O(L(d r² / 2 + |offsets| r)).
//
// Near-parallel pairs (‖z_t ∧ z_Δ‖ < ε) get c_Δ = 1/ε: summed into w_t as
// is, the component of z_Δ along z_t would be amplified by 1/ε and cancel
// in z_t ∧ w_t only up to rounding. Each z_Δ is therefore projected off
// z_t first (z_t ∧ z_Δ = z_t ∧ (z_Δ − s z_t), s = z_t·z_Δ / ‖z_t‖²), and
// the per-pair scalars and w_t are computed in f64, which costs
// O(L |offsets| r) and leaves the C(r,2)- and d-wide work in the model's
// type. The tensors are z, w [L, r], the pair scalars [L, |offsets|],
// q [L, C(r,2)] and the [L, d] rows of g and the gate. Every step is a
// linalg op parallel over tokens (threads), and the three contractions
// are plain linear layers for torsor-tile-dense. The steps live in
// GrassmannEmitter, which the VJP of geo.grassmann_mix (GrassmannGrad.cpp)
// builds its backward on.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GeoToLinalg/GrassmannEmitter.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/Geo/IR/GeoOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace torsor {
#define GEN_PASS_DEF_GEOFUSEGRASSMANN
#include "compiler/Conversion/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using namespace torsor::geotolinalg;

namespace {

/// The forward of GrassmannEmitter (the steps above), keeping its result.
struct FuseGrassmannMix : OpRewritePattern<GrassmannMixOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GrassmannMixOp op,
                                PatternRewriter &rewriter) const override {
    if (!GrassmannEmitter::supports(op))
      return rewriter.notifyMatchFailure(op, "reduced dim r must be static");
    GrassmannEmitter emitter(rewriter, op);
    Value out = emitter.forward().out;
    rewriter.replaceOp(op, emitter.e.castTo(out, op.getType()));
    return success();
  }
};

/// Rewrites every geo.grassmann_mix; other geo ops are left for
/// convert-geo-to-linalg.
struct GeoFuseGrassmann : torsor::impl::GeoFuseGrassmannBase<GeoFuseGrassmann> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGrassmannMix>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
