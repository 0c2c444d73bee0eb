//===- RelationalizeAttention.cpp - Standard to relational attention ------===//
//
// A standard block's output depends on its four projections only through
// the per-head products G_QK^h = W_Q^h W_K^hᵀ and G_VO^h = W_V^h W_O^h:
//   score^h = s·(x W_Q^h)(x W_K^h)ᵀ = s·x G_QK^h xᵀ,
//   merge_heads(P^h x W_V^h) W_O = Σ_h P^h x W_V^h W_O^h = Σ_h P^h x G_VO^h,
// which is geo.relational_attention exactly. The pass swaps the block for
// that op and the four weights for the two products, so the GL(d_h) gauge
// of every head is gone from the parameterisation (docs/relational.md).
// The products are new model params: a converted checkpoint supplies them
// (compiler/Analysis/Checkpoint.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/AttentionMatch.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Geo/IR/GeoDialect.h"
#include "dialects/Geo/IR/GeoOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

namespace torsor {
#define GEN_PASS_DEF_GEORELATIONALIZEATTENTION
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Whether `v` is a param argument of `func` (so a checkpoint names it).
bool isModelParam(func::FuncOp func, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &func.getBody().front())
    return false;
  auto kind =
      func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "torsor.kind");
  return kind && kind.getValue() == "param" && !paramName(v).empty();
}

/// Adds model params to one function and remembers which pairs of weights
/// already have their product, so weights shared by several blocks give one
/// new param.
class ParamMaker {
public:
  explicit ParamMaker(func::FuncOp func) : func(func) {
    for (BlockArgument arg : func.getArguments())
      names.insert(paramName(arg));
  }

  /// The [heads, d, d] param holding the per-head product of `a` and `b`
  /// (form "qk" or "vo"), inserted before `a`.
  Value get(Value a, Value b, StringRef form, int64_t heads, int64_t d,
            Location loc) {
    auto key = std::make_pair(a, b);
    if (auto it = made.find(key); it != made.end())
      return it->second;
    MLIRContext *ctx = func.getContext();
    Builder builder(ctx);
    auto type = RankedTensorType::get(
        {heads, d, d}, cast<RankedTensorType>(a.getType()).getElementType());
    std::string name = uniqueName(paramName(a), ("g_" + form).str());
    NamedAttrList attrs;
    attrs.append("torsor.dims", builder.getI64ArrayAttr({heads, d, d}));
    attrs.append("torsor.kind", builder.getStringAttr("param"));
    attrs.append("torsor.name", builder.getStringAttr(name));
    attrs.append(
        "torsor.relational",
        builder.getDictionaryAttr(
            {builder.getNamedAttr("form", builder.getStringAttr(form)),
             builder.getNamedAttr(
                 "from", builder.getStrArrayAttr({paramName(a), paramName(b)})),
             builder.getNamedAttr("heads", builder.getI64IntegerAttr(heads))}));
    unsigned index = cast<BlockArgument>(a).getArgNumber();
    (void)func.insertArgument(index, type, attrs.getDictionary(ctx), loc);
    Value arg = func.getArgument(index);
    made[key] = arg;
    return arg;
  }

private:
  /// `<prefix>g_qk` where prefix is the weight's instance prefix
  /// (`blocks.0.` for `blocks.0.Wq`), made unique in the function.
  std::string uniqueName(const std::string &weight, StringRef base) {
    size_t dot = weight.rfind('.');
    std::string prefix =
        dot == std::string::npos ? "" : weight.substr(0, dot + 1);
    std::string leaf =
        dot == std::string::npos ? weight : weight.substr(dot + 1);
    std::string name = prefix + base.str();
    if (names.contains(name))
      name = prefix + base.str() + "_" + leaf;
    for (int i = 1; names.contains(name); ++i)
      name = prefix + base.str() + "_" + leaf + "_" + std::to_string(i);
    names.insert(name);
    return name;
  }

  func::FuncOp func;
  llvm::StringSet<> names;
  llvm::DenseMap<std::pair<Value, Value>, Value> made;
};

/// Why `block` cannot become geo.relational_attention, or "".
std::string whyNot(func::FuncOp func, const AttentionBlock &block) {
  if (block.xq != block.xk || block.xq != block.xv)
    return "its queries, keys and values read different inputs";
  if (block.dOut != block.d)
    return "its output size " + std::to_string(block.dOut) +
           " differs from its input size " + std::to_string(block.d);
  for (Value w : {block.wq, block.wk, block.wv, block.wo})
    if (!isModelParam(func, w))
      return "one of its projections is not a model param";
  return "";
}

/// Rewrites the standard blocks of one model function.
void relationalize(func::FuncOp func) {
  SmallVector<AttentionBlock> blocks = findAttentionBlocks(func);
  ParamMaker params(func);
  SmallVector<Value> replacedWeights;
  for (const AttentionBlock &block : blocks) {
    if (block.form != AttentionBlock::Form::Standard)
      continue;
    if (std::string reason = whyNot(func, block); !reason.empty()) {
      emitRemark(block.root->getLoc())
          << "attention block left in standard form: " << reason;
      continue;
    }
    Location loc = block.root->getLoc();
    Value gqk = params.get(block.wq, block.wk, "qk", block.heads, block.d, loc);
    Value gvo = params.get(block.wv, block.wo, "vo", block.heads, block.d, loc);
    OpBuilder builder(block.root);
    auto rel = geo::RelationalAttentionOp::create(
        builder, loc, block.root->getResult(0).getType(), block.xq, gqk, gvo,
        builder.getI64IntegerAttr(block.heads),
        builder.getF64FloatAttr(block.scale), UnitAttr());
    block.root->getResult(0).replaceAllUsesWith(rel.getResult());
    replacedWeights.append({block.wq, block.wk, block.wv, block.wo});
  }
  if (replacedWeights.empty())
    return;
  // The old projections, softmax and merge are dead now, unless the model
  // uses them elsewhere (then they stay, and so do their weights).
  IRRewriter rewriter(func.getContext());
  (void)runRegionDCE(rewriter, func.getBody());
  llvm::BitVector erase(func.getNumArguments());
  for (Value w : replacedWeights)
    if (w.use_empty())
      erase.set(cast<BlockArgument>(w).getArgNumber());
  (void)func.eraseArguments(erase);
}

struct GeoRelationalizeAttentionPass
    : torsor::impl::GeoRelationalizeAttentionBase<
          GeoRelationalizeAttentionPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && func.getNumArguments() > 0 &&
          func.getArgAttr(0, "torsor.name"))
        relationalize(func);
  }
};

} // namespace
