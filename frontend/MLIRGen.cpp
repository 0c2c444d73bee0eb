//===- MLIRGen.cpp - Torsor AST to MLIR -----------------------------------===//
//
// Emits one `func.func @<Model>` per model. Arguments are the inputs, then
// the model params, then the params of each block instance in the order
// they are used (named `<prefix>.<index>.<param>`); results are the
// outputs. Argument and result attributes carry what the manifest writer
// needs: `torsor.name`, `torsor.kind`, `torsor.dims` (symbol names and
// fixed sizes per dim), and for group inputs `torsor.group` and
// `torsor.left_invariant` (from Sema's analysis). Group operations become
// `lie` ops and the geometric layers `geo` ops, created by name so this
// file does not depend on those dialects' C++ headers; dense layers are in
// MLIRGenDense.cpp. The module is verified before it is returned.
//
//===----------------------------------------------------------------------===//

#include "frontend/Builtins.h"
#include "frontend/MLIRGenImpl.h"
#include "frontend/Sema.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace torsor::frontend;
using namespace mlir;
using FType = torsor::frontend::Type;
using llvm::SMLoc;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Diagnostics and driver entry points
//===----------------------------------------------------------------------===//

Location MLIRDiagnosticEngine::translateLocation(SMLoc l) const {
  unsigned bufId = srcMgr.FindBufferContainingLoc(l);
  if (!bufId)
    return UnknownLoc::get(&ctx);
  auto lineCol = srcMgr.getLineAndColumn(l, bufId);
  StringRef file = srcMgr.getMemoryBuffer(bufId)->getBufferIdentifier();
  return FileLineColLoc::get(&ctx, file, lineCol.first, lineCol.second);
}

void MLIRDiagnosticEngine::report(SMLoc l, const llvm::Twine &msg) {
  mlir::emitError(translateLocation(l)) << msg.str();
}

/// Parses and checks the main buffer, reporting through MLIR.
static std::unique_ptr<Module> parseChecked(llvm::SourceMgr &srcMgr,
                                            MLIRDiagnosticEngine &diags) {
  return parseAndCheck(srcMgr, srcMgr.getMainFileID(), diags);
}

OwningOpRef<ModuleOp>
torsor::frontend::importTorsorSource(llvm::SourceMgr &srcMgr, MLIRContext &ctx,
                                     FloatDType floatDType) {
  MLIRDiagnosticEngine diags(srcMgr, ctx);
  std::unique_ptr<Module> module = parseChecked(srcMgr, diags);
  if (!module)
    return nullptr;
  return mlirGen(ctx, *module, diags, floatDType);
}

LogicalResult torsor::frontend::dumpTorsorAST(llvm::SourceMgr &srcMgr,
                                              MLIRContext &ctx,
                                              llvm::raw_ostream &os) {
  MLIRDiagnosticEngine diags(srcMgr, ctx);
  std::unique_ptr<Module> module = parseChecked(srcMgr, diags);
  if (!module)
    return failure();
  dumpAST(*module, os, &srcMgr);
  return success();
}

OwningOpRef<ModuleOp> torsor::frontend::mlirGen(MLIRContext &ctx,
                                                const Module &module,
                                                MLIRDiagnosticEngine &diags,
                                                FloatDType floatDType) {
  MLIRGenImpl gen(ctx, diags);
  gen.floatDType = floatDType;
  return gen.emitModule(module);
}

//===----------------------------------------------------------------------===//
// Types and small helpers
//===----------------------------------------------------------------------===//

mlir::Type MLIRGenImpl::elementType(DType dtype) {
  // --dtype replaces the compute types f32 and f64, in both directions;
  // the storage types f16 and bf16 stay as written.
  if (floatDType != FloatDType::AsWritten &&
      (dtype == DType::F32 || dtype == DType::F64))
    return floatDType == FloatDType::F64 ? mlir::Type(b.getF64Type())
                                         : mlir::Type(b.getF32Type());
  switch (dtype) {
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::F32:
    return b.getF32Type();
  case DType::F64:
    return b.getF64Type();
  case DType::I32:
    return b.getI32Type();
  case DType::I64:
    return b.getI64Type();
  }
  return b.getF32Type();
}

RankedTensorType MLIRGenImpl::tensorType(const FType &type) {
  SmallVector<int64_t> shape;
  for (const Dim &d : type.shape)
    shape.push_back(d.symbolic ? ShapedType::kDynamic : d.value);
  if (type.isGroup()) {
    shape.push_back(type.group->matrixSize);
    shape.push_back(type.group->matrixSize);
  }
  return RankedTensorType::get(shape, elementType(type.dtype));
}

Value MLIRGenImpl::dimValue(const Dim &dim, Location l) {
  if (!dim.symbolic)
    return arith::ConstantIndexOp::create(b, l, dim.value);
  return symDims.lookup(dim.name);
}

Value MLIRGenImpl::emptyTensor(const FType &type, Location l) {
  SmallVector<Value> dynSizes;
  for (const Dim &d : type.shape)
    if (d.symbolic)
      dynSizes.push_back(symDims.lookup(d.name));
  return tensor::EmptyOp::create(b, l, tensorType(type), dynSizes);
}

Value MLIRGenImpl::floatConst(DType dtype, double v, Location l) {
  auto ft = cast<FloatType>(elementType(dtype));
  return arith::ConstantOp::create(b, l,
                                   checkedFloatAttr(ft, v, l, "the constant"));
}

FloatAttr MLIRGenImpl::checkedFloatAttr(FloatType ft, double value, Location l,
                                        StringRef what) {
  llvm::APFloat converted(value);
  bool losesInfo = false;
  llvm::APFloat::opStatus status = converted.convert(
      ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  if (std::isfinite(value) && (status & llvm::APFloat::opOverflow)) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%g", value);
    mlir::emitError(l) << what << " " << text << " does not fit in " << ft
                       << ", the dtype it is computed in; use a smaller value "
                          "or compile with --dtype=f64";
    hadError = true;
  }
  return b.getFloatAttr(ft, value);
}

bool MLIRGenImpl::checkAttentionConstants(const CallExpr &call,
                                          mlir::Type elt) {
  auto ft = dyn_cast<FloatType>(elt);
  if (!ft)
    return true;
  bool ok = true;
  auto check = [&](StringRef kw, double value, StringRef what) {
    const KeywordArg *arg = call.getKeyword(kw);
    Location l = loc(arg ? arg->value->getLoc() : call.getLoc());
    bool before = hadError;
    hadError = false;
    (void)checkedFloatAttr(ft, value, l, what);
    ok &= !hadError;
    hadError |= before;
    return ok;
  };
  const std::vector<double> &lambda = call.constants.at("lambda");
  for (double v : lambda)
    if (!check("lambda", v, "'lambda' value"))
      return false;
  auto tauIt = call.constants.find("tau");
  if (tauIt == call.constants.end())
    return true;
  const std::vector<double> &tau = tauIt->second;
  // The kernels scale scores by −λ_b/τ_h: that ratio must fit as well.
  size_t perHead = tau.empty() ? 0 : lambda.size() / tau.size();
  for (size_t h = 0; h < tau.size(); ++h) {
    if (!check("tau", tau[h], "'tau' value"))
      return false;
    for (size_t i = 0; i < perHead; ++i)
      if (!check("lambda", lambda[h * perHead + i] / tau[h],
                 "the score weight lambda / tau ="))
        return false;
  }
  return true;
}

/// `torsor.dims`: one entry per dim, a symbol name or a fixed size.
static ArrayAttr dimsAttr(OpBuilder &b, const FType &type) {
  SmallVector<Attribute> dims;
  for (const Dim &d : type.shape)
    dims.push_back(d.symbolic ? Attribute(b.getStringAttr(d.name))
                              : Attribute(b.getI64IntegerAttr(d.value)));
  if (type.isGroup()) {
    dims.push_back(b.getI64IntegerAttr(type.group->matrixSize));
    dims.push_back(b.getI64IntegerAttr(type.group->matrixSize));
  }
  return b.getArrayAttr(dims);
}

Value MLIRGenImpl::addArgument(StringRef name, const FType &type,
                               StringRef kind, SMLoc l) {
  Block &entry = func.getBody().front();
  Value arg = entry.addArgument(tensorType(type), loc(l));
  argTypes.push_back(arg.getType());
  NamedAttrList attrs;
  attrs.set("torsor.name", b.getStringAttr(name));
  attrs.set("torsor.kind", b.getStringAttr(kind));
  attrs.set("torsor.dims", dimsAttr(b, type));
  argAttrs.push_back(attrs);
  // Symbolic dims become SSA values once, read from the first argument
  // that has them; they are placed at the top of the function.
  OpBuilder::InsertionGuard guard(b);
  for (size_t i = 0; i < type.shape.size(); ++i) {
    const Dim &d = type.shape[i];
    if (!d.symbolic || symDims.count(d.name))
      continue;
    if (lastDimOp)
      b.setInsertionPointAfter(lastDimOp);
    else
      b.setInsertionPointToStart(&entry);
    auto dimOp = tensor::DimOp::create(b, arg.getLoc(), arg, i);
    lastDimOp = dimOp;
    symDims[d.name] = dimOp;
  }
  return arg;
}

//===----------------------------------------------------------------------===//
// Module, models and blocks
//===----------------------------------------------------------------------===//

/// Describes declared groups as a module attribute so later tools (and a
/// future generator-based lie group model) can read them.
static DictionaryAttr groupsAttr(OpBuilder &b, const Module &module) {
  SmallVector<NamedAttribute> groups;
  for (const auto &decl : module.groups) {
    const GroupInfo &g = decl->info;
    SmallVector<Attribute> gens, blocks;
    for (size_t i = 0; i < g.generators.size(); ++i)
      gens.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(g.generatorNames[i])),
           b.getNamedAttr("matrix", b.getDenseF64ArrayAttr(g.generators[i]))}));
    for (const NormBlock &nb : g.blocks)
      blocks.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(nb.name)),
           b.getNamedAttr("size", b.getI64IntegerAttr(nb.size))}));
    groups.push_back(b.getNamedAttr(
        g.name,
        b.getDictionaryAttr(
            {b.getNamedAttr("matrix", b.getI64IntegerAttr(g.matrixSize)),
             b.getNamedAttr("generators", b.getArrayAttr(gens)),
             b.getNamedAttr("blocks", b.getArrayAttr(blocks))})));
  }
  return b.getDictionaryAttr(groups);
}

/// Checks that the generators of a declared group are within the range the
/// model computes its elements in (`ft`): the group check, log and
/// distance of a declared group work with the generators' Gram matrix and
/// projections on them, products of two generator-sized numbers and their
/// squares, so each generator's Frobenius norm must lie within [1/R, R],
/// R = 2^31 for f32 and 2^255 for f64 (the runtime's range for Aff2 and
/// Sim3 scales, runtime/src/GroupCheck.cpp). A group with 1e-40 generators
/// in an f32 model would otherwise compile and then refuse every element.
static bool checkGeneratorRange(const GroupInfo &group, mlir::Type elt,
                                Location l, StringRef input) {
  auto ft = dyn_cast<FloatType>(elt);
  if (!ft || group.builtin)
    return true;
  bool f32 = ft.getWidth() <= 32;
  double range = std::ldexp(1.0, f32 ? 31 : 255);
  for (size_t i = 0; i < group.generators.size(); ++i) {
    double scale = 0, sum = 0;
    for (double x : group.generators[i])
      scale = std::fmax(scale, std::fabs(x));
    for (double x : group.generators[i])
      sum += (x / scale) * (x / scale);
    double norm = scale * std::sqrt(sum);
    if (norm >= 1 / range && norm <= range)
      continue;
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format(
        "generator '%s' of group '%s' has norm %.1e, outside the range "
        "[%.1e, %.1e] that %s elements are computed in (products of "
        "generators and their squares must stay normal %s numbers); "
        "rescale the generator (the group stays the same)%s",
        group.generatorNames[i].c_str(), group.name.c_str(), norm, 1 / range,
        range, f32 ? "f32" : "f64", f32 ? "f32" : "f64",
        f32 ? " or compile with --dtype=f64" : "");
    mlir::emitError(l) << "input '" << input << "': " << text;
    return false;
  }
  return true;
}

OwningOpRef<ModuleOp> MLIRGenImpl::emitModule(const Module &module) {
  Location moduleLoc = module.models.empty() ? b.getUnknownLoc()
                                             : loc(module.models.front()->loc);
  OwningOpRef<ModuleOp> mod = ModuleOp::create(moduleLoc);
  if (!module.groups.empty())
    (*mod)->setAttr("torsor.groups", groupsAttr(b, module));
  for (const auto &model : module.models) {
    b.setInsertionPointToEnd(mod->getBody());
    emitModel(*model);
    if (hadError)
      return nullptr;
  }
  if (failed(mlir::verify(*mod)))
    return nullptr;
  return mod;
}

void MLIRGenImpl::emitModel(const ModelDecl &model) {
  func = func::FuncOp::create(b, loc(model.loc), model.name,
                              b.getFunctionType({}, {}));
  Block *entry = func.addEntryBlock();
  argTypes.clear();
  argAttrs.clear();
  symDims.clear();
  instanceCount.clear();
  lastDimOp = nullptr;
  path.clear();
  Env env;
  modelEnv = &env;
  // Inputs first, then model params, so the signature reads like the model.
  for (auto kind : {Stmt::Input, Stmt::Param})
    for (const StmtPtr &stmt : model.body)
      if (stmt->getKind() == kind) {
        auto &decl = llvm::cast<ValueDecl>(*stmt);
        env.values[decl.name] =
            addArgument(decl.name, decl.type,
                        kind == Stmt::Input ? "input" : "param", decl.getLoc());
        if (decl.type.isGroup() &&
            !checkGeneratorRange(*decl.type.group, elementType(decl.type.dtype),
                                 loc(decl.getLoc()), decl.name))
          hadError = true;
        if (decl.type.isGroup()) {
          argAttrs.back().set("torsor.group",
                              b.getStringAttr(decl.type.group->name));
          argAttrs.back().set("torsor.left_invariant",
                              b.getBoolAttr(decl.leftInvariant));
        }
      }
  b.setInsertionPointToEnd(entry);
  SmallVector<Value> results;
  SmallVector<NamedAttrList> resultAttrs;
  for (const StmtPtr &stmt : model.body) {
    auto *bind = llvm::dyn_cast<BindStmt>(stmt.get());
    if (!bind)
      continue;
    Value v = emitExpr(*bind->value, env);
    if (!v)
      return;
    // Sema declares outputs as names too: a later statement may read one
    // (`output pred = ...; output loss = mse(pred, t);`).
    env.values[bind->name] = v;
    bindExtraResults(*bind, env);
    if (bind->getKind() == Stmt::Let)
      continue;
    results.push_back(v);
    NamedAttrList attrs;
    attrs.set("torsor.name", b.getStringAttr(bind->name));
    attrs.set("torsor.dims", dimsAttr(b, bind->value->type));
    if (bind->value->type.isGroup())
      attrs.set("torsor.group", b.getStringAttr(bind->value->type.group->name));
    resultAttrs.push_back(attrs);
  }
  func::ReturnOp::create(b, func.getLoc(), results);
  SmallVector<mlir::Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setType(b.getFunctionType(argTypes, resultTypes));
  for (size_t i = 0; i < argAttrs.size(); ++i)
    func.setArgAttrs(i, argAttrs[i].getDictionary(&ctx));
  for (size_t i = 0; i < resultAttrs.size(); ++i)
    func.setResultAttrs(i, resultAttrs[i].getDictionary(&ctx));
  b.setInsertionPointAfter(func);
}

Value MLIRGenImpl::emitBlockCall(const CallExpr &call, const Env &env) {
  const BlockDecl &block = *call.block;
  SmallVector<Value> args;
  for (const ExprPtr &arg : call.args) {
    args.push_back(emitExpr(*arg, env));
    if (!args.back())
      return nullptr;
  }
  std::string base = call.prefix.empty() ? block.name : call.prefix;
  std::string family = path.empty() ? base : path + "." + base;
  int64_t iterations = call.repeatCount ? call.repeatCount : 1;
  Value result;
  for (int64_t i = 0; i < iterations; ++i) {
    // Each use (and each repeat) is a fresh instance with its own params.
    std::string instance =
        family + "." + std::to_string(instanceCount[family]++);
    std::string savedPath = path;
    path = instance;
    Env local;
    local.parent = modelEnv;
    for (size_t a = 0; a < block.args.size(); ++a)
      local.values[block.args[a].name] = args[a];
    for (const StmtPtr &stmt : block.body) {
      if (auto *decl = llvm::dyn_cast<ValueDecl>(stmt.get())) {
        local.values[decl->name] = addArgument(
            instance + "." + decl->name, decl->type, "param", decl->getLoc());
        continue;
      }
      auto &bind = llvm::cast<BindStmt>(*stmt);
      Value v = emitExpr(*bind.value, local);
      if (!v)
        return nullptr;
      if (bind.getKind() == Stmt::Return)
        result = v;
      else
        local.values[bind.name] = v;
      bindExtraResults(bind, local);
    }
    path = savedPath;
    if (!args.empty())
      args[0] = result;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Value MLIRGenImpl::emitExpr(const Expr &expr, const Env &env) {
  Location l = loc(expr.getLoc());
  switch (expr.getKind()) {
  case Expr::Number:
  case Expr::Var:
    if (expr.type.weak ||
        (llvm::isa<VarExpr>(expr) && llvm::cast<VarExpr>(expr).dim)) {
      Operand op = emitOperand(expr, env);
      auto type = RankedTensorType::get({}, elementType(expr.type.dtype));
      return arith::ConstantOp::create(
          b, l,
          DenseElementsAttr::get(
              type, checkedFloatAttr(cast<FloatType>(type.getElementType()),
                                     op.constant, l, "the constant")));
    }
    return env.lookup(llvm::cast<VarExpr>(expr).name);
  case Expr::Unary: {
    Operand x = emitOperand(*llvm::cast<UnaryExpr>(expr).operand, env);
    if (!x.value && !x.type)
      return nullptr;
    return elementwise(expr.type, {x}, l,
                       [](OpBuilder &nb, Location nl, ArrayRef<Value> v) {
                         return arith::NegFOp::create(nb, nl, v[0]);
                       });
  }
  case Expr::Binary:
    return emitBinary(llvm::cast<BinaryExpr>(expr), env);
  case Expr::Call:
    return emitCall(llvm::cast<CallExpr>(expr), env);
  default:
    mlir::emitError(l) << "internal error: cannot emit this expression";
    hadError = true;
    return nullptr;
  }
}

Value MLIRGenImpl::emitCall(const CallExpr &call, const Env &env) {
  if (call.block)
    return emitBlockCall(call, env);
  // The family comes from the one registry of built-ins (Builtins.def).
  BuiltinKind kind = builtinKind(call.callee, call.group != nullptr);
  if (kind == BuiltinKind::GROUP)
    return emitGroupOp(call, env);
  if (kind == BuiltinKind::LAYER)
    return emitGeoLayer(call, env);
  return emitDense(call, env);
}
