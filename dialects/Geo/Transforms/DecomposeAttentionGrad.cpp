//===- DecomposeAttentionGrad.cpp - Flash backward to vector loops --------===//
//
// geo-decompose-attention-grad: lowers geo.flash_lie_attention_grad to two
// parallel loops over vectors (FlashAttention-2's backward, atomics-free):
//
//   pass A, over (batch element, query tile of R rows) (torsor.parallel):
//     D_i = ⟨dO_i, O_i⟩ per head;
//     stats: lse_i per head from the op's lse operand (the fused
//       forward's) or, without one, a recompute of the scores: per-lane
//       sums of exp(s) when every λ ≥ 0 (scores ≤ 0, row max 0), else a
//       running max and per-lane sums as the forward's online softmax;
//     grads: per key vector, P = exp(s − lse), dP = dO_i·v_j (lanes over
//       keys, values read feature-major), dS = P (dP − D), n̄_b = Σ_h dS c_hb,
//       and the adjoint of the group model's pair form gives dq_i;
//     lse_i and D_i are stored: 2·heads scalars per row.
//   pass B, over (batch element, key vector) (torsor.parallel):
//     for every query i that may see them: the same P and dS from the
//     stored lse_i and D_i, dv_j += P dO_i and the pair form's adjoint
//     gives dk_j, both accumulated per lane in registers.
//
// Each pass recomputes the pair block norms from the per-token features,
// so no L × L tensor (scores, probabilities or log coordinates) exists;
// memory beyond the inputs and gradients is O(L·heads) plus the
// feature-major copies of V and dV. The derivative of the pair form is
// buildPairBlockNormsVJP: the adjoint of the same formula the forward
// kernel runs, on vectors (one pair per lane), or, for a pair form that
// builds loops (declared groups' iterative log), per lane with scalar code
// as the forward does, with the log's derivative from the group model.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/LoopAttributes.h"
#include "dialects/Geo/IR/GeoOps.h"
#include "dialects/Geo/Transforms/KernelMath.h"
#include "dialects/Geo/Transforms/Passes.h"
#include "dialects/Lie/IR/GroupModel.h"
#include "dialects/Lie/IR/Groups/Derivatives.h"
#include "dialects/Strategy/IR/Strategy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

namespace torsor::geo {
#define GEN_PASS_DEF_GEODECOMPOSEATTENTIONGRAD
#include "dialects/Geo/Transforms/Passes.h.inc"
} // namespace torsor::geo

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using torsor::lie::GroupModel;
using torsor::lie::ScalarBuilder;
using torsor::lie::Scalars;

namespace {

/// Builds the backward kernel of one flash_lie_attention_grad. Both
/// passes run over (batch element, tile) pairs: one flat loop whose index
/// is delinearised into the batch indices (row-major), so that no reshape
/// of the operands is needed.
class GradKernel {
public:
  GradKernel(FlashLieAttentionGradOp op, strategy::VectorAttentionAttr strategy)
      : op(op), model(op.getGroup().getModel()) {
    auto vType = cast<RankedTensorType>(op.getValues().getType());
    elt = cast<FloatType>(vType.getElementType());
    dim = vType.getShape().back();
    heads = op.getHeads();
    headDim = dim / heads;
    lanes = strategy.getLanes();
    // Rows share key loads; a pair form that builds loops runs per lane in
    // scalar code, where sharing saves nothing and every row would repeat
    // that code (compile time).
    rows = model.hasStraightLinePairForm() ? strategy.getQueryRows() : 1;
    blocks = model.getBlocks().size();
    for (int64_t h = 0; h < heads; ++h)
      for (unsigned b = 0; b < blocks; ++b)
        coef.push_back(-op.getLambda()[h * blocks + b] / op.getTau()[h]);
    numQ = model.getQueryFeatureCount();
    numK = model.getKeyFeatureCount();
    nonPositiveScores = llvm::all_of(coef, [](double c) { return c <= 0; });
  }

  /// Builds the kernel before `op`; returns (dq, dkᵀ, dv).
  FailureOr<SmallVector<Value>> build(ImplicitLocOpBuilder &b);

private:
  VectorType vec() const { return VectorType::get({lanes}, elt); }
  Value idx(ImplicitLocOpBuilder &b, int64_t i) {
    return arith::ConstantIndexOp::create(b, i);
  }
  /// `batch` followed by i and j: the indices of an element.
  static SmallVector<Value> indices(ValueRange batch, Value i, Value j) {
    SmallVector<Value> all(batch);
    all.append({i, j});
    return all;
  }
  /// Element [batch..., i, j] of an operand.
  Value at(ImplicitLocOpBuilder &b, Value t, ValueRange batch, Value i,
           Value j) {
    return tensor::ExtractOp::create(b, t, indices(batch, i, j));
  }
  /// Masked vector load of row `r` of a feature-major [batch... x F x L]
  /// tensor at keys [j0, j0 + lanes) of one batch element, zero past the
  /// end.
  Value loadKeys(ImplicitLocOpBuilder &b, Value t, ValueRange batch, int64_t r,
                 Value j0) {
    ScalarBuilder sm(b, elt);
    return vector::TransferReadOp::create(b, vec(), t,
                                          indices(batch, idx(b, r), j0),
                                          sm.c(0.0), ArrayRef<bool>{false});
  }
  /// Splits a flat loop index `t` over (batch element, `inner`) into the
  /// batch indices (row-major over the batch dims) and the inner index.
  std::pair<SmallVector<Value>, Value> delinearize(ImplicitLocOpBuilder &b,
                                                   Value t, Value inner) {
    Value rest = arith::DivUIOp::create(b, t, inner);
    Value in = arith::RemUIOp::create(b, t, inner);
    SmallVector<Value> batch(batchDims.size());
    for (int d = batchDims.size() - 1; d >= 0; --d) {
      batch[d] = arith::RemUIOp::create(b, rest, batchDims[d]);
      rest = arith::DivUIOp::create(b, rest, batchDims[d]);
    }
    return {batch, in};
  }
  /// Lanes j0 + l < end (and ≤ last when given) as a vector<lanes x i1>.
  Value laneMask(ImplicitLocOpBuilder &b, Value j0, Value end,
                 Value last = Value()) {
    VectorType iv = VectorType::get({lanes}, b.getIndexType());
    // The lane offsets as a constant rather than vector.step, which has no
    // lowering inside GPU kernels (convert-gpu-to-nvvm).
    SmallVector<APInt> offsets;
    for (int64_t l = 0; l < lanes; ++l)
      offsets.push_back(APInt(64, l));
    Value step = arith::ConstantOp::create(
        b, iv, DenseElementsAttr::get(iv, ArrayRef<APInt>(offsets)));
    Value lane =
        arith::AddIOp::create(b, step, vector::BroadcastOp::create(b, iv, j0));
    Value ok = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                     vector::BroadcastOp::create(b, iv, end));
    if (last)
      ok = arith::AndIOp::create(
          b, ok,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ule, lane,
                                vector::BroadcastOp::create(b, iv, last)));
    return ok;
  }
  /// Scores of every head from block norms: s_h = Σ_b c_hb N_b.
  SmallVector<Value> scores(ScalarBuilder &vm, ArrayRef<Value> norms) {
    SmallVector<Value> s;
    for (int64_t h = 0; h < heads; ++h) {
      Value acc = vm.mul(vm.c(coef[h * blocks]), norms[0]);
      for (unsigned bl = 1; bl < blocks; ++bl)
        acc = vm.fma(vm.c(coef[h * blocks + bl]), norms[bl], acc);
      s.push_back(acc);
    }
    return s;
  }
  /// n̄_b = Σ_h dS_h c_hb.
  SmallVector<Value> normBars(ScalarBuilder &vm, ArrayRef<Value> ds) {
    SmallVector<Value> nbar;
    for (unsigned bl = 0; bl < blocks; ++bl) {
      Value acc = vm.mul(vm.c(coef[bl]), ds[0]);
      for (int64_t h = 1; h < heads; ++h)
        acc = vm.fma(vm.c(coef[h * blocks + bl]), ds[h], acc);
      nbar.push_back(acc);
    }
    return nbar;
  }
  /// The private function that evaluates one pair in scalar code, for a
  /// pair form that builds loops: (q, k) → (N, w) with w the pair's log
  /// coordinates, or with `vjp` (q, k, w, n̄) → (q̄, k̄). One per group and
  /// element type in the module, so that the log's loops are emitted once,
  /// not at every call site; the adjoint reuses w instead of a second log.
  func::FuncOp pairFunction(bool vjp);
  /// The pair block norms of queries `q` (splats) against `keys`, one pair
  /// per lane.
  Scalars pairNorms(ScalarBuilder &vm, ValueRange q, ValueRange keys);
  /// Their VJP (q̄, k̄) for cotangents `nbar`, zero in lanes off `mask`.
  FailureOr<std::pair<Scalars, Scalars>>
  pairNormsVJP(ScalarBuilder &vm, ValueRange q, ValueRange keys,
               ValueRange nbar, Value mask);
  /// Pass A over batch elements × `count` query tiles of `tileRows` rows
  /// starting at row `first`; carries (dq, lse, dsum).
  SmallVector<Value> buildPassA(ImplicitLocOpBuilder &b, ValueRange state,
                                Value first, Value count, int64_t tileRows);
  /// One pass-A tile at row `row0` of batch element `batch`.
  SmallVector<Value> passATile(ImplicitLocOpBuilder &b, ValueRange state,
                               ValueRange batch, Value row0, int64_t tileRows);
  /// Pass B over batch elements × key vectors; carries (dkT, dvT).
  SmallVector<Value> buildPassB(ImplicitLocOpBuilder &b, ValueRange state,
                                Value lse, Value dsum);

  FlashLieAttentionGradOp op;
  const GroupModel &model;
  FloatType elt;
  int64_t dim, heads, headDim, lanes, rows;
  unsigned blocks, numQ, numK;
  SmallVector<double> coef; // [h][block]
  /// Every c_hb ≤ 0 (λ ≥ 0, τ > 0): scores are ≤ 0, and the self pair,
  /// always visible (also when causal), scores 0, so every row's max
  /// score is 0 and the statistics need no running max.
  bool nonPositiveScores = false;
  // Built in build(): the operands, the batch extents, their product,
  // the sequence length and the values feature-major.
  Value queries, keys, values, out, outGrad, givenLse;
  SmallVector<Value> batchDims;
  Value batches, len, valuesT;
  bool failedVJP = false;
  /// The last per-lane pairNorms: its query and key features and the
  /// pairs' log coordinates (vectors), for the pairNormsVJP that follows.
  struct {
    Value query, key;
    SmallVector<Value> logs;
  } lastPair;

public:
  /// The functions pairFunction created (the pass approximates their f32
  /// math as the kernel's).
  SmallVector<func::FuncOp> outlined;
};

func::FuncOp GradKernel::pairFunction(bool vjp) {
  auto module = op->getParentOfType<ModuleOp>();
  std::string name =
      llvm::formatv("torsor_pair_{0}_{1}_f{2}_{3:x}",
                    vjp ? "norms_vjp" : "norms", model.getName(),
                    elt.getWidth(),
                    llvm::hash_value(op.getGroup().getAsOpaquePointer()))
          .str();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  unsigned dimW = model.getAlgebraDim();
  unsigned numIn = numQ + numK + (vjp ? dimW + blocks : 0);
  unsigned numOut = vjp ? numQ + numK : blocks + dimW;
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto fn =
      func::FuncOp::create(mb, op.getLoc(), name,
                           mb.getFunctionType(SmallVector<Type>(numIn, elt),
                                              SmallVector<Type>(numOut, elt)));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  auto fb = ImplicitLocOpBuilder::atBlockEnd(op.getLoc(), entry);
  ScalarBuilder sm(fb, elt);
  ValueRange args = entry->getArguments();
  ValueRange q = args.take_front(numQ), k = args.slice(numQ, numK);
  SmallVector<Value> results;
  if (!vjp) {
    Scalars w = lie::buildPairLog(model, sm, q, k);
    Scalars norms = model.buildBlockNorms(sm, w);
    results.assign(norms.begin(), norms.end());
    results.append(w.begin(), w.end());
  } else if (auto grads = lie::buildPairBlockNormsVJP(
                 model, sm, q, k, args.drop_front(numQ + numK + dimW),
                 /*norms=*/nullptr, args.slice(numQ + numK, dimW));
             succeeded(grads)) {
    results.append(grads->first.begin(), grads->first.end());
    results.append(grads->second.begin(), grads->second.end());
  } else {
    failedVJP = true;
    results.assign(numOut, sm.c(0.0));
  }
  func::ReturnOp::create(fb, results);
  outlined.push_back(fn);
  return fn;
}

/// Lane `lane` of every vector in `vs`.
static SmallVector<Value> laneOf(ImplicitLocOpBuilder &b, ValueRange vs,
                                 Value lane) {
  SmallVector<Value> out;
  for (Value v : vs)
    out.push_back(
        vector::ExtractOp::create(b, v, ArrayRef<OpFoldResult>{lane}));
  return out;
}

Scalars GradKernel::pairNorms(ScalarBuilder &vm, ValueRange q,
                              ValueRange keys) {
  if (model.hasStraightLinePairForm())
    return model.buildPairBlockNorms(vm, q, keys);
  // Per lane with scalar code, as the forward kernel: the model's pair
  // form builds loops (a declared group's iterative log). The code is
  // one function per kernel, called per pair.
  ImplicitLocOpBuilder &b = vm.builder();
  func::FuncOp fn = pairFunction(/*vjp=*/false);
  SmallVector<Value> init(blocks + model.getAlgebraDim(), vm.c(0.0));
  auto loop = scf::ForOp::create(
      b, idx(b, 0), idx(b, lanes), idx(b, 1), init,
      [&](OpBuilder &nested, Location loc, Value lane, ValueRange norms) {
        ImplicitLocOpBuilder lb(loc, nested);
        SmallVector<Value> in = laneOf(lb, q, lane);
        in.append(laneOf(lb, keys, lane));
        auto call = func::CallOp::create(lb, fn, in);
        SmallVector<Value> next;
        for (auto [norm, vec] : llvm::zip_equal(call.getResults(), norms))
          next.push_back(vector::InsertOp::create(
              lb, norm, vec, ArrayRef<OpFoldResult>{lane}));
        scf::YieldOp::create(lb, next);
      });
  ValueRange results = loop.getResults();
  lastPair.query = q.front();
  lastPair.key = keys.front();
  lastPair.logs.assign(results.begin() + blocks, results.end());
  return Scalars(results.begin(), results.begin() + blocks);
}

FailureOr<std::pair<Scalars, Scalars>>
GradKernel::pairNormsVJP(ScalarBuilder &vm, ValueRange q, ValueRange keys,
                         ValueRange nbar, Value mask) {
  if (model.hasStraightLinePairForm())
    return lie::buildPairBlockNormsVJP(model, vm, q, keys, nbar);
  // Per lane with scalar code: the model's adjoint of its pair form (the
  // log's derivative from the model, Groups/Derivatives.h). Lanes off the
  // mask (past the end, or causally hidden) hold no pair: they are
  // skipped, so that no log of a zero key reaches the sums.
  ImplicitLocOpBuilder &b = vm.builder();
  if (lastPair.query != q.front() || lastPair.key != keys.front())
    (void)pairNorms(vm, q, keys); // the kernel calls pairNorms first
  SmallVector<Value> logs = lastPair.logs;
  func::FuncOp fn = pairFunction(/*vjp=*/true);
  SmallVector<Value> init(numQ + numK, vm.c(0.0));
  auto loop = scf::ForOp::create(
      b, idx(b, 0), idx(b, lanes), idx(b, 1), init,
      [&](OpBuilder &nested, Location loc, Value lane, ValueRange acc) {
        ImplicitLocOpBuilder lb(loc, nested);
        Value valid =
            vector::ExtractOp::create(lb, mask, ArrayRef<OpFoldResult>{lane});
        auto inLane =
            scf::IfOp::create(lb, SmallVector<Type>(numQ + numK, elt), valid,
                              /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard guard(lb);
          lb.setInsertionPointToStart(inLane.thenBlock());
          SmallVector<Value> in = laneOf(lb, q, lane);
          in.append(laneOf(lb, keys, lane));
          in.append(laneOf(lb, logs, lane));
          in.append(laneOf(lb, nbar, lane));
          scf::YieldOp::create(lb,
                               func::CallOp::create(lb, fn, in).getResults());
          lb.setInsertionPointToStart(inLane.elseBlock());
          ScalarBuilder sm(lb, elt);
          scf::YieldOp::create(lb, SmallVector<Value>(numQ + numK, sm.c(0.0)));
        }
        SmallVector<Value> next;
        for (auto [x, vec] : llvm::zip_equal(inLane.getResults(), acc))
          next.push_back(vector::InsertOp::create(
              lb, x, vec, ArrayRef<OpFoldResult>{lane}));
        scf::YieldOp::create(lb, next);
      });
  if (failedVJP)
    return failure();
  ValueRange results = loop.getResults();
  return std::make_pair(Scalars(results.begin(), results.begin() + numQ),
                        Scalars(results.begin() + numQ, results.end()));
}

SmallVector<Value> GradKernel::passATile(ImplicitLocOpBuilder &b,
                                         ValueRange state, ValueRange batch,
                                         Value row0, int64_t tileRows) {
  ScalarBuilder sm(b, elt), vm(b, elt, lanes);
  Value dq = state[0], lse = state[1], dsum = state[2];
  Value negInf = sm.c(-std::numeric_limits<double>::infinity());
  Value zeroIdx = idx(b, 0);
  Value step = idx(b, lanes);

  // Per row: query features (splats), dO (scalars), D per head.
  SmallVector<Value> rowIdx(tileRows);
  SmallVector<Scalars> qSplat(tileRows), dOut(tileRows);
  SmallVector<SmallVector<Value>> dvec(tileRows);
  for (int64_t r = 0; r < tileRows; ++r) {
    rowIdx[r] = arith::AddIOp::create(b, row0, idx(b, r));
    for (unsigned f = 0; f < numQ; ++f)
      qSplat[r].push_back(
          vm.splat(at(b, queries, batch, rowIdx[r], idx(b, f))));
    for (int64_t h = 0; h < heads; ++h) {
      Value acc = sm.c(0.0);
      for (int64_t d = h * headDim; d < (h + 1) * headDim; ++d) {
        Value g = at(b, outGrad, batch, rowIdx[r], idx(b, d));
        Value o = at(b, out, batch, rowIdx[r], idx(b, d));
        dOut[r].push_back(g);
        acc = sm.fma(g, o, acc);
      }
      dvec[r].push_back(acc);
    }
  }
  // Keys the tile's rows may see: [0, end), row r up to `last[r]`.
  Value end = len;
  SmallVector<Value> last(tileRows);
  if (op.getCausal()) {
    end = arith::MinUIOp::create(
        b, len, arith::AddIOp::create(b, row0, idx(b, tileRows)));
    for (int64_t r = 0; r < tileRows; ++r)
      last[r] = rowIdx[r];
  }

  SmallVector<Value> lseRow(tileRows * heads);
  if (givenLse) {
    // The forward's statistics: no recompute.
    for (int64_t r = 0; r < tileRows; ++r)
      for (int64_t h = 0; h < heads; ++h)
        lseRow[r * heads + h] = at(b, givenLse, batch, rowIdx[r], idx(b, h));
  } else {
    // Stats: lse per row and head from a recompute of the scores. Where
    // every score is ≤ 0 (nonPositiveScores) the row max is the self
    // pair's 0, Σ exp(s) ≥ 1 cannot underflow, and per-lane sums of
    // exp(s) suffice. Otherwise a running max (scalar) and per-lane sums,
    // as the forward's online softmax.
    bool knownMax = nonPositiveScores;
    size_t sums = knownMax ? 0 : tileRows * heads;
    SmallVector<Value> init;
    for (size_t i = 0; i < sums; ++i)
      init.push_back(negInf);
    for (int64_t i = 0; i < tileRows * heads; ++i)
      init.push_back(vm.c(0.0));
    auto stats = scf::ForOp::create(
        b, zeroIdx, end, step, init,
        [&](OpBuilder &nested, Location loc, Value j0, ValueRange args) {
          ImplicitLocOpBuilder lb(loc, nested);
          ScalarBuilder lsm(lb, elt), lvm(lb, elt, lanes);
          Scalars k;
          for (unsigned f = 0; f < numK; ++f)
            k.push_back(loadKeys(lb, keys, batch, f, j0));
          SmallVector<Value> next(args);
          Value ninf = lvm.c(-std::numeric_limits<double>::infinity());
          for (int64_t r = 0; r < tileRows; ++r) {
            Value mask = laneMask(lb, j0, len, last[r]);
            SmallVector<Value> s = scores(lvm, pairNorms(lvm, qSplat[r], k));
            for (int64_t h = 0; h < heads; ++h) {
              size_t rh = r * heads + h;
              if (knownMax) {
                Value p = lvm.select(mask, lvm.exp(s[h]), lvm.c(0.0));
                next[rh] = lvm.add(args[rh], p);
                continue;
              }
              Value sh = lvm.select(mask, s[h], ninf);
              Value m = args[rh];
              Value newMax =
                  lsm.max(m, vector::ReductionOp::create(
                                 lb, vector::CombiningKind::MAXIMUMF, sh));
              Value alpha = lsm.exp(lsm.sub(m, newMax));
              Value p = lvm.exp(lvm.sub(sh, lvm.splat(newMax)));
              p = lvm.select(mask, p, lvm.c(0.0));
              next[rh] = newMax;
              next[sums + rh] = lvm.fma(args[sums + rh], lvm.splat(alpha), p);
            }
          }
          scf::YieldOp::create(lb, next);
        });
    for (int64_t rh = 0; rh < tileRows * heads; ++rh) {
      Value total = vector::ReductionOp::create(b, vector::CombiningKind::ADD,
                                                stats.getResult(sums + rh));
      lseRow[rh] =
          knownMax ? sm.log(total) : sm.add(stats.getResult(rh), sm.log(total));
    }
  }

  // Grads: dq accumulated per lane, reduced once.
  SmallVector<Value> accInit;
  for (int64_t i = 0; i < tileRows * numQ; ++i)
    accInit.push_back(vm.c(0.0));
  auto grads = scf::ForOp::create(
      b, zeroIdx, end, step, accInit,
      [&](OpBuilder &nested, Location loc, Value j0, ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        ScalarBuilder lvm(lb, elt, lanes);
        Scalars k;
        for (unsigned f = 0; f < numK; ++f)
          k.push_back(loadKeys(lb, keys, batch, f, j0));
        SmallVector<Value> vcol;
        for (int64_t d = 0; d < dim; ++d)
          vcol.push_back(loadKeys(lb, valuesT, batch, d, j0));
        SmallVector<Value> next(args);
        for (int64_t r = 0; r < tileRows; ++r) {
          Value mask = laneMask(lb, j0, len, last[r]);
          SmallVector<Value> s = scores(lvm, pairNorms(lvm, qSplat[r], k));
          SmallVector<Value> ds;
          for (int64_t h = 0; h < heads; ++h) {
            Value p = lvm.exp(lvm.sub(s[h], lvm.splat(lseRow[r * heads + h])));
            p = lvm.select(mask, p, lvm.c(0.0));
            Value dp = lvm.c(0.0);
            for (int64_t d = 0; d < headDim; ++d)
              dp = lvm.fma(lvm.splat(dOut[r][h * headDim + d]),
                           vcol[h * headDim + d], dp);
            ds.push_back(lvm.mul(p, lvm.sub(dp, lvm.splat(dvec[r][h]))));
          }
          auto vjp = pairNormsVJP(lvm, qSplat[r], k, normBars(lvm, ds), mask);
          if (failed(vjp)) {
            failedVJP = true;
            break;
          }
          for (unsigned f = 0; f < numQ; ++f)
            next[r * numQ + f] = lvm.add(next[r * numQ + f], vjp->first[f]);
        }
        scf::YieldOp::create(lb, next);
      });

  for (int64_t r = 0; r < tileRows; ++r) {
    for (unsigned f = 0; f < numQ; ++f) {
      Value total = vector::ReductionOp::create(b, vector::CombiningKind::ADD,
                                                grads.getResult(r * numQ + f));
      dq = tensor::InsertOp::create(b, total, dq,
                                    indices(batch, rowIdx[r], idx(b, f)));
    }
    for (int64_t h = 0; h < heads; ++h) {
      lse = tensor::InsertOp::create(b, lseRow[r * heads + h], lse,
                                     indices(batch, rowIdx[r], idx(b, h)));
      dsum = tensor::InsertOp::create(b, dvec[r][h], dsum,
                                      indices(batch, rowIdx[r], idx(b, h)));
    }
  }
  return {dq, lse, dsum};
}

SmallVector<Value> GradKernel::buildPassA(ImplicitLocOpBuilder &b,
                                          ValueRange state, Value first,
                                          Value count, int64_t tileRows) {
  // One flat loop over (batch element, tile) so that the thread pool
  // balances work across both.
  Value trips = arith::MulIOp::create(b, batches, count);
  auto loop = scf::ForOp::create(
      b, idx(b, 0), trips, idx(b, 1), state,
      [&](OpBuilder &nested, Location loc, Value t, ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        auto [batch, tile] = delinearize(lb, t, count);
        Value row0 = arith::AddIOp::create(
            lb, first, arith::MulIOp::create(lb, tile, idx(lb, tileRows)));
        scf::YieldOp::create(lb, passATile(lb, args, batch, row0, tileRows));
      });
  // Tiles write their own rows of dq, lse and dsum only.
  loop->setAttr(kParallelLoopAttr, b.getUnitAttr());
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> GradKernel::buildPassB(ImplicitLocOpBuilder &b,
                                          ValueRange state, Value lse,
                                          Value dsum) {
  Value vectors = arith::DivUIOp::create(
      b, arith::AddIOp::create(b, len, idx(b, lanes - 1)), idx(b, lanes));
  Value trips = arith::MulIOp::create(b, batches, vectors);
  auto loop = scf::ForOp::create(
      b, idx(b, 0), trips, idx(b, 1), state,
      [&](OpBuilder &nested, Location loc, Value t, ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        ScalarBuilder lvm(lb, elt, lanes);
        auto [batch, vector] = delinearize(lb, t, vectors);
        Value j0 = arith::MulIOp::create(lb, vector, idx(lb, lanes));
        Scalars k;
        for (unsigned f = 0; f < numK; ++f)
          k.push_back(loadKeys(lb, keys, batch, f, j0));
        SmallVector<Value> vcol;
        for (int64_t d = 0; d < dim; ++d)
          vcol.push_back(loadKeys(lb, valuesT, batch, d, j0));
        // Queries that may see these keys: all, or (causal) i ≥ j0.
        Value start = op.getCausal() ? j0 : idx(lb, 0);
        SmallVector<Value> init;
        for (int64_t i = 0; i < numK + dim; ++i)
          init.push_back(lvm.c(0.0));
        auto rowLoop = scf::ForOp::create(
            lb, start, len, idx(lb, 1), init,
            [&](OpBuilder &nested2, Location loc2, Value i, ValueRange acc) {
              ImplicitLocOpBuilder ib(loc2, nested2);
              ScalarBuilder ivm(ib, elt, lanes);
              Scalars q;
              for (unsigned f = 0; f < numQ; ++f)
                q.push_back(ivm.splat(at(ib, queries, batch, i, idx(ib, f))));
              Value mask = laneMask(ib, j0, len, op.getCausal() ? i : Value());
              SmallVector<Value> s = scores(ivm, pairNorms(ivm, q, k));
              SmallVector<Value> next(acc), ds;
              for (int64_t h = 0; h < heads; ++h) {
                Value lseI = at(ib, lse, batch, i, idx(ib, h));
                Value dI = at(ib, dsum, batch, i, idx(ib, h));
                Value p = ivm.exp(ivm.sub(s[h], ivm.splat(lseI)));
                p = ivm.select(mask, p, ivm.c(0.0));
                Value dp = ivm.c(0.0);
                for (int64_t d = h * headDim; d < (h + 1) * headDim; ++d) {
                  Value g = ivm.splat(at(ib, outGrad, batch, i, idx(ib, d)));
                  dp = ivm.fma(g, vcol[d], dp);
                  next[numK + d] = ivm.fma(p, g, next[numK + d]);
                }
                ds.push_back(ivm.mul(p, ivm.sub(dp, ivm.splat(dI))));
              }
              auto vjp = pairNormsVJP(ivm, q, k, normBars(ivm, ds), mask);
              if (failed(vjp))
                failedVJP = true;
              else
                for (unsigned f = 0; f < numK; ++f)
                  next[f] = ivm.add(next[f], vjp->second[f]);
              scf::YieldOp::create(ib, next);
            });
        Value dkT = args[0], dvT = args[1];
        for (unsigned f = 0; f < numK; ++f)
          dkT = vector::TransferWriteOp::create(lb, rowLoop.getResult(f), dkT,
                                                indices(batch, idx(lb, f), j0),
                                                ArrayRef<bool>{false})
                    .getResult();
        for (int64_t d = 0; d < dim; ++d)
          dvT = vector::TransferWriteOp::create(
                    lb, rowLoop.getResult(numK + d), dvT,
                    indices(batch, idx(lb, d), j0), ArrayRef<bool>{false})
                    .getResult();
        scf::YieldOp::create(lb, ValueRange{dkT, dvT});
      });
  // Key vectors write their own columns of dkᵀ and dvᵀ only.
  loop->setAttr(kParallelLoopAttr, b.getUnitAttr());
  return SmallVector<Value>(loop.getResults());
}

FailureOr<SmallVector<Value>> GradKernel::build(ImplicitLocOpBuilder &b) {
  queries = op.getQueries();
  keys = op.getKeys();
  values = op.getValues();
  out = op.getOut();
  outGrad = op.getOutGrad();
  givenLse = op.getLse();
  int64_t rank = cast<RankedTensorType>(values.getType()).getRank();
  batches = idx(b, 1);
  for (int64_t d = 0; d + 2 < rank; ++d) {
    batchDims.push_back(tensor::DimOp::create(b, keys, d));
    batches = arith::MulIOp::create(b, batches, batchDims.back());
  }
  len = tensor::DimOp::create(b, keys, rank - 1);
  auto transposed = [&](Value t) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, b.getLoc(), t);
    std::swap(sizes[rank - 2], sizes[rank - 1]);
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 2], perm[rank - 1]);
    Value empty = tensor::EmptyOp::create(b, sizes, elt);
    return linalg::TransposeOp::create(b, t, empty, perm).getResult()[0];
  };
  // Values feature-major: lanes read consecutive keys.
  valuesT = transposed(values);

  auto empty = [&](int64_t cols) {
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, b.getLoc(), queries);
    sizes.back() = b.getIndexAttr(cols);
    return tensor::EmptyOp::create(b, sizes, elt).getResult();
  };
  SmallVector<Value> state = {empty(numQ), empty(heads), empty(heads)};
  Value rowsV = idx(b, rows);
  Value full = arith::DivUIOp::create(b, len, rowsV);
  state = buildPassA(b, state, idx(b, 0), full, rows);
  if (rows > 1) {
    Value first = arith::MulIOp::create(b, full, rowsV);
    state =
        buildPassA(b, state, first, arith::SubIOp::create(b, len, first), 1);
  }
  Value dq = state[0], lse = state[1], dsum = state[2];

  // dkᵀ and dvᵀ start at zero: pass B writes whole key vectors, masked at
  // the end of the sequence.
  ScalarBuilder sm(b, elt);
  auto zeros = [&](Value like) {
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, b.getLoc(), like);
    Value e = tensor::EmptyOp::create(b, sizes, elt);
    return linalg::FillOp::create(b, ValueRange{sm.c(0.0)}, ValueRange{e})
        .getResult(0);
  };
  SmallVector<Value> kv = {zeros(keys), zeros(valuesT)};
  kv = buildPassB(b, kv, lse, dsum);
  if (failedVJP)
    return failure();
  return SmallVector<Value>{dq, kv[0], transposed(kv[1])};
}

struct GeoDecomposeAttentionGrad
    : torsor::geo::impl::GeoDecomposeAttentionGradBase<
          GeoDecomposeAttentionGrad> {
  void runOnOperation() override {
    SmallVector<FlashLieAttentionGradOp> ops;
    getOperation()->walk(
        [&](FlashLieAttentionGradOp op) { ops.push_back(op); });
    SmallVector<Operation *> approximate;
    for (FlashLieAttentionGradOp op : ops) {
      OpBuilder builder(op);
      Operation *before = op->getPrevNode();
      ImplicitLocOpBuilder b(op.getLoc(), builder);
      auto values = cast<RankedTensorType>(op.getValues().getType());
      GradKernel kernel(op,
                        strategy::vectorAttentionOf(
                            op, values.getElementType().getIntOrFloatBitWidth(),
                            values.getShape().back(), /*backward=*/true));
      FailureOr<SmallVector<Value>> results = kernel.build(b);
      if (failed(results))
        return signalPassFailure();
      bool f32 = cast<RankedTensorType>(op.getValues().getType())
                     .getElementType()
                     .isF32();
      for (func::FuncOp fn : kernel.outlined)
        if (f32)
          fn.walk([&](Operation *inner) {
            if (isa<math::MathDialect>(inner->getDialect()))
              approximate.push_back(inner);
          });
      if (f32)
        for (Operation *it = before ? before->getNextNode()
                                    : &op->getBlock()->front();
             it != op.getOperation(); it = it->getNextNode())
          it->walk([&](Operation *inner) {
            if (isa<math::MathDialect>(inner->getDialect()))
              approximate.push_back(inner);
          });
      op->replaceAllUsesWith(*results);
      op.erase();
    }
    if (approximate.empty())
      return;
    // f32: the same polynomial atan2/exp as the forward kernel, so the
    // backward differentiates what the forward computed.
    RewritePatternSet patterns(&getContext());
    populateKernelMathPatterns(patterns);
    if (failed(applyOpPatternsGreedily(approximate, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
