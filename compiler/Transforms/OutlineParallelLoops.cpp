//===- OutlineParallelLoops.cpp - Parallel loops into runtime tasks -------===//
//
// Multithreading on the CPU goes through the runtime's thread pool
// (`torsor_parallel_for`, docs/runtime.md), so the compiled code depends on
// nothing but the runtime and the OS. This pass is the first half of that
// (loops lowerings marked independent became scf.parallel before, in
// torsor-parallelize-marked-loops):
// every outermost `scf.parallel` without reductions becomes a call of a
// launcher, `__torsor_launch_<body>(tripCount, captured...)`, and its body
// moves into `<body>(lo, hi, captured...)`, which runs iterations
// [lo, hi) of the first parallel dimension. The second half,
// torsor-lower-parallel-launch, packs the captured values into a context
// struct once everything is in the LLVM dialect, where memref descriptors
// are plain values.
//
// Models repeat themselves (`repeat 6 Layer(x)` unrolls into six copies of
// each layer's loops, and so does its backward), so a body identical to one
// already outlined reuses that one's function and launcher: each distinct
// kernel is lowered, optimized and compiled once, which is most of the
// compile time of deep models (docs/compiler.md, "Where compile time goes").
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SetVector.h"

#include <unordered_map>

namespace torsor {
#define GEN_PASS_DEF_TORSOROUTLINEPARALLELLOOPS
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

/// The outlined bodies of the module so far, by a structural hash, each
/// with its launcher; a new body identical to one of them is dropped and
/// that one's launcher called instead.
class OutlinedBodies {
public:
  /// The launcher of a body equal to `body` (same type, same ops, same
  /// attributes, locations aside), or null when `body` is new; then `body`
  /// and `launcher` are remembered.
  func::FuncOp findOrAdd(func::FuncOp body, func::FuncOp launcher) {
    llvm::hash_code hash = structuralHash(body);
    auto &bucket = seen[static_cast<size_t>(hash)];
    for (auto [known, knownLauncher] : bucket)
      if (known.getFunctionType() == body.getFunctionType() &&
          OperationEquivalence::isRegionEquivalentTo(
              &known.getBody(), &body.getBody(),
              OperationEquivalence::IgnoreLocations))
        return knownLauncher;
    bucket.push_back({body, launcher});
    return nullptr;
  }

private:
  /// Hash of the type and of every nested op (name, attributes, result
  /// types); equal bodies hash equally, so only equal hashes are compared.
  static llvm::hash_code structuralHash(func::FuncOp body) {
    llvm::hash_code hash = hash_value(body.getFunctionType());
    body.getBody().walk([&](Operation *op) {
      hash = llvm::hash_combine(hash,
                                OperationEquivalence::computeHash(
                                    op, OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::IgnoreLocations));
    });
    return hash;
  }

  std::unordered_map<size_t,
                     SmallVector<std::pair<func::FuncOp, func::FuncOp>, 1>>
      seen;
};

/// Moves one outermost scf.parallel into its own function (or reuses an
/// identical one from `bodies`) and replaces it with a launcher call.
void outline(scf::ParallelOp loop, func::FuncOp parent, unsigned index,
             OutlinedBodies &bodies) {
  Location loc = loop.getLoc();
  MLIRContext *context = loop.getContext();

  // Values the body uses from above. Constants are re-materialized inside
  // the outlined function instead of passed through the context.
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(loop.getRegion(), above);
  for (Value bound : llvm::concat<Value>(loop.getLowerBound().drop_front(),
                                         loop.getUpperBound().drop_front(),
                                         loop.getStep().drop_front()))
    above.insert(bound);
  above.insert(loop.getLowerBound().front());
  above.insert(loop.getStep().front());
  SmallVector<Value> captured, constants;
  for (Value value : above) {
    if (matchPattern(value, m_Constant()))
      constants.push_back(value);
    else
      captured.push_back(value);
  }

  // The body function: (lo, hi, captured...) runs k ∈ [lo, hi) of the first
  // dimension, i0 = lb0 + k · step0.
  OpBuilder builder(context);
  builder.setInsertionPointAfter(parent);
  std::string bodyName =
      (parent.getName() + "_parallel" + llvm::Twine(index)).str();
  SmallVector<Type> argTypes = {builder.getIndexType(), builder.getIndexType()};
  for (Value value : captured)
    argTypes.push_back(value.getType());
  auto body = func::FuncOp::create(builder, loc, bodyName,
                                   builder.getFunctionType(argTypes, {}));
  body.setPrivate();
  Block *entry = body.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  IRMapping mapping;
  for (Value constant : constants)
    mapping.map(constant,
                builder.clone(*constant.getDefiningOp())->getResult(0));
  for (auto [value, arg] :
       llvm::zip(captured, entry->getArguments().drop_front(2)))
    mapping.map(value, arg);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  auto outer = scf::ForOp::create(builder, loc, entry->getArgument(0),
                                  entry->getArgument(1), one);
  builder.setInsertionPointToStart(outer.getBody());
  Value iv0 = arith::AddIOp::create(
      builder, loc, mapping.lookup(loop.getLowerBound().front()),
      arith::MulIOp::create(builder, loc, outer.getInductionVar(),
                            mapping.lookup(loop.getStep().front())));
  mapping.map(loop.getInductionVars().front(), iv0);

  Block *source = loop.getBody();
  auto cloneBody = [&](OpBuilder &b) {
    for (Operation &op : source->without_terminator())
      b.clone(op, mapping);
  };
  if (loop.getNumLoops() == 1) {
    cloneBody(builder);
  } else {
    // The remaining dims stay an scf.parallel inside each task.
    auto lookupAll = [&](OperandRange values) {
      return llvm::to_vector(llvm::map_range(
          values.drop_front(), [&](Value v) { return mapping.lookup(v); }));
    };
    auto inner = scf::ParallelOp::create(
        builder, loc, lookupAll(loop.getLowerBound()),
        lookupAll(loop.getUpperBound()), lookupAll(loop.getStep()));
    // getInductionVars() returns a SmallVector by value: keep both alive
    // for the loop (a range-for does not extend temporaries inside its
    // range expression, and ranks above 6 spill to the heap).
    SmallVector<Value> outerIvs = loop.getInductionVars();
    SmallVector<Value> innerIvs = inner.getInductionVars();
    for (auto [from, to] : llvm::zip(llvm::drop_begin(outerIvs), innerIvs))
      mapping.map(from, to);
    OpBuilder innerBuilder = OpBuilder::atBlockBegin(inner.getBody());
    cloneBody(innerBuilder);
  }
  builder.setInsertionPointToEnd(entry);
  func::ReturnOp::create(builder, loc);

  // The launcher: a declaration torsor-lower-parallel-launch replaces.
  builder.setInsertionPointAfter(parent);
  SmallVector<Type> launchTypes = {builder.getIndexType()};
  for (Value value : captured)
    launchTypes.push_back(value.getType());
  auto launcher = func::FuncOp::create(
      builder, loc, (kParallelLauncherPrefix + bodyName).str(),
      builder.getFunctionType(launchTypes, {}));
  launcher.setPrivate();
  if (func::FuncOp known = bodies.findOrAdd(body, launcher)) {
    body.erase();
    launcher.erase();
    launcher = known;
  }

  // Trip count of the first dim: ceil((ub − lb) / step), steps positive.
  builder.setInsertionPoint(loop);
  Value extent = arith::SubIOp::create(
      builder, loc, loop.getUpperBound().front(), loop.getLowerBound().front());
  Value trips =
      arith::CeilDivSIOp::create(builder, loc, extent, loop.getStep().front());
  SmallVector<Value> operands = {trips};
  operands.append(captured);
  func::CallOp::create(builder, loc, launcher, operands);
  loop.erase();
}

struct TorsorOutlineParallelLoops
    : torsor::impl::TorsorOutlineParallelLoopsBase<TorsorOutlineParallelLoops> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> functions(getOperation().getOps<func::FuncOp>());
    OutlinedBodies bodies;
    for (func::FuncOp function : functions) {
      if (function.isExternal())
        continue;
      SmallVector<scf::ParallelOp> loops;
      function.walk([&](scf::ParallelOp loop) {
        // Outermost only, and only without reductions: iterations are then
        // independent by the op's definition.
        if (!loop->getParentOfType<scf::ParallelOp>() &&
            loop.getInitVals().empty())
          loops.push_back(loop);
      });
      for (auto [index, loop] : llvm::enumerate(loops))
        outline(loop, function, index, bodies);
    }
    // Fixed-size stack buffers inside loops (a fused kernel's scratch, one
    // per tile) move to their function's entry block. An alloca inside a
    // loop grows the stack on every iteration until the function returns,
    // which overflows it for long sequences; hoisted, each task invocation
    // (its own frame, so its own thread) reuses one buffer. Valid because
    // an alloca's contents are undefined when it is allocated, so no
    // iteration may read what an earlier one left.
    getOperation().walk([](func::FuncOp function) {
      if (function.isExternal())
        return;
      Block &entry = function.getBody().front();
      SmallVector<memref::AllocaOp> hoist;
      function.walk([&](memref::AllocaOp alloca) {
        if (alloca->getBlock() != &entry && alloca.getDynamicSizes().empty() &&
            alloca.getSymbolOperands().empty() &&
            !alloca->getParentOfType<memref::AllocaScopeOp>())
          hoist.push_back(alloca);
      });
      for (memref::AllocaOp alloca : hoist)
        alloca->moveBefore(&entry, entry.begin());
    });
  }
};
} // namespace
