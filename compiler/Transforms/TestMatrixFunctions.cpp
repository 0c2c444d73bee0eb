//===- TestMatrixFunctions.cpp - Expand @torsor_expm/@torsor_logm ---------===//
//
// Test-only pass behind test/Numerics/matrix-functions.py: the matrix exp
// and log builders are meant for the generic group model, but their
// numerics are checked on plain matrices, so this pass exposes them as two
// magic callees. Each call becomes the same per-element loop nest that
// convert-lie-to-arith builds (scf.for over the batch dims, tensor.extract
// of the n·n entries, the builder, tensor.insert); it is copied in small
// here because that helper is private to the conversion.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LieToArith/LieToArith.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Lie/IR/Groups/MatrixFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORTESTMATRIXFUNCTIONS
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;
using namespace torsor::lie;

/// Replaces `call` (one N×N-trailing tensor in, same type out) with a loop
/// nest over its batch dims applying exp (`isExp`) or log per element.
static LogicalResult expandCall(func::CallOp call, bool isExp) {
  if (call.getNumOperands() != 1 || call.getNumResults() != 1 ||
      call.getOperand(0).getType() != call.getResult(0).getType())
    return call.emitOpError("expects one tensor operand and a result of the "
                            "same type");
  auto type = dyn_cast<RankedTensorType>(call.getResult(0).getType());
  auto floatType =
      type ? dyn_cast<FloatType>(type.getElementType()) : FloatType();
  if (!floatType || type.getRank() < 2 ||
      type.isDynamicDim(type.getRank() - 1) ||
      type.getDimSize(type.getRank() - 1) !=
          type.getDimSize(type.getRank() - 2))
    return call.emitOpError("expects a ranked float tensor of N×N matrices, "
                            "got ")
           << call.getResult(0).getType();
  unsigned n = type.getDimSize(type.getRank() - 1);
  unsigned index = 0;
  if (auto attr = call->getAttrOfType<IntegerAttr>("index"))
    index = attr.getInt();

  OpBuilder builder(call);
  Value result = buildElementwiseLoops(
      builder, call.getLoc(), {{call.getOperand(0), 2}}, type, 2,
      [&](ScalarBuilder &m, ArrayRef<Scalars> in) {
        return isExp ? buildMatrixExp(m, n, in[0], index)
                     : buildMatrixLog(m, n, in[0], index);
      });
  call.getResult(0).replaceAllUsesWith(result);
  call.erase();
  return success();
}

namespace {
struct TorsorTestMatrixFunctions
    : torsor::impl::TorsorTestMatrixFunctionsBase<TorsorTestMatrixFunctions> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (call.getCallee() == "torsor_expm" ||
          call.getCallee() == "torsor_logm")
        calls.push_back(call);
    });
    for (func::CallOp call : calls)
      if (failed(expandCall(call, call.getCallee() == "torsor_expm")))
        return signalPassFailure();
    // The magic declarations have no definition to link against.
    for (StringRef name : {"torsor_expm", "torsor_logm"})
      if (auto decl = module.lookupSymbol<func::FuncOp>(name))
        if (decl.isExternal())
          decl.erase();
  }
};
} // namespace
