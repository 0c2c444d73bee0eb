//===- ScalarRules.cpp - VJPs of arith and math ops -----------------------===//
//
// One rule per elementwise op, written once for scalars (they also hold on
// vectors and tensors of floats): the local partials come from the table
// the group models' formula differentiator shares (ScalarAdjoints.h), the
// type conversions are here. These are what the structured-op rule
// (StructuredRules.cpp) runs over the body of every linalg.generic, so the
// derivative of GELU, layer norm or softmax comes from here.
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/VJP.h"
#include "dialects/Lie/IR/Groups/ScalarAdjoints.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace torsor::autodiff;

namespace {
/// Small arithmetic on values of one float type, so rules read as math.
struct Math {
  OpBuilder &b;
  Location loc;
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value cst(Value like, double v) {
    return floatConstant(b, loc, like.getType(), v);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  /// cond ? x : 0
  Value where(Value cond, Value x) {
    return arith::SelectOp::create(b, loc, cond, x, cst(x, 0.0));
  }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
};

using Cots = ArrayRef<Value>;
using Grads = SmallVectorImpl<Value>;

/// Registers a rule written as `fn(Math &m, op, cotangent, grads)` for
/// single-result elementwise ops.
#define UNARY(NAME, EXPR)                                                      \
  r.add(NAME, {[](OpBuilder &b, Operation *op, Cots c, Grads &g) {             \
          Math m{b, op->getLoc()};                                             \
          Value a = op->getOperand(0), y = op->getResult(0), dy = c[0];        \
          (void)m;                                                             \
          (void)a;                                                             \
          (void)y;                                                             \
          g[0] = (EXPR);                                                       \
          return success();                                                    \
        }})

} // namespace

/// Registers the arith and math rules (called by registerCoreVJPRules).
void torsor::autodiff::registerScalarVJPRules(VJPRegistry &r) {
  // Every op of the shared table (dialects/Lie/IR/Groups/ScalarAdjoints.h,
  // also what the group models' formula differentiator uses): ȳ times each
  // local partial.
  for (StringRef name : lie::getScalarAdjointOpNames())
    r.add(name, {[](OpBuilder &b, Operation *op, Cots c, Grads &g) {
            Math m{b, op->getLoc()};
            SmallVector<lie::ScalarPartial, 3> partials;
            if (!lie::buildScalarPartials(b, op->getLoc(), op, partials))
              return failure();
            Value dy = c[0];
            for (auto [i, p] : llvm::enumerate(partials)) {
              switch (p.kind) {
              case lie::ScalarPartial::None:
                break;
              case lie::ScalarPartial::Same:
                g[i] = dy;
                break;
              case lie::ScalarPartial::Negated:
                g[i] = m.neg(dy);
                break;
              case lie::ScalarPartial::Scaled:
                g[i] = m.mul(dy, p.value);
                break;
              case lie::ScalarPartial::Where:
                g[i] = m.where(p.value, dy);
                break;
              case lie::ScalarPartial::WhereNot:
                g[i] = arith::SelectOp::create(b, op->getLoc(), p.value,
                                               m.cst(dy, 0.0), dy);
                break;
              }
            }
            return success();
          }});
  UNARY("arith.extf",
        arith::TruncFOp::create(b, op->getLoc(), a.getType(), dy).getResult());
  UNARY("arith.truncf",
        arith::ExtFOp::create(b, op->getLoc(), a.getType(), dy).getResult());
}
#undef UNARY
