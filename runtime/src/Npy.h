//===- Npy.h - NumPy .npy reader and writer -------------------*- C++ -*-===//
//
// Reads and writes NumPy's .npy format (versions 1.0, 2.0 and 3.0 headers)
// for little-endian, C-order f32/f64/i64 arrays: the tensor file format of
// torsor-run. f16 arrays load as f32 and other integer widths as i64
// (exact widenings). Anything else (Fortran order, big-endian, other dtypes,
// short or over-long data) is rejected with a message naming the file and the
// problem; data is never silently truncated or padded.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_NPY_H
#define TORSOR_RUNTIME_NPY_H

#include "Support.h"

#include <string>

namespace torsor::rt {

/// Parses .npy file contents `bytes`; `path` only labels error messages.
Status parseNpy(const std::string &bytes, const std::string &path,
                HostTensor &out);
/// Reads the .npy file at `path` into `out`.
Status readNpy(const std::string &path, HostTensor &out);
/// Serializes `tensor` as a version 1.0 .npy (2.0 if the header is huge).
std::string serializeNpy(const HostTensor &tensor);
/// Writes `tensor` to `path` as .npy.
Status writeNpy(const std::string &path, const HostTensor &tensor);

/// Reads a whole regular file into `out` (shared by the file-format
/// readers). Devices, pipes and directories are refused, as are files
/// larger than `maxBytes`; running out of memory is an error, not an abort.
Status readFile(const std::string &path, std::string &out,
                uint64_t maxBytes = UINT64_MAX);
/// Writes `bytes` to `path`, replacing it.
Status writeFile(const std::string &path, const std::string &bytes);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_NPY_H
