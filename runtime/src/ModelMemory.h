//===- ModelMemory.h - Checked allocations of compiled code ---*- C++ -*-===//
//
// Compiled models allocate their intermediate buffers through
// `torsor_alloc(bytes, what)` and free them with `torsor_free` (the
// torsor-route-allocations pass rewrites the lowered malloc/free calls; a
// model loaded without this runtime falls back to malloc/free). The runtime
// keeps every live allocation of a run in a RunMemory, so that:
//   - a failed allocation records how much was needed and where (`what` is
//     the source location the compiler attached), then unwinds with longjmp
//     to the runtime frame that called into the model, which frees what the
//     run still held and returns TORSOR_OUT_OF_MEMORY;
//   - a per-module limit on the bytes compiled code may hold can be set
//     (torsorModuleSetMemoryLimit), which is also how the failure path is
//     tested without starving the whole process;
//   - the peak of the last run is known (torsorModulePeakBytes);
//   - large buffers a run frees are kept in the module's BufferCache and
//     handed to the next run that asks for the same size, so that a model
//     called repeatedly at the same dims does not fault its working set in
//     from the kernel on every call (glibc returns blocks above its mmap
//     threshold to the system on free). The cache never makes the module
//     hold more than the largest working set a run of it has needed.
// Failures inside torsor_parallel_for tasks are caught per chunk on the
// thread that ran it; the pool finishes the loop, and torsor_parallel_for
// then unwinds on the calling thread (see ThreadPool.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_MODELMEMORY_H
#define TORSOR_RUNTIME_MODELMEMORY_H

#include "Support.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace torsor::rt {

/// Freed buffers of compiled code a module keeps for its next runs. Only
/// blocks of at least kMinBytes are kept (smaller ones are cheap for
/// malloc); a request takes a kept block of its size up to 1/8 more.
/// Thread-safe: a run's pool workers free buffers concurrently.
class BufferCache {
public:
  static constexpr uint64_t kMinBytes = 64 * 1024;

  BufferCache() = default;
  BufferCache(const BufferCache &) = delete;
  BufferCache &operator=(const BufferCache &) = delete;
  /// Frees every kept block.
  ~BufferCache() { trim(0); }

  /// A kept block of `bytes` to `bytes + bytes / 8` bytes, at most `most`
  /// bytes, removed from the cache with its size in `size`; else nullptr.
  void *take(uint64_t bytes, uint64_t most, uint64_t &size);
  /// Keeps `p` (`size` bytes, from malloc) if the cache then holds at most
  /// `budget` bytes; false when it was not kept (the caller frees it).
  bool keep(void *p, uint64_t size, uint64_t budget);
  /// Frees kept blocks, largest first, until at most `bytes` remain.
  void trim(uint64_t bytes);
  /// Bytes kept now.
  uint64_t bytes() const;

private:
  mutable std::mutex mutex;
  std::multimap<uint64_t, void *> blocks;
  uint64_t kept = 0;
};

/// The allocations of compiled code during one call into a model.
class RunMemory {
public:
  /// `limit`: the most bytes the call may hold at once (0: no limit).
  /// `cache`: where large freed buffers go and large requests look first
  /// (null: none); `previousPeak`: the largest peak of the module's earlier
  /// runs. What the run holds plus what the cache keeps stays within the
  /// larger of `previousPeak` and this run's own peak.
  explicit RunMemory(uint64_t limit, BufferCache *cache = nullptr,
                     uint64_t previousPeak = 0)
      : limit(limit), previousPeak(previousPeak), cache(cache) {}
  /// Frees whatever the call still holds (after a failure, or a model that
  /// leaked a buffer).
  ~RunMemory();

  /// Allocates `bytes` for `what`; nullptr after recording the failure.
  void *allocate(int64_t bytes, const char *what);
  /// Frees `p` if this run allocated it; returns false otherwise.
  bool release(void *p);

  /// True once an allocation has failed.
  bool failed() const;
  /// The failure as a message (empty when none).
  std::string failureMessage() const;
  /// The most bytes held at once.
  uint64_t peak() const;

private:
  /// The most bytes run and cache may hold together (see the constructor).
  uint64_t budget() const { return std::max(previousPeak, peakBytes); }

  mutable std::mutex mutex;
  std::unordered_map<void *, uint64_t> live;
  uint64_t limit, previousPeak, held = 0, peakBytes = 0;
  BufferCache *cache;
  bool hasFailed = false;
  std::string failure;
};

/// The run whose model code this thread executes (nullptr: none).
RunMemory *currentRun();
/// Sets this thread's current run; returns the previous one.
RunMemory *setCurrentRun(RunMemory *run);

/// Marks a function that calls into compiled model code through a pointer
/// (dlsym'd entries, parallel chunk bodies). Clang's UBSan function check
/// (-fsanitize=function, part of -fsanitize=undefined) reads a type
/// signature from the 8 bytes before the callee's first instruction;
/// torsorc's code has none, and where a callee starts a page whose
/// predecessor is unmapped the read faults (SEGV at <page end - 8> in
/// callChunk under the sanitizer build). The check cannot apply to code
/// the sanitizer did not compile, so it is off at these call sites.
#if defined(__clang__)
#define TORSOR_CALLS_COMPILED_CODE __attribute__((no_sanitize("function")))
#else
#define TORSOR_CALLS_COMPILED_CODE
#endif

/// Calls `fn(args)` with an unwind point: a failed torsor_alloc below it
/// returns here. False when the call was unwound.
TORSOR_CALLS_COMPILED_CODE bool callModel(void (*fn)(void **), void **args);
/// Calls `body(lo, hi, ctx)` with an unwind point (one parallel chunk).
TORSOR_CALLS_COMPILED_CODE bool callChunk(void (*body)(int64_t, int64_t,
                                                       void *),
                                          int64_t lo, int64_t hi, void *ctx);
/// Unwinds to the innermost unwind point of this thread (after a failure
/// recorded in the current run). Never returns.
[[noreturn]] void unwindModel();

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_MODELMEMORY_H
