//===- Passes.h - Geo transformations ---------------------------*- C++ -*-===//
//
// Declarations generated from Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_GEO_TRANSFORMS_PASSES_H
#define TORSOR_DIALECTS_GEO_TRANSFORMS_PASSES_H

#include "dialects/Geo/IR/GeoDialect.h"
#include "dialects/Lie/IR/LieDialect.h"
#include "dialects/Strategy/IR/Strategy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Pass/Pass.h"

namespace torsor::geo {

#define GEN_PASS_DECL
#include "dialects/Geo/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Geo/Transforms/Passes.h.inc"

} // namespace torsor::geo

#endif // TORSOR_DIALECTS_GEO_TRANSFORMS_PASSES_H
