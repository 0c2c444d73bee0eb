//===- capi.cpp - libFuzzer target: the C API binding path ----------------===//
//
// Drives the public C API (runtime.h) on a loaded model with hostile calls
// decoded from the input: binds with any name, rank, dtype code, extents
// (negative, zero, huge, overflowing when multiplied) and strides, runs,
// reads outputs, unbinds, flips the input checks, sets memory limits, and
// queries tensors with out-of-range kinds, indices and dims. The model is
// the runtime's hand-written fake (unittests/Runtime/FakeModel.cpp). The
// only contract the fuzzer keeps is the caller's own: `data` really holds
// the elements the shape and strides describe (else reading it is the
// caller's bug, not the runtime's); shapes whose element count overflows,
// negative extents and bad dtypes get a buffer anyway and must be refused.
//
//===----------------------------------------------------------------------===//

#include "torsor/runtime.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

constexpr size_t kBufferFloats = 1 << 14; // 64 KiB of data to bind
alignas(64) float gBuffer[kBufferFloats];

/// The fake model, loaded once.
TorsorModule *model() {
  static TorsorModule *m = [] {
    TorsorModule *loaded = nullptr;
    TorsorStatus *s = torsorModuleLoad(TORSOR_FUZZ_FAKE_MODEL, &loaded);
    if (s) {
      std::fprintf(stderr, "cannot load the fake model: %s\n",
                   torsorStatusMessage(s));
      std::abort();
    }
    torsorSetNumThreads(2);
    return loaded;
  }();
  return m;
}

/// A name: mostly the model's own, sometimes wrong or odd.
std::string pickName(FuzzedDataProvider &in) {
  static const char *const names[] = {"pose",   "x", "w",     "out",
                                      "rowsum", "",  "posee", "W"};
  uint8_t k = in.ConsumeIntegral<uint8_t>();
  if (k < 240)
    return names[k % 8];
  return in.ConsumeRandomLengthString(16);
}

/// An extent from a hostile but useful set.
int64_t pickExtent(FuzzedDataProvider &in) {
  static const int64_t extents[] = {0,
                                    1,
                                    2,
                                    3,
                                    4,
                                    4,
                                    8,
                                    8,
                                    16,
                                    33,
                                    -1,
                                    std::numeric_limits<int64_t>::max(),
                                    int64_t(1) << 32,
                                    int64_t(1) << 62};
  uint8_t k = in.ConsumeIntegral<uint8_t>();
  if (k < 224)
    return extents[k % 14];
  return in.ConsumeIntegral<int64_t>();
}

/// Refills the data buffer with SE3 identities (so group checks can pass),
/// then plants a few values from the input (NaN, Inf, garbage).
void refill(FuzzedDataProvider &in) {
  for (size_t i = 0; i < kBufferFloats; ++i)
    gBuffer[i] = (i % 16) % 5 == 0 ? 1.0f : 0.0f;
  int plants = in.ConsumeIntegralInRange<int>(0, 3);
  for (int p = 0; p < plants; ++p) {
    size_t at = in.ConsumeIntegralInRange<size_t>(0, kBufferFloats - 1);
    static const float special[] = {NAN, INFINITY, -INFINITY, 1e30f, -0.0f};
    gBuffer[at] = special[in.ConsumeIntegralInRange<int>(0, 4)];
  }
}

/// Binds a hostile tensor if the caller's side of the contract can hold.
void bind(FuzzedDataProvider &in, TorsorModule *m, bool param) {
  std::string name = pickName(in);
  // The runtime reads `rank` extents: a caller cannot pass more than it has,
  // so positive ranks stay within the 9 we provide; negative ones are hostile.
  int32_t rank = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(-2, 9)
                                  : in.ConsumeIntegral<int32_t>();
  if (rank > 9)
    rank %= 10;
  int32_t dtype = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, 2)
                                   : in.ConsumeIntegral<int32_t>();
  int n = rank < 0 ? 0 : std::min(rank, 9);
  int64_t shape[9], strides[9];
  for (int d = 0; d < n; ++d)
    shape[d] = pickExtent(in);
  bool withStrides = in.ConsumeBool();
  for (int d = 0; d < n; ++d)
    strides[d] = in.ConsumeIntegralInRange<int64_t>(-2, 64);
  // Would a correct caller's buffer hold this? Only then may we bind it
  // for real; shapes the runtime must refuse outright get the buffer too.
  bool refusable = rank < 0 || dtype < 0 || dtype > 2;
  uint64_t elems = 1, maxOffset = 0;
  bool overflow = false;
  for (int d = 0; d < n; ++d) {
    if (shape[d] < 0) {
      refusable = true;
      continue;
    }
    overflow |= __builtin_mul_overflow(elems, uint64_t(shape[d]), &elems);
  }
  refusable |= overflow;
  if (!refusable && elems > 0) {
    size_t elem = dtype == 0 ? 4 : 8;
    for (int d = 0; d < n; ++d) {
      int64_t stride = withStrides ? strides[d] : 1;
      if (stride < 0)
        return; // the caller's contract: strides stay inside the data
      uint64_t span;
      if (__builtin_mul_overflow(uint64_t(shape[d] - 1), uint64_t(stride),
                                 &span) ||
          __builtin_add_overflow(maxOffset, span, &maxOffset))
        return;
    }
    if (!withStrides)
      maxOffset = elems - 1;
    if (maxOffset >= sizeof(gBuffer) / elem)
      return;
  }
  TorsorTensor t{gBuffer, shape, withStrides ? strides : nullptr, rank, dtype};
  TorsorStatus *s = param ? torsorModuleBindParam(m, name.c_str(), &t)
                          : torsorModuleBindInput(m, name.c_str(), &t);
  if (s && (!*torsorStatusMessage(s) || torsorStatusCode(s) == TORSOR_OK))
    std::abort();
  torsorStatusFree(s);
}

/// Reads every element of output `name` if the last run produced it.
void readOutput(FuzzedDataProvider &in, TorsorModule *m) {
  TorsorTensor t;
  std::string name = pickName(in);
  TorsorStatus *s = torsorModuleGetOutput(m, name.c_str(), &t);
  if (s) {
    torsorStatusFree(s);
    return;
  }
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d)
    n *= t.shape[d];
  volatile double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum = sum + (t.dtype == TORSOR_DTYPE_F32
                     ? static_cast<const float *>(t.data)[i]
                     : static_cast<const double *>(t.data)[i]);
}

/// Queries with hostile kinds, indices and dims (the enum UB of issue 15).
void query(FuzzedDataProvider &in, TorsorModule *m) {
  auto kind = static_cast<TorsorTensorKind>(in.ConsumeIntegral<int32_t>() %
                                            (in.ConsumeBool() ? 4 : 1 << 30));
  int32_t index = in.ConsumeIntegralInRange<int32_t>(-2, 4);
  int32_t dim = in.ConsumeIntegralInRange<int32_t>(-2, 4);
  TorsorModule *target = in.ConsumeBool() ? m : nullptr;
  (void)torsorModuleNumTensors(target, kind);
  (void)torsorModuleTensorName(target, kind, index);
  (void)torsorModuleTensorDType(target, kind, index);
  (void)torsorModuleTensorRank(target, kind, index);
  (void)torsorModuleTensorDimExtent(target, kind, index, dim);
  (void)torsorModuleTensorDimSymbol(target, kind, index, dim);
  (void)torsorModuleTensorGroup(target, kind, index);
  (void)torsorDTypeName(in.ConsumeIntegral<int32_t>());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider in(data, size);
  TorsorModule *m = model();
  torsorModuleUnbindInputs(m);
  torsorModuleSetCheckGroups(m, 1, 1e-4);
  torsorModuleSetMemoryLimit(m, 0);
  refill(in);
  for (int op = 0; op < 24 && in.remaining_bytes(); ++op) {
    switch (in.ConsumeIntegral<uint8_t>() % 8) {
    case 0:
      bind(in, m, false);
      break;
    case 1:
      bind(in, m, true);
      break;
    case 2: {
      TorsorStatus *s = torsorModuleRun(m);
      if (s && !*torsorStatusMessage(s))
        std::abort();
      torsorStatusFree(s);
      break;
    }
    case 3:
      readOutput(in, m);
      break;
    case 4:
      torsorModuleUnbindInputs(m);
      break;
    case 5:
      torsorModuleSetCheckGroups(m, in.ConsumeBool(),
                                 in.ConsumeFloatingPoint<double>());
      break;
    case 6:
      query(in, m);
      break;
    default:
      torsorModuleSetMemoryLimit(m, in.ConsumeIntegral<uint64_t>() >>
                                        in.ConsumeIntegralInRange(0, 63));
      break;
    }
  }
  return 0;
}
