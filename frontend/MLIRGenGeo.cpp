//===- MLIRGenGeo.cpp - Torsor MLIRGen: group ops and geometric layers ----===//
//
// Emits `lie` ops for compose/inverse/log/exp/act/dist2 and `geo` ops for
// lie_attention, grassmann_mix, relational_attention and relational_norm.
// Ops are built with their ODS builders and `#lie.group<...>` directly from
// the GroupInfo (a keyword for built-in groups, generators and blocks for
// declared ones), so a mismatch with LieOps.td/GeoOps.td is a compile error.
// Constant arguments come from CallExpr::constants, filled by Sema.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Lie/IR/LieOps.h"
#include "frontend/MLIRGenImpl.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace torsor::frontend;
using namespace mlir;
using FType = torsor::frontend::Type;
namespace lie = torsor::lie;
namespace geo = torsor::geo;
using llvm::SMLoc;
using llvm::StringRef;

lie::GroupAttr MLIRGenImpl::groupAttr(const GroupInfo &group, SMLoc l) {
  if (group.builtin)
    return lie::GroupAttr::get(b.getStringAttr(group.mnemonic));
  // A declared group: its generators, row-major, and its blocks as
  // [name, coordinate indices...] (LieAttrs.td).
  SmallVector<double> generators;
  for (const std::vector<double> &gen : group.generators)
    generators.append(gen.begin(), gen.end());
  SmallVector<Attribute> blocks;
  int64_t next = 0;
  for (const NormBlock &block : group.blocks) {
    SmallVector<Attribute> entry = {b.getStringAttr(block.name)};
    for (unsigned i = 0; i < block.size; ++i)
      entry.push_back(b.getI64IntegerAttr(next++));
    blocks.push_back(b.getArrayAttr(entry));
  }
  // The attribute's verifier may still reject what Sema accepted (e.g. a
  // model it cannot build); report that at the use, with its reason.
  std::string why;
  auto attr = lie::GroupAttr::getChecked(
      [&] {
        return mlir::emitError(loc(l))
               << "group '" << group.name
               << "' is not supported by the lie dialect in this build: ";
      },
      &ctx, b.getStringAttr(group.name), group.matrixSize,
      b.getDenseF64ArrayAttr(generators), b.getArrayAttr(blocks),
      /*generic=*/false);
  if (!attr)
    hadError = true;
  return attr;
}

Value MLIRGenImpl::emitGroupOp(const CallExpr &call, const Env &env) {
  Location l = loc(call.getLoc());
  SmallVector<Value> args;
  for (const ExprPtr &arg : call.args) {
    args.push_back(emitExpr(*arg, env));
    if (!args.back())
      return nullptr;
  }
  lie::GroupAttr group = groupAttr(*call.group, call.getLoc());
  if (!group)
    return nullptr;
  StringRef name = call.callee;
  mlir::Type resultType = tensorType(call.type);
  if (name == "compose")
    return lie::ComposeOp::create(b, l, resultType, args[0], args[1], group);
  if (name == "inverse")
    return lie::InverseOp::create(b, l, resultType, args[0], group);
  if (name == "log")
    return lie::LogOp::create(b, l, resultType, args[0], group);
  if (name == "exp")
    return lie::ExpOp::create(b, l, resultType, args[0], group);
  if (name == "act")
    return lie::ActOp::create(b, l, resultType, args[0], args[1], group);
  if (name == "membership_residual")
    return lie::MembershipResidualOp::create(b, l, resultType, args[0], group);
  assert(name == "dist2" && "Sema admits no other group operation");
  auto lambda = b.getDenseF64ArrayAttr(call.constants.at("lambda"));
  if (!checkAttentionConstants(call, getElementTypeOrSelf(resultType)))
    return nullptr;
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
  return lie::Dist2Op::create(b, l, resultType, args[0], args[1], group,
                              lambda);
}

/// The `#geo.scores` of a checked lie_attention call: its group, heads,
/// tau, lambda (heads x blocks, row-major) and causality.
static geo::ScoresAttr scoresAttr(const CallExpr &call, lie::GroupAttr group,
                                  UnitAttr causal) {
  return geo::ScoresAttr::get(
      group, int64_t(call.getConstant("heads")), call.constants.at("tau"),
      call.constants.at("lambda"), static_cast<bool>(causal));
}

Value MLIRGenImpl::emitCrossAttention(const CallExpr &call,
                                      ArrayRef<Value> operands,
                                      lie::GroupAttr group, UnitAttr causal,
                                      const Env &env) {
  Location l = loc(call.getLoc());
  // Offsets: i64 scalars (rank-0 tensors) as index values, 0 by default.
  auto offset = [&](StringRef kw) -> Value {
    const KeywordArg *arg = call.getKeyword(kw);
    if (!arg)
      return arith::ConstantIndexOp::create(b, l, 0);
    Value t = emitExpr(*arg->value, env);
    if (!t)
      return nullptr;
    Value i64 = tensor::ExtractOp::create(b, l, t, ValueRange{});
    return arith::IndexCastOp::create(b, l, b.getIndexType(), i64);
  };
  Value qo = offset("query_offset");
  Value ko = offset("key_offset");
  if (!qo || !ko)
    return nullptr;
  geo::ScoresAttr scores = scoresAttr(call, group, causal);
  if (call.callee == "lie_attention") {
    auto op = geo::LieCrossAttentionOp::create(
        b, l, tensorType(call.type), tensorType(call.extraTypes[0]),
        operands[0], operands[1], operands[2], qo, ko, scores);
    extraResults[&call] = {op.getLse()};
    return op.getResult();
  }
  // lie_attention_grad: ambient cotangents of the elements from the
  // block backward, then their left-trivialised gradients (k algebra
  // coordinates per token, as --grad reports group inputs).
  auto op = geo::LieCrossAttentionGradOp::create(
      b, l,
      TypeRange{operands[0].getType(), operands[1].getType(),
                operands[2].getType()},
      operands[0], operands[1], operands[2], operands[3], operands[4],
      operands[5], qo, ko, scores);
  auto trivialize = [&](Value g, Value cot, const Type &type) -> Value {
    return lie::PullbackOp::create(
        b, l, tensorType(type),
        lie::PullbackKindAttr::get(&ctx, lie::PullbackKind::LeftTrivialize),
        ValueRange{g}, cot, group, b.getI64IntegerAttr(0), DenseF64ArrayAttr());
  };
  extraResults[&call] = {
      trivialize(operands[1], op.getKeysGrad(), call.extraTypes[0]),
      op.getValuesGrad()};
  return trivialize(operands[0], op.getQueriesGrad(), call.type);
}

void MLIRGenImpl::bindExtraResults(const BindStmt &bind, Env &env) {
  if (bind.extraNames.empty())
    return;
  auto *call = llvm::cast<CallExpr>(bind.value.get());
  const SmallVector<Value> &more = extraResults[call];
  for (size_t i = 0; i < bind.extraNames.size() && i < more.size(); ++i)
    env.values[bind.extraNames[i]] = more[i];
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
  // Only the layers that take `causal` have it among their constants.
  UnitAttr causal =
      call.constants.count("causal") && call.getConstant("causal") != 0
          ? b.getUnitAttr()
          : UnitAttr();
  mlir::Type resultType = tensorType(call.type);
  if (name == "lie_attention" || name == "lie_attention_grad") {
    lie::GroupAttr group = groupAttr(*call.group, call.getLoc());
    if (!group ||
        !checkAttentionConstants(call, getElementTypeOrSelf(resultType)))
      return nullptr;
    if (call.args.size() > 2)
      return emitCrossAttention(call, operands, group, causal, env);
    return geo::LieAttentionOp::create(b, l, resultType, operands[0],
                                       operands[1],
                                       scoresAttr(call, group, causal));
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
    return geo::GrassmannMixOp::create(
        b, l, resultType, operands[0], operands[1], operands[2], operands[3],
        operands[4], operands[5], operands[6], b.getDenseI64ArrayAttr(offsets),
        b.getF64FloatAttr(call.getConstant("eps")), causal);
  }
  if (name == "relational_attention") {
    for (StringRef kw : {"g_qk", "g_vo"}) {
      operands.push_back(kwValue(kw));
      if (!operands.back())
        return nullptr;
    }
    return geo::RelationalAttentionOp::create(
        b, l, resultType, operands[0], operands[1], operands[2],
        b.getI64IntegerAttr(int64_t(call.getConstant("heads"))),
        b.getF64FloatAttr(call.getConstant("scale")), causal);
  }
  return geo::RelationalNormOp::create(
      b, l, resultType, operands[0],
      b.getF64FloatAttr(call.getConstant("eps")));
}
