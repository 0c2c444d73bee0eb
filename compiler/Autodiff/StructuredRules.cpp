//===- StructuredRules.cpp - VJPs of linalg and tensor ops ----------------===//
//
// One rule covers every linalg structured op the frontend emits (generic,
// fill, transpose, broadcast, and the contraction generics of batched
// `@`): for operand i with indexing map M_i, the cotangent is a new
// linalg.generic over the same iteration space whose output is indexed by
// M_i — loops M_i does not use become reductions, which is exactly the sum
// over broadcast dims — and whose body is the reverse sweep of the forward
// body (ScalarRules.cpp). Reductions must be additive or max/min (what
// sums, norms and softmax are); their accumulator is bound to the final
// value, so max sends the cotangent to the arg-max.
//
// linalg.matmul gets its own rule (dA = dC·Bᵀ, dB = Aᵀ·dC as named
// matmuls) so the backward keeps using the tiled dense kernels.
//
// tensor reshapes, slices and concat are linear: each is a few lines.
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/VJP.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace torsor::autodiff;

using Cots = ArrayRef<Value>;
using Grads = SmallVectorImpl<Value>;

/// How result k of a structured op combines its accumulator.
enum class Combine { None, Add, Extremum };

/// Classifies the yield of output `k`: the accumulator (out block arg) is
/// either unused, or used once by add/max/min with the other operand free
/// of it. Anything else (products, nonlinear accumulators) has no rule.
static FailureOr<Combine> classifyOutput(linalg::LinalgOp op, unsigned k) {
  Block *body = op.getBlock();
  BlockArgument acc = body->getArgument(op.getNumDpsInputs() + k);
  if (acc.use_empty())
    return Combine::None;
  Operation *yield = body->getTerminator();
  Operation *def = yield->getOperand(k).getDefiningOp();
  if (!def || !acc.hasOneUse() || acc.getUses().begin()->getOwner() != def)
    return failure();
  if (isa<arith::AddFOp>(def))
    return Combine::Add;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
          arith::MinNumFOp>(def))
    return Combine::Extremum;
  return failure();
}

/// Whether `v` is computed from constants and integers alone (1/N from a
/// symbolic dim, say): no cotangent can reach the model's arguments
/// through it.
static bool isInactive(Value v, unsigned depth = 0) {
  if (matchPattern(v, m_Constant()))
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || def->getNumRegions() || depth > 8)
    return false;
  return llvm::all_of(def->getOperands(), [&](Value o) {
    return !isDifferentiable(o) || isInactive(o, depth + 1);
  });
}

/// The cotangents of tensors a linalg body gathers from (tensor.extract of
/// a captured tensor, as the Plücker pair tables do): a serial loop nest
/// over the iteration space that replays the body's reverse sweep at each
/// point and adds the extracted elements' cotangents into place.
static LogicalResult scatterGathered(OpBuilder &b, linalg::LinalgOp op,
                                     Cots cots, ArrayRef<Value> accValues,
                                     ArrayRef<Value> gathered) {
  Operation *raw = op;
  Location loc = raw->getLoc();
  Block *body = op.getBlock();
  unsigned numInputs = op.getNumDpsInputs();
  unsigned numInits = op.getNumDpsInits();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<Value> lbs, ubs, steps;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  for (Range range : op.createLoopRanges(b, loc)) {
    lbs.push_back(zero);
    ubs.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    steps.push_back(one);
  }
  SmallVector<Value> inits;
  for (Value t : gathered)
    inits.push_back(zerosLike(b, loc, t));
  LogicalResult status = success();
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, inits,
      [&](OpBuilder &nb, Location nloc, ValueRange ivs,
          ValueRange acc) -> scf::ValueVector {
        auto at = [&](Value tensor, AffineMap map) -> Value {
          if (!isa<RankedTensorType>(tensor.getType()))
            return tensor;
          SmallVector<Value> idx;
          for (AffineExpr e : map.getResults())
            idx.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
          return tensor::ExtractOp::create(nb, nloc, tensor, idx);
        };
        IRMapping mapping;
        for (unsigned j = 0; j < numInputs; ++j)
          mapping.map(body->getArgument(j), at(raw->getOperand(j), maps[j]));
        for (unsigned k = 0; k < numInits; ++k)
          mapping.map(body->getArgument(numInputs + k),
                      at(accValues[k], maps[numInputs + k]));
        SmallVector<Operation *> cloned;
        SmallVector<tensor::ExtractOp> leaves;
        for (Operation &inner : body->without_terminator()) {
          if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
            mapping.map(index.getResult(), ivs[index.getDim()]);
            continue;
          }
          Operation *copy = nb.clone(inner, mapping);
          auto extract = dyn_cast<tensor::ExtractOp>(copy);
          if (extract && llvm::is_contained(gathered, extract.getTensor()))
            leaves.push_back(extract); // a leaf of the sweep
          else
            cloned.push_back(copy);
        }
        DenseMap<Value, Value> inner;
        Operation *yield = body->getTerminator();
        for (unsigned k = 0; k < numInits; ++k) {
          Value v = mapping.lookupOrDefault(yield->getOperand(k));
          inner[v] = addValues(nb, nloc, inner.lookup(v),
                               at(cots[k], maps[numInputs + k]));
        }
        if (failed(backpropagate(nb, cloned, inner, getVJPRegistry())))
          status = failure();
        SmallVector<Value> next(acc.begin(), acc.end());
        for (tensor::ExtractOp leaf : leaves) {
          Value c = inner.lookup(leaf.getResult());
          if (!c)
            continue;
          unsigned t =
              llvm::find(gathered, leaf.getTensor()) - gathered.begin();
          Value old =
              tensor::ExtractOp::create(nb, nloc, next[t], leaf.getIndices());
          Value sum = arith::AddFOp::create(nb, nloc, old, c);
          next[t] = tensor::InsertOp::create(nb, nloc, sum, next[t],
                                             leaf.getIndices());
        }
        return next;
      });
  if (failed(status))
    return failure();
  for (auto [t, result] : llvm::zip(gathered, nest.results))
    addCapturedCotangent(t, result);
  return success();
}

/// The structured-op rule (see the file comment).
static LogicalResult structuredVJP(OpBuilder &b, Operation *raw, Cots cots,
                                   Grads &grads) {
  auto op = cast<linalg::LinalgOp>(raw);
  Location loc = raw->getLoc();
  if (!op.hasPureTensorSemantics())
    return raw->emitError("gradient of a structured op needs tensor operands");
  Block *body = op.getBlock();
  unsigned numInputs = op.getNumDpsInputs();
  unsigned numInits = op.getNumDpsInits();
  bool hasReduction = op.getNumReductionLoops() > 0;
  SmallVector<Combine> combine;
  for (unsigned k = 0; k < numInits; ++k) {
    // Elementwise ops may read their init any way they like: it is just
    // one more operand, bound below to the init's elements.
    if (!hasReduction) {
      bool read = !body->getArgument(numInputs + k).use_empty();
      combine.push_back(read ? Combine::Add : Combine::None);
      continue;
    }
    FailureOr<Combine> c = classifyOutput(op, k);
    if (failed(c))
      return raw->emitError("no gradient for this reduction: only sums "
                            "and max/min reductions are differentiable");
    combine.push_back(*c);
  }
  // Values the body reads from outside must be constants, or tensors it
  // gathers from with tensor.extract (their cotangent is a scatter-add,
  // built below).
  SetVector<Value> gathered;
  for (Operation &inner : body->without_terminator())
    for (Value v : inner.getOperands()) {
      if (v.getParentBlock() == body || !isDifferentiable(v) || isInactive(v))
        continue;
      if (isa<tensor::ExtractOp>(inner) && v == inner.getOperand(0)) {
        gathered.insert(v);
        continue;
      }
      return inner.emitError("no gradient for a linalg body that reads a "
                             "float value defined outside it");
    }

  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned numLoops = op.getNumLoops();
  // What the accumulator stands for while differentiating: the init for
  // elementwise updates, the final value for reductions (max/min).
  SmallVector<Value> accValues;
  for (unsigned k = 0; k < numInits; ++k)
    accValues.push_back(hasReduction ? raw->getResult(k)
                                     : op.getDpsInitOperand(k)->get());

  for (unsigned i = 0; i < numInputs + numInits; ++i) {
    Value operand = raw->getOperand(i);
    if (!isDifferentiable(operand) || matchPattern(operand, m_Constant()))
      continue;
    bool isInit = i >= numInputs;
    if (isInit) {
      unsigned k = i - numInputs;
      if (combine[k] == Combine::None)
        continue; // overwritten
      if (hasReduction) {
        // Sum: the init is added once. Max/min inits are ±inf fills.
        if (combine[k] == Combine::Add)
          grads[i] = cots[k];
        continue;
      }
    }
    AffineMap map = maps[i];
    if (!map.isProjectedPermutation())
      return raw->emitError("no gradient through an indexing map that is "
                            "not a projected permutation");
    auto tensorType = dyn_cast<RankedTensorType>(operand.getType());
    Type elem = getElementTypeOrSelf(operand.getType());
    Value init =
        tensorType
            ? zerosLike(b, loc, operand)
            : linalg::FillOp::create(
                  b, loc, floatConstant(b, loc, elem, 0.0),
                  tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, elem)
                      .getResult())
                  .getResult(0);
    SmallVector<utils::IteratorType> iterators(numLoops,
                                               utils::IteratorType::reduction);
    for (AffineExpr e : map.getResults())
      iterators[cast<AffineDimExpr>(e).getPosition()] =
          utils::IteratorType::parallel;
    SmallVector<Value> ins;
    SmallVector<AffineMap> insMaps;
    for (unsigned j = 0; j < numInputs; ++j) {
      ins.push_back(raw->getOperand(j));
      insMaps.push_back(maps[j]);
    }
    for (unsigned k = 0; k < numInits; ++k) {
      ins.push_back(accValues[k]);
      insMaps.push_back(maps[numInputs + k]);
    }
    for (unsigned k = 0; k < numInits; ++k) {
      ins.push_back(cots[k]);
      insMaps.push_back(maps[numInputs + k]);
    }
    insMaps.push_back(map);
    LogicalResult status = success();
    auto generic = linalg::GenericOp::create(
        b, loc, init.getType(), ins, init, insMaps, iterators,
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          IRMapping mapping;
          for (unsigned j = 0; j < numInputs + numInits; ++j)
            mapping.map(body->getArgument(j), args[j]);
          SmallVector<Operation *> cloned;
          for (Operation &inner : body->without_terminator())
            cloned.push_back(nb.clone(inner, mapping));
          DenseMap<Value, Value> inner;
          Operation *yield = body->getTerminator();
          for (unsigned k = 0; k < numInits; ++k) {
            Value v = mapping.lookupOrDefault(yield->getOperand(k));
            inner[v] = addValues(nb, nloc, inner.lookup(v),
                                 args[numInputs + numInits + k]);
          }
          if (failed(backpropagate(nb, cloned, inner, getVJPRegistry())))
            status = failure();
          Value acc = args.back();
          Value contribution = inner.lookup(args[i]);
          if (contribution)
            acc = arith::AddFOp::create(nb, nloc, acc, contribution);
          linalg::YieldOp::create(nb, nloc, acc);
        });
    if (failed(status))
      return failure();
    Value grad = generic.getResult(0);
    if (!tensorType)
      grad = tensor::ExtractOp::create(b, loc, grad, ValueRange{});
    grads[i] = grad;
  }
  if (!gathered.empty() &&
      failed(scatterGathered(b, op, cots, accValues, gathered.getArrayRef())))
    return failure();
  return success();
}

/// Transposes a 2-D tensor (linalg.transpose into a fresh tensor).
static Value transpose2D(OpBuilder &b, Location loc, Value v) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  std::swap(sizes[0], sizes[1]);
  Value init = tensor::EmptyOp::create(
      b, loc, sizes, cast<RankedTensorType>(v.getType()).getElementType());
  return linalg::TransposeOp::create(b, loc, v, init, ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

/// C = A·B (+ C0): dA = dC·Bᵀ, dB = Aᵀ·dC, dC0 = dC, as named matmuls.
static LogicalResult matmulVJP(OpBuilder &b, Operation *raw, Cots cots,
                               Grads &grads) {
  auto op = cast<linalg::MatmulOp>(raw);
  if (!op.hasPureTensorSemantics() ||
      op.getIndexingMapsArray() !=
          linalg::MatmulOp::getDefaultIndexingMaps(b.getContext()))
    return structuredVJP(b, raw, cots, grads);
  Location loc = raw->getLoc();
  Value a = raw->getOperand(0), bm = raw->getOperand(1), dc = cots[0];
  auto product = [&](Value x, Value y, Value like) {
    return linalg::MatmulOp::create(b, loc, ValueRange{x, y},
                                    ValueRange{zerosLike(b, loc, like)})
        .getResult(0);
  };
  if (isDifferentiable(a) && !matchPattern(a, m_Constant()))
    grads[0] = product(dc, transpose2D(b, loc, bm), a);
  if (isDifferentiable(bm) && !matchPattern(bm, m_Constant()))
    grads[1] = product(transpose2D(b, loc, a), dc, bm);
  grads[2] = dc;
  return success();
}

/// Registers the linalg and tensor rules (called by registerCoreVJPRules).
void torsor::autodiff::registerStructuredVJPRules(VJPRegistry &r) {
  for (StringRef name :
       {"linalg.generic", "linalg.fill", "linalg.transpose", "linalg.broadcast",
        "linalg.batch_matmul", "linalg.map", "linalg.reduce", "linalg.add",
        "linalg.sub", "linalg.mul", "linalg.div", "linalg.exp", "linalg.copy"})
    r.add(name, {structuredVJP});
  r.add("linalg.matmul", {matmulVJP});

  // Reshapes: the cotangent takes the inverse reshape.
  r.add("tensor.expand_shape",
        {[](OpBuilder &b, Operation *raw, Cots c, Grads &g) -> LogicalResult {
          auto op = cast<tensor::ExpandShapeOp>(raw);
          g[0] = tensor::CollapseShapeOp::create(b, op.getLoc(),
                                                 op.getSrcType(), c[0],
                                                 op.getReassociationIndices());
          return success();
        }});
  r.add("tensor.collapse_shape",
        {[](OpBuilder &b, Operation *raw, Cots c, Grads &g) -> LogicalResult {
          auto op = cast<tensor::CollapseShapeOp>(raw);
          g[0] = tensor::ExpandShapeOp::create(
              b, op.getLoc(), op.getSrcType(), c[0],
              op.getReassociationIndices(),
              tensor::getMixedSizes(b, op.getLoc(), op.getSrc()));
          return success();
        }});
  r.add("tensor.cast", {[](OpBuilder &b, Operation *raw, Cots c, Grads &g) {
          g[0] = tensor::CastOp::create(b, raw->getLoc(),
                                        raw->getOperand(0).getType(), c[0]);
          return success();
        }});
  // Slices: extract ↔ insert into zeros.
  r.add("tensor.extract_slice",
        {[](OpBuilder &b, Operation *raw, Cots c, Grads &g) -> LogicalResult {
          auto op = cast<tensor::ExtractSliceOp>(raw);
          Location loc = op.getLoc();
          if (op.getSourceType().getRank() != op.getResultType().getRank())
            return op.emitError("no gradient for a rank-reducing slice");
          g[0] = tensor::InsertSliceOp::create(
              b, loc, c[0], zerosLike(b, loc, op.getSource()),
              op.getMixedOffsets(), op.getMixedSizes(), op.getMixedStrides());
          return success();
        }});
  r.add("tensor.insert_slice",
        {[](OpBuilder &b, Operation *raw, Cots c, Grads &g) -> LogicalResult {
          auto op = cast<tensor::InsertSliceOp>(raw);
          Location loc = op.getLoc();
          if (op.getSourceType().getRank() != op.getDestType().getRank())
            return op.emitError("no gradient for a rank-expanding slice");
          g[0] = tensor::ExtractSliceOp::create(
              b, loc, op.getSourceType(), c[0], op.getMixedOffsets(),
              op.getMixedSizes(), op.getMixedStrides());
          g[1] = tensor::InsertSliceOp::create(
              b, loc, zerosLike(b, loc, op.getSource()), c[0],
              op.getMixedOffsets(), op.getMixedSizes(), op.getMixedStrides());
          return success();
        }});
  r.add("tensor.extract",
        {[](OpBuilder &b, Operation *raw, Cots c, Grads &g) -> LogicalResult {
          auto op = cast<tensor::ExtractOp>(raw);
          Location loc = op.getLoc();
          g[0] = tensor::InsertOp::create(
              b, loc, c[0], zerosLike(b, loc, op.getTensor()), op.getIndices());
          return success();
        }});
  // concat: each operand gets its slice of the cotangent.
  r.add("tensor.concat",
        {[](OpBuilder &b, Operation *raw, Cots c, Grads &g) -> LogicalResult {
          auto op = cast<tensor::ConcatOp>(raw);
          Location loc = op.getLoc();
          int64_t dim = op.getDim();
          int64_t offset = 0;
          for (auto [i, input] : llvm::enumerate(op.getInputs())) {
            auto type = cast<RankedTensorType>(input.getType());
            if (type.isDynamicDim(dim))
              return op.emitError("no gradient for concat along a dynamic "
                                  "dim");
            unsigned rank = type.getRank();
            SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
            offsets[dim] = b.getIndexAttr(offset);
            SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
            g[i] = tensor::ExtractSliceOp::create(
                b, loc, type, c[0], offsets,
                tensor::getMixedSizes(b, loc, input), strides);
            offset += type.getDimSize(dim);
          }
          return success();
        }});
}
