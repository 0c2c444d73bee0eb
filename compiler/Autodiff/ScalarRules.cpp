//===- ScalarRules.cpp - VJPs of arith and math ops -----------------------===//
//
// One rule per elementwise op, written once for scalars (they also hold on
// vectors and tensors of floats). These are what the structured-op rule
// (StructuredRules.cpp) runs over the body of every linalg.generic, so the
// derivative of GELU, layer norm or softmax comes from here.
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/VJP.h"

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

/// Binary ops: `A` and `B` are the operand cotangent expressions.
#define BINARY(NAME, A, B)                                                     \
  r.add(NAME, {[](OpBuilder &b, Operation *op, Cots c, Grads &g) {             \
          Math m{b, op->getLoc()};                                             \
          Value x = op->getOperand(0), z = op->getOperand(1),                  \
                y = op->getResult(0), dy = c[0];                               \
          (void)x;                                                             \
          (void)z;                                                             \
          (void)y;                                                             \
          g[0] = (A);                                                          \
          g[1] = (B);                                                          \
          return success();                                                    \
        }})
} // namespace

/// Registers the arith and math rules (called by registerCoreVJPRules).
void torsor::autodiff::registerScalarVJPRules(VJPRegistry &r) {
  using P = arith::CmpFPredicate;
  BINARY("arith.addf", dy, dy);
  BINARY("arith.subf", dy, m.neg(dy));
  BINARY("arith.mulf", m.mul(dy, z), m.mul(dy, x));
  // d(x/z) = dx/z − y·dz/z
  BINARY("arith.divf", m.div(dy, z), m.neg(m.div(m.mul(dy, y), z)));
  UNARY("arith.negf", m.neg(dy));
  // max/min: the cotangent goes to the operand that was chosen (both at a
  // tie). The structured rule binds a reduction's accumulator to the final
  // value, so `max(x, acc)` sends dy to the x that is the maximum.
  BINARY("arith.maximumf", m.where(m.cmp(P::OGE, x, z), dy),
         m.where(m.cmp(P::OGE, z, x), dy));
  BINARY("arith.maxnumf", m.where(m.cmp(P::OGE, x, z), dy),
         m.where(m.cmp(P::OGE, z, x), dy));
  BINARY("arith.minimumf", m.where(m.cmp(P::OLE, x, z), dy),
         m.where(m.cmp(P::OLE, z, x), dy));
  BINARY("arith.minnumf", m.where(m.cmp(P::OLE, x, z), dy),
         m.where(m.cmp(P::OLE, z, x), dy));
  // select(cond, t, f): nothing for the i1 condition.
  r.add("arith.select", {[](OpBuilder &b, Operation *op, Cots c, Grads &g) {
          Math m{b, op->getLoc()};
          Value cond = op->getOperand(0);
          g[1] = m.where(cond, c[0]);
          g[2] = arith::SelectOp::create(b, op->getLoc(), cond,
                                         m.cst(c[0], 0.0), c[0]);
          return success();
        }});
  UNARY("arith.extf",
        arith::TruncFOp::create(b, op->getLoc(), a.getType(), dy).getResult());
  UNARY("arith.truncf",
        arith::ExtFOp::create(b, op->getLoc(), a.getType(), dy).getResult());

  UNARY("math.exp", m.mul(dy, y));
  UNARY("math.expm1", m.mul(dy, m.add(y, m.cst(y, 1.0))));
  UNARY("math.log", m.div(dy, a));
  UNARY("math.log1p", m.div(dy, m.add(a, m.cst(a, 1.0))));
  // sqrt at 0 (a zero Plücker vector, say): the one-sided derivative is
  // +inf; the rule returns 0 there, as for a norm clamped from below, so a
  // zero cotangent never turns into 0·inf = NaN.
  UNARY("math.sqrt", m.where(m.cmp(arith::CmpFPredicate::OGT, y, m.cst(y, 0.0)),
                             m.div(m.mul(dy, m.cst(y, 0.5)), y)));
  // rsqrt: d a^{-1/2} = −½ a^{-3/2} = −½ y³
  UNARY("math.rsqrt", m.mul(dy, m.mul(m.cst(y, -0.5), m.mul(y, m.mul(y, y)))));
  UNARY("math.tanh", m.mul(dy, m.sub(m.cst(y, 1.0), m.mul(y, y))));
  // erf' = 2/√π·exp(−a²)
  UNARY("math.erf", m.mul(dy, m.mul(m.cst(a, 1.1283791670955126),
                                    m.exp(m.neg(m.mul(a, a))))));
  UNARY("math.sin", m.mul(dy, math::CosOp::create(b, op->getLoc(), a)));
  UNARY("math.cos", m.neg(m.mul(dy, math::SinOp::create(b, op->getLoc(), a))));
  UNARY("math.absf",
        m.mul(dy, math::CopySignOp::create(b, op->getLoc(), m.cst(a, 1.0), a)));
  // atan' = 1/(1 + a²); asin' = 1/√(1 − a²); acos' = −1/√(1 − a²)
  UNARY("math.atan", m.div(dy, m.add(m.cst(a, 1.0), m.mul(a, a))));
  UNARY("math.asin", m.div(dy, m.sqrt(m.sub(m.cst(a, 1.0), m.mul(a, a)))));
  UNARY("math.acos",
        m.neg(m.div(dy, m.sqrt(m.sub(m.cst(a, 1.0), m.mul(a, a))))));
  // atan2(x, z) = angle of (z, x): d/dx = z/(x² + z²), d/dz = −x/(x² + z²)
  BINARY("math.atan2", m.div(m.mul(dy, z), m.add(m.mul(x, x), m.mul(z, z))),
         m.neg(m.div(m.mul(dy, x), m.add(m.mul(x, x), m.mul(z, z)))));
  // x^z: d/dx = z·x^{z−1} = z·y/x (x ≠ 0), d/dz = y·log x
  BINARY("math.powf", m.div(m.mul(dy, m.mul(z, y)), x),
         m.mul(dy, m.mul(y, math::LogOp::create(b, op->getLoc(), x))));
  r.add("math.fma", {[](OpBuilder &b, Operation *op, Cots c, Grads &g) {
          Math m{b, op->getLoc()};
          g[0] = m.mul(c[0], op->getOperand(1));
          g[1] = m.mul(c[0], op->getOperand(0));
          g[2] = c[0];
          return success();
        }});
  // Piecewise-constant ops: zero almost everywhere.
  for (StringRef name : {"math.floor", "math.ceil", "math.round",
                         "math.roundeven", "math.trunc"})
    r.add(name,
          {[](OpBuilder &, Operation *, Cots, Grads &) { return success(); }});
}
#undef UNARY
#undef BINARY
