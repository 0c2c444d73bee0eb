//===- MemRefCopy.cpp - The memref copy entry point compiled code calls ---===//
//
// MLIR lowers a `memref.copy` between buffers that are not both contiguous
// to a call of `memrefCopy(elementSize, src, dst)` on unranked descriptors,
// normally provided by libmlir_c_runner_utils. Compiled models must not
// depend on an MLIR library, so the runtime provides the symbol itself, as
// it provides torsor_parallel_for.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>
#include <vector>

namespace {
/// `{rank, descriptor}` as MLIR passes an unranked memref.
struct UnrankedDescriptor {
  int64_t rank;
  void *descriptor;
};

/// The view of a ranked descriptor `{alloc, aligned, offset, sizes, strides}`.
struct StridedView {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
};

StridedView view(const UnrankedDescriptor &memref) {
  auto *words = static_cast<int64_t *>(memref.descriptor);
  char *aligned = nullptr;
  std::memcpy(&aligned, &words[1], sizeof(aligned));
  return {aligned, words[2], words + 3, words + 3 + memref.rank};
}
} // namespace

/// Copies `src` to `dst` (same shape, any strides): one memcpy per row
/// where both have unit innermost stride (the padded operands of the bf16
/// products, slices of row-major tensors), else element by element, with
/// the innermost dimension as the fast loop either way.
extern "C" __attribute__((visibility("default"))) void
memrefCopy(int64_t elementSize, UnrankedDescriptor *src,
           UnrankedDescriptor *dst) {
  int64_t rank = src->rank;
  StridedView s = view(*src), d = view(*dst);
  if (rank == 0) {
    std::memcpy(d.aligned + d.offset * elementSize,
                s.aligned + s.offset * elementSize, elementSize);
    return;
  }
  for (int64_t i = 0; i < rank; ++i)
    if (s.sizes[i] == 0)
      return;
  // Contiguous rows: the odometer runs over the outer dims only.
  bool rows = s.strides[rank - 1] == 1 && d.strides[rank - 1] == 1;
  int64_t outer = rows ? rank - 1 : rank;
  int64_t bytes = rows ? s.sizes[rank - 1] * elementSize : elementSize;
  std::vector<int64_t> index(rank, 0);
  int64_t sOff = s.offset, dOff = d.offset;
  while (true) {
    std::memcpy(d.aligned + dOff * elementSize, s.aligned + sOff * elementSize,
                bytes);
    // Odometer increment from the innermost (outer) dim.
    int64_t axis = outer - 1;
    for (; axis >= 0; --axis) {
      ++index[axis];
      sOff += s.strides[axis];
      dOff += d.strides[axis];
      if (index[axis] < s.sizes[axis])
        break;
      sOff -= s.strides[axis] * s.sizes[axis];
      dOff -= d.strides[axis] * s.sizes[axis];
      index[axis] = 0;
    }
    if (axis < 0)
      return;
  }
}
