//===- MLIRGenGeo.cpp - Torsor MLIRGen: group ops and geometric layers ----===//
//
// Emits `lie` ops for compose/inverse/log/exp/act/dist2 and `geo` ops for
// lie_attention, grassmann_mix, relational_attention and relational_norm.
// Ops are created by name (OperationState) with the attribute names of
// LieOps.td/GeoOps.td, and `#lie.group<...>` is parsed from its text, so
// this file needs only the dialects to be registered in the context.
// Constant arguments come from CallExpr::constants, filled by Sema.
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGenImpl.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"

using namespace torsor::frontend;
using namespace mlir;
using FType = torsor::frontend::Type;
using llvm::SMLoc;
using llvm::StringRef;

Attribute MLIRGenImpl::groupAttr(const GroupInfo &group, SMLoc l) {
  if (!group.builtin) {
    mlir::emitError(loc(l))
        << "group '" << group.name
        << "' is declared in the model, but the lie dialect cannot represent "
           "declared groups yet (supported: SO2, SE2, SO3, SE3, Aff2, Sim3)";
    hadError = true;
    return nullptr;
  }
  if (!ctx.getOrLoadDialect("lie")) {
    mlir::emitError(loc(l)) << "the 'lie' dialect is not registered";
    hadError = true;
    return nullptr;
  }
  Attribute attr;
  {
    // A parse failure is reported below at the model's location instead.
    ScopedDiagnosticHandler silence(&ctx,
                                    [](Diagnostic &) { return success(); });
    attr = parseAttribute("#lie.group<" + group.mnemonic + ">", &ctx);
  }
  if (!attr) {
    mlir::emitError(loc(l)) << "group '" << group.name
                            << "' is not supported by the lie dialect in "
                               "this build";
    hadError = true;
  }
  return attr;
}

Value MLIRGenImpl::createByName(StringRef name, Location l, ValueRange operands,
                                mlir::Type result,
                                ArrayRef<NamedAttribute> attrs) {
  StringRef dialect = name.split('.').first;
  if (!ctx.getOrLoadDialect(dialect)) {
    mlir::emitError(l) << "the '" << dialect << "' dialect is not registered";
    hadError = true;
    return nullptr;
  }
  OperationState state(l, name);
  state.addOperands(operands);
  state.addTypes(result);
  state.addAttributes(attrs);
  return b.create(state)->getResult(0);
}

Value MLIRGenImpl::emitGroupOp(const CallExpr &call, const Env &env) {
  Location l = loc(call.getLoc());
  SmallVector<Value> args;
  for (const ExprPtr &arg : call.args) {
    args.push_back(emitExpr(*arg, env));
    if (!args.back())
      return nullptr;
  }
  Attribute group = groupAttr(*call.group, call.getLoc());
  if (!group)
    return nullptr;
  SmallVector<NamedAttribute> attrs = {b.getNamedAttr("group", group)};
  StringRef name = call.callee;
  mlir::Type resultType = tensorType(call.type);
  if (name != "dist2")
    return createByName(("lie." + name).str(), l, args, resultType, attrs);
  attrs.push_back(b.getNamedAttr(
      "lambda", b.getDenseF64ArrayAttr(call.constants.at("lambda"))));
  if (call.getConstant("pairwise") != 0) {
    // All pairs: broadcast a over columns and b over rows, then compare
    // elementwise; dist2 stays one op that fusion can recognise.
    const FType &ta = call.args[0]->type, &tb = call.args[1]->type;
    FType pair =
        FType::groupSeq(ta.group, ta.dtype, {ta.shape[0], tb.shape[0]});
    Value lhs = linalg::BroadcastOp::create(b, l, args[0], emptyTensor(pair, l),
                                            ArrayRef<int64_t>{1})
                    ->getResult(0);
    Value rhs = linalg::BroadcastOp::create(b, l, args[1], emptyTensor(pair, l),
                                            ArrayRef<int64_t>{0})
                    ->getResult(0);
    args = {lhs, rhs};
  }
  return createByName("lie.dist2", l, args, resultType, attrs);
}

Value MLIRGenImpl::emitGeoLayer(const CallExpr &call, const Env &env) {
  Location l = loc(call.getLoc());
  StringRef name = call.callee;
  SmallVector<Value> operands;
  for (const ExprPtr &arg : call.args) {
    operands.push_back(emitExpr(*arg, env));
    if (!operands.back())
      return nullptr;
  }
  auto kwValue = [&](StringRef kw) -> Value {
    const KeywordArg *arg = call.getKeyword(kw);
    return arg ? emitExpr(*arg->value, env) : Value();
  };
  SmallVector<NamedAttribute> attrs;
  auto addCausal = [&] {
    if (call.getConstant("causal") != 0)
      attrs.push_back(b.getNamedAttr("causal", b.getUnitAttr()));
  };
  mlir::Type resultType = tensorType(call.type);
  if (name == "lie_attention") {
    Attribute group = groupAttr(*call.group, call.getLoc());
    if (!group)
      return nullptr;
    attrs = {
        b.getNamedAttr("group", group),
        b.getNamedAttr("heads",
                       b.getI64IntegerAttr(int64_t(call.getConstant("heads")))),
        b.getNamedAttr("tau", b.getDenseF64ArrayAttr(call.constants.at("tau"))),
        b.getNamedAttr("lambda",
                       b.getDenseF64ArrayAttr(call.constants.at("lambda")))};
    addCausal();
    return createByName("geo.lie_attention", l, operands, resultType, attrs);
  }
  if (name == "grassmann_mix") {
    for (StringRef kw :
         {"w_red", "b_red", "w_plucker", "b_plucker", "w_gate", "b_gate"}) {
      operands.push_back(kwValue(kw));
      if (!operands.back())
        return nullptr;
    }
    SmallVector<int64_t> offsets;
    for (double o : call.constants.at("offsets"))
      offsets.push_back(int64_t(o));
    attrs = {b.getNamedAttr("offsets", b.getDenseI64ArrayAttr(offsets)),
             b.getNamedAttr("eps", b.getF64FloatAttr(call.getConstant("eps")))};
    addCausal();
    return createByName("geo.grassmann_mix", l, operands, resultType, attrs);
  }
  if (name == "relational_attention") {
    for (StringRef kw : {"g_qk", "g_vo"}) {
      operands.push_back(kwValue(kw));
      if (!operands.back())
        return nullptr;
    }
    attrs = {
        b.getNamedAttr("heads",
                       b.getI64IntegerAttr(int64_t(call.getConstant("heads")))),
        b.getNamedAttr("scale", b.getF64FloatAttr(call.getConstant("scale")))};
    addCausal();
    return createByName("geo.relational_attention", l, operands, resultType,
                        attrs);
  }
  attrs = {b.getNamedAttr("eps", b.getF64FloatAttr(call.getConstant("eps")))};
  return createByName("geo.relational_norm", l, operands, resultType, attrs);
}
