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
  void *p = std::malloc(n ? n : 1);
  if (p) {
#if defined(__cpp_exceptions)
    try {
      live.emplace(p, n);
    } catch (const std::bad_alloc &) {
      std::free(p);
      p = nullptr;
    }
#else
    live.emplace(p, n);
#endif
  }
  if (!p)
    return fail(format("out of memory: the model needs %s more for %s, and "
                       "the system refused it (it already holds %s)",
                       bytesText(n).c_str(), where, bytesText(held).c_str()));
  held += n;
  peakBytes = std::max(peakBytes, held);
  return p;
}

bool RunMemory::release(void *p) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live.find(p);
  if (it == live.end())
    return false;
  held -= it->second;
  live.erase(it);
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
