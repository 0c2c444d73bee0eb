//===- ElfCheck.h - Sanity check of a model file before dlopen -*- C++ -*-===//
//
// dlopen maps a shared object's segments straight from the file: when the
// file is shorter than its program headers say (a truncated copy or
// download), the first touch of a missing page kills the process with
// SIGBUS instead of failing the load. This check reads the ELF header and
// program headers and refuses such files with a message first.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_ELFCHECK_H
#define TORSOR_RUNTIME_ELFCHECK_H

#include "Support.h"

#include <string>

namespace torsor::rt {

/// Checks that `path` is a regular file holding a 64-bit little-endian ELF
/// shared object for this machine whose program and section headers, and
/// every segment's file bytes, lie inside the file. `what` names the file in
/// messages ("model 'm.so'").
Status checkElfFile(const std::string &path, const std::string &what);

/// The same check on the bytes of a file already in memory (for tests and
/// the fuzzer); the headers are checked against `size`.
Status checkElfBytes(const unsigned char *bytes, size_t size,
                     const std::string &what);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_ELFCHECK_H
