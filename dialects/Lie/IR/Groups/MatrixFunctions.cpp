//===- MatrixFunctions.cpp - exp and log of small matrices ----------------===//
//
// Matrix exp and principal log as scalar IR for the generic group model.
// Everything is built on one MatrixBuilder (products, norms, a pivoted
// Gauss–Jordan solve) plus three loop helpers; the loops carry the n·n
// entries as iter_args so that the IR holds one copy of each loop body no
// matter how many squarings or square roots an input needs.
//
// Degrees and thresholds (derivations in docs/groups/matrix-functions.md):
//   exp: Taylor T_m by Paterson–Stockmeyer after scaling by 2^−s with
//        ‖2^−s A‖₁ ≤ θ_m, the Al-Mohy–Higham backward-error bound:
//        f64 m = 20, θ = 1.43 (7 products); f32 m = 12, θ = 1.46 (5).
//   log: Denman–Beavers square roots until ‖A − I‖₁ ≤ θ_m,
//        then the m-point Gauss–Legendre rule for log(I + X) = ∫₀¹ X(I +
//        tX)⁻¹ dt, which is the [m/m] Padé approximant, with Higham's
//        (Kenney–Laub) bound: f64 m = 8, θ = 0.340; f32 m = 4, θ = 0.380.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/MatrixFunctions.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cassert>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace torsor::lie;

namespace {

/// Arithmetic on n×n matrices held as n·n row-major scalars.
class MatrixBuilder {
public:
  MatrixBuilder(ScalarBuilder &m, unsigned n) : m(m), n(n) {}

  /// d·I.
  Scalars identity(double d = 1.0) {
    Value zero = m.c(0.0), diag = m.c(d);
    Scalars r(n * n, zero);
    for (unsigned i = 0; i < n; ++i)
      r[i * n + i] = diag;
    return r;
  }

  /// a·b.
  Scalars mul(ValueRange a, ValueRange b) {
    Scalars r;
    for (unsigned i = 0; i < n; ++i)
      for (unsigned j = 0; j < n; ++j) {
        SmallVector<Value> col;
        for (unsigned k = 0; k < n; ++k)
          col.push_back(b[k * n + j]);
        r.push_back(m.dot(a.slice(i * n, n), col));
      }
    return r;
  }

  /// s·a for a scalar Value s.
  Scalars scale(ValueRange a, Value s) {
    Scalars r;
    for (Value x : a)
      r.push_back(m.mul(s, x));
    return r;
  }

  /// a + d·I.
  Scalars addDiag(ValueRange a, Value d) {
    Scalars r(a.begin(), a.end());
    for (unsigned i = 0; i < n; ++i)
      r[i * n + i] = m.add(r[i * n + i], d);
    return r;
  }

  /// α·a + β·b.
  Scalars combine(double alpha, ValueRange a, double beta, ValueRange b) {
    Value ca = m.c(alpha), cb = m.c(beta);
    Scalars r;
    for (auto [x, y] : llvm::zip(a, b))
      r.push_back(m.fma(ca, x, m.mul(cb, y)));
    return r;
  }

  /// ‖a − d·I‖₁, the largest absolute column sum. maximumf propagates NaN,
  /// so a NaN entry gives a NaN norm and every comparison with it is false.
  Value norm1(ValueRange a, double d = 0.0) {
    Value norm;
    Value cd = d != 0.0 ? m.c(d) : Value();
    for (unsigned j = 0; j < n; ++j) {
      Value sum;
      for (unsigned i = 0; i < n; ++i) {
        Value x = a[i * n + j];
        if (i == j && cd)
          x = m.sub(x, cd);
        x = m.abs(x);
        sum = sum ? m.add(sum, x) : x;
      }
      norm = norm ? m.max(norm, sum) : sum;
    }
    return norm;
  }

  /// a⁻¹·b (b is n×n) by Gauss–Jordan elimination with partial pivoting.
  /// Pivoting without branches: at column k each lower row is swapped into
  /// row k (by selects) when its entry is larger in magnitude than the
  /// current candidate, so row k ends up holding the largest one. A zero
  /// pivot divides by zero and the result is inf/NaN, which callers use as
  /// the singular-input signal. Known-zero entries are tracked as null
  /// Values so that inverting (b = I) emits no arithmetic on the zeros.
  Scalars solve(ValueRange a, ValueRange b, bool bIsIdentity = false) {
    unsigned w = 2 * n;
    SmallVector<SmallVector<Value>> rows(n);
    Value one = bIsIdentity ? m.c(1.0) : Value();
    for (unsigned i = 0; i < n; ++i) {
      for (unsigned j = 0; j < n; ++j)
        rows[i].push_back(a[i * n + j]);
      for (unsigned j = 0; j < n; ++j)
        rows[i].push_back(bIsIdentity ? (i == j ? one : Value())
                                      : b[i * n + j]);
    }
    Value zero;
    auto orZero = [&](Value x) {
      if (x)
        return x;
      if (!zero)
        zero = m.c(0.0);
      return zero;
    };
    for (unsigned k = 0; k < n; ++k) {
      for (unsigned i = k + 1; i < n; ++i) {
        Value swap = m.gt(m.abs(rows[i][k]), m.abs(rows[k][k]));
        for (unsigned j = k; j < w; ++j) {
          Value x = rows[k][j], y = rows[i][j];
          if (!x && !y)
            continue;
          rows[k][j] = m.select(swap, orZero(y), orZero(x));
          rows[i][j] = m.select(swap, orZero(x), orZero(y));
        }
      }
      Value inv = m.div(m.c(1.0), rows[k][k]);
      for (unsigned j = k + 1; j < w; ++j)
        if (rows[k][j])
          rows[k][j] = m.mul(inv, rows[k][j]);
      for (unsigned i = 0; i < n; ++i) {
        if (i == k)
          continue;
        Value f = rows[i][k];
        Value negF = m.neg(f);
        for (unsigned j = k + 1; j < w; ++j) {
          if (!rows[k][j])
            continue;
          rows[i][j] = rows[i][j] ? m.fma(negF, rows[k][j], rows[i][j])
                                  : m.mul(negF, rows[k][j]);
        }
      }
    }
    Scalars r;
    for (unsigned i = 0; i < n; ++i)
      for (unsigned j = n; j < w; ++j)
        r.push_back(orZero(rows[i][j]));
    return r;
  }

  /// Σ_k coeffs[k]·x^k by Horner's rule, for short exact series: a product
  /// per degree beyond the first.
  Scalars horner(ValueRange x, ArrayRef<double> coeffs) {
    if (coeffs.size() == 1)
      return identity(coeffs[0]);
    Scalars p =
        addDiag(scale(x, m.c(coeffs.back())), m.c(coeffs[coeffs.size() - 2]));
    for (int k = static_cast<int>(coeffs.size()) - 3; k >= 0; --k)
      p = addDiag(mul(x, p), m.c(coeffs[k]));
    return p;
  }

  /// Σ_k coeffs[k]·x^k by Paterson–Stockmeyer with block size q: the powers
  /// x²..x^q, then Horner in x^q over blocks of degree < q. Degree q·r costs
  /// (q − 1) + (r − 1) products (the top block is a scalar).
  Scalars patersonStockmeyer(ValueRange x, ArrayRef<double> coeffs,
                             unsigned q) {
    unsigned degree = coeffs.size() - 1;
    SmallVector<Scalars> powers(q + 1);
    powers[1] = Scalars(x.begin(), x.end());
    for (unsigned k = 2; k <= q; ++k)
      powers[k] = mul(powers[k - 1], x);
    // Σ_{j<q} coeffs[i·q + j]·x^j, plus `extra` (a matrix or empty).
    auto block = [&](unsigned i, Scalars extra) {
      Scalars acc = std::move(extra);
      for (unsigned j = 1; j < q && i * q + j <= degree; ++j) {
        Value cj = m.c(coeffs[i * q + j]);
        if (acc.empty())
          acc = scale(powers[j], cj);
        else
          for (unsigned e = 0; e < n * n; ++e)
            acc[e] = m.fma(cj, powers[j][e], acc[e]);
      }
      if (acc.empty())
        return identity(coeffs[i * q]);
      return addDiag(acc, m.c(coeffs[i * q]));
    };
    unsigned r = degree / q;
    Scalars p;
    if (degree == r * q) {
      // Scalar top block: c·x^q folds into the next block for free.
      p = block(r - 1, scale(powers[q], m.c(coeffs[degree])));
      --r;
    } else {
      p = block(r, {});
    }
    while (r-- > 0)
      p = block(r, mul(p, powers[q]));
    return p;
  }

private:
  ScalarBuilder &m;
  unsigned n;
};

/// Runs `body` over one loop iteration's builder. Keeps the loop helpers'
/// lambdas short: every nested region needs its own ScalarBuilder.
using LoopBody = llvm::function_ref<Scalars(ScalarBuilder &, ValueRange)>;

/// scf.for iv in [0, count) with `init` as iter_args; `body(m, iv, args)`.
Scalars
buildFor(ScalarBuilder &m, Value count, ValueRange init,
         llvm::function_ref<Scalars(ScalarBuilder &, Value, ValueRange)> body) {
  ImplicitLocOpBuilder &b = m.builder();
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  auto loop = scf::ForOp::create(
      b, zero, count, one, init,
      [&](OpBuilder &nested, Location loc, Value iv, ValueRange args) {
        ImplicitLocOpBuilder nb(loc, nested);
        ScalarBuilder nm(nb, m.getType());
        scf::YieldOp::create(nb, ValueRange(body(nm, iv, args)));
      });
  return Scalars(loop.getResults().begin(), loop.getResults().end());
}

/// scf.while over `init`: `cond(m, args)` decides whether to run
/// `body(m, args)` once more.
Scalars buildWhile(ScalarBuilder &m, ValueRange init,
                   llvm::function_ref<Value(ScalarBuilder &, ValueRange)> cond,
                   LoopBody body) {
  ImplicitLocOpBuilder &b = m.builder();
  auto loop = scf::WhileOp::create(
      b, TypeRange(init), init,
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        ImplicitLocOpBuilder nb(loc, nested);
        ScalarBuilder nm(nb, m.getType());
        scf::ConditionOp::create(nb, cond(nm, args), args);
      },
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        ImplicitLocOpBuilder nb(loc, nested);
        ScalarBuilder nm(nb, m.getType());
        scf::YieldOp::create(nb, ValueRange(body(nm, args)));
      });
  return Scalars(loop.getResults().begin(), loop.getResults().end());
}

/// An i32 constant.
Value i32(ScalarBuilder &m, int32_t v) {
  return arith::ConstantIntOp::create(m.builder(), v, 32);
}

/// Scaling for exp: s = clamp(e + 1, 0, maxS) where e is the binary
/// exponent of ‖A‖₁/θ, so that ‖A‖₁/2^s < θ. Read off the float's exponent
/// field rather than calling log2: exact, no libm, and inf/NaN land on maxS
/// (NaN propagates through the entries anyway). Returns s as index and
/// 2^−s, assembled from its bits, as a float.
std::pair<Value, Value> scalingExponent(ScalarBuilder &m, Value norm,
                                        double theta, int maxS) {
  ImplicitLocOpBuilder &b = m.builder();
  bool f32 = m.isF32();
  unsigned width = f32 ? 32 : 64;
  int mantissa = f32 ? 23 : 52, bias = f32 ? 127 : 1023;
  Type intType = b.getIntegerType(width);
  auto intC = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, v, width).getResult();
  };
  Value r = m.mul(norm, m.c(1.0 / theta));
  Value bits = arith::BitcastOp::create(b, intType, r);
  Value field =
      arith::AndIOp::create(b, arith::ShRUIOp::create(b, bits, intC(mantissa)),
                            intC(f32 ? 0xff : 0x7ff));
  Value s = arith::SubIOp::create(b, field, intC(bias - 1));
  s = arith::MaxSIOp::create(b, s, intC(0));
  s = arith::MinSIOp::create(b, s, intC(maxS));
  Value scaleBits = arith::ShLIOp::create(
      b, arith::SubIOp::create(b, intC(bias), s), intC(mantissa));
  Value scale = arith::BitcastOp::create(b, m.getType(), scaleBits);
  Value count = arith::IndexCastOp::create(b, b.getIndexType(), s);
  return {count, scale};
}

/// Nodes (on [0, 1]) and weights of the m-point Gauss–Legendre rule, by
/// Newton on P_m from the Chebyshev-like initial guesses; converges to
/// working precision in a few steps for m ≤ 20.
void gaussLegendre(unsigned order, SmallVectorImpl<double> &nodes,
                   SmallVectorImpl<double> &weights) {
  for (unsigned i = 1; i <= order; ++i) {
    double x = std::cos(M_PI * (i - 0.25) / (order + 0.5));
    double dp = 0;
    for (int it = 0; it < 100; ++it) {
      double p0 = 1, p1 = x;
      for (unsigned k = 2; k <= order; ++k) {
        double pk = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = pk;
      }
      dp = order * (x * p1 - p0) / (x * x - 1);
      double dx = p1 / dp;
      x -= dx;
      if (std::abs(dx) < 1e-17)
        break;
    }
    nodes.push_back((1 + x) / 2);
    weights.push_back(1 / ((1 - x * x) * dp * dp));
  }
}

} // namespace

Scalars torsor::lie::buildMatrixExp(ScalarBuilder &m, unsigned n, ValueRange a,
                                    unsigned nilpotentIndex) {
  assert(a.size() == n * n && "expects n·n entries");
  MatrixBuilder mb(m, n);
  SmallVector<double> coeffs{1.0};
  if (nilpotentIndex > 0) {
    // Exact: the series stops at A^{index−1}.
    for (unsigned k = 1; k < nilpotentIndex; ++k)
      coeffs.push_back(coeffs.back() / k);
    return mb.horner(a, coeffs);
  }

  // Al-Mohy & Higham (2010) backward-error thresholds of T_m: the relative
  // backward error of T_m(2^−s A)^(2^s) is ≤ u when ‖2^−s A‖₁ ≤ θ_m.
  bool f32 = m.isF32();
  unsigned degree = f32 ? 12 : 20, q = f32 ? 4 : 5;
  double theta = f32 ? 1.46 : 1.43;
  for (unsigned k = 1; k <= degree; ++k)
    coeffs.push_back(coeffs.back() / k);

  // Beyond 2^64·θ the exponential overflows unless A is special (e.g. a
  // huge rotation, whose exp is then meaningless in floating point).
  auto [count, scale] = scalingExponent(m, mb.norm1(a), theta, /*maxS=*/64);
  Scalars t = mb.patersonStockmeyer(mb.scale(a, scale), coeffs, q);
  return buildFor(m, count, t,
                  [&](ScalarBuilder &nm, Value, ValueRange p) -> Scalars {
                    return MatrixBuilder(nm, n).mul(p, p);
                  });
}

Scalars torsor::lie::buildMatrixLog(ScalarBuilder &m, unsigned n, ValueRange a,
                                    unsigned unipotentIndex) {
  assert(a.size() == n * n && "expects n·n entries");
  MatrixBuilder mb(m, n);
  if (unipotentIndex > 0) {
    // Exact: log(I + N) = Σ_{k<index} (−1)^{k+1} N^k / k.
    SmallVector<double> coeffs{0.0};
    for (unsigned k = 1; k < unipotentIndex; ++k)
      coeffs.push_back((k % 2 ? 1.0 : -1.0) / k);
    return mb.horner(mb.addDiag(a, m.c(-1.0)), coeffs);
  }

  bool f32 = m.isF32();
  // Higham (2001) thresholds for the [m/m] Padé approximant of log(I + X).
  unsigned order = f32 ? 4 : 8;
  double theta = f32 ? 0.380 : 0.340;
  // Denman–Beavers stops after a step that changed Y by ≤ √u (relative):
  // the change estimates the error before the step, which squares, so the
  // result is good to about u.
  double delta = f32 ? 0x1p-12 : 0x1p-26;
  const int maxRoots = 64, maxSteps = 64;
  unsigned nn = n * n;

  // Outer loop: A ← A^{1/2} while ‖A − I‖₁ > θ. Carries A, the factor 2^s
  // (doubled exactly each time), the root count and whether every root
  // converged. ugt so that NaN keeps nothing alive: NaN norm → the `ok`
  // check below fails and the result is NaN.
  Scalars init(a.begin(), a.end());
  init.push_back(m.c(1.0));
  init.push_back(i32(m, 0));
  init.push_back(arith::ConstantIntOp::create(m.builder(), 1, 1));
  Scalars roots = buildWhile(
      m, init,
      [&](ScalarBuilder &nm, ValueRange args) -> Value {
        ImplicitLocOpBuilder &b = nm.builder();
        Value far = arith::CmpFOp::create(
            b, arith::CmpFPredicate::UGT,
            MatrixBuilder(nm, n).norm1(args.take_front(nn), 1.0), nm.c(theta));
        Value more = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                           args[nn + 1], i32(nm, maxRoots));
        return nm.andI(nm.andI(far, more), args[nn + 2]);
      },
      [&](ScalarBuilder &nm, ValueRange args) -> Scalars {
        // Denman–Beavers: Y₀ = A, Z₀ = I, Y ← ½(Y + Z⁻¹), Z ← ½(Z + Y⁻¹);
        // Y → A^{1/2}. Not the cheaper product form (one inverse per step):
        // with eigenvalues e^{±i(π − ε)} its M₁ has eigenvalues ~ε²/4 and
        // the inverse loses u/ε² instead of the u/ε the log is conditioned
        // at (f32 rotations by π − 1e-3 lost 3e-2 relative). Carries Y, Z,
        // the last step's relative change ‖ΔY‖₁/‖Y‖₁, and the step count.
        ValueRange x = args.take_front(nn);
        Scalars dbInit(x.begin(), x.end());
        Scalars eye = MatrixBuilder(nm, n).identity();
        dbInit.append(eye.begin(), eye.end());
        dbInit.push_back(nm.c(std::numeric_limits<double>::infinity()));
        dbInit.push_back(i32(nm, 0));
        Scalars db = buildWhile(
            nm, dbInit,
            [&](ScalarBuilder &wm, ValueRange s) -> Value {
              ImplicitLocOpBuilder &b = wm.builder();
              Value notYet = arith::CmpFOp::create(b, arith::CmpFPredicate::UGT,
                                                   s[2 * nn], wm.c(delta));
              Value more =
                  arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                        s[2 * nn + 1], i32(wm, maxSteps));
              return wm.andI(notYet, more);
            },
            [&](ScalarBuilder &wm, ValueRange s) -> Scalars {
              ImplicitLocOpBuilder &b = wm.builder();
              MatrixBuilder w(wm, n);
              ValueRange y = s.take_front(nn), z = s.slice(nn, nn);
              Scalars yInv = w.solve(y, {}, /*bIsIdentity=*/true);
              Scalars zInv = w.solve(z, {}, /*bIsIdentity=*/true);
              Scalars next = w.combine(0.5, y, 0.5, zInv);
              Scalars nextZ = w.combine(0.5, z, 0.5, yInv);
              Scalars step;
              for (auto [p, q] : llvm::zip(next, y))
                step.push_back(wm.sub(p, q));
              Value change = wm.div(w.norm1(step), w.norm1(next));
              next.append(nextZ.begin(), nextZ.end());
              next.push_back(change);
              next.push_back(
                  arith::AddIOp::create(b, s[2 * nn + 1], i32(wm, 1)));
              return next;
            });
        ImplicitLocOpBuilder &b = nm.builder();
        Value converged = arith::CmpFOp::create(b, arith::CmpFPredicate::OLE,
                                                db[2 * nn], nm.c(delta));
        Scalars next(db.begin(), db.begin() + nn);
        next.push_back(nm.mul(args[nn], nm.c(2.0)));
        next.push_back(arith::AddIOp::create(b, args[nn + 1], i32(nm, 1)));
        next.push_back(nm.andI(args[nn + 2], converged));
        return next;
      });

  // log(I + X) ≈ Σ_j w_j X (I + x_j X)⁻¹ (Gauss–Legendre on [0, 1]); one
  // solve per node in an scf.for, the node picked by a select chain.
  ImplicitLocOpBuilder &b = m.builder();
  ValueRange root = ValueRange(roots).take_front(nn);
  Scalars x = mb.addDiag(root, m.c(-1.0));
  Value ok = m.andI(roots[nn + 2], m.lt(mb.norm1(x), m.c(theta * 1.0000001)));
  SmallVector<double> nodes, weights;
  gaussLegendre(order, nodes, weights);
  Scalars sum = buildFor(
      m, arith::ConstantIndexOp::create(b, order), mb.identity(0.0),
      [&](ScalarBuilder &nm, Value iv, ValueRange acc) -> Scalars {
        ImplicitLocOpBuilder &nb = nm.builder();
        Value node = nm.c(nodes[0]), weight = nm.c(weights[0]);
        for (unsigned j = 1; j < order; ++j) {
          Value is =
              arith::CmpIOp::create(nb, arith::CmpIPredicate::eq, iv,
                                    arith::ConstantIndexOp::create(nb, j));
          node = nm.select(is, nm.c(nodes[j]), node);
          weight = nm.select(is, nm.c(weights[j]), weight);
        }
        MatrixBuilder w(nm, n);
        Scalars term = w.solve(w.addDiag(w.scale(x, node), nm.c(1.0)), x);
        Scalars r;
        for (auto [t, s] : llvm::zip(term, acc))
          r.push_back(nm.fma(weight, t, s));
        return r;
      });

  // The NaN policy: no real principal log (eigenvalue ≤ 0 makes
  // Denman–Beavers diverge or divide by zero) → NaN in every entry.
  Value nan = m.c(std::numeric_limits<double>::quiet_NaN());
  Scalars result;
  for (Value v : sum)
    result.push_back(m.select(ok, m.mul(roots[nn], v), nan));
  return result;
}
