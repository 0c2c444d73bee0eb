//===- AffineExtension.cpp - Translations over a rotation-type group ------===//
//
// G ⋉ ℝᵐ for a linear group G ⊂ GL(m) whose algebra elements L satisfy
// L³ = −θ²L (so(2), so(3), and se(2) written as 3×3 matrices): elements
// [[A, t], [0, 1]] ((m+1)×(m+1)), A ∈ G. Not a built-in keyword: it hosts
// declared groups (GroupStructure.h) such as the 2-D Galilean group, whose
// linear part [[R, v], [0, 1]] (rotation and boosts) is an SE(2) element
// acting on (x, y, t), with translations in space and time.
//
// Coordinates: G's (w, in its model's basis) then ρ ∈ ℝᵐ; blocks: G's,
// then "trans<m>". With L = hat_G(w) and θ² = ‖w_rot‖² (G's first block):
//   log  w = log_G(A), ρ = ψ(L)t,  ψ(L) = I − ½L + c(θ)L²,
//        c = θ⁻²(1 − (θ/2)cot(θ/2))  (series 1/12 + θ²/720 + θ⁴/30240);
//   exp  A = exp_G(w), t = φ(L)ρ,  φ(L) = I + a(θ)L + b(θ)L²,
//        a = (1 − cos θ)/θ² = ½(sin(θ/2)/(θ/2))², b = (θ − sin θ)/θ³
//        (series ½ − θ²/24 + θ⁴/720 and 1/6 − θ²/120 + θ⁴/5040).
// Both follow from L³ = −θ²L: every power series f(L) is
// f(0)I + αL + βL², as SE(3)'s V and V⁻¹; both models build c, a and b
// with the same helpers and cut-off (Series.h), and at θ = π c = 1/π²
// stays smooth.
// When G's rotation block is one coordinate (so(2), se(2)) θ is that
// coordinate (a, b, c are even), so no square root enters the derivatives.
//
// inverse: [[A⁻¹, −A⁻¹t], [0, 1]] with G's inverse. The pair form is the
// default (a⁻¹ per query, compose and log per pair): straight-line.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/GroupStructure.h"
#include "dialects/Lie/IR/Groups/Groups.h"
#include "dialects/Lie/IR/Groups/Series.h"

#include <cmath>
#include <string>
#include <vector>

using namespace mlir;
using namespace torsor::lie;

namespace {

class AffineExtensionModel final : public GroupModel {
public:
  /// `host` with its algebra `basis` (m×m each).
  AffineExtensionModel(std::string name, const GroupModel &host,
                       const algebra::BuiltinAlgebra &basis)
      : name(std::move(name)), host(host), basis(basis),
        m(host.getMatrixSize()), kH(host.getAlgebraDim()) {
    for (const AlgebraBlock &b : host.getBlocks())
      blocks.push_back(b);
    blockName = "trans" + std::to_string(m);
    blocks.push_back({blockName, kH, m});
  }

  StringRef getName() const override { return name; }
  StringRef getDisplayName() const override { return name; }
  unsigned getMatrixSize() const override { return m + 1; }
  unsigned getAlgebraDim() const override { return kH + m; }
  unsigned getPointDim() const override { return m; }
  ArrayRef<AlgebraBlock> getBlocks() const override { return blocks; }
  bool isInsideChart(ArrayRef<double> v) const override {
    return host.isInsideChart(v.take_front(kH));
  }

  Scalars buildInverse(ScalarBuilder &b, ValueRange g) const override {
    Scalars ai = host.buildInverse(b, linear(g));
    Scalars t = apply(b, ai, translation(g));
    for (Value &x : t)
      x = b.neg(x);
    return element(b, ai, t);
  }

  Scalars buildLog(ScalarBuilder &b, ValueRange g) const override {
    Scalars w = host.buildLog(b, linear(g));
    Scalars lm = hat(b, w);
    Value theta2, theta;
    angle(b, w, theta2, theta);
    Value c = series::inverseVCoefficient(b, theta, theta2, small(b, theta));
    // ρ = t − ½Lt + c·L(Lt).
    Scalars t = translation(g);
    Scalars lt = apply(b, lm, t);
    Scalars llt = apply(b, lm, lt);
    Scalars v(w.begin(), w.end());
    for (unsigned i = 0; i < m; ++i)
      v.push_back(b.fma(c, llt[i], b.fma(b.c(-0.5), lt[i], t[i])));
    return v;
  }

  Scalars buildExp(ScalarBuilder &b, ValueRange v) const override {
    ValueRange w = v.take_front(kH), rho = v.drop_front(kH);
    Scalars a = host.buildExp(b, w);
    Scalars lm = hat(b, w);
    Value theta2, theta;
    angle(b, w, theta2, theta);
    auto [ca, cb] = series::expVCoefficients(b, theta, theta2, small(b, theta));
    // t = ρ + a·Lρ + b·L(Lρ).
    Scalars lr = apply(b, lm, rho);
    Scalars llr = apply(b, lm, lr);
    Scalars t(m);
    for (unsigned i = 0; i < m; ++i)
      t[i] = b.fma(cb, llr[i], b.fma(ca, lr[i], rho[i]));
    return element(b, a, t);
  }

private:
  /// Whether |θ| is below SE(3)'s series cut-off (θ is signed for SO(2)).
  static Value small(ScalarBuilder &b, Value theta) {
    return b.lt(b.abs(theta), b.c(series::rotationSmallAngle(b)));
  }

  Scalars linear(ValueRange g) const {
    Scalars a(m * m);
    for (unsigned i = 0; i < m; ++i)
      for (unsigned j = 0; j < m; ++j)
        a[i * m + j] = g[i * (m + 1) + j];
    return a;
  }

  Scalars translation(ValueRange g) const {
    Scalars t(m);
    for (unsigned i = 0; i < m; ++i)
      t[i] = g[i * (m + 1) + m];
    return t;
  }

  Scalars element(ScalarBuilder &b, ValueRange a, ValueRange t) const {
    unsigned n = m + 1;
    Scalars g(n * n);
    for (unsigned i = 0; i < m; ++i) {
      for (unsigned j = 0; j < m; ++j)
        g[i * n + j] = a[i * m + j];
      g[i * n + m] = t[i];
    }
    for (unsigned j = 0; j < n; ++j)
      g[m * n + j] = b.c(j == m ? 1.0 : 0.0);
    return g;
  }

  /// L = Σ_i w_i B_i (m×m), without the products by 0 and ±1.
  Scalars hat(ScalarBuilder &b, ValueRange w) const {
    Scalars l(m * m);
    for (unsigned e = 0; e < m * m; ++e) {
      Value acc;
      for (unsigned i = 0; i < kH; ++i) {
        double c = basis.basis[i][e];
        if (c == 0)
          continue;
        Value term = c == 1 ? w[i] : c == -1 ? b.neg(w[i]) : Value();
        acc = !acc   ? (term ? term : b.mul(b.c(c), w[i]))
              : term ? b.add(acc, term)
                     : b.fma(b.c(c), w[i], acc);
      }
      l[e] = acc ? acc : b.c(0.0);
    }
    return l;
  }

  /// L·x for L (m×m) and x (m), skipping L's constant zeros.
  Scalars apply(ScalarBuilder &b, ValueRange l, ValueRange x) const {
    Scalars y(m);
    for (unsigned i = 0; i < m; ++i) {
      Value acc;
      for (unsigned j = 0; j < m; ++j) {
        if (isZero(l[i * m + j]))
          continue;
        acc = acc ? b.fma(l[i * m + j], x[j], acc) : b.mul(l[i * m + j], x[j]);
      }
      y[i] = acc ? acc : b.c(0.0);
    }
    return y;
  }

  /// Whether `v` is the constant 0 this file's hat() writes.
  static bool isZero(Value v) {
    auto cst = v.getDefiningOp<arith::ConstantOp>();
    if (!cst)
      return false;
    if (auto f = dyn_cast<FloatAttr>(cst.getValue()))
      return f.getValueAsDouble() == 0;
    if (auto d = dyn_cast<DenseElementsAttr>(cst.getValue()))
      return d.isSplat() && d.getSplatValue<APFloat>().isZero();
    return false;
  }

  /// θ² = ‖w_rot‖² and θ (the rotation coordinate itself when the rotation
  /// block has one: the series and quotients are even in θ).
  void angle(ScalarBuilder &b, ValueRange w, Value &theta2,
             Value &theta) const {
    AlgebraBlock rot = host.getBlocks().front();
    ValueRange wr = w.slice(rot.offset, rot.size);
    theta2 = b.dot(wr, wr);
    theta = rot.size == 1 ? wr[0] : b.sqrt(theta2);
  }

  std::string name, blockName;
  const GroupModel &host;
  const algebra::BuiltinAlgebra &basis;
  unsigned m, kH;
  llvm::SmallVector<AlgebraBlock> blocks;
};

const algebra::BuiltinAlgebra &algebraNamed(llvm::StringRef name) {
  for (const algebra::BuiltinAlgebra &a : algebra::getBuiltinAlgebras())
    if (a.name == name)
      return a;
  llvm_unreachable("no such built-in algebra");
}

} // namespace

const GroupModel &torsor::lie::getSE2TranslationsModel() {
  static const AffineExtensionModel model("se2x", getSE2Model(),
                                          algebraNamed("se2"));
  return model;
}
