//===- LieToArith.cpp - Lower lie ops to scalar loops ---------------------===//
//
// Every lie op is element-wise over its batch dims, so every lowering has the
// same shape: a loop nest over the batch dims carrying the result tensor; in
// the body, extract one element's scalars from each operand, let the group
// model build the closed form, and insert the result scalars. Only the
// operand/result trailing shapes and the model builder differ per op.
//
// The loops are scf.for on tensors; one-shot bufferization turns the
// extract/insert chains into in-place loads and stores with no per-element
// allocation. Vectorization and fusion are later passes' business.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LieToArith/LieToArith.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Transforms/LoopAttributes.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace torsor {
#define GEN_PASS_DEF_CONVERTLIETOARITH
#include "compiler/Conversion/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;
using namespace torsor::lie;

namespace {

/// Marks the batch loops of an element-wise op as parallel: iteration i
/// reads and writes only element i of every operand, so after
/// bufferization torsor-outline-parallel-loops may run them as tasks.
void markParallel(scf::LoopNest &nest) {
  for (scf::ForOp loop : nest.loops)
    loop->setAttr(kParallelLoopAttr, UnitAttr::get(loop.getContext()));
}

} // namespace

Value torsor::buildElementwiseLoops(OpBuilder &rewriter, Location loc,
                                    ArrayRef<ElementOperand> operands,
                                    RankedTensorType resultType,
                                    unsigned resultTrailing, ElementBody body) {
  auto floatType = cast<FloatType>(resultType.getElementType());
  unsigned batchRank = resultType.getRank() - resultTrailing;
  Value shapeSource = operands.front().value;

  // Batch extents come from the first operand; the verifier made all batch
  // shapes equal, so any operand would do.
  SmallVector<Value> lbs, ubs, steps, dynamicSizes;
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  for (unsigned d = 0; d < batchRank; ++d) {
    Value extent = tensor::DimOp::create(rewriter, loc, shapeSource, d);
    lbs.push_back(zero);
    ubs.push_back(extent);
    steps.push_back(one);
    if (resultType.isDynamicDim(d))
      dynamicSizes.push_back(extent);
  }
  Value init = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(),
                                       floatType, dynamicSizes);

  scf::LoopNest nest = scf::buildLoopNest(
      rewriter, loc, lbs, ubs, steps, ValueRange{init},
      [&](OpBuilder &nested, Location loc, ValueRange ivs,
          ValueRange iterArgs) -> scf::ValueVector {
        ImplicitLocOpBuilder b(loc, nested);
        ScalarBuilder m(b, floatType);
        auto index = [&](int64_t i) -> Value {
          return arith::ConstantIndexOp::create(b, i);
        };

        // Extract each operand's element, row-major over its trailing dims.
        SmallVector<Scalars> scalars;
        for (const ElementOperand &operand : operands) {
          auto type = cast<RankedTensorType>(operand.value.getType());
          ArrayRef<int64_t> element =
              type.getShape().take_back(operand.trailing);
          int64_t count = 1;
          for (int64_t size : element)
            count *= size;
          Scalars values;
          for (int64_t flat = 0; flat < count; ++flat) {
            SmallVector<Value> indices(ivs.begin(), ivs.end());
            int64_t rest = flat;
            SmallVector<Value> inner(operand.trailing);
            for (int d = operand.trailing - 1; d >= 0; --d) {
              inner[d] = index(rest % element[d]);
              rest /= element[d];
            }
            indices.append(inner);
            values.push_back(
                tensor::ExtractOp::create(b, operand.value, indices));
          }
          scalars.push_back(std::move(values));
        }

        Scalars results = body(m, scalars);

        // Insert the result scalars, row-major over the result's element.
        ArrayRef<int64_t> element =
            resultType.getShape().take_back(resultTrailing);
        Value acc = iterArgs.front();
        for (auto [flat, value] : llvm::enumerate(results)) {
          SmallVector<Value> indices(ivs.begin(), ivs.end());
          int64_t rest = flat;
          SmallVector<Value> inner(resultTrailing);
          for (int d = resultTrailing - 1; d >= 0; --d) {
            inner[d] = index(rest % element[d]);
            rest /= element[d];
          }
          indices.append(inner);
          acc = tensor::InsertOp::create(b, value, acc, indices);
        }
        return {acc};
      });
  markParallel(nest);
  return nest.results.front();
}

namespace {

/// Replaces `op` (one result of type `resultType`, `resultTrailing` element
/// dims) with a loop nest over the batch dims running `body` per element.
void lowerElementwise(Operation *op, PatternRewriter &rewriter,
                      ArrayRef<ElementOperand> operands,
                      RankedTensorType resultType, unsigned resultTrailing,
                      ElementBody body) {
  rewriter.replaceOp(op,
                     buildElementwiseLoops(rewriter, op->getLoc(), operands,
                                           resultType, resultTrailing, body));
}

struct LowerIdentity : OpRewritePattern<IdentityOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IdentityOp op,
                                PatternRewriter &rewriter) const override {
    // A constant n×n identity broadcast over the batch dims.
    RankedTensorType type = op.getType();
    SmallVector<double> id = op.getGroup().getModel().getIdentity();
    Location loc = op.getLoc();
    auto floatType = cast<FloatType>(type.getElementType());
    unsigned batchRank = type.getRank() - 2;
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         floatType, op.getDynamicSizes());
    SmallVector<Value> lbs, ubs, steps;
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    for (unsigned d = 0; d < batchRank; ++d) {
      lbs.push_back(zero);
      ubs.push_back(tensor::DimOp::create(rewriter, loc, init, d));
      steps.push_back(one);
    }
    int64_t n = type.getDimSize(type.getRank() - 1);
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{init},
        [&](OpBuilder &b, Location loc, ValueRange ivs,
            ValueRange iterArgs) -> scf::ValueVector {
          Value acc = iterArgs.front();
          for (int64_t i = 0; i < n * n; ++i) {
            SmallVector<Value> indices(ivs.begin(), ivs.end());
            indices.push_back(arith::ConstantIndexOp::create(b, loc, i / n));
            indices.push_back(arith::ConstantIndexOp::create(b, loc, i % n));
            Value value = arith::ConstantOp::create(
                b, loc, b.getFloatAttr(floatType, id[i]));
            acc = tensor::InsertOp::create(b, loc, value, acc, indices);
          }
          return {acc};
        });
    markParallel(nest);
    rewriter.replaceOp(op, nest.results.front());
    return success();
  }
};

struct LowerCompose : OpRewritePattern<ComposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ComposeOp op,
                                PatternRewriter &rewriter) const override {
    const GroupModel &model = op.getGroup().getModel();
    lowerElementwise(op, rewriter, {{op.getLhs(), 2}, {op.getRhs(), 2}},
                     op.getType(), 2,
                     [&](ScalarBuilder &m, ArrayRef<Scalars> in) {
                       return model.buildCompose(m, in[0], in[1]);
                     });
    return success();
  }
};

struct LowerInverse : OpRewritePattern<InverseOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(InverseOp op,
                                PatternRewriter &rewriter) const override {
    const GroupModel &model = op.getGroup().getModel();
    lowerElementwise(op, rewriter, {{op.getInput(), 2}}, op.getType(), 2,
                     [&](ScalarBuilder &m, ArrayRef<Scalars> in) {
                       return model.buildInverse(m, in[0]);
                     });
    return success();
  }
};

struct LowerLog : OpRewritePattern<LogOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LogOp op,
                                PatternRewriter &rewriter) const override {
    const GroupModel &model = op.getGroup().getModel();
    lowerElementwise(op, rewriter, {{op.getInput(), 2}}, op.getType(), 1,
                     [&](ScalarBuilder &m, ArrayRef<Scalars> in) {
                       return model.buildLog(m, in[0]);
                     });
    return success();
  }
};

struct LowerPairFeatures : OpRewritePattern<PairFeaturesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PairFeaturesOp op,
                                PatternRewriter &rewriter) const override {
    const GroupModel &model = op.getGroup().getModel();
    bool key = op.getKey();
    lowerElementwise(op, rewriter, {{op.getInput(), 2}}, op.getType(), 1,
                     [&](ScalarBuilder &m, ArrayRef<Scalars> in) {
                       return key ? model.buildKeyFeatures(m, in[0])
                                  : model.buildQueryFeatures(m, in[0]);
                     });
    return success();
  }
};

struct LowerExp : OpRewritePattern<ExpOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ExpOp op,
                                PatternRewriter &rewriter) const override {
    const GroupModel &model = op.getGroup().getModel();
    lowerElementwise(op, rewriter, {{op.getInput(), 1}}, op.getType(), 2,
                     [&](ScalarBuilder &m, ArrayRef<Scalars> in) {
                       return model.buildExp(m, in[0]);
                     });
    return success();
  }
};

struct LowerAct : OpRewritePattern<ActOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ActOp op,
                                PatternRewriter &rewriter) const override {
    const GroupModel &model = op.getGroup().getModel();
    lowerElementwise(op, rewriter, {{op.getElement(), 2}, {op.getPoint(), 1}},
                     op.getType(), 1,
                     [&](ScalarBuilder &m, ArrayRef<Scalars> in) {
                       return model.buildAct(m, in[0], in[1]);
                     });
    return success();
  }
};

struct LowerDist2 : OpRewritePattern<Dist2Op> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Dist2Op op,
                                PatternRewriter &rewriter) const override {
    const GroupModel &model = op.getGroup().getModel();
    SmallVector<double> lambda = op.getLambdaOrDefault();
    lowerElementwise(op, rewriter, {{op.getLhs(), 2}, {op.getRhs(), 2}},
                     op.getType(), 0,
                     [&](ScalarBuilder &m, ArrayRef<Scalars> in) -> Scalars {
                       Scalars weights;
                       for (double w : lambda)
                         weights.push_back(m.c(w));
                       return {model.buildDist2(m, in[0], in[1], weights)};
                     });
    return success();
  }
};

struct LowerMembershipResidual : OpRewritePattern<MembershipResidualOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MembershipResidualOp op,
                                PatternRewriter &rewriter) const override {
    const GroupModel &model = op.getGroup().getModel();
    lowerElementwise(op, rewriter, {{op.getInput(), 2}}, op.getType(), 0,
                     [&](ScalarBuilder &m, ArrayRef<Scalars> in) -> Scalars {
                       return {model.buildMembershipResidual(m, in[0])};
                     });
    return success();
  }
};

struct ConvertLieToArith
    : torsor::impl::ConvertLieToArithBase<ConvertLieToArith> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateLieToArithConversionPatterns(patterns);
    // Every lie op matches a pattern unconditionally, so "no lie op left" is
    // the success criterion; anything else is a bug worth reporting.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (isa<LieDialect>(op->getDialect())) {
        op->emitOpError("could not be lowered to arith");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void torsor::populateLieToArithConversionPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerIdentity, LowerCompose, LowerInverse, LowerLog,
               LowerPairFeatures, LowerExp, LowerAct, LowerDist2,
               LowerMembershipResidual>(patterns.getContext());
  populateLiePullbackPatterns(patterns);
}
