//===- ModelMemory.cpp - Checked allocations of compiled code -------------===//
//
// Implements ModelMemory.h and the two C entry points compiled code calls,
// torsor_alloc and torsor_free. Unwinding uses setjmp/longjmp: the frames it
// skips are compiled-model frames (plain C ABI code without destructors) and
// torsor_parallel_for's inline path, which holds no locks. Every frame of
// this runtime that holds a resource catches the unwind first (callChunk)
// and re-raises it only once the resource is released.
//
//===----------------------------------------------------------------------===//

#include "ModelMemory.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace torsor::rt {

namespace {
thread_local RunMemory *tRun = nullptr;
/// The innermost unwind point of this thread.
thread_local std::jmp_buf *tUnwind = nullptr;

/// "17179869184 bytes (16.0 GiB)".
std::string bytesText(uint64_t n) {
  const char *unit = "KiB";
  double v = n / 1024.0;
  if (v >= 1024) {
    v /= 1024;
    unit = "MiB";
  }
  if (v >= 1024) {
    v /= 1024;
    unit = "GiB";
  }
  return format("%llu bytes (%.1f %s)", (unsigned long long)n, v, unit);
}
} // namespace

void *BufferCache::take(uint64_t bytes, uint64_t most, uint64_t &size) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = blocks.lower_bound(bytes);
  if (it == blocks.end() || it->first > bytes + bytes / 8 || it->first > most)
    return nullptr;
  void *p = it->second;
  size = it->first;
  kept -= size;
  blocks.erase(it);
  return p;
}

bool BufferCache::keep(void *p, uint64_t size, uint64_t budget) {
  std::lock_guard<std::mutex> lock(mutex);
  if (size < kMinBytes || size > budget || kept > budget - size)
    return false;
#if defined(__cpp_exceptions)
  try {
    blocks.emplace(size, p);
  } catch (const std::bad_alloc &) {
    return false;
  }
#else
  blocks.emplace(size, p);
#endif
  kept += size;
  return true;
}

void BufferCache::trim(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  while (kept > bytes && !blocks.empty()) {
    auto last = std::prev(blocks.end());
    kept -= last->first;
    std::free(last->second);
    blocks.erase(last);
  }
}

uint64_t BufferCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  return kept;
}

RunMemory::~RunMemory() {
  for (auto &entry : live)
    std::free(entry.first);
}

void *RunMemory::allocate(int64_t bytes, const char *what) {
  const char *where = what && *what ? what : "an intermediate buffer";
  std::lock_guard<std::mutex> lock(mutex);
  auto fail = [&](const std::string &why) -> void * {
    if (!hasFailed) {
      hasFailed = true;
      failure = why;
    }
    return nullptr;
  };
  if (hasFailed)
    return nullptr; // another chunk already failed: stop allocating
  if (bytes < 0)
    return fail(format("the model computed an impossible buffer size (%lld "
                       "bytes; the shape overflows) for %s",
                       (long long)bytes, where));
  uint64_t n = static_cast<uint64_t>(bytes);
  if (limit && n > limit - std::min(limit, held))
    return fail(format("out of memory: the model needs %s more for %s, "
                       "beyond the memory limit of %s (it already holds %s)",
                       bytesText(n).c_str(), where, bytesText(limit).c_str(),
                       bytesText(held).c_str()));
  uint64_t size = n;
  void *p = nullptr;
  if (cache && n >= BufferCache::kMinBytes) {
    p = cache->take(n, limit ? limit - held : UINT64_MAX, size);
    // A miss: make room first, so that this buffer, what the run holds and
    // what the cache keeps fit in the larger of the module's largest peak
    // and what this run needs now.
    if (!p)
      cache->trim(std::max(budget(), held + n) - held - n);
  }
  if (!p) {
    size = n;
    p = std::malloc(n ? n : 1);
    // Refused while the cache keeps memory: give all of it back and ask
    // once more before reporting out of memory.
    if (!p && cache && cache->bytes()) {
      cache->trim(0);
      p = std::malloc(n ? n : 1);
    }
  }
  if (p) {
#if defined(__cpp_exceptions)
    try {
      live.emplace(p, size);
    } catch (const std::bad_alloc &) {
      std::free(p);
      p = nullptr;
    }
#else
    live.emplace(p, size);
#endif
  }
  if (!p)
    return fail(format("out of memory: the model needs %s more for %s, and "
                       "the system refused it (it already holds %s)",
                       bytesText(n).c_str(), where, bytesText(held).c_str()));
  held += size;
  peakBytes = std::max(peakBytes, held);
  return p;
}

bool RunMemory::release(void *p) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live.find(p);
  if (it == live.end())
    return false;
  uint64_t size = it->second;
  held -= size;
  live.erase(it);
  if (!cache || !cache->keep(p, size, budget() - held))
    std::free(p);
  return true;
}

bool RunMemory::failed() const {
  std::lock_guard<std::mutex> lock(mutex);
  return hasFailed;
}

std::string RunMemory::failureMessage() const {
  std::lock_guard<std::mutex> lock(mutex);
  return failure;
}

uint64_t RunMemory::peak() const {
  std::lock_guard<std::mutex> lock(mutex);
  return peakBytes;
}

RunMemory *currentRun() { return tRun; }

RunMemory *setCurrentRun(RunMemory *run) {
  RunMemory *previous = tRun;
  tRun = run;
  return previous;
}

// The unwind points below keep nothing with a destructor alive across
// setjmp, and restore tUnwind on both paths.
TORSOR_CALLS_COMPILED_CODE bool callModel(void (*fn)(void **), void **args) {
  std::jmp_buf here;
  std::jmp_buf *volatile outer = tUnwind;
  if (setjmp(here) != 0) {
    tUnwind = outer;
    return false;
  }
  tUnwind = &here;
  fn(args);
  tUnwind = outer;
  return true;
}

TORSOR_CALLS_COMPILED_CODE bool callChunk(void (*body)(int64_t, int64_t,
                                                       void *),
                                          int64_t lo, int64_t hi, void *ctx) {
  std::jmp_buf here;
  std::jmp_buf *volatile outer = tUnwind;
  if (setjmp(here) != 0) {
    tUnwind = outer;
    return false;
  }
  tUnwind = &here;
  body(lo, hi, ctx);
  tUnwind = outer;
  return true;
}

void unwindModel() {
  if (!tUnwind) {
    // Model code called outside the runtime's run (no unwind point): there
    // is no caller to return the error to.
    std::fprintf(stderr, "torsor runtime: %s\n",
                 tRun ? tRun->failureMessage().c_str()
                      : "a compiled model's allocation failed");
    std::abort();
  }
  std::longjmp(*tUnwind, 1);
}

} // namespace torsor::rt

using namespace torsor::rt;

extern "C" __attribute__((visibility("default"))) void *
torsor_alloc(int64_t bytes, const char *what) {
  RunMemory *run = tRun;
  if (!run) {
    // Not inside a run (a host calling the entry point itself): plain
    // malloc, and a clear message instead of a null dereference.
    void *p = bytes >= 0 ? std::malloc(bytes ? bytes : 1) : nullptr;
    if (!p) {
      std::fprintf(stderr,
                   "torsor runtime: out of memory: the model needs %lld "
                   "bytes for %s\n",
                   (long long)bytes, what ? what : "a buffer");
      std::abort();
    }
    return p;
  }
  void *p = run->allocate(bytes, what);
  if (!p)
    unwindModel();
  return p;
}

extern "C" __attribute__((visibility("default"))) void torsor_free(void *p) {
  if (!p)
    return;
  RunMemory *run = tRun;
  if (!run || !run->release(p))
    std::free(p);
}
