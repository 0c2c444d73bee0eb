//===- ModelMemoryTest.cpp - Tests of RunMemory and BufferCache -----------===//
//
// The buffer cache must hand a freed large block to the next run that asks
// for its size, never keep small blocks, keep what the module holds (in use
// and kept) within the largest peak a run needed, respect the memory
// limit, and free everything it keeps when asked.
//
//===----------------------------------------------------------------------===//

#include "ModelMemory.h"
#include "torsor/runtime.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <thread>
#include <vector>

using namespace torsor::rt;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

TEST(BufferCache, ReusesAFreedBlockInTheNextRun) {
  BufferCache cache;
  void *first;
  uint64_t peak;
  {
    RunMemory run(0, &cache, 0);
    first = run.allocate(kMiB, "a");
    ASSERT_NE(first, nullptr);
    EXPECT_TRUE(run.release(first));
    peak = run.peak();
  }
  EXPECT_EQ(peak, kMiB);
  EXPECT_EQ(cache.bytes(), kMiB);
  RunMemory run(0, &cache, peak);
  void *second = run.allocate(kMiB, "a");
  EXPECT_EQ(second, first);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(run.peak(), kMiB);
  EXPECT_TRUE(run.release(second));
  EXPECT_EQ(cache.bytes(), kMiB);
}

TEST(BufferCache, SmallBlocksAreNotKept) {
  BufferCache cache;
  RunMemory run(0, &cache, 0);
  void *p = run.allocate(BufferCache::kMinBytes - 1, "small");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(run.release(p));
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(BufferCache, TakesABlockUpToAnEighthLarger) {
  BufferCache cache;
  {
    RunMemory run(0, &cache, 0);
    void *p = run.allocate(kMiB, "a");
    run.release(p);
  }
  RunMemory run(0, &cache, kMiB);
  // 15/16 MiB fits the kept MiB (at most 1/8 more); the run holds all of it.
  void *p = run.allocate(15 * kMiB / 16, "b");
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(run.peak(), kMiB);
  run.release(p);
  EXPECT_EQ(cache.bytes(), kMiB);
  // Half a MiB does not: it is a miss, and the kept MiB is freed first, as
  // half a MiB held plus a MiB kept would exceed the largest peak (1 MiB).
  void *q = run.allocate(kMiB / 2, "c");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(cache.bytes(), 0u);
  run.release(q);
  EXPECT_EQ(cache.bytes(), kMiB / 2);
}

TEST(BufferCache, HeldAndKeptStayWithinTheLargestPeak) {
  BufferCache cache;
  {
    RunMemory run(0, &cache, 0);
    void *a = run.allocate(kMiB, "a");
    void *b = run.allocate(kMiB, "b");
    run.release(a);
    run.release(b);
  }
  EXPECT_EQ(cache.bytes(), 2 * kMiB);
  // A run at another size: each miss first frees kept blocks so that what
  // the run holds plus what is kept never exceeds max(2 MiB, its need).
  RunMemory run(0, &cache, 2 * kMiB);
  void *c = run.allocate(3 * kMiB / 2, "c");
  EXPECT_EQ(cache.bytes(), 0u); // 1.5 + 1 > 2: one kept MiB freed, then
                                // 1.5 + 1 > 2 again: the other
  void *d = run.allocate(kMiB / 4, "d");
  EXPECT_EQ(run.peak(), 7 * kMiB / 4);
  run.release(d);
  run.release(c);
  // Both fit the budget (2 MiB) again: kept.
  EXPECT_EQ(cache.bytes(), 7 * kMiB / 4);
}

TEST(BufferCache, RespectsTheMemoryLimit) {
  BufferCache cache;
  {
    RunMemory run(0, &cache, 0);
    void *p = run.allocate(kMiB, "a");
    run.release(p);
  }
  // Under a limit of 960 KiB a request of 900 KiB must not take the kept
  // MiB (the run would hold more than its limit).
  RunMemory run(960 * 1024, &cache, kMiB);
  void *p = run.allocate(900 * 1024, "b");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(run.peak(), 900u * 1024);
  run.release(p);
}

TEST(BufferCache, WithoutACacheEveryBlockIsFreed) {
  RunMemory run(0, nullptr, 0);
  void *p = run.allocate(kMiB, "a");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(run.release(p));
  EXPECT_FALSE(run.release(p)); // no longer the run's
}

TEST(BufferCache, TrimFreesLargestFirst) {
  BufferCache cache;
  {
    RunMemory run(0, &cache, 0);
    void *a = run.allocate(kMiB, "a");
    void *b = run.allocate(4 * kMiB, "b");
    run.release(a);
    run.release(b);
  }
  EXPECT_EQ(cache.bytes(), 5 * kMiB);
  cache.trim(2 * kMiB);
  EXPECT_EQ(cache.bytes(), kMiB);
  cache.trim(0);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(BufferCache, ConcurrentReleasesFromPoolThreads) {
  BufferCache cache;
  RunMemory run(0, &cache, 0);
  std::vector<void *> blocks;
  for (int i = 0; i < 8; ++i)
    blocks.push_back(run.allocate(256 * 1024, "chunk"));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      run.release(blocks[2 * t]);
      run.release(blocks[2 * t + 1]);
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(cache.bytes(), 8u * 256 * 1024);
}

TEST(BufferCache, CApiAcceptsNull) {
  torsorModuleSetBufferCache(nullptr, 0);
  torsorModuleReleaseBuffers(nullptr);
  EXPECT_EQ(torsorModuleCachedBytes(nullptr), 0u);
}

} // namespace
