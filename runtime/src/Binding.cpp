//===- Binding.cpp - Bound tensors and their validation -------------------===//
//
// Implements Binding.h. Strided caller data is gathered into a row-major
// copy because the ABI passes row-major descriptors (the compiled code may
// assume identity layouts); contiguous data is borrowed without a copy.
//
//===----------------------------------------------------------------------===//

#include "Binding.h"
#include "Half.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace torsor::rt {

TorsorTensor BoundTensor::view() const {
  TorsorTensor t;
  t.data = data;
  t.shape = shape.data();
  t.strides = strides.data();
  t.rank = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  return t;
}

const char *kindWord(int kind) {
  return kind == TORSOR_INPUT   ? "input"
         : kind == TORSOR_PARAM ? "param"
                                : "output";
}

Status findTensor(const std::vector<TensorSpec> &list, int kind,
                  const std::string &name, size_t &index) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) {
      index = i;
      return Status();
    }
  std::string known;
  for (const TensorSpec &t : list)
    known += (known.empty() ? "" : ", ") + t.name;
  std::string msg = format("unknown %s '%s'; ", kindWord(kind), name.c_str());
  if (known.empty())
    msg += format("the model has no %ss", kindWord(kind));
  else
    msg += format("model %ss are: %s", kindWord(kind), known.c_str());
  return invalidArg(msg);
}

Status checkAgainstSpec(int kind, const TensorSpec &spec, int32_t dtype,
                        const std::vector<int64_t> &shape) {
  std::string label = format("%s '%s': ", kindWord(kind), spec.name.c_str());
  if (dtype != spec.dtype) {
    // Say how to fix it: cast the data, or (floats) compile for its dtype.
    static const char *const npName[] = {"np.float32", "np.float64",
                                         "np.int64"};
    std::string hint;
    if (spec.dtype >= TORSOR_DTYPE_F32 && spec.dtype <= TORSOR_DTYPE_I64)
      hint = format("; cast it (arr.astype(%s))", npName[spec.dtype]);
    if ((dtype == TORSOR_DTYPE_F32 || dtype == TORSOR_DTYPE_F64) &&
        spec.dtype != TORSOR_DTYPE_I64)
      hint += format(" or compile the model with --dtype=%s", dtypeName(dtype));
    return invalidArg(label + "expected dtype " + dtypeName(spec.dtype) +
                      ", got " + dtypeName(dtype) + hint);
  }
  if (shape.size() != spec.shape.size())
    return invalidArg(label +
                      format("expected rank %zu (%s), got rank %zu (%s)",
                             spec.shape.size(), spec.shapeString().c_str(),
                             shape.size(), shapeToString(shape).c_str()));
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0)
      return invalidArg(
          label + format("dim %zu is negative (%lld)", i, (long long)shape[i]));
    if (!spec.shape[i].isSymbolic() && shape[i] != spec.shape[i].extent)
      return invalidArg(label + format("dim %zu expected %lld, got %lld", i,
                                       (long long)spec.shape[i].extent,
                                       (long long)shape[i]));
  }
  return Status();
}

namespace {
/// Copies a strided tensor into row-major `dst` element by element.
void gather(const TorsorTensor &t, size_t elem, HostTensor &dst) {
  const char *src = static_cast<const char *>(t.data);
  char *out = static_cast<char *>(dst.data());
  std::vector<int64_t> index(t.rank, 0);
  for (int64_t e = 0; e < dst.numel(); ++e) {
    int64_t off = 0;
    for (int d = 0; d < t.rank; ++d)
      off += index[d] * t.strides[d];
    std::memcpy(out + e * elem, src + off * static_cast<int64_t>(elem), elem);
    for (int d = t.rank - 1; d >= 0; --d) {
      if (++index[d] < t.shape[d])
        break;
      index[d] = 0;
    }
  }
}
} // namespace

Status bindTensor(int kind, const TensorSpec &spec, const TorsorTensor *t,
                  BoundTensor &out) {
  std::string label = format("%s '%s': ", kindWord(kind), spec.name.c_str());
  if (!t)
    return invalidArg(label + "tensor is NULL");
  if (t->rank < 0 || (t->rank > 0 && !t->shape))
    return invalidArg(label + "rank is negative or shape is NULL");
  if (!dtypeSize(t->dtype))
    return invalidArg(label + format("unknown dtype code %d", t->dtype));
  std::vector<int64_t> shape(t->shape, t->shape + t->rank);
  Status s = checkAgainstSpec(kind, spec, t->dtype, shape);
  if (!s.ok())
    return s;
  int64_t n = numElements(shape);
  if (n < 0)
    return invalidArg(label + "too many elements");
  if (n > 0 && !t->data)
    return invalidArg(label + "data is NULL");
  std::vector<int64_t> rowMajor = rowMajorStrides(shape);
  bool contiguous = true;
  if (t->strides)
    for (int d = 0; d < t->rank; ++d)
      contiguous &= shape[d] == 1 || t->strides[d] == rowMajor[d];
  out = BoundTensor();
  out.bound = true;
  out.dtype = t->dtype;
  out.shape = shape;
  out.strides = rowMajor;
  if (contiguous || n == 0) {
    out.data = t->data;
    return Status();
  }
  s = HostTensor::create(t->dtype, shape, out.owned);
  if (!s.ok())
    return s.withPrefix(label);
  gather(*t, dtypeSize(t->dtype), out.owned);
  out.data = out.owned.data();
  return Status();
}

Status bindOwned(int kind, const TensorSpec &spec, HostTensor &&tensor,
                 BoundTensor &out) {
  // f16/bf16 storage was widened to f32 on load; an f64 model needs f64.
  Status s = widenForModel(tensor, spec.dtype);
  if (!s.ok())
    return s;
  s = checkAgainstSpec(kind, spec, tensor.dtype(), tensor.shape());
  if (!s.ok())
    return s;
  out = BoundTensor();
  out.bound = true;
  out.dtype = tensor.dtype();
  out.shape = tensor.shape();
  out.strides = tensor.strides();
  out.owned = std::move(tensor);
  out.data = out.owned.data();
  return Status();
}

Status resolveDims(const Manifest &manifest,
                   const std::vector<BoundTensor> &inputs,
                   const std::vector<BoundTensor> &params,
                   std::map<std::string, int64_t> &dims) {
  dims.clear();
  // Every unbound tensor is listed at once, so one run shows them all.
  std::string missing;
  // Where each dim was first fixed, for the mismatch message.
  std::map<std::string, std::string> source;
  for (int kind : {TORSOR_INPUT, TORSOR_PARAM}) {
    const std::vector<TensorSpec> &specs = manifest.list(kind);
    const std::vector<BoundTensor> &bound =
        kind == TORSOR_INPUT ? inputs : params;
    for (size_t i = 0; i < specs.size(); ++i) {
      const TensorSpec &spec = specs[i];
      if (i >= bound.size() || !bound[i].bound) {
        missing += format("%s%s '%s'", missing.empty() ? "missing " : ", ",
                          kindWord(kind), spec.name.c_str());
        continue;
      }
      std::string here = format("%s '%s'", kindWord(kind), spec.name.c_str());
      for (size_t d = 0; d < spec.shape.size(); ++d) {
        if (!spec.shape[d].isSymbolic())
          continue;
        const std::string &sym = spec.shape[d].symbol;
        int64_t extent = bound[i].shape[d];
        auto it = dims.find(sym);
        if (it == dims.end()) {
          dims[sym] = extent;
          source[sym] = here;
        } else if (it->second != extent) {
          return invalidArg(format("symbolic dim '%s' is %lld from %s but "
                                   "%lld from %s",
                                   sym.c_str(), (long long)it->second,
                                   source[sym].c_str(), (long long)extent,
                                   here.c_str()));
        }
      }
    }
  }
  if (!missing.empty())
    return Status(TORSOR_FAILED_PRECONDITION, missing);
  return checkDerivedSizes(manifest, dims, source);
}

Status checkDerivedSizes(const Manifest &manifest,
                         const std::map<std::string, int64_t> &dims,
                         const std::map<std::string, std::string> &source) {
  // F: the most elements the fixed dims of one tensor with a symbolic dim
  // contribute (the per-token features: 16 for [L, 4, 4]).
  uint64_t fixed = 1;
  for (const std::vector<TensorSpec> *list :
       {&manifest.inputs, &manifest.params, &manifest.outputs,
        &manifest.cotangents, &manifest.gradients})
    for (const TensorSpec &spec : *list) {
      uint64_t product = 1;
      bool symbolic = false;
      for (const DimSpec &d : spec.shape) {
        symbolic |= d.isSymbolic();
        if (!d.isSymbolic() && d.extent > 0 &&
            __builtin_mul_overflow(product, static_cast<uint64_t>(d.extent),
                                   &product))
          product = UINT64_MAX;
      }
      if (symbolic && product > fixed)
        fixed = product;
    }
  // Every symbolic dim once, the largest twice (the L x L scores of
  // attention), times F, times the widest element (8 bytes). Zero extents
  // count as 1: an empty input does not make its other dims harmless.
  uint64_t bound = 8;
  bool overflow = __builtin_mul_overflow(bound, fixed, &bound);
  int64_t largest = 1;
  std::string largestName, list;
  for (const auto &[sym, extent] : dims) {
    uint64_t e = static_cast<uint64_t>(std::max<int64_t>(extent, 1));
    overflow |= __builtin_mul_overflow(bound, e, &bound);
    if (extent > largest) {
      largest = extent;
      largestName = sym;
    }
    auto from = source.find(sym);
    list +=
        format("%s%s = %lld%s", list.empty() ? "" : ", ", sym.c_str(),
               (long long)extent,
               from == source.end() ? "" : (" from " + from->second).c_str());
  }
  overflow |=
      __builtin_mul_overflow(bound, static_cast<uint64_t>(largest), &bound);
  if (!overflow && bound <= kDerivedSizeLimit)
    return Status();
  return invalidArg(format(
      "symbolic dims too large: %s. Buffers the compiled code derives from "
      "them (up to every dim times the largest, %s, again, times %llu "
      "elements of fixed dims, in 8-byte elements) would pass 2^62 bytes "
      "and overflow 64-bit size arithmetic, whatever the inputs' element "
      "counts; use smaller dims (docs/runtime.md, \"Size limits\")",
      list.c_str(), largestName.c_str(), (unsigned long long)fixed));
}

Status outputShape(const TensorSpec &spec,
                   const std::map<std::string, int64_t> &dims,
                   std::vector<int64_t> &shape) {
  shape.clear();
  for (const DimSpec &d : spec.shape) {
    if (!d.isSymbolic()) {
      shape.push_back(d.extent);
      continue;
    }
    auto it = dims.find(d.symbol);
    if (it == dims.end())
      return invalidArg(format("output '%s': symbolic dim '%s' is not fixed "
                               "by any input or param",
                               spec.name.c_str(), d.symbol.c_str()));
    shape.push_back(it->second);
  }
  return Status();
}

} // namespace torsor::rt
