//===- KernelMath.h - Vectorizable f32 math for fused kernels ---*- C++ -*-===//
//
// Fused kernels evaluate transcendentals on vectors, where a libm call per
// lane would dominate their cost. These patterns replace f32 math ops by
// branch-free polynomial forms (measured accuracy in docs/geo.md). They are
// applied only to the ops of fused kernels; everything else keeps libm.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_GEO_TRANSFORMS_KERNELMATH_H
#define TORSOR_DIALECTS_GEO_TRANSFORMS_KERNELMATH_H

#include "mlir/IR/PatternMatch.h"

namespace torsor::geo {

/// f32 math.atan2 (scalar or vector) → one division and a degree-15 odd
/// polynomial: max error 1.5e-7 rad (≈ 2 ulp at π/4) against the exact
/// atan2, NaN in → NaN out, atan2(±0, +0) = ±0 and atan2(±0, −0) = ±π.
/// f32 math.exp → a degree-6 polynomial with the exponent added in the
/// bits (16 ops: max error 8.5e-8 relative, ≈ 1.4 ulp; 0 below
/// ln(FLT_MIN), +∞ above ln(FLT_MAX), NaN in → NaN out); MLIR's own
/// polynomial exp for other shapes. Its fastmath flags drop tests: `afn`
/// flushes results below 2⁻¹²⁵ to 0 (x < −86.9; one select instead of the
/// gradual underflow's four ops), `ninf` drops the overflow to +∞ (for
/// arguments known ≤ 0); the other results are the same bits.
/// On f32 1-D vectors (scalars keep libm): math.log → fdlibm's reduction
/// to [√½, √2) and a degree-4 polynomial in s² (max error 0.85 ulp);
/// math.log1p → that log of u = 1 + x plus the rounding correction
/// (1 + x − u)/u (1.44 ulp; x itself where u = 1); math.expm1 → x·P(x), P
/// of degree 10, on |x| ≤ 1 and e^x − 1 beyond (1.6 ulp; tiny x bit for
/// bit). C99 special values; measured over the f32 range in
/// test/Numerics/kernel-math.py.
void populateKernelMathPatterns(mlir::RewritePatternSet &patterns);

/// Appends the math ops nested in `root` to `ops`.
void collectKernelMath(mlir::Operation *root,
                       llvm::SmallVectorImpl<mlir::Operation *> &ops);
/// Appends the math ops a pass built before `op` since `prev` (the op
/// that preceded the kernel; null when the kernel starts its block).
void collectKernelMath(mlir::Operation *prev, mlir::Operation *op,
                       llvm::SmallVectorImpl<mlir::Operation *> &ops);
/// Rewrites `ops` (f32 kernels' math) with populateKernelMathPatterns.
mlir::LogicalResult
approximateKernelMath(mlir::MLIRContext *context,
                      llvm::ArrayRef<mlir::Operation *> ops);

} // namespace torsor::geo

#endif // TORSOR_DIALECTS_GEO_TRANSFORMS_KERNELMATH_H
