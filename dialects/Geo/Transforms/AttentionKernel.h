//===- AttentionKernel.h - The fused Lie attention, written once -*- C++
//-*-===//
//
// The algorithm of the fused Lie attention, apart from its schedules
// (Halide's algorithm/schedule split; IREE's one decomposeOperation for
// CPU and GPU). The three kernels that lower geo.flash_lie_attention and
// its gradient differ only in how they map loops onto the machine:
//
//   geo-decompose-attention       CPU forward: lanes over keys, register
//                                 tiles of query rows;
//   geo-decompose-attention-grad  backward: lanes over keys; on the CPU
//                                 one pass over key chunks, on GPU
//                                 threads pass A (rows) and pass B (keys);
//   geo-map-attention-to-gpu      GPU forward: threads over query rows,
//                                 shared-memory key tiles.
//
// Everything they compute is built here: the score coefficients, the keys
// a block of rows visits and the lane mask of a key step (legal on both
// targets), the online-softmax step and the log-sum-exp, the pair form of
// the group model one pair per lane (with an outlined per-lane fallback
// for pair forms that build loops) and its adjoint, P·V into per-head
// accumulators, the packing of the running state into loop-carried
// values, the split of a flat index into batch indices, and the rule that
// chooses how many query rows share a key load. Every builder works on
// scalars (a ScalarBuilder without lanes: one key per thread) and on
// vectors (one key per lane) alike.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_GEO_TRANSFORMS_ATTENTIONKERNEL_H
#define TORSOR_DIALECTS_GEO_TRANSFORMS_ATTENTIONKERNEL_H

#include "dialects/Lie/IR/GroupModel.h"
#include "dialects/Lie/IR/ScalarBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace torsor::geo {

//===----------------------------------------------------------------------===//
// Pair features
//===----------------------------------------------------------------------===//

/// lie.pair_features of group elements `g` ([batch...] x L x n x n):
/// queries [batch...] x L x Fq, or (`key`) keys feature-major,
/// [batch...] x Fk x L, so that lanes load consecutive keys. What every
/// fused form of Lie attention (and the block backward) feeds its kernel.
mlir::Value buildPairFeatures(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value g, mlir::Attribute group, bool key);

/// `t` ([batch...] x M x N) with its last two dims swapped.
mlir::Value buildSwapLastDims(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value t);

//===----------------------------------------------------------------------===//
// Scores
//===----------------------------------------------------------------------===//

/// The score coefficients c_hb = −λ_hb / τ_h of one attention: head h's
/// score of a pair is s_h = Σ_b c_hb N_b over the pair's block norms N_b.
class ScoreCoefficients {
public:
  /// `lambda` holds `blocks` weights per head, `tau` one temperature each.
  ScoreCoefficients(unsigned blocks, llvm::ArrayRef<double> tau,
                    llvm::ArrayRef<double> lambda);
  /// The coefficients of a flash attention op or its gradient.
  template <typename OpT> static ScoreCoefficients of(OpT op) {
    return ScoreCoefficients(op.getGroup().getModel().getBlocks().size(),
                             op.getTau(), op.getLambda());
  }

  int64_t getHeads() const { return heads; }
  unsigned getBlocks() const { return blocks; }
  /// Every c_hb ≤ 0 (λ ≥ 0, τ > 0): every score is ≤ 0, and the self
  /// pair, always visible (also when causal), scores 0, so a row's max
  /// score is 0 and its statistics need no running max.
  bool allNonPositive() const;

  /// s_h for every head, from one pair's (or one lane's) block norms.
  llvm::SmallVector<mlir::Value> buildScores(lie::ScalarBuilder &m,
                                             llvm::ArrayRef<mlir::Value> norms);
  /// The adjoint of buildScores: n̄_b = Σ_h dS_h c_hb.
  llvm::SmallVector<mlir::Value>
  buildNormBars(lie::ScalarBuilder &m, llvm::ArrayRef<mlir::Value> scoreBars);

private:
  int64_t heads;
  unsigned blocks;
  llvm::SmallVector<double> coef; // [h][block]
};

//===----------------------------------------------------------------------===//
// Keys and masks
//===----------------------------------------------------------------------===//

/// The keys a block of query rows visits, in key tiles.
struct KeyRange {
  /// Keys [0, unmaskedEnd) come in whole tiles every row sees in full:
  /// they need no mask. Null when no tile was given.
  mlir::Value unmaskedEnd;
  /// Keys [unmaskedEnd, end) need the mask of buildKeyMask; keys past
  /// `end` no row of the block sees (causal) and are never visited.
  mlir::Value end;
};

/// The keys of `rows` consecutive query rows whose first sits at key
/// position `firstPosition` (buildKeyPosition), over `len` keys: all of
/// them, or (causal) key j for row i when j ≤ i. `tile` > 0 splits off
/// the unmasked tiles. `cross` (queries and keys of two token sets): the
/// position may be negative, and the range may be empty.
KeyRange buildKeyRange(mlir::ImplicitLocOpBuilder &b, mlir::Value len,
                       mlir::Value firstPosition, int64_t rows, int64_t tile,
                       bool causal, bool cross = false);

/// The key position of query row 0: a query at global position
/// `queryOffset` + i sees key j (at `keyOffset` + j) when j ≤ this + i.
/// `queryOffset` itself when there is no key offset (self-attention).
mlir::Value buildKeyPosition(mlir::ImplicitLocOpBuilder &b,
                             mlir::Value queryOffset, mlir::Value keyOffset);

/// The mask of keys j0 + l (l < `lanes`) that exist (< `end`) and, when
/// `last` is given, a row at position `last` sees (≤ `last`, signed: in
/// the cross form a row before every key has a negative `last`): a
/// vector<lanes x i1>, or with `lanes` = 0 the i1 of key j0 alone. The
/// lane offsets are a constant, not vector.step, which has no lowering
/// inside GPU kernels: the one mask serves both targets.
mlir::Value buildKeyMask(mlir::ImplicitLocOpBuilder &b, unsigned lanes,
                         mlir::Value j0, mlir::Value end,
                         mlir::Value last = mlir::Value());

//===----------------------------------------------------------------------===//
// Online softmax
//===----------------------------------------------------------------------===//

/// The result of one online-softmax step of one row and head.
struct SoftmaxStep {
  mlir::Value max;   ///< m' = max(m, max s); null with a known max
  mlir::Value alpha; ///< e^{m − m'}, the rescale of sum and accumulators
  mlir::Value sum;   ///< α l + Σ p (per lane when `vm` builds vectors)
  llvm::SmallVector<mlir::Value> probs; ///< p = e^{s − m'}, 0 off the mask
};

/// One online-softmax step over `scores` (values of `vm`: vectors of keys
/// or scalars) of one row and head, from its running max `max` (a scalar
/// of `sm`) and sum `sum` (a value of `vm`). `masks`, one per score or
/// empty, says which keys the row sees. A null `max` is the known max 0
/// of ScoreCoefficients::allNonPositive: p = e^s, no rescale.
/// `boundedExp`: the exps carry fastmath flags that let an f32 kernel's
/// polynomial exp (KernelMath.h) flush results below 2⁻¹²⁵ to 0 (`afn`:
/// every p and α is ≤ 1 and the row sum that divides them ≥ 1 or the
/// running max's e^0) and, with the known max, drop the overflow test
/// (`ninf`: e^s with s ≤ 0 and finite).
SoftmaxStep buildSoftmaxStep(lie::ScalarBuilder &sm, lie::ScalarBuilder &vm,
                             mlir::Value max, mlir::Value sum,
                             llvm::ArrayRef<mlir::Value> scores,
                             llvm::ArrayRef<mlir::Value> masks,
                             bool boundedExp = false);

/// The sum of the lanes of `sum`, or `sum` itself when it is a scalar.
mlir::Value buildLaneSum(mlir::ImplicitLocOpBuilder &b, mlir::Value sum);

/// The log-sum-exp m + log l of a row's final statistics (`total` the
/// lane sum); log l with a known max (null `max`).
mlir::Value buildLogSumExp(lie::ScalarBuilder &sm, mlir::Value max,
                           mlir::Value total);

/// The backward's probability of a key, P = e^{s − lse} from the row's
/// stored log-sum-exp (a scalar), 0 off `mask`.
mlir::Value buildProbability(lie::ScalarBuilder &vm, mlir::Value score,
                             mlir::Value lse, mlir::Value mask);

/// The backward's probability of a key with the known max 0 (the self
/// form, every score ≤ 0, ScoreCoefficients::allNonPositive): P = e^s ·
/// `invSum`, with `invSum` = e^{−lse} of the row (≤ 1, since the self pair
/// makes lse ≥ 0), 0 off `mask`. Heads with equal coefficients have equal
/// scores and so share one e^s, where e^{s − lse} needs one per head.
mlir::Value buildKnownMaxProbability(lie::ScalarBuilder &vm, mlir::Value score,
                                     mlir::Value invSum, mlir::Value mask);

/// The score's cotangent dS = P (dP − D), with dP = dO·v and D = ⟨dO, O⟩
/// the row's (a scalar).
mlir::Value buildScoreBar(lie::ScalarBuilder &vm, mlir::Value prob,
                          mlir::Value probBar, mlir::Value rowDot);

//===----------------------------------------------------------------------===//
// The pair form
//===----------------------------------------------------------------------===//

/// One evaluation of the pair form, kept for its adjoint.
struct PairEvaluation {
  lie::Scalars norms; ///< N_b, one value of the builder per block
  /// The pairs' log coordinates when the form ran per lane (the adjoint
  /// reuses them instead of a second log); empty otherwise.
  lie::Scalars logs;
};

/// The group model's pair form of one attention, one pair per lane (or
/// one pair on scalars). A straight-line form is built inline on the
/// builder's values; a form that builds loops (a declared group's
/// iterative log) runs per lane in scalar code, in a private function
/// outlined once per group and element type in the module, so that its
/// loops are emitted once rather than at every call site.
class PairFormEvaluator {
public:
  PairFormEvaluator(const lie::GroupModel &model, mlir::Attribute group,
                    mlir::FloatType elt, mlir::ModuleOp module,
                    mlir::Location loc);

  /// The block norms of queries `q` against keys `keys` (values of `vm`;
  /// for vectors, `q` are splats of one query's features).
  PairEvaluation evaluate(lie::ScalarBuilder &vm, mlir::ValueRange q,
                          mlir::ValueRange keys);
  /// The VJP (q̄, k̄) of `pair` = evaluate(vm, q, keys) for cotangents
  /// `normBars`. Pairs off `mask` hold no key (past the end, or causally
  /// hidden) and get zero gradients; in the per-lane form they are not
  /// evaluated at all, so no log of a zero key reaches the sums.
  mlir::FailureOr<std::pair<lie::Scalars, lie::Scalars>>
  evaluateVJP(lie::ScalarBuilder &vm, const PairEvaluation &pair,
              mlir::ValueRange q, mlir::ValueRange keys,
              mlir::ValueRange normBars, mlir::Value mask);

  /// The functions outlined so far (their f32 math is the kernel's).
  llvm::ArrayRef<mlir::func::FuncOp> getOutlined() const { return outlined; }

private:
  /// (q, k) → (N, w) or, with `vjp`, (q, k, w, n̄) → (q̄, k̄).
  mlir::func::FuncOp function(bool vjp);

  const lie::GroupModel &model;
  mlir::Attribute group;
  mlir::FloatType elt;
  mlir::ModuleOp module;
  mlir::Location loc;
  llvm::SmallVector<mlir::func::FuncOp> outlined;
  bool failedVJP = false;
};

//===----------------------------------------------------------------------===//
// P·V
//===----------------------------------------------------------------------===//

/// A run of value columns [col, col + width) of one head, held in one
/// accumulator per query row: a vector of `width` lanes, or a scalar of
/// one column when `width` is 0.
struct ValueChunk {
  int64_t head, col, width;
};

/// The `dim` value columns of `heads` heads in chunks of `width` columns
/// (0: one scalar per column), none straddling two heads.
llvm::SmallVector<ValueChunk> splitValueColumns(int64_t heads, int64_t dim,
                                                int64_t width);

/// acc_c ← α_h acc_c for the chunks of head `head` of one row.
void buildRescale(mlir::ImplicitLocOpBuilder &b, mlir::FloatType elt,
                  llvm::ArrayRef<ValueChunk> chunks,
                  llvm::MutableArrayRef<mlir::Value> acc, int64_t head,
                  mlir::Value alpha);

/// acc_c ← acc_c + p_{head(c)} v_c for every chunk of one row and one key:
/// `prob(h)` is that key's probability for head h (a scalar), `values`
/// the key's value row, one value per chunk.
void buildPVUpdate(mlir::ImplicitLocOpBuilder &b, mlir::FloatType elt,
                   llvm::ArrayRef<ValueChunk> chunks,
                   llvm::MutableArrayRef<mlir::Value> acc,
                   llvm::function_ref<mlir::Value(int64_t head)> prob,
                   llvm::ArrayRef<mlir::Value> values);

//===----------------------------------------------------------------------===//
// P·V with bf16 products (strategy products = bf16_dot)
//===----------------------------------------------------------------------===//

/// Whether the bf16 form of P·V (buildPVUpdateBF16) runs `chunks` of
/// `elt` values in key tiles of `keyTile`: f32 values, whole pairs of
/// keys per tile, and chunks of 4, 8 or 16 columns (vdpbf16ps on 128-,
/// 256- or 512-bit vectors).
bool supportsBF16Products(mlir::FloatType elt,
                          llvm::ArrayRef<ValueChunk> chunks, int64_t keyTile);

/// `values` ([batch...] x L x D, f32, D static) rounded to bf16 (to
/// nearest even) once and packed in pairs of keys (VNNI):
/// [batch...] x ceil(L/2) x 2D bf16, whose row a holds keys 2a and 2a + 1
/// interleaved column by column (element 2c + t is V[2a + t][c]), zeros
/// for the key past an odd L. One contiguous row per pair of keys is what
/// buildPVUpdateBF16 reads.
mlir::Value buildPackedValuesBF16(mlir::ImplicitLocOpBuilder &b,
                                  mlir::Value values);

/// acc_c ← acc_c + p_{h,0} V_{2a,c} + p_{h,1} V_{2a+1,c} for every chunk
/// of one row and one pair of keys, bf16 products summed in f32
/// (x86vector.avx512.dot, vdpbf16ps): `probPair(h)` is the pair's two
/// probabilities for head h as a vector<2xbf16>, `pairs` the pair's
/// packed value row (buildPackedValuesBF16), a vector<2·width x bf16> per
/// chunk.
void buildPVUpdateBF16(mlir::ImplicitLocOpBuilder &b,
                       llvm::ArrayRef<ValueChunk> chunks,
                       llvm::MutableArrayRef<mlir::Value> acc,
                       llvm::function_ref<mlir::Value(int64_t head)> probPair,
                       llvm::ArrayRef<mlir::Value> pairs);

/// out_c = acc_c / l_{head(c)} for every chunk of one row (`totals` the
/// row's lane sums per head).
llvm::SmallVector<mlir::Value>
buildNormalized(mlir::ImplicitLocOpBuilder &b, mlir::FloatType elt,
                llvm::ArrayRef<ValueChunk> chunks,
                llvm::ArrayRef<mlir::Value> acc,
                llvm::ArrayRef<mlir::Value> totals);

//===----------------------------------------------------------------------===//
// State, indices, query rows
//===----------------------------------------------------------------------===//

/// The running state of a row block, per row r and head h: max m_rh (a
/// scalar), sum l_rh (per lane, or a scalar) and the accumulators
/// [r][chunk]. It crosses loop iterations flattened (pack/unpack).
struct SoftmaxState {
  llvm::SmallVector<mlir::Value> max, sum, acc;

  /// max, then sum, then acc.
  llvm::SmallVector<mlir::Value> pack() const;
  /// The inverse of pack, for `maxes` maxima and `sums` sums.
  static SoftmaxState unpack(mlir::ValueRange values, size_t maxes,
                             size_t sums);
  /// The state before any key: m = −∞ (`withMax`), l = 0 (values of
  /// `vm`), acc = 0 for `rows` rows of `chunks`.
  static SoftmaxState initial(lie::ScalarBuilder &sm, lie::ScalarBuilder &vm,
                              int64_t rows, int64_t heads,
                              llvm::ArrayRef<ValueChunk> chunks, bool withMax);
};

/// The row-major indices of `flat` over `extents` (the batch dims): what
/// one flat parallel loop over batch elements needs instead of a reshape.
llvm::SmallVector<mlir::Value>
buildDelinearized(mlir::ImplicitLocOpBuilder &b, mlir::Value flat,
                  llvm::ArrayRef<mlir::Value> extents);

/// The item at position `i` of `count` in the zigzag order 0, n−1, 1,
/// n−2, …: i/2 for even i, n−1−i/2 for odd i. For a parallel loop whose
/// iterations cost work growing (or shrinking) linearly with their index,
/// as causal query tiles (or key tiles) do: in this order every two
/// consecutive iterations cost the same, so the thread pool's contiguous,
/// near-equal chunks (runtime/src/ThreadPool.h) get near-equal work for
/// any number of threads, where the plain order gives the second of two
/// threads three times the work of the first.
mlir::Value buildBalancedOrder(mlir::ImplicitLocOpBuilder &b, mlir::Value i,
                               mlir::Value count);

/// `batch` followed by `rest`: the indices of an element of a batched
/// operand.
llvm::SmallVector<mlir::Value> withBatch(mlir::ValueRange batch,
                                         mlir::ValueRange rest);

/// The query rows that share each key load, forward and backward alike:
/// `registerRows` (as many as keep one row block's accumulators in
/// registers) for a straight-line pair form; 1 for a form that runs per
/// lane, where sharing key loads saves nothing and every row repeats the
/// per-lane calls.
int64_t chooseQueryRows(const lie::GroupModel &model, int64_t registerRows);

/// The rows of one tiled forward op with cache blocks (the strategy's
/// query_block, run as micro-kernels of chooseQueryRows rows over blocks of
/// key_block keys), or chooseQueryRows' rows when the strategy has no
/// blocks for `model`. geo-tile-attention cuts ops of this size and
/// geo-decompose-attention reads it back.
int64_t chooseQueryBlock(const lie::GroupModel &model, int64_t registerRows,
                         int64_t queryBlock, int64_t keyBlock);

} // namespace torsor::geo

#endif // TORSOR_DIALECTS_GEO_TRANSFORMS_ATTENTIONKERNEL_H
