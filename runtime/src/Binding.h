//===- Binding.h - Bound tensors and their validation ---------*- C++ -*-===//
//
// The checks between what a caller binds and what the manifest declares:
// name lookup, dtype, rank, fixed extents (at bind time) and the symbolic
// dims, which are reconciled across all bound inputs and params at run time
// and then fix the output shapes. Every message names the tensor and says
// expected vs got, e.g. "input 'pose': dim 1 expected 4, got 3".
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_BINDING_H
#define TORSOR_RUNTIME_BINDING_H

#include "Manifest.h"
#include "Support.h"

#include <map>
#include <string>
#include <vector>

namespace torsor::rt {

/// A tensor bound to an input or param. The data is row-major: either the
/// caller's memory (borrowed) or `owned` (a copy of strided data, or weights
/// read from a file).
struct BoundTensor {
  bool bound = false;
  int32_t dtype = TORSOR_DTYPE_F32;
  std::vector<int64_t> shape, strides;
  void *data = nullptr;
  HostTensor owned;
  /// A C view (valid while this object lives).
  TorsorTensor view() const;
};

/// Word for a tensor kind in messages: "input", "param", "output".
const char *kindWord(int kind);

/// Index of `name` in `list`, or an error "unknown input 'posee'; model
/// inputs are: pose, x".
Status findTensor(const std::vector<TensorSpec> &list, int kind,
                  const std::string &name, size_t &index);

/// Checks dtype, rank and fixed extents of a tensor with `dtype` and
/// `shape` against `spec`.
Status checkAgainstSpec(int kind, const TensorSpec &spec, int32_t dtype,
                        const std::vector<int64_t> &shape);

/// Validates `t` against `spec` and makes `out` refer to it (copying the
/// data if it is not row-major contiguous).
Status bindTensor(int kind, const TensorSpec &spec, const TorsorTensor *t,
                  BoundTensor &out);

/// Takes ownership of `tensor` (e.g. read from a file) as the binding of
/// `spec` after checking it.
Status bindOwned(int kind, const TensorSpec &spec, HostTensor &&tensor,
                 BoundTensor &out);

/// Checks that every input and param is bound, then resolves each symbolic
/// dim from the bound tensors (inputs first, in manifest order) and checks
/// they agree: "symbolic dim 'L' is 10 from input 'pose' but 12 from input
/// 'x'"; then checkDerivedSizes.
Status resolveDims(const Manifest &manifest,
                   const std::vector<BoundTensor> &inputs,
                   const std::vector<BoundTensor> &params,
                   std::map<std::string, int64_t> &dims);

/// The bound checkDerivedSizes enforces: 2^62 bytes.
constexpr uint64_t kDerivedSizeLimit = uint64_t(1) << 62;

/// Refuses symbolic dims from which the compiled code could derive a size
/// that overflows 64-bit arithmetic (an (2^31, 0) input makes L = 2^31, and
/// an L x L intermediate of 4-byte floats 2^64 bytes, which wraps to 0).
/// The runtime cannot see every intermediate, so the rule is a bound over
/// what the model can build from its dims: the product of every symbolic
/// dim (zeros counted as 1), times the largest of them once more, times the
/// largest fixed-dim product of any manifest tensor that has a symbolic
/// dim, times 8 bytes, must stay within kDerivedSizeLimit. `source` says
/// where each dim came from, for the message. resolveDims calls it.
Status checkDerivedSizes(const Manifest &manifest,
                         const std::map<std::string, int64_t> &dims,
                         const std::map<std::string, std::string> &source);

/// Shape of output `spec` under the resolved `dims`.
Status outputShape(const TensorSpec &spec,
                   const std::map<std::string, int64_t> &dims,
                   std::vector<int64_t> &shape);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_BINDING_H
