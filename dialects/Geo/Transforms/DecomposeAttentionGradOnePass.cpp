//===- DecomposeAttentionGradOnePass.cpp - The CPU's one-pass backward ---===//
//
// GradSchedule's one-pass schedule (the strategy's `backward = one_pass`,
// the CPU's):
// one parallel loop over (batch element, key chunk); chunk c of 8 takes
// key blocks c and 15 − c of every 16. Per key block, its keys and values
// are packed per key vector into a stack scratch, where dk and dv
// accumulate per lane while every query row that may
// see the block visits it, R rows at a time; dq per lane over the block,
// then lane-summed into chunk c's partial [batch..., chunks, Lq, Fq]; a
// last parallel loop over rows sums the partials. Each pair's form and
// exp is evaluated once. The row pass before it (DecomposeAttentionGrad.cpp)
// stores lse_i and D_i.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/LoopAttributes.h"
#include "dialects/Geo/Transforms/GradSchedule.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;
using namespace torsor::geo::grad;

/// Keeps `loop` a loop in LLVM: no unrolling, no vectorisation. For the
/// loops of scalar moves around the key loop (packing and writing out a
/// block), which LLVM otherwise unrolls by their constant trip counts
/// (lanes × D copies, a third of the SE(3) backward kernel's code) for
/// O(block · D) moves against the block's O(Lq · block) pairs.
static void keepRolled(scf::ForOp loop, unsigned unrollCount = 0) {
  MLIRContext *ctx = loop.getContext();
  auto no = BoolAttr::get(ctx, true);
  auto unroll =
      unrollCount > 1
          ? LLVM::LoopUnrollAttr::get(
                ctx, /*disable=*/{},
                IntegerAttr::get(IntegerType::get(ctx, 32), unrollCount), {},
                {}, {}, {}, {})
          : LLVM::LoopUnrollAttr::get(ctx, /*disable=*/no, {}, {}, {}, {}, {},
                                      {});
  auto vectorize =
      LLVM::LoopVectorizeAttr::get(ctx, /*disable=*/no, {}, {}, {}, {}, {}, {});
  // `loop_annotation`: scf-to-cf carries an LLVM attribute of the loop to
  // its latch branch, where llvm.br takes it as its loop metadata.
  loop->setAttr("loop_annotation",
                LLVM::LoopAnnotationAttr::get(ctx, /*disableNonforced=*/{},
                                              vectorize, {}, unroll, {}, {}, {},
                                              {}, {}, {}, {}, {}, {}, {}, {}));
}

Value GradSchedule::onePassRows(ImplicitLocOpBuilder &b, Value partial,
                                ValueRange batch, Value chunk, Value j0,
                                Value kvEnd, Value first, Value last,
                                int64_t tileRows, Value lse, Value dsum,
                                Value buffer) {
  const Scratch &sc = scratch;
  auto at1 = [&](ImplicitLocOpBuilder &lb, int64_t i) { return idx(lb, i); };
  auto loop = scf::ForOp::create(
      b, first, last, idx(b, tileRows), ValueRange{partial},
      [&](OpBuilder &nested, Location loc, Value row0, ValueRange args) {
        ImplicitLocOpBuilder rb(loc, nested);
        ScalarBuilder rsm(rb, elt), rvm(rb, elt, lanes);
        // Per row: lse (with the known max, e^{−lse}) and D per head and
        // (causal) its key position; its
        // query features and dO go into the scratch, where the key loop
        // reads them as broadcast operands (LLVM would otherwise hoist
        // R · (Fq + D) splats out of it and spill them); dq's per-lane
        // accumulators start at zero there.
        //
        // The last row block may hold fewer than R rows: its rows past the
        // end repeat the last row with dO = 0 and D = 0 (they add
        // nothing), so that the key loop is built once, not once for R
        // rows and again for one.
        SmallVector<Value> rowIdx(tileRows);
        Value lastRow = arith::SubIOp::create(rb, queryLen, idx(rb, 1));
        for (int64_t r = 0; r < tileRows; ++r) {
          Value row = arith::AddIOp::create(rb, row0, idx(rb, r));
          rowIdx[r] = r == 0 ? row : arith::MinUIOp::create(rb, row, lastRow);
          // A repeated row's dO and D are 0: its dP, D and so dS are 0,
          // and with them its dq, dk and dv terms (P dO), while the key
          // loop and its masks stay those of R rows of the sequence.
          Value inside =
              r == 0 ? Value()
                     : arith::CmpIOp::create(rb, arith::CmpIPredicate::ult, row,
                                             queryLen)
                           .getResult();
          auto kept = [&](Value x) -> Value {
            return inside ? arith::SelectOp::create(rb, inside, x, rsm.c(0.0))
                                .getResult()
                          : x;
          };
          for (unsigned f = 0; f < numQ; ++f)
            memref::StoreOp::create(
                rb, at(rb, queries, batch, rowIdx[r], idx(rb, f)), buffer,
                at1(rb, sc.query + r * numQ + f));
          for (int64_t d = 0; d < dim; ++d)
            memref::StoreOp::create(
                rb, kept(at(rb, outGrad, batch, rowIdx[r], idx(rb, d))), buffer,
                at1(rb, sc.outGrad + r * dim + d));
          for (unsigned f = 0; f < numQ; ++f)
            vector::StoreOp::create(rb, rvm.c(0.0), buffer,
                                    at1(rb, sc.dq + (r * numQ + f) * lanes));
          // Per head lse (with the known max, e^{−lse}), then D.
          for (int64_t h = 0; h < heads; ++h) {
            Value l = at(rb, lse, batch, rowIdx[r], idx(rb, h));
            memref::StoreOp::create(rb, knownMax ? rsm.exp(rsm.neg(l)) : l,
                                    buffer, at1(rb, sc.stats + r * heads + h));
            memref::StoreOp::create(
                rb, kept(at(rb, dsum, batch, rowIdx[r], idx(rb, h))), buffer,
                at1(rb, sc.stats + (tileRows + r) * heads + h));
          }
        }
        scf::ForOp::create(
            rb, idx(rb, 0), kvEnd, idx(rb, 1), ValueRange{},
            [&](OpBuilder &nested2, Location loc2, Value kv, ValueRange) {
              ImplicitLocOpBuilder ib(loc2, nested2);
              ScalarBuilder ivm(ib, elt, lanes);
              auto scalar = [&](int64_t i) {
                return memref::LoadOp::create(ib, buffer, at1(ib, i))
                    .getResult();
              };
              auto vload = [&](Value i) {
                return vector::LoadOp::create(ib, vec(), buffer, i).getResult();
              };
              auto vstore = [&](Value v, Value i) {
                vector::StoreOp::create(ib, v, buffer, i);
              };
              Value jv = arith::AddIOp::create(
                  ib, j0, arith::MulIOp::create(ib, kv, idx(ib, lanes)));
              // This key vector's dk, then dv, per lane in the scratch;
              // its keys and values, packed, `sc.packed` further on.
              Value base = arith::MulIOp::create(ib, kv, idx(ib, sc.perVector));
              auto slot = [&](int64_t i) -> Value {
                return arith::AddIOp::create(ib, base, idx(ib, i * lanes));
              };
              auto packedSlot = [&](int64_t i) -> Value {
                return arith::AddIOp::create(ib, base,
                                             idx(ib, sc.packed + i * lanes));
              };
              Scalars k;
              for (unsigned f = 0; f < numK; ++f)
                k.push_back(vload(packedSlot(f)));
              auto prob = [&](int64_t r, int64_t h) {
                return at1(ib, sc.probs + (r * heads + h) * lanes);
              };
              // Index `base` + `d` · `stride` of the scratch, for a
              // feature `d` of a loop over features.
              auto featureAt = [&](ImplicitLocOpBuilder &fb, Value d,
                                   int64_t stride, int64_t base,
                                   Value from = Value()) -> Value {
                Value at = arith::AddIOp::create(
                    fb, arith::MulIOp::create(fb, d, idx(fb, stride)),
                    idx(fb, base));
                return from ? arith::AddIOp::create(fb, from, at).getResult()
                            : at;
              };
              Value vBase = arith::AddIOp::create(
                  ib, base, idx(ib, sc.packed + numK * lanes));
              Value dvBase =
                  arith::AddIOp::create(ib, base, idx(ib, numK * lanes));
              // 1. dP = dO·v for every row and head, each v column loaded
              // once, into the scratch (where P takes its place). Each
              // dot product is a chain of FMAs; with few rows and heads
              // (long heads) it is split into `parts` chains over
              // interleaved features, summed as a tree, so that the
              // chains' latency overlaps. Per head a loop over its
              // features, `parts` at a time (R · parts FMAs per
              // iteration), not R · D unrolled FMAs and their splats.
              {
                int64_t parts = dPChains(tileRows);
                for (int64_t h = 0; h < heads; ++h) {
                  SmallVector<Value> init(tileRows * parts, ivm.c(0.0));
                  auto loop = scf::ForOp::create(
                      ib, idx(ib, h * headDim), idx(ib, (h + 1) * headDim),
                      idx(ib, parts), init,
                      [&](OpBuilder &n3, Location l3, Value d0,
                          ValueRange accIn) {
                        ImplicitLocOpBuilder fb(l3, n3);
                        ScalarBuilder fvm(fb, elt, lanes);
                        SmallVector<Value> acc(accIn);
                        for (int64_t c = 0; c < parts; ++c) {
                          Value d =
                              c == 0 ? d0
                                     : arith::AddIOp::create(fb, d0, idx(fb, c))
                                           .getResult();
                          Value v = vector::LoadOp::create(
                              fb, vec(), buffer,
                              featureAt(fb, d, lanes, 0, vBase));
                          for (int64_t r = 0; r < tileRows; ++r) {
                            Value g = memref::LoadOp::create(
                                fb, buffer,
                                featureAt(fb, d, 1, sc.outGrad + r * dim));
                            acc[r * parts + c] =
                                fvm.fma(fvm.splat(g), v, acc[r * parts + c]);
                          }
                        }
                        scf::YieldOp::create(fb, acc);
                      });
                  keepRolled(loop);
                  for (int64_t r = 0; r < tileRows; ++r) {
                    SmallVector<Value> sum(
                        loop.getResults().begin() + r * parts,
                        loop.getResults().begin() + (r + 1) * parts);
                    for (size_t width = 1; width < sum.size(); width *= 2)
                      for (size_t i = 0; i + width < sum.size(); i += 2 * width)
                        sum[i] = ivm.add(sum[i], sum[i + width]);
                    vstore(sum[0], prob(r, h));
                  }
                }
              }
              // 2. Per row, one after the other, in a loop that LLVM keeps
              // rolled: only one row's pair form is live at a time, so
              // that its state stays in registers, and the pair form and
              // its adjoint are built once, not R times (R = 4 unrolled
              // rows were 6.7k of the SE(3) kernel's LLVM IR lines on
              // AVX-512; as fast or faster rolled, with the scratch
              // aligned). The pair form, the scores and P (into the
              // scratch, for dv), dS = P (dP − D) and the pair form's
              // adjoint, into dq's and dk's accumulators. The row's query
              // features and statistics come from the scratch, its
              // (causal) key position from its index.
              SmallVector<Value> dkIn;
              for (unsigned f = 0; f < numK; ++f)
                dkIn.push_back(vload(slot(f)));
              auto rowLoop = scf::ForOp::create(
                  ib, idx(ib, 0), idx(ib, tileRows), idx(ib, 1), dkIn,
                  [&](OpBuilder &n3, Location l3, Value r, ValueRange dkAcc) {
                    ImplicitLocOpBuilder pb(l3, n3);
                    ScalarBuilder pvm(pb, elt, lanes);
                    SmallVector<Value> dkOut(dkAcc);
                    // Element `i` of row r's part of the scratch at
                    // `base`, `stride` elements per row.
                    auto rowSlot = [&](int64_t base, int64_t stride,
                                       int64_t i) -> Value {
                      return arith::AddIOp::create(
                          pb, arith::MulIOp::create(pb, r, idx(pb, stride)),
                          idx(pb, base + i));
                    };
                    auto sload = [&](Value i) {
                      return memref::LoadOp::create(pb, buffer, i).getResult();
                    };
                    Scalars q;
                    for (unsigned f = 0; f < numQ; ++f)
                      q.push_back(pvm.splat(sload(rowSlot(sc.query, numQ, f))));
                    Value last;
                    if (op.getCausal())
                      last = keyPosition(
                          pb,
                          arith::MinUIOp::create(
                              pb, arith::AddIOp::create(pb, row0, r), lastRow));
                    Value mask = buildKeyMask(pb, lanes, jv, len, last);
                    PairEvaluation eval = pairs.evaluate(pvm, q, k);
                    SmallVector<Value> s = coefs.buildScores(pvm, eval.norms);
                    SmallVector<Value> ds;
                    for (int64_t h = 0; h < heads; ++h) {
                      Value l = sload(rowSlot(sc.stats, heads, h));
                      Value dRow =
                          sload(rowSlot(sc.stats + tileRows * heads, heads, h));
                      Value p = knownMax ? buildKnownMaxProbability(pvm, s[h],
                                                                    l, mask)
                                         : buildProbability(pvm, s[h], l, mask);
                      Value prob =
                          rowSlot(sc.probs + h * lanes, heads * lanes, 0);
                      Value dp =
                          vector::LoadOp::create(pb, vec(), buffer, prob);
                      vector::StoreOp::create(pb, p, buffer, prob);
                      ds.push_back(buildScoreBar(pvm, p, dp, dRow));
                    }
                    auto vjp = pairs.evaluateVJP(
                        pvm, eval, q, k, coefs.buildNormBars(pvm, ds), mask);
                    if (failed(vjp)) {
                      failedVJP = true;
                      scf::YieldOp::create(pb, dkOut);
                      return;
                    }
                    for (unsigned f = 0; f < numQ; ++f) {
                      Value i = rowSlot(sc.dq + f * lanes, numQ * lanes, 0);
                      Value acc = vector::LoadOp::create(pb, vec(), buffer, i);
                      vector::StoreOp::create(pb, pvm.add(acc, vjp->first[f]),
                                              buffer, i);
                    }
                    for (unsigned f = 0; f < numK; ++f)
                      dkOut[f] = pvm.add(dkOut[f], vjp->second[f]);
                    scf::YieldOp::create(pb, dkOut);
                  });
              keepRolled(rowLoop);
              SmallVector<Value> dk(rowLoop.getResults());
              // 3. dv_j += Σ_r P_rj dO_r, each accumulator loaded and
              // stored once per row block: per head a loop over its
              // features.
              for (int64_t h = 0; h < heads; ++h) {
                SmallVector<Value> p;
                for (int64_t r = 0; r < tileRows; ++r)
                  p.push_back(vload(prob(r, h)));
                auto loop = scf::ForOp::create(
                    ib, idx(ib, h * headDim), idx(ib, (h + 1) * headDim),
                    idx(ib, 1), ValueRange{},
                    [&](OpBuilder &n3, Location l3, Value d, ValueRange) {
                      ImplicitLocOpBuilder fb(l3, n3);
                      ScalarBuilder fvm(fb, elt, lanes);
                      Value at = featureAt(fb, d, lanes, 0, dvBase);
                      Value acc = vector::LoadOp::create(fb, vec(), buffer, at);
                      for (int64_t r = 0; r < tileRows; ++r) {
                        Value g = memref::LoadOp::create(
                            fb, buffer,
                            featureAt(fb, d, 1, sc.outGrad + r * dim));
                        acc = fvm.fma(p[r], fvm.splat(g), acc);
                      }
                      vector::StoreOp::create(fb, acc, buffer, at);
                      scf::YieldOp::create(fb);
                    });
                keepRolled(loop);
              }
              for (unsigned f = 0; f < numK; ++f)
                vstore(dk[f], slot(f));
              scf::YieldOp::create(ib);
            });
        // The block's dq into this chunk's partials: one lane sum per row
        // and feature per block, as a tree (reassoc: log₂ lanes shuffles
        // and adds, where the ordered sum is a chain of `lanes` scalar
        // adds, R · Fq of them per block).
        Value out = args[0];
        for (int64_t r = 0; r < tileRows; ++r)
          for (unsigned f = 0; f < numQ; ++f) {
            SmallVector<Value> pos =
                withBatch(batch, {chunk, rowIdx[r], idx(rb, f)});
            Value lanesDq = vector::LoadOp::create(
                rb, vec(), buffer, at1(rb, sc.dq + (r * numQ + f) * lanes));
            Value lanesSum = lanes > 1
                                 ? vector::ReductionOp::create(
                                       rb, vector::CombiningKind::ADD, lanesDq,
                                       arith::FastMathFlags::reassoc)
                                       .getResult()
                                 : buildLaneSum(rb, lanesDq);
            Value sum =
                rsm.add(tensor::ExtractOp::create(rb, out, pos), lanesSum);
            out = tensor::InsertOp::create(rb, sum, out, pos);
          }
        scf::YieldOp::create(rb, out);
      });
  return loop.getResult(0);
}

SmallVector<Value> GradSchedule::buildOnePass(ImplicitLocOpBuilder &b,
                                              ValueRange state, Value chunks,
                                              Value lse, Value dsum) {
  int64_t blockKeys = keyVectors * lanes, perVector = (numK + dim) * lanes;
  Value blocks = arith::DivUIOp::create(
      b, arith::AddIOp::create(b, len, idx(b, blockKeys - 1)),
      idx(b, blockKeys));
  Value trips = arith::MulIOp::create(b, batches, chunks);
  auto loop = scf::ForOp::create(
      b, idx(b, 0), trips, idx(b, 1), state,
      [&](OpBuilder &nested, Location loc, Value t, ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        auto [batch, chunk] = delinearize(lb, t, chunks);
        if (cross)
          diagonal = diagonalHere(lb);
        // dk and dv of one key block, [key vector][feature][lane]: in L1
        // while every query row that sees the block visits it. Aligned to
        // a cache line, so that no vector of it straddles two: the stack
        // gives 16 bytes, and where the 512-bit loads of the key loop
        // landed across lines depended on the caller's stack (the SE(3)
        // backward's CPU time moved by 10 % between runs of one binary).
        Value buffer =
            memref::AllocaOp::create(lb, MemRefType::get({scratch.size}, elt),
                                     lb.getI64IntegerAttr(kScratchAlignment));
        // Chunk c of C takes key blocks c and 2C − 1 − c of every 2C: under
        // a causal mask early keys are seen by more rows, and each pair of
        // mirrored blocks sums to the same work, so the runtime's
        // contiguous runs of chunks get equal shares.
        Value period = idx(lb, 2 * kMaxKeyChunks);
        Value periods = arith::DivUIOp::create(
            lb,
            arith::AddIOp::create(lb, blocks, idx(lb, 2 * kMaxKeyChunks - 1)),
            period);
        Value mirror =
            arith::SubIOp::create(lb, idx(lb, 2 * kMaxKeyChunks - 1), chunk);
        auto blockLoop = scf::ForOp::create(
            lb, idx(lb, 0), arith::MulIOp::create(lb, periods, idx(lb, 2)),
            idx(lb, 1), args,
            [&](OpBuilder &nested2, Location loc2, Value i, ValueRange acc) {
              ImplicitLocOpBuilder ob(loc2, nested2);
              Value odd = arith::CmpIOp::create(
                  ob, arith::CmpIPredicate::ne,
                  arith::AndIOp::create(ob, i, idx(ob, 1)), idx(ob, 0));
              Value block = arith::AddIOp::create(
                  ob,
                  arith::MulIOp::create(
                      ob, arith::ShRUIOp::create(ob, i, idx(ob, 1)), period),
                  arith::SelectOp::create(ob, odd, mirror, chunk));
              auto inRange = scf::IfOp::create(
                  ob, TypeRange(acc),
                  arith::CmpIOp::create(ob, arith::CmpIPredicate::ult, block,
                                        blocks),
                  /*withElseRegion=*/true);
              scf::YieldOp::create(ob, inRange.getResults());
              OpBuilder::InsertionGuard guard(ob);
              ob.setInsertionPointToStart(inRange.elseBlock());
              scf::YieldOp::create(ob, acc);
              ob.setInsertionPointToStart(inRange.thenBlock());
              ImplicitLocOpBuilder &kb = ob;
              ScalarBuilder kvm(kb, elt, lanes);
              Value j0 = arith::MulIOp::create(kb, block, idx(kb, blockKeys));
              // The block's key vectors that hold keys.
              Value kvEnd = arith::MinUIOp::create(
                  kb, idx(kb, keyVectors),
                  arith::DivUIOp::create(
                      kb,
                      arith::AddIOp::create(kb,
                                            arith::SubIOp::create(kb, len, j0),
                                            idx(kb, lanes - 1)),
                      idx(kb, lanes)));
              Value zero = kvm.c(0.0);
              scf::ForOp::create(
                  kb, idx(kb, 0), idx(kb, keyVectors * perVector),
                  idx(kb, lanes), ValueRange{},
                  [&](OpBuilder &zb, Location zl, Value i, ValueRange) {
                    vector::StoreOp::create(zb, zl, zero, buffer, i);
                    scf::YieldOp::create(zb, zl);
                  });
              packBlock(kb, batch, j0, kvEnd, buffer);
              // Rows that may see the block: all, or (causal) from the
              // block's first key on (with offsets from j0 − diagonal,
              // clamped to the query rows); R at a time, the last row
              // block repeating its last row.
              Value first = idx(kb, 0);
              if (op.getCausal() && !cross)
                first = arith::MinUIOp::create(kb, j0, queryLen);
              else if (op.getCausal())
                first = arith::MaxSIOp::create(
                    kb, idx(kb, 0),
                    arith::MinSIOp::create(
                        kb, queryLen, arith::SubIOp::create(kb, j0, diagonal)));
              Value partial =
                  onePassRows(kb, acc[0], batch, chunk, j0, kvEnd, first,
                              queryLen, rows, lse, dsum, buffer);
              // The block's dk and dv, feature-major.
              auto flush = [&](Value t, int64_t from, int64_t count) {
                auto outer = scf::ForOp::create(
                    kb, idx(kb, 0), kvEnd, idx(kb, 1), ValueRange{t},
                    [&](OpBuilder &n3, Location l3, Value kv, ValueRange o) {
                      ImplicitLocOpBuilder fb(l3, n3);
                      Value jv = arith::AddIOp::create(
                          fb, j0,
                          arith::MulIOp::create(fb, kv, idx(fb, lanes)));
                      Value base =
                          arith::MulIOp::create(fb, kv, idx(fb, perVector));
                      auto inner = scf::ForOp::create(
                          fb, idx(fb, 0), idx(fb, count), idx(fb, 1), o,
                          [&](OpBuilder &n4, Location l4, Value f,
                              ValueRange o2) {
                            ImplicitLocOpBuilder wb(l4, n4);
                            Value at = arith::AddIOp::create(
                                wb, base,
                                arith::MulIOp::create(
                                    wb,
                                    arith::AddIOp::create(wb, f, idx(wb, from)),
                                    idx(wb, lanes)));
                            Value v =
                                vector::LoadOp::create(wb, vec(), buffer, at);
                            Value w =
                                vector::TransferWriteOp::create(
                                    wb, v, o2[0], withBatch(batch, {f, jv}),
                                    ArrayRef<bool>{false})
                                    .getResult();
                            scf::YieldOp::create(wb, w);
                          });
                      scf::YieldOp::create(fb, inner.getResults());
                    });
                return outer.getResult(0);
              };
              Value dkT = flush(acc[1], 0, numK);
              // dv row-major, [.., L, D], straight into the result: per key
              // of the block (up to the sequence's end) its D entries, read
              // across the scratch's lanes. L · D scalar moves in all,
              // where a feature-major dvᵀ and its transpose back would hold
              // two more L × D buffers.
              auto dvLoop = scf::ForOp::create(
                  kb, idx(kb, 0), kvEnd, idx(kb, 1), ValueRange{acc[2]},
                  [&](OpBuilder &n3, Location l3, Value kv, ValueRange o) {
                    ImplicitLocOpBuilder fb(l3, n3);
                    Value jv = arith::AddIOp::create(
                        fb, j0, arith::MulIOp::create(fb, kv, idx(fb, lanes)));
                    Value base = arith::AddIOp::create(
                        fb, arith::MulIOp::create(fb, kv, idx(fb, perVector)),
                        idx(fb, numK * lanes));
                    Value laneEnd = arith::MinUIOp::create(
                        fb, idx(fb, lanes), arith::SubIOp::create(fb, len, jv));
                    auto lanesLoop = scf::ForOp::create(
                        fb, idx(fb, 0), laneEnd, idx(fb, 1), o,
                        [&](OpBuilder &n4, Location l4, Value lane,
                            ValueRange o2) {
                          ImplicitLocOpBuilder wb(l4, n4);
                          Value row = arith::AddIOp::create(wb, jv, lane);
                          Value from = arith::AddIOp::create(wb, base, lane);
                          // A loop over the D entries, not D unrolled
                          // moves (about 300 of the SE(3) kernel's LLVM IR
                          // lines): L · D moves in all, against the
                          // backward's O(L²) pairs.
                          auto moves = scf::ForOp::create(
                              wb, idx(wb, 0), idx(wb, dim), idx(wb, 1), o2,
                              [&](OpBuilder &n5, Location l5, Value d,
                                  ValueRange o3) {
                                ImplicitLocOpBuilder db(l5, n5);
                                Value x = memref::LoadOp::create(
                                    db, buffer,
                                    ValueRange{arith::AddIOp::create(
                                        db, from,
                                        arith::MulIOp::create(
                                            db, d, idx(db, lanes)))});
                                Value w = tensor::InsertOp::create(
                                    db, x, o3[0], withBatch(batch, {row, d}));
                                scf::YieldOp::create(db, w);
                              });
                          keepRolled(moves);
                          scf::YieldOp::create(wb, moves.getResults());
                        });
                    scf::YieldOp::create(fb, lanesLoop.getResults());
                  });
              Value dv = dvLoop.getResult(0);
              scf::YieldOp::create(kb, ValueRange{partial, dkT, dv});
            });
        scf::YieldOp::create(lb, blockLoop.getResults());
      });
  // Chunks write their own partials and their own key blocks' columns of
  // dkᵀ and dvᵀ only.
  loop->setAttr(kParallelLoopAttr, b.getUnitAttr());
  return SmallVector<Value>(loop.getResults());
}

void GradSchedule::packBlock(ImplicitLocOpBuilder &b, ValueRange batch,
                             Value j0, Value kvEnd, Value buffer) {
  const Scratch &sc = scratch;
  // Per key vector: its key features, read masked from the feature-major
  // keys (zero past the end); per lane j its values from the row-major
  // [L, D], or 0 past the end (read at the last key, then replaced).
  // O(block · (Fk + D)) moves per block, against its O(Lq · block) pairs.
  scf::ForOp::create(
      b, idx(b, 0), kvEnd, idx(b, 1), ValueRange{},
      [&](OpBuilder &nested, Location loc, Value kv, ValueRange) {
        ImplicitLocOpBuilder lb(loc, nested);
        Value jv = arith::AddIOp::create(
            lb, j0, arith::MulIOp::create(lb, kv, idx(lb, lanes)));
        Value base = arith::AddIOp::create(
            lb, arith::MulIOp::create(lb, kv, idx(lb, sc.perVector)),
            idx(lb, sc.packed));
        for (unsigned f = 0; f < numK; ++f)
          vector::StoreOp::create(
              lb, loadKeys(lb, keys, batch, f, jv), buffer,
              ValueRange{arith::AddIOp::create(lb, base, idx(lb, f * lanes))});
        Value last = arith::SubIOp::create(lb, len, idx(lb, 1));
        Value valuesBase =
            arith::AddIOp::create(lb, base, idx(lb, numK * lanes));
        scf::ForOp::create(
            lb, idx(lb, 0), idx(lb, lanes), idx(lb, 1), ValueRange{},
            [&](OpBuilder &n2, Location l2, Value lane, ValueRange) {
              ImplicitLocOpBuilder ib(l2, n2);
              ScalarBuilder ism(ib, elt);
              Value j = arith::AddIOp::create(ib, jv, lane);
              Value inside =
                  arith::CmpIOp::create(ib, arith::CmpIPredicate::ult, j, len);
              Value key = arith::MinUIOp::create(ib, j, last);
              Value to = arith::AddIOp::create(ib, valuesBase, lane);
              // A loop over the D values, not D unrolled copies: LLVM
              // unrolls the lane loop around them (lanes · D scalar moves
              // and inserts, a quarter of the SE(3) backward kernel's
              // code), and the moves share no registers.
              Value zero = ism.c(0.0);
              auto moves = scf::ForOp::create(
                  ib, idx(ib, 0), idx(ib, dim), idx(ib, 1), ValueRange{},
                  [&](OpBuilder &n3, Location l3, Value d, ValueRange) {
                    ImplicitLocOpBuilder db(l3, n3);
                    Value x = at(db, values, batch, key, d);
                    x = arith::SelectOp::create(db, inside, x, zero);
                    memref::StoreOp::create(
                        db, x, buffer,
                        ValueRange{arith::AddIOp::create(
                            db, to,
                            arith::MulIOp::create(db, d, idx(db, lanes)))});
                    scf::YieldOp::create(db);
                  });
              keepRolled(moves);
              scf::YieldOp::create(ib);
            });
        scf::YieldOp::create(lb);
      });
}

Value GradSchedule::reduceChunks(ImplicitLocOpBuilder &b, Value partial,
                                 Value chunks) {
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(b, b.getLoc(), queries);
  Value dq = tensor::EmptyOp::create(b, sizes, elt);
  Value trips = arith::MulIOp::create(b, batches, queryLen);
  auto loop = scf::ForOp::create(
      b, idx(b, 0), trips, idx(b, 1), ValueRange{dq},
      [&](OpBuilder &nested, Location loc, Value t, ValueRange args) {
        ImplicitLocOpBuilder lb(loc, nested);
        ScalarBuilder lsm(lb, elt);
        auto [batch, row] = delinearize(lb, t, queryLen);
        Value out = args[0];
        for (unsigned f = 0; f < numQ; ++f) {
          auto sum = scf::ForOp::create(
              lb, idx(lb, 0), chunks, idx(lb, 1), ValueRange{lsm.c(0.0)},
              [&](OpBuilder &n2, Location l2, Value c, ValueRange acc) {
                ImplicitLocOpBuilder cb(l2, n2);
                ScalarBuilder csm(cb, elt);
                Value x = tensor::ExtractOp::create(
                    cb, partial, withBatch(batch, {c, row, idx(cb, f)}));
                scf::YieldOp::create(cb, csm.add(acc[0], x));
              });
          out = tensor::InsertOp::create(lb, sum.getResult(0), out,
                                         withBatch(batch, {row, idx(lb, f)}));
        }
        scf::YieldOp::create(lb, out);
      });
  // Rows write their own dq only.
  loop->setAttr(kParallelLoopAttr, b.getUnitAttr());
  return loop.getResult(0);
}
