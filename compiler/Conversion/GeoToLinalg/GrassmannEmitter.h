//===- GrassmannEmitter.h - The fused form of geo.grassmann_mix -*- C++ -*-===//
//
// The steps of geo.grassmann_mix's fused forward (FuseGrassmann.cpp has
// the math), as one builder whose intermediates stay available: the
// lowering geo-fuse-grassmann keeps only the result, the VJP
// (GrassmannGrad.cpp) builds its backward on z, the pair scalars, w_t and
// q_t = z_t ∧ w_t. One copy of the forward math serves both. Private to
// this folder.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_CONVERSION_GEOTOLINALG_GRASSMANNEMITTER_H
#define TORSOR_COMPILER_CONVERSION_GEOTOLINALG_GRASSMANNEMITTER_H

#include "compiler/Conversion/GeoToLinalg/LinalgEmitter.h"
#include "dialects/Geo/IR/GeoOps.h"

namespace torsor::geotolinalg {

/// The fused forward's tensors (m = |offsets|, C = C(r,2)). Pair scalars
/// and w_t are f64; the rest has the model's element type.
struct GrassmannMixValues {
  Value z;      ///< W_red h + b_red, [batch..., L, r]
  Value n2;     ///< ‖z_t‖², [batch..., L] (f64)
  Value dot;    ///< z_t · z_partner, [batch..., L, m] (f64)
  Value cv, cu; ///< c and c·s of valid pairs, 0 otherwise (f64)
  Value w64, w; ///< w_t = Σ cv z_partner − cu z_t, f64 and model type
  Value q;      ///< z_t ∧ w_t, [batch..., L, C]
  Value gSum;   ///< W_plu q_t, [batch..., L, d]
  Value g;      ///< gSum / count + b_plu (0 without a valid offset)
  Value preH;   ///< W_gate[:, :d] h + b_gate
  Value preG;   ///< W_gate[:, d:] g
  Value out;    ///< α h + (1 − α) g, α = σ(preH + preG)
};

/// Builds the fused forward of one geo.grassmann_mix and the index
/// helpers its backward shares (partners, validity, counts).
class GrassmannEmitter {
public:
  GrassmannEmitter(OpBuilder &b, geo::GrassmannMixOp op);

  /// Whether the fused form applies to `op` (r static). Check before
  /// constructing: the constructor emits the shape ops.
  static bool supports(geo::GrassmannMixOp op) {
    return !ShapedType::isDynamic(
        cast<RankedTensorType>(op.getWRed().getType()).getShape()[0]);
  }

  /// Emits the forward and returns its tensors.
  GrassmannMixValues forward();

  /// Partner row of row `t` for offset `delta` (t − Δ with `causal`, else
  /// t + Δ; the other direction with `reverse`), clamped into [0, L) so
  /// that reads stay in bounds, and whether it is really inside.
  std::pair<Value, Value> partner(OpBuilder &b, Location l, Value t,
                                  Value delta, bool reverse = false) const;
  /// `x[batch..., row, col...]` from inside a generic whose first loops
  /// are the batch dims, widened (or narrowed) to `to` if given.
  Value at(OpBuilder &b, Location l, Value x, ValueRange rowCol,
           Type to = {}) const;
  /// Number of valid offsets of row `t`, as a scalar of `type`.
  Value validCount(OpBuilder &b, Location l, Value t, Type type) const;
  /// Columns [col, col + d) of W_gate: the half applied to h (0) or g (d).
  Value gateHalf(int64_t col);

  geo::GrassmannMixOp op;
  SmallVector<int64_t> offsets;
  LinalgEmitter e;    ///< the model's element type
  LinalgEmitter wide; ///< f64, for the pair scalars
  int64_t r, d, m;
  unsigned nb, rank;
  bool causal;
  double eps;
  Value len;      ///< L, an index
  Value offTable; ///< the offsets, tensor<m x index>
  SmallVector<OpFoldResult> hShape, batchLen, zShape, pairShape;
};

/// `v` converted between float types (extf / truncf; itself if equal).
Value convertFloat(OpBuilder &b, Location loc, Value v, Type to);

/// A linalg.generic with several outputs (LinalgEmitter's has one).
SmallVector<Value> genericN(
    OpBuilder &b, Location loc, ValueRange inputs, ValueRange inits,
    ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iters,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body);

} // namespace torsor::geotolinalg

#endif // TORSOR_COMPILER_CONVERSION_GEOTOLINALG_GRASSMANNEMITTER_H
