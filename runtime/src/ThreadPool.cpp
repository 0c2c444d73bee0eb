//===- ThreadPool.cpp - Persistent pool behind torsor_parallel_for --------===//
//
// Implements ThreadPool, the process-wide pool and the exported C entry
// point torsor_parallel_for. A call made from inside a parallel body (nested
// parallelism) or while another thread owns the pool runs inline on the calling
// thread: no deadlock, no oversubscription.
//
//===----------------------------------------------------------------------===//

#include "ThreadPool.h"

#include "ModelMemory.h"
#include "Support.h"

#include <algorithm>
#include <chrono>
#include <memory>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace torsor::rt {

namespace {
/// True on pool workers and on a caller while it runs chunks.
thread_local bool tInParallel = false;

/// How long a thread spins on a condition before it sleeps on a condition
/// variable. A model's parallel loops come back to back (a task per matmul,
/// norm and attention block, microseconds apart), and a futex wake-up of a
/// sleeping worker costs tens of microseconds, which at small sizes (L = 64)
/// is most of a loop's time. Bounded so that an idle pool (no model
/// running) costs no core: a worker spins at most this long after its
/// last job.
constexpr std::chrono::microseconds kSpinTime(50);

/// One step of a spin: the CPU's pause hint (a yield elsewhere).
inline void spinPause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// Spins until `ready()` holds or kSpinTime has passed; returns whether it
/// holds. The clock is read every 64 pauses (a pause is ~10-140 cycles).
template <typename Ready> bool spinWait(Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  while (true) {
    for (int i = 0; i < 64; ++i) {
      if (ready())
        return true;
      spinPause();
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return ready();
  }
}
} // namespace

ThreadPool::ThreadPool(int numThreads) {
  for (int i = 1; i < numThreads; ++i) {
#if defined(__cpp_exceptions)
    try {
      workers.emplace_back([this] { workerLoop(); });
    } catch (const std::exception &e) {
      // std::system_error (EAGAIN under `ulimit -v` or `ulimit -u`) or
      // bad_alloc: keep what was started.
      startFailure = format("starting thread %d of %d failed (%s)", i + 1,
                            numThreads, e.what());
      return;
    }
#else
    workers.emplace_back([this] { workerLoop(); });
#endif
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::thread &t : workers)
    t.join();
}

void ThreadPool::chunkBounds(int64_t begin, int64_t end, int64_t k, int64_t c,
                             int64_t &lo, int64_t &hi) {
  // Unsigned (modular) arithmetic: end - begin may exceed INT64_MAX, and
  // q, r avoid the overflow of (end - begin) * c.
  uint64_t n = static_cast<uint64_t>(end) - static_cast<uint64_t>(begin);
  uint64_t uk = static_cast<uint64_t>(k), uc = static_cast<uint64_t>(c);
  uint64_t q = n / uk, r = n % uk;
  uint64_t ulo = static_cast<uint64_t>(begin) + uc * q + std::min(uc, r);
  lo = static_cast<int64_t>(ulo);
  hi = static_cast<int64_t>(ulo + q + (uc < r ? 1 : 0));
}

void ThreadPool::runChunks(ParallelBody body, void *ctx, int64_t begin,
                           int64_t end, int64_t numChunks) {
  while (true) {
    int64_t c = nextChunk.fetch_add(1, std::memory_order_relaxed);
    if (c >= numChunks)
      return;
    int64_t lo, hi;
    chunkBounds(begin, end, numChunks, c, lo, hi);
    // A failed allocation in the body unwinds to here (ModelMemory.h); the
    // failure stays recorded in the run, and later chunks are skipped.
    RunMemory *run = currentRun();
    if (!run || !run->failed())
      (void)callChunk(body, lo, hi, ctx);
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Last chunk: wake the caller (under the lock, so it cannot miss it).
      std::lock_guard<std::mutex> lock(mutex);
      done.notify_all();
    }
  }
}

void ThreadPool::workerLoop() {
  tInParallel = true;
  uint64_t seen = 0;
  auto woken = [&] {
    return stopping.load(std::memory_order_acquire) ||
           generation.load(std::memory_order_acquire) != seen;
  };
  std::unique_lock<std::mutex> lock(mutex);
  while (true) {
    // Spin a while without the lock for the next job; then sleep (the
    // predicate is re-checked under the lock, so no job is missed).
    lock.unlock();
    (void)spinWait(woken);
    lock.lock();
    wake.wait(lock, woken);
    if (stopping)
      return;
    seen = generation;
    // Copy the job while holding the lock; `busy` keeps the next job from
    // being written until this worker has stopped claiming chunks.
    ++busy;
    ParallelBody body = jobBody;
    void *ctx = jobCtx;
    RunMemory *run = jobRun;
    int64_t begin = jobBegin, end = jobEnd, chunks = jobChunks;
    lock.unlock();
    setCurrentRun(run);
    runChunks(body, ctx, begin, end, chunks);
    setCurrentRun(nullptr);
    lock.lock();
    --busy;
    done.notify_all();
  }
}

void ThreadPool::parallelFor(int64_t begin, int64_t end, ParallelBody body,
                             void *ctx) {
  if (end <= begin)
    return;
  uint64_t n = static_cast<uint64_t>(end) - static_cast<uint64_t>(begin);
  int64_t chunks = static_cast<int64_t>(
      std::min<uint64_t>(static_cast<uint64_t>(size()), n));
  if (chunks <= 1) {
    // Still through an unwind point: the caller holds the pool lock.
    (void)callChunk(body, begin, end, ctx);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return busy.load() == 0; });
    jobBody = body;
    jobCtx = ctx;
    jobRun = currentRun();
    jobBegin = begin;
    jobEnd = end;
    jobChunks = chunks;
    nextChunk.store(0, std::memory_order_relaxed);
    remaining.store(chunks, std::memory_order_relaxed);
    ++generation;
  }
  wake.notify_all();
  bool wasInParallel = tInParallel;
  tInParallel = true;
  runChunks(body, ctx, begin, end, chunks);
  tInParallel = wasInParallel;
  // The workers' last chunks are usually microseconds from done: spin for
  // them before sleeping on `done`.
  auto finished = [&] {
    return remaining.load(std::memory_order_acquire) == 0 &&
           busy.load(std::memory_order_acquire) == 0;
  };
  if (spinWait(finished)) {
    // Pairs with the workers' unlock after `--busy`: their writes to the
    // job's state happen before the next job is written.
    std::lock_guard<std::mutex> lock(mutex);
    return;
  }
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, finished);
}

namespace {
/// Guards the process-wide pool; held for the duration of a parallel_for.
std::mutex gPoolMutex;
std::unique_ptr<ThreadPool> gPool;

/// Default pool size: the hardware concurrency (at least 1).
int defaultThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

/// The pool, created on first use. Call with gPoolMutex held.
ThreadPool &poolLocked() {
  if (!gPool)
    gPool = std::make_unique<ThreadPool>(defaultThreads());
  return *gPool;
}
} // namespace

Status setGlobalThreadCount(int n) {
  std::lock_guard<std::mutex> lock(gPoolMutex);
  int want = n > 0 ? n : defaultThreads();
  if (gPool && gPool->size() == want)
    return Status();
  auto pool = std::make_unique<ThreadPool>(want);
  if (!pool->startError().empty()) {
    // Keep the pool that works rather than silently running on fewer
    // threads than asked for.
    std::string error = pool->startError();
    pool.reset();
    return Status(TORSOR_UNAVAILABLE,
                  format("cannot start %d threads: %s; the pool keeps its %d "
                         "threads (an address-space limit, ulimit -v, or a "
                         "process limit, ulimit -u, is the usual cause: ask "
                         "for fewer threads)",
                         want, error.c_str(), poolLocked().size()));
  }
  gPool = std::move(pool);
  return Status();
}

int globalThreadCount() {
  std::lock_guard<std::mutex> lock(gPoolMutex);
  return poolLocked().size();
}

} // namespace torsor::rt

using namespace torsor::rt;

extern "C" void torsor_parallel_for(int64_t begin, int64_t end,
                                    void (*body)(int64_t, int64_t, void *),
                                    void *ctx) {
  if (end <= begin || !body)
    return;
  // Nested, or another thread is using the pool: run inline.
  if (tInParallel || !gPoolMutex.try_lock()) {
    body(begin, end, ctx);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(gPoolMutex, std::adopt_lock);
    poolLocked().parallelFor(begin, end, body, ctx);
  }
  // A chunk's allocation failed: unwind on this thread now that the pool
  // lock is released (ModelMemory.h).
  if (RunMemory *run = currentRun(); run && run->failed())
    unwindModel();
}
