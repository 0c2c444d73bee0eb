//===- Safetensors.h - Read and write weight files --------------*- C++ -*-===//
//
// The compiler side of the .safetensors format (the runtime has its own
// reader; it is a separate CMake project that links no LLVM). The
// redundancy report reads weights to measure ranks, and checkpoint
// conversion writes the reduced parameters. Values are held as double so
// that products like G_QK = W_Q W_Kᵀ are formed in float64 whatever the
// file's dtype; F32 and F64 tensors are supported.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_ANALYSIS_SAFETENSORS_H
#define TORSOR_COMPILER_ANALYSIS_SAFETENSORS_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace torsor {

/// One tensor: "F32" or "F64", its shape, and its values widened to double.
struct WeightTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<double> data;
};

/// The tensors of one .safetensors file, in file order.
struct WeightFile {
  llvm::StringMap<WeightTensor> tensors;
  std::vector<std::string> order;
};

/// Reads `path`; errors name the file and, where one is at fault, the tensor.
llvm::Expected<WeightFile> readSafetensors(llvm::StringRef path);

/// Writes `file` to `path` (tensors in `file.order`).
llvm::Error writeSafetensors(llvm::StringRef path, const WeightFile &file);

/// "[8, 4]".
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace torsor

#endif // TORSOR_COMPILER_ANALYSIS_SAFETENSORS_H
