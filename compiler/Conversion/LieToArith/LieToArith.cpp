//===- LieToArith.cpp - Lower lie ops to scalar loops ---------------------===//
//
// Every lie op is element-wise over its batch dims, so every lowering has the
// same shape: a loop nest over the batch dims carrying the result tensor; in
// the body, extract one element's scalars from each operand, let the group
// model build the closed form, and insert the result scalars. Only the
// operand/result trailing shapes and the model builder differ per op, and
// each op states those through lie's ElementOpInterface
// (dialects/Lie/IR/LieInterfaces.td), so this is one pattern over it.
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
                                    unsigned resultTrailing, ElementBody body,
                                    ValueRange dynamicBatchSizes) {
  auto floatType = cast<FloatType>(resultType.getElementType());
  unsigned batchRank = resultType.getRank() - resultTrailing;

  // Batch extents come from the first operand; the verifier made all batch
  // shapes equal, so any operand would do. Without operands they are the
  // result's static sizes and `dynamicBatchSizes`.
  SmallVector<Value> lbs, ubs, steps, dynamicSizes;
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  unsigned nextDynamic = 0;
  for (unsigned d = 0; d < batchRank; ++d) {
    Value extent;
    if (!operands.empty())
      extent = tensor::DimOp::create(rewriter, loc, operands.front().value, d);
    else if (resultType.isDynamicDim(d))
      extent = dynamicBatchSizes[nextDynamic++];
    else
      extent = arith::ConstantIndexOp::create(rewriter, loc,
                                              resultType.getDimSize(d));
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

/// The one lowering of every lie op: a loop nest over the batch dims running
/// the op's own element builder (ElementOpInterface::buildElement, which
/// calls the group model).
struct LowerElementOp : OpInterfaceRewritePattern<ElementOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(ElementOpInterface op,
                                PatternRewriter &rewriter) const override {
    if (failed(op.verifyElementLowering()))
      return failure();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<ElementOperand> operands = op.getElementOperands();
    Value result = buildElementwiseLoops(
        rewriter, op->getLoc(), operands, resultType, op.getResultElementRank(),
        [&](ScalarBuilder &m, ArrayRef<Scalars> in) -> Scalars {
          // verifyElementLowering ruled failure out.
          return *op.buildElement(m, in);
        },
        op.getDynamicBatchSizes());
    rewriter.replaceOp(op, result);
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
  patterns.add<LowerElementOp>(patterns.getContext());
}
