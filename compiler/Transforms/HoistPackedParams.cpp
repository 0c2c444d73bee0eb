//===- HoistPackedParams.cpp - Pack bf16 weights once per model load ------===//
//
// torsor-hoist-packed-params: torsor-tile-dense packs the right operand of
// a product: into column panels for the f32 kernel (the strategy's
// pack_panels), into VNNI pairs under `--compute=bf16` (DenseBF16.h); the
// op that writes the packed copy carries `torsor.packed_operand`.
// Where that operand is computed from params alone (`x @ W`, `x @
// transpose(W)`, attention's projections), repacking it on every call is
// wasted work: this pass moves the packing (from the wrapper, or from the
// model function the wrapper calls once) into a function of its own,
//
//   torsor_prepare_model(params..., memref<?xi8> packed)
//
// which writes each packed operand at a 64-byte aligned offset of one
// model-owned byte buffer, and makes the model wrapper read the packed
// copies from that buffer (a new last argument) instead. The runtime
// allocates the buffer once per load (its size is the module attribute
// torsor.prepared_bytes, which torsorc writes into the manifest's
// "prepare") and calls torsor_prepare before the first run and again
// after any param is bound or loaded (docs/runtime.md). Operands that read
// an input (attention's K and V) stay packed per call.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/DenseBF16.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORHOISTPACKEDPARAMS
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// Alignment of each packed operand in the buffer (a cache line; the AMX
/// and AVX512-BF16 kernels load 64-byte rows).
constexpr int64_t kAlignment = 64;

/// A function holding packed operands: the wrapper itself, or the model
/// function the wrapper calls once (the inliner may leave it), with which
/// of its arguments are params (the index of the param among the
/// wrapper's params).
struct Site {
  func::FuncOp func;
  func::CallOp call; ///< null for the wrapper
  DenseMap<Value, int64_t> params;
};

/// The ops `packed` is computed from, in topological order, when they read
/// nothing but the site's params (the wrapper: through
/// bufferization.to_tensor of its param arguments) and are otherwise free
/// of side effects; none when something else is read.
std::optional<SetVector<Operation *>> paramSlice(Operation *packed,
                                                 const Site &site) {
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.omitUsesFromAbove = false;
  options.inclusive = true;
  if (failed(getBackwardSlice(packed, &slice, options)))
    return std::nullopt;
  func::FuncOp func = site.func;
  Block *top = &func.getBody().front();
  for (Operation *op : slice) {
    if (op->getBlock() != top)
      return std::nullopt;
    if (auto toTensor = dyn_cast<bufferization::ToTensorOp>(op)) {
      if (!site.params.contains(toTensor.getBuffer()))
        return std::nullopt;
      continue;
    }
    if (!isMemoryEffectFree(op))
      return std::nullopt;
    // Values used inside the op (and its regions) come from the slice, are
    // params, or are defined inside the op.
    bool closed = true;
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands()) {
        if (isa<BlockArgument>(v)) {
          if (cast<BlockArgument>(v).getOwner() == top &&
              !site.params.contains(v))
            closed = false;
          continue;
        }
        Operation *def = v.getDefiningOp();
        if (!slice.contains(def) && !op->isAncestor(def))
          closed = false;
      }
    });
    if (!closed)
      return std::nullopt;
  }
  return slice;
}

/// The wrapper, and the function it calls once with params, if any.
SmallVector<Site> findSites(ModuleOp module, func::FuncOp wrapper,
                            int64_t begin, int64_t end) {
  SmallVector<Site> sites;
  Site own;
  own.func = wrapper;
  for (int64_t i = begin; i < end; ++i)
    own.params[wrapper.getArgument(i)] = i - begin;
  sites.push_back(own);
  wrapper.walk([&](func::CallOp call) {
    if (call->getBlock() != &wrapper.getBody().front())
      return;
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal() || !callee.isPrivate())
      return;
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(callee, module);
    if (!uses || !llvm::hasSingleElement(*uses))
      return;
    Site site;
    site.func = callee;
    site.call = call;
    for (auto [i, operand] : llvm::enumerate(call.getOperands())) {
      auto toTensor = operand.getDefiningOp<bufferization::ToTensorOp>();
      if (!toTensor)
        continue;
      auto arg = dyn_cast<BlockArgument>(toTensor.getBuffer());
      if (arg && arg.getOwner() == &wrapper.getBody().front() &&
          arg.getArgNumber() >= begin && arg.getArgNumber() < end)
        site.params[callee.getArgument(i)] = arg.getArgNumber() - begin;
    }
    sites.push_back(std::move(site));
  });
  return sites;
}

struct HoistPackedParams
    : torsor::impl::TorsorHoistPackedParamsBase<HoistPackedParams> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto wrapper = module.lookupSymbol<func::FuncOp>(kModelWrapperName);
    if (!wrapper || wrapper.isExternal())
      return;
    auto range = wrapper->getAttrOfType<DenseI64ArrayAttr>(kParamArgsAttrName);
    if (!range || range.size() != 2 || range[0] >= range[1])
      return;
    if (module.lookupSymbol(kPrepareWrapperName)) {
      module.emitError() << "the symbol '" << kPrepareWrapperName
                         << "' is reserved for the params' prepare function";
      return signalPassFailure();
    }
    int64_t begin = range[0], end = range[1];

    // The packed operands that read params only, with static shapes.
    struct Hoisted {
      unsigned site;
      Operation *packed;
      SetVector<Operation *> slice;
    };
    SmallVector<Site> sites = findSites(module, wrapper, begin, end);
    SmallVector<Hoisted> hoisted;
    for (unsigned index = 0; index < sites.size(); ++index)
      sites[index].func.walk([&](Operation *op) {
        if (!op->hasAttr(kPackedOperandAttr) || op->getNumResults() != 1)
          return;
        auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
        if (!type || !type.hasStaticShape())
          return;
        if (auto slice = paramSlice(op, sites[index]))
          hoisted.push_back({index, op, std::move(*slice)});
      });
    if (hoisted.empty())
      return;

    MLIRContext *ctx = &getContext();
    Location loc = wrapper.getLoc();
    auto bytesType =
        MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8));
    // prepare(params..., packed): the params' types as the wrapper has them.
    SmallVector<Type> prepareArgs;
    for (int64_t i = begin; i < end; ++i)
      prepareArgs.push_back(wrapper.getArgument(i).getType());
    prepareArgs.push_back(bytesType);
    OpBuilder b(ctx);
    b.setInsertionPointAfter(wrapper);
    auto prepare = func::FuncOp::create(b, loc, kPrepareWrapperName,
                                        b.getFunctionType(prepareArgs, {}));
    prepare->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    if (Attribute strategy = wrapper->getAttr(strategy::kStrategyAttrName))
      prepare->setAttr(strategy::kStrategyAttrName, strategy);
    Block *prepareBody = prepare.addEntryBlock();
    Value prepareBytes = prepareBody->getArguments().back();
    b.setInsertionPointToStart(prepareBody);
    // The params as tensors (what a called model function receives).
    SmallVector<Value> paramTensors;
    for (int64_t i = begin; i < end; ++i)
      paramTensors.push_back(bufferization::ToTensorOp::create(
          b, loc,
          memref::getTensorTypeFromMemRefType(wrapper.getArgument(i).getType()),
          prepareBody->getArgument(i - begin), /*restrict=*/true,
          /*writable=*/false));

    // The model reads them from a new last argument.
    unsigned bytesArg = wrapper.getNumArguments();
    if (failed(wrapper.insertArgument(bytesArg, bytesType, {}, loc)))
      return signalPassFailure();
    Value modelBytes = wrapper.getArgument(bytesArg);
    OpBuilder mb(ctx);
    mb.setInsertionPointToStart(&wrapper.getBody().front());

    // Per called site, the packed copies it receives as new arguments.
    DenseMap<unsigned, SmallVector<Value>> extraOperands;
    int64_t offset = 0;
    for (Hoisted &h : hoisted) {
      Site &site = sites[h.site];
      IRMapping map;
      for (auto [arg, index] : site.params)
        map.map(arg, site.call ? paramTensors[index]
                               : prepareBody->getArgument(index));
      for (Operation *op : h.slice)
        b.clone(*op, map);
      auto type = cast<RankedTensorType>(h.packed->getResult(0).getType());
      auto viewType = MemRefType::get(type.getShape(), type.getElementType());
      int64_t bytes =
          type.getNumElements() * (type.getElementTypeBitWidth() / 8);
      // prepare: write the packed operand at its offset.
      Value at = arith::ConstantIndexOp::create(b, loc, offset);
      Value view = memref::ViewOp::create(b, loc, viewType, prepareBytes, at,
                                          ValueRange{});
      auto write = bufferization::MaterializeInDestinationOp::create(
          b, loc, map.lookup(h.packed->getResult(0)), view);
      write.setRestrict(true);
      write.setWritable(true);
      // model: read it there.
      Value modelAt = arith::ConstantIndexOp::create(mb, loc, offset);
      Value modelView = memref::ViewOp::create(mb, loc, viewType, modelBytes,
                                               modelAt, ValueRange{});
      Value copy = bufferization::ToTensorOp::create(
          mb, loc, type, modelView, /*restrict=*/true, /*writable=*/false);
      if (site.call) {
        // Passed to the called function as a new argument.
        unsigned arg = site.func.getNumArguments();
        if (failed(site.func.insertArgument(arg, type, {}, loc)))
          return signalPassFailure();
        extraOperands[h.site].push_back(copy);
        copy = site.func.getArgument(arg);
      }
      h.packed->getResult(0).replaceAllUsesWith(copy);
      offset += (bytes + kAlignment - 1) / kAlignment * kAlignment;
    }
    func::ReturnOp::create(b, loc);
    for (auto &[index, extra] : extraOperands) {
      func::CallOp call = sites[index].call;
      SmallVector<Value> operands(call.getOperands());
      operands.append(extra);
      OpBuilder cb(call);
      auto replacement =
          func::CallOp::create(cb, call.getLoc(), sites[index].func, operands);
      call->replaceAllUsesWith(replacement->getResults());
      call->erase();
    }
    // What the model no longer uses of the packing (slices may share ops).
    SetVector<Operation *> sliced;
    for (Hoisted &h : hoisted)
      sliced.insert(h.slice.begin(), h.slice.end());
    SmallVector<Operation *> dead = sliced.takeVector();
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation *&op : dead) {
        if (!op || !op->use_empty() || isa<bufferization::ToTensorOp>(op))
          continue;
        op->erase();
        op = nullptr;
        erased = true;
      }
    }
    module->setAttr(kPreparedBytesAttrName, b.getI64IntegerAttr(offset));
  }
};

} // namespace
