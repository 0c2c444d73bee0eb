//===- LowerPullback.cpp - lie.pullback to scalar loops -------------------===//
//
// lie.pullback is element-wise like every lie op: the loop nest of
// buildElementwiseLoops runs the group model's derivative builder
// (Groups/Derivatives.h) per element. The derivative is the adjoint of the
// model's own formula; when that formula builds loops (a declared group's
// iterative log), no adjoint exists yet and the op is reported instead.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LieToArith/LieToArith.h"
#include "dialects/Lie/IR/Groups/Derivatives.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace torsor;
using namespace torsor::lie;

namespace {

/// Trailing element dims of operand `i` of the forward op.
unsigned trailingDims(PullbackKind kind, unsigned i) {
  return isGroupOperand(kind, i) ? 2 : 1;
}

/// Trailing element dims of the result's cotangent: ambient n×n for group
/// results (and left_trivialize's input), none for dist2.
unsigned cotangentDims(PullbackKind kind) {
  if (kind == PullbackKind::Dist2)
    return 0;
  return hasGroupResult(kind) || kind == PullbackKind::LeftTrivialize ? 2 : 1;
}

struct LowerPullback : OpRewritePattern<PullbackOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PullbackOp op,
                                PatternRewriter &rewriter) const override {
    PullbackKind kind = *parsePullbackKind(op.getOf());
    const GroupModel &model = op.getGroup().getModel();
    unsigned wrt = op.getWrt();
    SmallVector<double> lambdaValues(model.getBlocks().size(), 1.0);
    if (auto lambda = op.getLambda())
      lambdaValues.assign(lambda->begin(), lambda->end());
    auto elt = cast<FloatType>(op.getType().getElementType());

    auto body = [&](ScalarBuilder &m, ArrayRef<Scalars> in) {
      Scalars lambda;
      for (double w : lambdaValues)
        lambda.push_back(m.c(w));
      SmallVector<Scalars> operands(in.drop_back());
      return buildPullback(model, m, kind, operands, in.back(), wrt, lambda);
    };

    // Dry run in a detached block: the model's formula may build loops,
    // which have no adjoint; report that instead of half-built IR.
    {
      Block scratch;
      SmallVector<Scalars> in;
      auto scalarsOf = [&](unsigned count) {
        Scalars s;
        for (unsigned i = 0; i < count; ++i)
          s.push_back(scratch.addArgument(elt, op.getLoc()));
        return s;
      };
      unsigned n = model.getMatrixSize();
      for (Value input : op.getInputs()) {
        auto type = cast<RankedTensorType>(input.getType());
        unsigned t = trailingDims(kind, in.size());
        in.push_back(scalarsOf(t == 2 ? n * n : type.getShape().back()));
      }
      auto ct = cast<RankedTensorType>(op.getCotangent().getType());
      unsigned ctDims = cotangentDims(kind);
      in.push_back(scalarsOf(ctDims == 0   ? 1
                             : ctDims == 2 ? n * n
                                           : ct.getShape().back()));
      OpBuilder ob(op.getContext());
      ob.setInsertionPointToEnd(&scratch);
      ImplicitLocOpBuilder ib(op.getLoc(), ob);
      ScalarBuilder m(ib, elt);
      bool ok = succeeded(body(m, in));
      while (!scratch.empty())
        scratch.back().erase();
      if (!ok)
        return op.emitOpError("cannot be differentiated for group ")
               << model.getDisplayName()
               << ": its formula builds loops (no adjoint yet)";
    }

    SmallVector<ElementOperand> operands;
    for (auto [i, input] : llvm::enumerate(op.getInputs()))
      operands.push_back({input, trailingDims(kind, i)});
    operands.push_back({op.getCotangent(), cotangentDims(kind)});
    unsigned resultDims =
        kind != PullbackKind::LeftTrivialize && isGroupOperand(kind, wrt) ? 2
                                                                          : 1;
    rewriter.replaceOp(
        op, buildElementwiseLoops(rewriter, op.getLoc(), operands, op.getType(),
                                  resultDims, [&](ScalarBuilder &m,
                                         ArrayRef<Scalars> in) -> Scalars {
                                    return *body(m, in);
                                  }));
    return success();
  }
};

} // namespace

void torsor::populateLiePullbackPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerPullback>(patterns.getContext());
}
