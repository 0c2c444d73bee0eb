//===- AttentionKernel.cpp - The fused Lie attention, written once --------===//
//
// The builders of AttentionKernel.h. Each emits the same IR on scalars and
// on vectors (ScalarBuilder with or without lanes), so that the CPU's
// lanes over keys and the GPU's one key per thread run one formula.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/Transforms/AttentionKernel.h"
#include "dialects/Lie/IR/Groups/Derivatives.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

#include <limits>

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using torsor::lie::ScalarBuilder;
using torsor::lie::Scalars;

static Value index(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

//===----------------------------------------------------------------------===//
// Scores
//===----------------------------------------------------------------------===//

ScoreCoefficients::ScoreCoefficients(unsigned blocks, ArrayRef<double> tau,
                                     ArrayRef<double> lambda)
    : heads(tau.size()), blocks(blocks) {
  for (int64_t h = 0; h < heads; ++h)
    for (unsigned b = 0; b < blocks; ++b)
      coef.push_back(-lambda[h * blocks + b] / tau[h]);
}

bool ScoreCoefficients::allNonPositive() const {
  return llvm::all_of(coef, [](double c) { return c <= 0; });
}

SmallVector<Value> ScoreCoefficients::buildScores(ScalarBuilder &m,
                                                  ArrayRef<Value> norms) {
  SmallVector<Value> s;
  for (int64_t h = 0; h < heads; ++h) {
    Value acc = m.mul(m.c(coef[h * blocks]), norms[0]);
    for (unsigned bl = 1; bl < blocks; ++bl)
      acc = m.fma(m.c(coef[h * blocks + bl]), norms[bl], acc);
    s.push_back(acc);
  }
  return s;
}

SmallVector<Value> ScoreCoefficients::buildNormBars(ScalarBuilder &m,
                                                    ArrayRef<Value> scoreBars) {
  SmallVector<Value> nbar;
  for (unsigned bl = 0; bl < blocks; ++bl) {
    Value acc = m.mul(m.c(coef[bl]), scoreBars[0]);
    for (int64_t h = 1; h < heads; ++h)
      acc = m.fma(m.c(coef[h * blocks + bl]), scoreBars[h], acc);
    nbar.push_back(acc);
  }
  return nbar;
}

//===----------------------------------------------------------------------===//
// Pair features
//===----------------------------------------------------------------------===//

Value torsor::geo::buildSwapLastDims(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, t);
  std::swap(sizes[rank - 2], sizes[rank - 1]);
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  Value empty = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  return linalg::TransposeOp::create(b, loc, t, empty, perm).getResult()[0];
}

Value torsor::geo::buildPairFeatures(OpBuilder &b, Location loc, Value g,
                                     Attribute group, bool key) {
  auto groupAttr = cast<lie::GroupAttr>(group);
  const lie::GroupModel &model = groupAttr.getModel();
  auto gType = cast<RankedTensorType>(g.getType());
  SmallVector<int64_t> shape(gType.getShape().drop_back(2));
  shape.push_back(key ? model.getKeyFeatureCount()
                      : model.getQueryFeatureCount());
  Value features = lie::PairFeaturesOp::create(
      b, loc, RankedTensorType::get(shape, gType.getElementType()), g,
      groupAttr, key);
  return key ? buildSwapLastDims(b, loc, features) : features;
}

//===----------------------------------------------------------------------===//
// Keys and masks
//===----------------------------------------------------------------------===//

KeyRange torsor::geo::buildKeyRange(ImplicitLocOpBuilder &b, Value len,
                                    Value firstPosition, int64_t rows,
                                    int64_t tile, bool causal, bool cross) {
  // Keys every row sees: all of them, or (causal) those up to the first
  // row; keys any row sees: up to the last row. In the cross form the
  // position may be negative (queries before the keys): the bounds clamp
  // to [0, len] signed, so a block that sees no key visits none.
  Value seenByAll = len, end = len;
  if (causal) {
    auto clamp = [&](int64_t past) -> Value {
      Value bound = arith::AddIOp::create(b, firstPosition, index(b, past));
      if (!cross)
        return arith::MinUIOp::create(b, len, bound);
      return arith::MaxSIOp::create(b, index(b, 0),
                                    arith::MinSIOp::create(b, len, bound));
    };
    seenByAll = clamp(1);
    end = clamp(rows);
  }
  KeyRange range;
  range.end = end;
  if (tile > 0) {
    Value t = index(b, tile);
    range.unmaskedEnd =
        arith::MulIOp::create(b, arith::DivUIOp::create(b, seenByAll, t), t);
  }
  return range;
}

Value torsor::geo::buildKeyPosition(ImplicitLocOpBuilder &b, Value queryOffset,
                                    Value keyOffset) {
  if (!keyOffset)
    return queryOffset;
  return arith::SubIOp::create(b, queryOffset, keyOffset);
}

Value torsor::geo::buildKeyMask(ImplicitLocOpBuilder &b, unsigned lanes,
                                Value j0, Value end, Value last) {
  if (lanes == 0) {
    Value ok = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j0, end);
    if (last)
      ok = arith::AndIOp::create(
          b, ok, arith::CmpIOp::create(b, arith::CmpIPredicate::sle, j0, last));
    return ok;
  }
  VectorType iv = VectorType::get({lanes}, b.getIndexType());
  SmallVector<APInt> offsets;
  for (unsigned l = 0; l < lanes; ++l)
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
        arith::CmpIOp::create(b, arith::CmpIPredicate::sle, lane,
                              vector::BroadcastOp::create(b, iv, last)));
  return ok;
}

//===----------------------------------------------------------------------===//
// Online softmax
//===----------------------------------------------------------------------===//

SoftmaxStep torsor::geo::buildSoftmaxStep(ScalarBuilder &sm, ScalarBuilder &vm,
                                          Value max, Value sum,
                                          ArrayRef<Value> scores,
                                          ArrayRef<Value> masks,
                                          bool boundedExp) {
  assert((masks.empty() || masks.size() == scores.size()) && "one mask each");
  ImplicitLocOpBuilder &b = vm.builder();
  SoftmaxStep step;
  // e^x with x ≤ 0: flags for the f32 polynomial (KernelMath.h). Masked
  // lanes of the running-max form reach it as −∞ (no ninf there).
  auto exp = [&](ScalarBuilder &m, Value x, bool finite) {
    Value e = m.exp(x);
    if (boundedExp) {
      auto flags = arith::FastMathFlags::afn;
      if (finite)
        flags = flags | arith::FastMathFlags::ninf;
      e.getDefiningOp<math::ExpOp>().setFastmath(flags);
    }
    return e;
  };
  auto keep = [&](size_t i, Value p) {
    if (!masks.empty())
      p = vm.select(masks[i], p, vm.c(0.0));
    step.probs.push_back(p);
    sum = vm.add(sum, p);
  };
  if (!max) {
    // Known max 0: e^s ≤ 1, and Σ e^s ≥ 1 (the self pair) cannot underflow.
    for (auto [i, s] : llvm::enumerate(scores))
      keep(i, exp(vm, s, /*finite=*/true));
    step.sum = sum;
    return step;
  }
  // Keys off the mask score −∞, so they cannot raise the max; their p is
  // selected to 0 as well, which keeps a step whose keys are all hidden
  // (−∞ − −∞) from a NaN.
  SmallVector<Value> s(scores);
  if (!masks.empty()) {
    Value negInf = vm.c(-std::numeric_limits<double>::infinity());
    for (size_t i = 0; i < s.size(); ++i)
      s[i] = vm.select(masks[i], s[i], negInf);
  }
  // The max is only the shift that keeps e^{s − m'} in range: any value
  // near the true max will do, so it may ignore NaNs and the sign of zero
  // (nnan nsz: one vmaxps instead of six instructions per max, and a
  // horizontal max without NaN checks). A NaN score still reaches the
  // output through its own p = e^{NaN − m'}.
  auto fastMax = arith::FastMathFlags::nnan | arith::FastMathFlags::nsz;
  Value stepMax = s.front();
  for (Value x : ArrayRef<Value>(s).drop_front())
    stepMax = arith::MaximumFOp::create(b, stepMax, x, fastMax);
  if (vm.getLanes() > 0)
    stepMax = vector::ReductionOp::create(b, vector::CombiningKind::MAXIMUMF,
                                          stepMax, fastMax);
  step.max = arith::MaximumFOp::create(b, max, stepMax, fastMax);
  step.alpha = exp(sm, sm.sub(max, step.max), /*finite=*/true);
  Value newMax = vm.splat(step.max);
  // l' = α l + Σ p: the rescale fused into the first key's add.
  Value alpha = vm.splat(step.alpha);
  for (auto [i, x] : llvm::enumerate(s)) {
    Value p = exp(vm, vm.sub(x, newMax), /*finite=*/masks.empty());
    if (!masks.empty())
      p = vm.select(masks[i], p, vm.c(0.0));
    step.probs.push_back(p);
    sum = i == 0 ? vm.fma(sum, alpha, p) : vm.add(sum, p);
  }
  step.sum = sum;
  return step;
}

Value torsor::geo::buildLaneSum(ImplicitLocOpBuilder &b, Value sum) {
  if (!isa<VectorType>(sum.getType()))
    return sum;
  return vector::ReductionOp::create(b, vector::CombiningKind::ADD, sum);
}

Value torsor::geo::buildLogSumExp(ScalarBuilder &sm, Value max, Value total) {
  Value log = sm.log(total);
  return max ? sm.add(max, log) : log;
}

Value torsor::geo::buildProbability(ScalarBuilder &vm, Value score, Value lse,
                                    Value mask) {
  Value p = vm.exp(vm.sub(score, vm.splat(lse)));
  return vm.select(mask, p, vm.c(0.0));
}

Value torsor::geo::buildKnownMaxProbability(ScalarBuilder &vm, Value score,
                                            Value invSum, Value mask) {
  Value p = vm.mul(vm.exp(score), vm.splat(invSum));
  return vm.select(mask, p, vm.c(0.0));
}

Value torsor::geo::buildScoreBar(ScalarBuilder &vm, Value prob, Value probBar,
                                 Value rowDot) {
  return vm.mul(prob, vm.sub(probBar, vm.splat(rowDot)));
}

//===----------------------------------------------------------------------===//
// The pair form
//===----------------------------------------------------------------------===//

PairFormEvaluator::PairFormEvaluator(const lie::GroupModel &model,
                                     Attribute group, FloatType elt,
                                     ModuleOp module, Location loc)
    : model(model), group(group), elt(elt), module(module), loc(loc) {}

func::FuncOp PairFormEvaluator::function(bool vjp) {
  // The name hashes the group attribute's printed form, not its address, so
  // that the same model compiles to the same symbols in every run.
  std::string groupText;
  llvm::raw_string_ostream groupStream(groupText);
  group.print(groupStream);
  std::string name = llvm::formatv("torsor_pair_{0}_{1}_f{2}_{3:x}",
                                   vjp ? "norms_vjp" : "norms", model.getName(),
                                   elt.getWidth(), llvm::xxh3_64bits(groupText))
                         .str();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  unsigned numQ = model.getQueryFeatureCount();
  unsigned numK = model.getKeyFeatureCount();
  unsigned dimW = model.getAlgebraDim();
  unsigned blocks = model.getBlocks().size();
  unsigned numIn = numQ + numK + (vjp ? dimW + blocks : 0);
  unsigned numOut = vjp ? numQ + numK : blocks + dimW;
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto fn =
      func::FuncOp::create(mb, loc, name,
                           mb.getFunctionType(SmallVector<Type>(numIn, elt),
                                              SmallVector<Type>(numOut, elt)));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  auto fb = ImplicitLocOpBuilder::atBlockEnd(loc, entry);
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

/// `count` results per lane: `body` builds lane `lane`'s scalars, which
/// are inserted into vectors of `vm`'s width.
static ValueRange buildPerLane(
    ScalarBuilder &vm, unsigned count,
    function_ref<SmallVector<Value>(ImplicitLocOpBuilder &, Value)> body) {
  ImplicitLocOpBuilder &b = vm.builder();
  SmallVector<Value> init(count, vm.c(0.0));
  auto loop = scf::ForOp::create(
      b, index(b, 0), index(b, vm.getLanes()), index(b, 1), init,
      [&](OpBuilder &nested, Location loc, Value lane, ValueRange vecs) {
        ImplicitLocOpBuilder lb(loc, nested);
        SmallVector<Value> next;
        for (auto [x, vec] : llvm::zip_equal(body(lb, lane), vecs))
          next.push_back(vector::InsertOp::create(
              lb, x, vec, ArrayRef<OpFoldResult>{lane}));
        scf::YieldOp::create(lb, next);
      });
  return loop.getResults();
}

PairEvaluation PairFormEvaluator::evaluate(ScalarBuilder &vm, ValueRange q,
                                           ValueRange keys) {
  PairEvaluation pair;
  if (model.hasStraightLinePairForm()) {
    pair.norms = model.buildPairBlockNorms(vm, q, keys);
    return pair;
  }
  // The model's pair form builds loops: one call per pair.
  unsigned blocks = model.getBlocks().size();
  func::FuncOp fn = function(/*vjp=*/false);
  ValueRange results;
  SmallVector<Value> scalarResults;
  if (vm.getLanes() == 0) {
    SmallVector<Value> in(q);
    in.append(keys.begin(), keys.end());
    auto call = func::CallOp::create(vm.builder(), fn, in);
    scalarResults.assign(call.getResults().begin(), call.getResults().end());
    results = scalarResults;
  } else {
    results = buildPerLane(
        vm, blocks + model.getAlgebraDim(),
        [&](ImplicitLocOpBuilder &lb, Value lane) -> SmallVector<Value> {
          SmallVector<Value> in = laneOf(lb, q, lane);
          in.append(laneOf(lb, keys, lane));
          return SmallVector<Value>(
              func::CallOp::create(lb, fn, in).getResults());
        });
  }
  pair.norms.assign(results.begin(), results.begin() + blocks);
  pair.logs.assign(results.begin() + blocks, results.end());
  return pair;
}

FailureOr<std::pair<Scalars, Scalars>>
PairFormEvaluator::evaluateVJP(ScalarBuilder &vm, const PairEvaluation &pair,
                               ValueRange q, ValueRange keys,
                               ValueRange normBars, Value mask) {
  if (model.hasStraightLinePairForm())
    return lie::buildPairBlockNormsVJP(model, vm, q, keys, normBars);
  // Per pair in scalar code: the model's adjoint of its pair form (the
  // log's derivative from the model, Groups/Derivatives.h), skipped for
  // pairs off the mask.
  unsigned numQ = model.getQueryFeatureCount();
  unsigned numK = model.getKeyFeatureCount();
  func::FuncOp fn = function(/*vjp=*/true);
  if (failedVJP)
    return failure();
  auto guarded = [&](ImplicitLocOpBuilder &lb, Value valid,
                     SmallVector<Value> in) -> SmallVector<Value> {
    auto inPair = scf::IfOp::create(lb, SmallVector<Type>(numQ + numK, elt),
                                    valid, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(lb);
    lb.setInsertionPointToStart(inPair.thenBlock());
    scf::YieldOp::create(lb, func::CallOp::create(lb, fn, in).getResults());
    lb.setInsertionPointToStart(inPair.elseBlock());
    ScalarBuilder sm(lb, elt);
    scf::YieldOp::create(lb, SmallVector<Value>(numQ + numK, sm.c(0.0)));
    return SmallVector<Value>(inPair.getResults());
  };
  ValueRange results;
  SmallVector<Value> scalarResults;
  if (vm.getLanes() == 0) {
    SmallVector<Value> in(q);
    in.append(keys.begin(), keys.end());
    in.append(pair.logs.begin(), pair.logs.end());
    in.append(normBars.begin(), normBars.end());
    scalarResults = guarded(vm.builder(), mask, in);
    results = scalarResults;
  } else {
    results = buildPerLane(
        vm, numQ + numK,
        [&](ImplicitLocOpBuilder &lb, Value lane) -> SmallVector<Value> {
          Value valid =
              vector::ExtractOp::create(lb, mask, ArrayRef<OpFoldResult>{lane});
          SmallVector<Value> in = laneOf(lb, q, lane);
          in.append(laneOf(lb, keys, lane));
          in.append(laneOf(lb, pair.logs, lane));
          in.append(laneOf(lb, normBars, lane));
          return guarded(lb, valid, in);
        });
  }
  return std::make_pair(Scalars(results.begin(), results.begin() + numQ),
                        Scalars(results.begin() + numQ, results.end()));
}

//===----------------------------------------------------------------------===//
// P·V
//===----------------------------------------------------------------------===//

SmallVector<ValueChunk>
torsor::geo::splitValueColumns(int64_t heads, int64_t dim, int64_t width) {
  int64_t headDim = dim / heads, step = std::max<int64_t>(width, 1);
  SmallVector<ValueChunk> chunks;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t c = h * headDim; c < (h + 1) * headDim; c += step)
      chunks.push_back(
          {h, c, width == 0 ? 0 : std::min(width, (h + 1) * headDim - c)});
  return chunks;
}

void torsor::geo::buildRescale(ImplicitLocOpBuilder &b, FloatType elt,
                               ArrayRef<ValueChunk> chunks,
                               MutableArrayRef<Value> acc, int64_t head,
                               Value alpha) {
  for (auto [c, chunk] : llvm::enumerate(chunks))
    if (chunk.head == head) {
      ScalarBuilder cm(b, elt, chunk.width);
      acc[c] = cm.mul(acc[c], cm.splat(alpha));
    }
}

void torsor::geo::buildPVUpdate(ImplicitLocOpBuilder &b, FloatType elt,
                                ArrayRef<ValueChunk> chunks,
                                MutableArrayRef<Value> acc,
                                function_ref<Value(int64_t)> prob,
                                ArrayRef<Value> values) {
  SmallVector<Value> p;
  for (auto [c, chunk] : llvm::enumerate(chunks)) {
    if (p.size() <= static_cast<size_t>(chunk.head))
      p.push_back(prob(chunk.head));
    ScalarBuilder cm(b, elt, chunk.width);
    acc[c] = cm.fma(cm.splat(p[chunk.head]), values[c], acc[c]);
  }
}

bool torsor::geo::supportsBF16Products(FloatType elt,
                                       ArrayRef<ValueChunk> chunks,
                                       int64_t keyTile) {
  if (!elt.isF32() || keyTile % 2 != 0 || chunks.empty())
    return false;
  return llvm::all_of(chunks, [](const ValueChunk &chunk) {
    return chunk.width == 4 || chunk.width == 8 || chunk.width == 16;
  });
}

Value torsor::geo::buildPackedValuesBF16(ImplicitLocOpBuilder &b,
                                         Value values) {
  auto type = cast<RankedTensorType>(values.getType());
  int64_t rank = type.getRank(), nb = rank - 2;
  int64_t dim = type.getDimSize(rank - 1);
  assert(!ShapedType::isDynamic(dim) && "packs a static number of columns");
  Type bf16 = b.getBF16Type(), f32 = type.getElementType();
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  SmallVector<Value> extents, dynamic;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < nb; ++d) {
    extents.push_back(tensor::DimOp::create(b, values, d));
    shape.push_back(type.getDimSize(d));
    if (type.isDynamicDim(d))
      dynamic.push_back(extents.back());
  }
  Value len = tensor::DimOp::create(b, values, nb);
  Value pairs =
      arith::DivUIOp::create(b, arith::AddIOp::create(b, len, c(1)), c(2));
  shape.push_back(type.isDynamicDim(nb) ? ShapedType::kDynamic
                                        : (type.getDimSize(nb) + 1) / 2);
  if (type.isDynamicDim(nb))
    dynamic.push_back(pairs);
  shape.push_back(2 * dim);
  Value init = tensor::EmptyOp::create(b, shape, bf16, dynamic);
  Value count = pairs;
  for (Value extent : extents)
    count = arith::MulIOp::create(b, count, extent);
  Value lastKey = arith::SubIOp::create(b, len, c(1));
  // One pair of keys per iteration: two value rows read in 16-column
  // vectors, rounded, interleaved and written as one packed row.
  constexpr int64_t width = 16;
  auto loop = scf::ForOp::create(
      b, c(0), count, c(1), ValueRange{init},
      [&](OpBuilder &nested, Location loc, Value t, ValueRange iter) {
        ImplicitLocOpBuilder lb(loc, nested);
        auto ci = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(lb, v);
        };
        Value pair = arith::RemUIOp::create(lb, t, pairs);
        SmallVector<Value> batch = buildDelinearized(
            lb, arith::DivUIOp::create(lb, t, pairs), extents);
        Value first = arith::MulIOp::create(lb, pair, ci(2));
        Value second = arith::AddIOp::create(lb, first, ci(1));
        // The second key of an odd L's last pair is zero (its row is read
        // in bounds, at the last key, and dropped).
        Value hasSecond =
            arith::CmpIOp::create(lb, arith::CmpIPredicate::ult, second, len);
        second = arith::MinUIOp::create(lb, second, lastKey);
        Value zero = arith::ConstantOp::create(lb, lb.getZeroAttr(f32));
        Value out = iter[0];
        for (int64_t col = 0; col < dim; col += width) {
          int64_t w = std::min(width, dim - col);
          auto rowType = VectorType::get({w}, f32);
          auto halfType = VectorType::get({w}, bf16);
          auto read = [&](Value key) -> Value {
            Value v = vector::TransferReadOp::create(
                lb, rowType, values, withBatch(batch, {key, ci(col)}), zero,
                ArrayRef<bool>{true});
            return arith::TruncFOp::create(lb, halfType, v);
          };
          Value lo = read(first), hi = read(second);
          hi = arith::SelectOp::create(
              lb, hasSecond, hi,
              arith::ConstantOp::create(lb, lb.getZeroAttr(halfType)));
          Value packed = vector::InterleaveOp::create(lb, lo, hi);
          out = vector::TransferWriteOp::create(
                    lb, packed, out, withBatch(batch, {pair, ci(2 * col)}),
                    ArrayRef<bool>{true})
                    .getResult();
        }
        scf::YieldOp::create(lb, out);
      });
  return loop.getResult(0);
}

void torsor::geo::buildPVUpdateBF16(ImplicitLocOpBuilder &b,
                                    ArrayRef<ValueChunk> chunks,
                                    MutableArrayRef<Value> acc,
                                    function_ref<Value(int64_t)> probPair,
                                    ArrayRef<Value> pairs) {
  // Each head's pair of probabilities as one i32 (loaded once per head),
  // broadcast to every lane of the chunk's width.
  SmallVector<Value> words;
  for (auto [c, chunk] : llvm::enumerate(chunks)) {
    if (words.size() <= static_cast<size_t>(chunk.head)) {
      Value word = vector::BitCastOp::create(
          b, VectorType::get({1}, b.getI32Type()), probPair(chunk.head));
      words.push_back(vector::ExtractOp::create(b, word, 0));
    }
    Value splat = vector::BroadcastOp::create(
        b, VectorType::get({chunk.width}, b.getI32Type()), words[chunk.head]);
    Value p = vector::BitCastOp::create(
        b, VectorType::get({2 * chunk.width}, b.getBF16Type()), splat);
    acc[c] =
        x86vector::DotBF16Op::create(b, acc[c].getType(), acc[c], p, pairs[c]);
  }
}

SmallVector<Value> torsor::geo::buildNormalized(ImplicitLocOpBuilder &b,
                                                FloatType elt,
                                                ArrayRef<ValueChunk> chunks,
                                                ArrayRef<Value> acc,
                                                ArrayRef<Value> totals) {
  ScalarBuilder sm(b, elt);
  SmallVector<Value> inv;
  // A row that saw no key (the cross form's masked rows) has l = 0 and
  // acc = 0: its output is 0, not 0/0.
  for (Value total : totals)
    inv.push_back(sm.select(
        arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, total, sm.c(0.0)),
        sm.div(sm.c(1.0), total), sm.c(0.0)));
  SmallVector<Value> out;
  for (auto [c, chunk] : llvm::enumerate(chunks)) {
    ScalarBuilder cm(b, elt, chunk.width);
    out.push_back(cm.mul(acc[c], cm.splat(inv[chunk.head])));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// State, indices, query rows
//===----------------------------------------------------------------------===//

SmallVector<Value> SoftmaxState::pack() const {
  SmallVector<Value> all(max);
  all.append(sum);
  all.append(acc);
  return all;
}

SoftmaxState SoftmaxState::unpack(ValueRange values, size_t maxes,
                                  size_t sums) {
  SoftmaxState s;
  s.max.assign(values.begin(), values.begin() + maxes);
  s.sum.assign(values.begin() + maxes, values.begin() + maxes + sums);
  s.acc.assign(values.begin() + maxes + sums, values.end());
  return s;
}

SoftmaxState SoftmaxState::initial(ScalarBuilder &sm, ScalarBuilder &vm,
                                   int64_t rows, int64_t heads,
                                   ArrayRef<ValueChunk> chunks, bool withMax) {
  SoftmaxState s;
  for (int64_t i = 0; i < rows * heads; ++i) {
    // The lowest finite value rather than −∞: a step whose keys are all
    // masked (a row that sees no key yet, in the cross form) then keeps
    // m = lowest and α = e^0 = 1 instead of e^{−∞ − −∞} = NaN.
    if (withMax)
      s.max.push_back(sm.c(
          APFloat::getLargest(cast<FloatType>(sm.getType()).getFloatSemantics(),
                              /*Negative=*/true)
              .convertToDouble()));
    s.sum.push_back(vm.c(0.0));
  }
  for (int64_t r = 0; r < rows; ++r)
    for (const ValueChunk &chunk : chunks)
      s.acc.push_back(
          ScalarBuilder(sm.builder(), sm.getType(), chunk.width).c(0.0));
  return s;
}

SmallVector<Value> torsor::geo::buildDelinearized(ImplicitLocOpBuilder &b,
                                                  Value flat,
                                                  ArrayRef<Value> extents) {
  SmallVector<Value> indices(extents.size());
  Value rest = flat;
  for (int d = extents.size() - 1; d >= 0; --d) {
    indices[d] = arith::RemUIOp::create(b, rest, extents[d]);
    rest = arith::DivUIOp::create(b, rest, extents[d]);
  }
  return indices;
}

Value torsor::geo::buildBalancedOrder(ImplicitLocOpBuilder &b, Value i,
                                      Value count) {
  Value one = index(b, 1);
  Value half = arith::ShRUIOp::create(b, i, one);
  Value odd =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ne,
                            arith::AndIOp::create(b, i, one), index(b, 0));
  Value mirrored =
      arith::SubIOp::create(b, arith::SubIOp::create(b, count, one), half);
  return arith::SelectOp::create(b, odd, mirrored, half);
}

SmallVector<Value> torsor::geo::withBatch(ValueRange batch, ValueRange rest) {
  SmallVector<Value> all(batch);
  all.append(rest.begin(), rest.end());
  return all;
}

int64_t torsor::geo::chooseQueryRows(const lie::GroupModel &model,
                                     int64_t registerRows) {
  return model.hasStraightLinePairForm() ? std::max<int64_t>(registerRows, 1)
                                         : 1;
}

int64_t torsor::geo::chooseQueryBlock(const lie::GroupModel &model,
                                      int64_t registerRows, int64_t queryBlock,
                                      int64_t keyBlock) {
  // Blocks where the micro-kernels take the strategy's register rows (a
  // per-lane form, bound by its calls rather than memory, takes one row
  // and so blocks only where the strategy's rows are 1 too).
  int64_t rows = chooseQueryRows(model, registerRows);
  if (keyBlock > 0 && queryBlock > rows && queryBlock % rows == 0 &&
      rows == registerRows)
    return queryBlock;
  return rows;
}
