//===- MLIRGenGeo.cpp - Torsor MLIRGen: group ops and geometric layers ----===//
//
// Emits `lie` ops for compose/inverse/log/exp/act/dist2 and `geo` ops for
// lie_attention, grassmann_mix, relational_attention and relational_norm.
// Ops are created by name (OperationState) with the attribute names of
// LieOps.td/GeoOps.td, and `#lie.group<...>` is parsed from its text (a
// keyword for built-in groups, generators and blocks for declared ones), so
// this file needs only the dialects to be registered in the context.
// Constant arguments come from CallExpr::constants, filled by Sema.
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGenImpl.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace torsor::frontend;
using namespace mlir;
using FType = torsor::frontend::Type;
using llvm::SMLoc;
using llvm::StringRef;

/// The text of `#lie.group<...>` for `group`: the keyword of a built-in
/// group, or a declared group's generators and blocks (LieAttrs.td).
static std::string groupAttrText(const GroupInfo &group) {
  if (group.builtin)
    return "#lie.group<" + group.mnemonic + ">";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "#lie.group<\"" << group.name << "\", n = " << group.matrixSize
     << ", generators = array<f64: ";
  llvm::ListSeparator comma;
  for (const std::vector<double> &gen : group.generators)
    for (double x : gen) {
      // Shortest round-tripping text, always with a '.' or exponent (the
      // parser reads `array<f64: 0>` as an integer).
      std::string num = llvm::formatv("{0}", llvm::format("%.17g", x)).str();
      if (num.find_first_of(".e") == std::string::npos)
        num += ".0";
      os << comma << num;
    }
  os << ">, blocks = [";
  unsigned next = 0;
  llvm::ListSeparator blockComma;
  for (const NormBlock &block : group.blocks) {
    os << blockComma << "[\"" << block.name << "\"";
    for (unsigned i = 0; i < block.size; ++i)
      os << ", " << next++;
    os << "]";
  }
  os << "]>";
  return text;
}

Attribute MLIRGenImpl::groupAttr(const GroupInfo &group, SMLoc l) {
  if (!ctx.getOrLoadDialect("lie")) {
    mlir::emitError(loc(l)) << "the 'lie' dialect is not registered";
    hadError = true;
    return nullptr;
  }
  Attribute attr;
  std::string why;
  {
    // A parse or verifier failure is reported below at the model's
    // location instead, with the attribute's own message.
    ScopedDiagnosticHandler silence(&ctx, [&](Diagnostic &diag) {
      if (why.empty())
        why = diag.str();
      return success();
    });
    attr = parseAttribute(groupAttrText(group), &ctx);
  }
  if (!attr) {
    mlir::emitError(loc(l)) << "group '" << group.name
                            << "' is not supported by the lie dialect in "
                               "this build: "
                            << why;
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
