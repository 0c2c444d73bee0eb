//===- ThreadPoolTest.cpp - Tests of torsor_parallel_for ------------------===//
//
// parallel_for must cover every index exactly once for every range and pool
// size, return only when all chunks are done, run nested and concurrent
// calls inline without deadlock, and split ranges without overflow.
//
//===----------------------------------------------------------------------===//

#include "ThreadPool.h"
#include "torsor/runtime.h"

#include "gtest/gtest.h"

#include <atomic>
#include <climits>
#include <set>
#include <thread>
#include <vector>

using namespace torsor::rt;

namespace {

/// Counts visits per index of [base, base + hits.size()).
struct Coverage {
  int64_t base;
  std::vector<std::atomic<int>> hits;
  std::atomic<int> calls{0};
  /// Zero counts for n indices from `base`.
  Coverage(int64_t base, size_t n) : base(base), hits(n) {}
};

/// Loop body: counts each visited index.
void countBody(int64_t lo, int64_t hi, void *ctx) {
  auto &c = *static_cast<Coverage *>(ctx);
  c.calls.fetch_add(1);
  for (int64_t i = lo; i < hi; ++i)
    c.hits[i - c.base].fetch_add(1);
}

/// Expects every index covered exactly once.
void expectCovered(const Coverage &c) {
  for (size_t i = 0; i < c.hits.size(); ++i)
    ASSERT_EQ(c.hits[i].load(), 1) << "index " << c.base + i;
}

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ASSERT_EQ(torsorSetNumThreads(threads), nullptr);
    EXPECT_EQ(torsorGetNumThreads(), threads);
    for (int64_t n : {1, 2, 3, 7, 8, 9, 1000, 100003}) {
      for (int64_t base : {int64_t(0), int64_t(-5), int64_t(1) << 40}) {
        Coverage c(base, n);
        torsor_parallel_for(base, base + n, countBody, &c);
        expectCovered(c);
        EXPECT_EQ(c.calls.load(), std::min<int64_t>(n, threads));
      }
    }
  }
  ASSERT_EQ(torsorSetNumThreads(0), nullptr); // back to the default
  EXPECT_GE(torsorGetNumThreads(), 1);
}

TEST(ThreadPool, EmptyAndReversedRangesDoNothing) {
  ASSERT_EQ(torsorSetNumThreads(4), nullptr);
  Coverage c(0, 1);
  torsor_parallel_for(5, 5, countBody, &c);
  torsor_parallel_for(5, 2, countBody, &c);
  EXPECT_EQ(c.calls.load(), 0);
  torsor_parallel_for(0, 10, nullptr, nullptr); // no body: no crash
}

/// Outer body that runs a nested parallel_for over 100 indices per row.
void nestedBody(int64_t lo, int64_t hi, void *ctx) {
  auto &c = *static_cast<Coverage *>(ctx);
  for (int64_t row = lo; row < hi; ++row)
    torsor_parallel_for(row * 100, row * 100 + 100, countBody, &c);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ASSERT_EQ(torsorSetNumThreads(4), nullptr);
  Coverage c(0, 64 * 100);
  torsor_parallel_for(0, 64, nestedBody, &c);
  expectCovered(c);
  EXPECT_EQ(c.calls.load(), 64); // one inline call per row
}

TEST(ThreadPool, ConcurrentCallersAreSafe) {
  ASSERT_EQ(torsorSetNumThreads(3), nullptr);
  std::vector<std::unique_ptr<Coverage>> cov;
  for (int t = 0; t < 4; ++t)
    cov.push_back(std::make_unique<Coverage>(0, 5000));
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int rep = 0; rep < 50; ++rep) {
        Coverage c(0, 5000);
        torsor_parallel_for(0, 5000, countBody, &c);
        for (auto &h : c.hits)
          if (h.load() != 1)
            cov[t]->calls.fetch_add(1000000); // flag an error
      }
      torsor_parallel_for(0, 5000, countBody, cov[t].get());
    });
  for (auto &t : callers)
    t.join();
  for (auto &c : cov) {
    EXPECT_LT(c->calls.load(), 1000000);
    expectCovered(*c);
  }
}

TEST(ThreadPool, ManyBackToBackCalls) {
  ASSERT_EQ(torsorSetNumThreads(4), nullptr);
  Coverage c(0, 37);
  for (int rep = 0; rep < 2000; ++rep)
    torsor_parallel_for(0, 37, countBody, &c);
  for (auto &h : c.hits)
    ASSERT_EQ(h.load(), 2000);
}

TEST(ThreadPool, ChunkBoundsAreExactWithoutOverflow) {
  int64_t lo, hi;
  int64_t begin = INT64_MIN / 2, end = INT64_MAX / 2 + 7;
  int64_t prev = begin;
  for (int64_t c = 0; c < 7; ++c) {
    ThreadPool::chunkBounds(begin, end, 7, c, lo, hi);
    EXPECT_EQ(lo, prev);
    EXPECT_LT(lo, hi);
    prev = hi;
  }
  EXPECT_EQ(prev, end);
  ThreadPool::chunkBounds(0, 10, 4, 0, lo, hi);
  EXPECT_EQ(hi - lo, 3);
  ThreadPool::chunkBounds(0, 10, 4, 3, lo, hi);
  EXPECT_EQ(lo, 8);
  EXPECT_EQ(hi, 10);
}

TEST(ThreadPool, RejectsAbsurdThreadCounts) {
  TorsorStatus *s = torsorSetNumThreads(100000);
  ASSERT_NE(s, nullptr);
  EXPECT_STREQ(torsorStatusMessage(s),
               "thread count 100000 is too large (max 4096)");
  torsorStatusFree(s);
}

} // namespace
