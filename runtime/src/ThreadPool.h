//===- ThreadPool.h - Persistent pool behind torsor_parallel_for -*- C++
//-*-===//
//
// Compiled models parallelize their outer loops (sequence rows, heads) by
// calling torsor_parallel_for. A persistent pool of N-1 workers plus the
// calling thread splits [begin, end) into N near-equal contiguous chunks
// (static chunking: the generated loop bodies have uniform cost, and
// contiguous ranges keep each thread on its own rows). Between calls a
// worker first spins for a bounded time (spinWait) and then sleeps on a
// condition variable, so back-to-back calls skip the futex wake-up while an
// idle pool uses no core. See docs/runtime.md for why this rather than
// OpenMP or MLIR's async runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_THREADPOOL_H
#define TORSOR_RUNTIME_THREADPOOL_H

#include "Support.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace torsor::rt {

class RunMemory;

/// Loop body type of torsor_parallel_for.
using ParallelBody = void (*)(int64_t lo, int64_t hi, void *ctx);

/// A fixed-size pool; one parallelFor() at a time (callers serialize).
class ThreadPool {
public:
  /// Creates a pool of `numThreads` threads counting the caller
  /// (numThreads - 1 workers); numThreads < 1 is treated as 1. When the OS
  /// refuses a thread (address-space or process limits), the pool keeps the
  /// workers it got and startError() says why.
  explicit ThreadPool(int numThreads);
  /// Stops and joins the workers.
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Threads that run chunks, including the caller.
  int size() const { return static_cast<int>(workers.size()) + 1; }
  /// Why the pool has fewer threads than asked for ("" when it has all).
  const std::string &startError() const { return startFailure; }

  /// Runs body over [begin, end) split into min(size(), end - begin)
  /// contiguous chunks; the caller runs chunks too and returns when every
  /// chunk is done. Not reentrant: callers must serialize.
  void parallelFor(int64_t begin, int64_t end, ParallelBody body, void *ctx);

  /// Bounds [lo, hi) of chunk `c` of `k` near-equal chunks of [begin, end).
  static void chunkBounds(int64_t begin, int64_t end, int64_t k, int64_t c,
                          int64_t &lo, int64_t &hi);

private:
  /// Worker main loop: wait for a new generation, run chunks, repeat.
  void workerLoop();
  /// Claims and runs chunks of the current job until none are left.
  void runChunks(ParallelBody body, void *ctx, int64_t begin, int64_t end,
                 int64_t numChunks);

  std::vector<std::thread> workers;
  std::string startFailure;
  std::mutex mutex;
  std::condition_variable wake; ///< workers wait for a new job
  std::condition_variable done; ///< the caller waits for completion
  /// Set (under `mutex`) when the pool is destroyed; atomic so that
  /// spinning workers see it.
  std::atomic<bool> stopping{false};
  /// Bumped (under `mutex`) per job; atomic so that a worker can spin on
  /// it for a while before it sleeps on `wake`.
  std::atomic<uint64_t> generation{0};
  /// Workers currently inside a job (changed under `mutex`; atomic so
  /// that the caller can spin on it before it sleeps on `done`).
  std::atomic<int> busy{0};
  // The current job (written under `mutex` while busy == 0).
  ParallelBody jobBody = nullptr;
  void *jobCtx = nullptr;
  /// The caller's run (ModelMemory.h), installed on workers for the job so
  /// that allocations in tasks are tracked and can fail cleanly.
  RunMemory *jobRun = nullptr;
  int64_t jobBegin = 0, jobEnd = 0, jobChunks = 0;
  std::atomic<int64_t> nextChunk{0};
  std::atomic<int64_t> remaining{0};
};

/// Sets the size of the process-wide pool (n <= 0: hardware concurrency).
/// Waits for a running parallel_for to finish first. If the OS cannot start
/// that many threads, the previous pool stays and the error says why.
Status setGlobalThreadCount(int n);
/// Size of the process-wide pool.
int globalThreadCount();

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_THREADPOOL_H
