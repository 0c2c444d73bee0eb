//===- Derivatives.cpp - Reverse-mode derivatives of group models ---------===//
//
// See Derivatives.h. buildFormulaVJP is a small reverse-mode differentiator
// for the straight-line arith/math IR that ScalarBuilder emits: it builds
// the formula, walks the ops it created backwards and emits each op's
// adjoint with the same ScalarBuilder, so it works on scalars and on
// vectors (one element per lane) alike. Only ops that depend on an input
// are differentiated (activity analysis), so constants and branch
// conditions cost nothing.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Derivatives.h"
#include "dialects/Lie/IR/Groups/ScalarAdjoints.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <limits>

using namespace mlir;
using namespace torsor::lie;

namespace {

/// The adjoint state of one formula.
class Adjoint {
public:
  explicit Adjoint(ScalarBuilder &m) : m(m) {}

  /// Marks `v` active (depends on an input) and finite-safe.
  void addInput(Value v) {
    active.insert(v);
    safe.insert(v);
  }
  /// Forward sweep over one op: activity and finite-safety of its results.
  LogicalResult visitForward(Operation *op);
  /// Adds `contribution` to the adjoint of `v` when `v` is active.
  void accumulate(Value v, Value contribution) {
    if (!active.contains(v))
      return;
    auto it = adj.find(v);
    if (it == adj.end())
      adj[v] = contribution;
    else
      it->second = m.add(it->second, contribution);
  }
  /// Emits the adjoint of `op` (reverse sweep).
  LogicalResult visitReverse(Operation *op);
  /// The adjoint of `v` (0 when nothing reached it).
  Value get(Value v) {
    auto it = adj.find(v);
    return it == adj.end() ? m.c(0.0) : it->second;
  }

private:
  /// ȳ·d, with d replaced by 0 where it is not finite when `guard`.
  Value scale(Value ybar, Value d, bool guard) {
    if (guard) {
      Value inf = m.c(std::numeric_limits<double>::infinity());
      d = m.select(m.lt(m.abs(d), inf), d, m.c(0.0));
    }
    return m.mul(ybar, d);
  }
  /// Whether a partial built from `vs` may be non-finite.
  bool unsafe(std::initializer_list<Value> vs) {
    for (Value v : vs)
      if (!safe.contains(v))
        return true;
    return false;
  }

  ScalarBuilder &m;
  llvm::DenseSet<Value> active, safe;
  llvm::DenseMap<Value, Value> adj;
};

/// Whether `op` produces finite results from finite operands.
bool keepsFinite(Operation *op) {
  return isa<arith::ConstantOp, arith::AddFOp, arith::SubFOp, arith::MulFOp,
             arith::NegFOp, math::FmaOp, math::AbsFOp, math::SinOp, math::CosOp,
             math::Atan2Op, math::CopySignOp, arith::MaximumFOp,
             arith::MinimumFOp, arith::SelectOp>(op);
}

LogicalResult Adjoint::visitForward(Operation *op) {
  if (op->getNumRegions() != 0)
    return failure(); // loops: no adjoint (the caller reports it)
  bool anyActive = false, allSafe = keepsFinite(op);
  for (Value operand : op->getOperands()) {
    if (!isa<FloatType, VectorType>(operand.getType()))
      continue; // conditions, indices
    if (auto vt = dyn_cast<VectorType>(operand.getType()))
      if (!isa<FloatType>(vt.getElementType()))
        continue;
    anyActive |= active.contains(operand);
    allSafe &= safe.contains(operand) || isa<arith::SelectOp>(op);
  }
  // A select is as safe as both its sides.
  if (auto sel = dyn_cast<arith::SelectOp>(op))
    allSafe =
        safe.contains(sel.getTrueValue()) && safe.contains(sel.getFalseValue());
  for (Value result : op->getResults()) {
    if (anyActive)
      active.insert(result);
    if (allSafe)
      safe.insert(result);
  }
  return success();
}

LogicalResult Adjoint::visitReverse(Operation *op) {
  if (op->getNumResults() != 1 || !active.contains(op->getResult(0)))
    return success();
  Value y = op->getResult(0);
  auto it = adj.find(y);
  if (it == adj.end())
    return success();
  Value ybar = it->second;
  if (isa<arith::ConstantOp>(op))
    return success(); // Nothing flows into a constant.
  // The local partials from the table the compiler's VJP rules share
  // (ScalarAdjoints.h); a scale that can be non-finite is guarded.
  SmallVector<ScalarPartial, 3> partials;
  if (!buildScalarPartials(m.builder(), m.builder().getLoc(), op, partials))
    return failure(); // no adjoint rule (the caller reports it)
  for (auto [i, p] : llvm::enumerate(partials)) {
    Value x = op->getOperand(i);
    switch (p.kind) {
    case ScalarPartial::None:
      break;
    case ScalarPartial::Same:
      accumulate(x, ybar);
      break;
    case ScalarPartial::Negated:
      accumulate(x, m.neg(ybar));
      break;
    case ScalarPartial::Scaled:
      accumulate(
          x, scale(ybar, p.value, p.unbounded || (p.from && unsafe({p.from}))));
      break;
    case ScalarPartial::Where:
      accumulate(x, m.select(p.value, ybar, m.c(0.0)));
      break;
    case ScalarPartial::WhereNot:
      accumulate(x, m.select(p.value, m.c(0.0), ybar));
      break;
    }
  }
  return success();
}

} // namespace

FailureOr<Scalars> torsor::lie::buildFormulaVJP(ScalarBuilder &m,
                                                ValueRange inputs,
                                                ValueRange cotangents,
                                                Formula f, Scalars *results) {
  ImplicitLocOpBuilder &b = m.builder();
  Block *block = b.getInsertionBlock();
  Block::iterator point = b.getInsertionPoint();
  Operation *before = point == block->begin() ? nullptr : &*std::prev(point);
  Scalars outputs = f(m, inputs);
  assert(outputs.size() == cotangents.size() && "one cotangent per result");
  if (results)
    *results = outputs;
  Operation *end =
      b.getInsertionPoint() == block->end() ? nullptr : &*b.getInsertionPoint();

  // The ops f created, in order.
  SmallVector<Operation *> ops;
  for (Operation *op = before ? before->getNextNode() : &block->front();
       op && op != end; op = op->getNextNode())
    ops.push_back(op);

  Adjoint adjoint(m);
  for (Value x : inputs)
    adjoint.addInput(x);
  for (Operation *op : ops)
    if (failed(adjoint.visitForward(op)))
      return failure();
  for (auto [y, ybar] : llvm::zip_equal(outputs, cotangents))
    adjoint.accumulate(y, ybar);
  for (Operation *op : llvm::reverse(ops))
    if (failed(adjoint.visitReverse(op)))
      return failure();
  Scalars grads;
  for (Value x : inputs)
    grads.push_back(adjoint.get(x));
  return grads;
}

//===----------------------------------------------------------------------===//
// Tangent spaces
//===----------------------------------------------------------------------===//

Scalars GroupModel::buildTangentPullback(ScalarBuilder &m,
                                         ValueRange entries) const {
  // ⟨Ē, d/dδ exp(δ)|₀ e_k⟩: the adjoint of the model's own exp at 0, whose
  // series branch has the exact derivative there.
  Scalars zero; // distinct values: each is an input of its own
  for (unsigned i = 0; i < getAlgebraDim(); ++i)
    zero.push_back(m.c(0.0));
  FailureOr<Scalars> grads =
      buildFormulaVJP(m, zero, entries, [&](ScalarBuilder &sm, ValueRange v) {
        return buildExp(sm, v);
      });
  assert(succeeded(grads) && "straight-line exp expected; override this");
  return *grads;
}

Scalars GroupModel::buildAlgebraCotangent(ScalarBuilder &m,
                                          ValueRange c) const {
  // The adjoint of log at the identity: log(I + H) = vee(H) + O(‖H‖²).
  Scalars identity;
  for (double x : getIdentity())
    identity.push_back(m.c(x));
  FailureOr<Scalars> entries =
      buildFormulaVJP(m, identity, c, [&](ScalarBuilder &sm, ValueRange g) {
        return buildLog(sm, g);
      });
  assert(succeeded(entries) && "straight-line log expected; override this");
  return *entries;
}

Scalars torsor::lie::buildTangentPullback(const GroupModel &model,
                                          ScalarBuilder &m,
                                          ValueRange entries) {
  return model.buildTangentPullback(m, entries);
}

Scalars torsor::lie::buildAlgebraCotangent(const GroupModel &model,
                                           ScalarBuilder &m, ValueRange c) {
  return model.buildAlgebraCotangent(m, c);
}

/// Row-major aᵀ·b of n×n matrices.
static Scalars transposeTimes(ScalarBuilder &m, unsigned n, ValueRange a,
                              ValueRange b) {
  Scalars c(n * n);
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j) {
      Value acc = m.mul(a[i], b[j]);
      for (unsigned k = 1; k < n; ++k)
        acc = m.fma(a[k * n + i], b[k * n + j], acc);
      c[i * n + j] = acc;
    }
  return c;
}

Scalars torsor::lie::buildLeftTrivialGradient(const GroupModel &model,
                                              ScalarBuilder &m, ValueRange g,
                                              ValueRange gbar) {
  return model.buildTangentPullback(
      m, transposeTimes(m, model.getMatrixSize(), g, gbar));
}

Scalars torsor::lie::buildGroupCotangent(const GroupModel &model,
                                         ScalarBuilder &m, ValueRange y,
                                         ValueRange ybar) {
  // (y⁻¹)ᵀ·C: the transpose of y⁻¹ times C.
  unsigned n = model.getMatrixSize();
  Scalars inv = model.buildInverse(m, y);
  Scalars c = model.buildAlgebraCotangent(m, ybar);
  Scalars out(n * n);
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j) {
      Value acc = m.mul(inv[i], c[j]);
      for (unsigned k = 1; k < n; ++k)
        acc = m.fma(inv[k * n + i], c[k * n + j], acc);
      out[i * n + j] = acc;
    }
  return out;
}

//===----------------------------------------------------------------------===//
// Pullbacks of the lie ops
//===----------------------------------------------------------------------===//

unsigned torsor::lie::getPullbackArity(PullbackKind kind) {
  switch (kind) {
  case PullbackKind::Compose:
  case PullbackKind::Act:
  case PullbackKind::Dist2:
    return 2;
  default:
    return 1;
  }
}

bool torsor::lie::isGroupOperand(PullbackKind kind, unsigned index) {
  switch (kind) {
  case PullbackKind::Exp:
    return false;
  case PullbackKind::Act:
    return index == 0;
  default:
    return true;
  }
}

bool torsor::lie::hasGroupResult(PullbackKind kind) {
  return kind == PullbackKind::Compose || kind == PullbackKind::Inverse ||
         kind == PullbackKind::Exp;
}

FailureOr<Scalars> torsor::lie::buildPullback(const GroupModel &model,
                                              ScalarBuilder &m,
                                              PullbackKind kind,
                                              ArrayRef<Scalars> operands,
                                              ValueRange cotangent,
                                              unsigned wrt, ValueRange lambda) {
  // The forward op on entries/coordinates.
  auto forward = [&](ScalarBuilder &sm, ArrayRef<Scalars> in) -> Scalars {
    switch (kind) {
    case PullbackKind::Compose:
      return model.buildCompose(sm, in[0], in[1]);
    case PullbackKind::Inverse:
      return model.buildInverse(sm, in[0]);
    case PullbackKind::Log:
      return model.buildLog(sm, in[0]);
    case PullbackKind::Exp:
      return model.buildExp(sm, in[0]);
    case PullbackKind::Act:
      return model.buildAct(sm, in[0], in[1]);
    case PullbackKind::Dist2:
      return {model.buildDist2(sm, in[0], in[1], lambda)};
    case PullbackKind::QueryFeatures:
      return model.buildQueryFeatures(sm, in[0]);
    case PullbackKind::KeyFeatures:
      return model.buildKeyFeatures(sm, in[0]);
    case PullbackKind::LeftTrivialize:
      return Scalars(in[0].begin(), in[0].end());
    }
    llvm_unreachable("unknown pullback kind");
  };

  if (kind == PullbackKind::LeftTrivialize)
    return buildLeftTrivialGradient(model, m, operands[0], cotangent);

  // A model whose log builds loops gives the log's derivative itself
  // (J_r⁻ᵀ, buildLogLeftGradient); the straight-line rest is differentiated
  // formula by formula as below.
  if (kind == PullbackKind::Log || kind == PullbackKind::Dist2) {
    bool isLog = kind == PullbackKind::Log;
    // dist2(a, b) = ‖log(a⁻¹·b)‖²_λ (GroupModel::buildDist2).
    auto relative = [&](ScalarBuilder &sm, ArrayRef<Scalars> in) -> Scalars {
      if (isLog)
        return in[0];
      return model.buildCompose(sm, model.buildInverse(sm, in[0]), in[1]);
    };
    Scalars rel = relative(m, operands);
    Scalars w = model.buildLog(m, rel);
    Scalars wbar(cotangent.begin(), cotangent.end());
    if (!isLog) {
      FailureOr<Scalars> norm = buildFormulaVJP(
          m, w, cotangent, [&](ScalarBuilder &sm, ValueRange ws) {
            return Scalars{model.buildWeightedNorm2(sm, ws, lambda)};
          });
      if (failed(norm))
        return failure();
      wbar = *norm;
    }
    if (std::optional<Scalars> eta = model.buildLogLeftGradient(m, w, wbar)) {
      Scalars relBar = buildGroupCotangent(model, m, rel, *eta);
      Scalars x = operands[wrt];
      if (isLog)
        return relBar;
      FailureOr<Scalars> grad =
          buildFormulaVJP(m, x, relBar, [&](ScalarBuilder &sm, ValueRange xs) {
            SmallVector<Scalars> in(operands.begin(), operands.end());
            in[wrt] = Scalars(xs.begin(), xs.end());
            return relative(sm, in);
          });
      if (failed(grad))
        return failure();
      return buildGroupCotangent(model, m, x,
                                 buildLeftTrivialGradient(model, m, x, *grad));
    }
  }

  // A model whose exp builds loops gives exp's derivative itself:
  // J_r(v)ᵀη of the output's left-trivialised cotangent η.
  if (kind == PullbackKind::Exp) {
    Scalars y = model.buildExp(m, operands[0]);
    Scalars eta = buildLeftTrivialGradient(model, m, y, cotangent);
    if (std::optional<Scalars> grad =
            model.buildExpLeftGradient(m, operands[0], eta))
      return *grad;
  }

  // A group result's ambient cotangent, projected: Ȳ ↦ η ↦ y⁻ᵀC(η).
  Scalars seed(cotangent.begin(), cotangent.end());
  if (hasGroupResult(kind)) {
    Scalars y = forward(m, operands);
    seed = buildGroupCotangent(
        model, m, y, buildLeftTrivialGradient(model, m, y, cotangent));
  }

  // Differentiate with respect to operand `wrt` only; the others are
  // constants of the formula.
  Scalars x = operands[wrt];
  FailureOr<Scalars> grad =
      buildFormulaVJP(m, x, seed, [&](ScalarBuilder &sm, ValueRange xs) {
        SmallVector<Scalars> in(operands.begin(), operands.end());
        in[wrt] = Scalars(xs.begin(), xs.end());
        return forward(sm, in);
      });
  if (failed(grad))
    return failure();
  if (isGroupOperand(kind, wrt))
    return buildGroupCotangent(model, m, x,
                               buildLeftTrivialGradient(model, m, x, *grad));
  return *grad;
}

/// The VJP of the default pair form N_b = Σ_{k∈b} w_k², w = log(q·k), for
/// a model whose log builds loops (GroupModel::hasStraightLinePairForm):
/// the log's derivative is the model's J_r(w)⁻ᵀ (buildLogLeftGradient),
/// the straight-line rest (the block norms, the product q·k) is
/// differentiated formula by formula, as lie.dist2's pullback does.
static FailureOr<std::pair<Scalars, Scalars>>
buildLoopPairBlockNormsVJP(const GroupModel &model, ScalarBuilder &m,
                           ValueRange q, ValueRange k, ValueRange normBars,
                           Scalars *norms, ValueRange pairLog) {
  Scalars rel = model.buildCompose(m, q, k);
  Scalars w = pairLog.empty() ? model.buildLog(m, rel)
                              : Scalars(pairLog.begin(), pairLog.end());
  FailureOr<Scalars> wbar = buildFormulaVJP(
      m, w, normBars,
      [&](ScalarBuilder &sm, ValueRange ws) {
        return model.buildBlockNorms(sm, ws);
      },
      norms);
  if (failed(wbar))
    return failure();
  std::optional<Scalars> eta = model.buildLogLeftGradient(m, w, *wbar);
  if (!eta)
    return failure();
  // rel's canonical ambient cotangent, then the product's adjoint.
  Scalars relBar = buildGroupCotangent(model, m, rel, *eta);
  Scalars both(q.begin(), q.end());
  both.append(k.begin(), k.end());
  unsigned nq = q.size();
  FailureOr<Scalars> grads =
      buildFormulaVJP(m, both, relBar, [&](ScalarBuilder &sm, ValueRange xs) {
        return model.buildCompose(sm, xs.take_front(nq), xs.drop_front(nq));
      });
  if (failed(grads))
    return failure();
  return std::make_pair(Scalars(grads->begin(), grads->begin() + nq),
                        Scalars(grads->begin() + nq, grads->end()));
}

Scalars torsor::lie::buildPairLog(const GroupModel &model, ScalarBuilder &m,
                                  ValueRange q, ValueRange k) {
  if (model.hasStraightLinePairForm())
    return {};
  return model.buildLog(m, model.buildCompose(m, q, k));
}

FailureOr<std::pair<Scalars, Scalars>> torsor::lie::buildPairBlockNormsVJP(
    const GroupModel &model, ScalarBuilder &m, ValueRange q, ValueRange k,
    ValueRange normBars, Scalars *norms, ValueRange pairLog) {
  if (!model.hasStraightLinePairForm())
    return buildLoopPairBlockNormsVJP(model, m, q, k, normBars, norms, pairLog);
  if (std::optional<std::pair<Scalars, Scalars>> grads =
          model.buildPairBlockNormsAdjoint(m, q, k, normBars)) {
    if (norms)
      *norms = model.buildPairBlockNorms(m, q, k);
    return *grads;
  }
  Scalars both(q.begin(), q.end());
  both.append(k.begin(), k.end());
  unsigned nq = q.size();
  FailureOr<Scalars> grads = buildFormulaVJP(
      m, both, normBars,
      [&](ScalarBuilder &sm, ValueRange xs) {
        return model.buildPairBlockNorms(sm, xs.take_front(nq),
                                         xs.drop_front(nq));
      },
      norms);
  if (failed(grads))
    return failure();
  return std::make_pair(Scalars(grads->begin(), grads->begin() + nq),
                        Scalars(grads->begin() + nq, grads->end()));
}
