//===- NonFinite.h - NaN/Inf policy for bound tensors ---------*- C++ -*-===//
//
// The policy (docs/runtime.md, "NaN and Inf"): while input checks are on
// (the default, the same switch as the group check), a NaN or an infinity
// in any float input or param stops the run with a message naming the
// tensor, the element and its index; one such value would otherwise turn
// every output of an attention layer into NaN without a trace. With checks
// off, values pass through to the model unchanged and IEEE rules apply.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_NONFINITE_H
#define TORSOR_RUNTIME_NONFINITE_H

#include "Binding.h"

namespace torsor::rt {

/// Checks every element of a bound f32/f64 tensor (i64 passes); `label`
/// names it ("input 'x'").
Status checkFinite(const std::string &label, const BoundTensor &t);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_NONFINITE_H
