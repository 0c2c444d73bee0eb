//===- Manifest.h - The compiled model's manifest ---------------*- C++ -*-===//
//
// OUT.json beside OUT.so: the model's name, target, dtype, symbolic dims
// and its inputs, params and outputs in ABI order (docs/runtime.md). Built
// from the attributes MLIRGen put on the model function, before lowering.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TARGET_MANIFEST_H
#define TORSOR_COMPILER_TARGET_MANIFEST_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace torsor {

/// For each declared group used in `module` that the compiler runs with a
/// built-in group's closed forms (its generators are that group's basis),
/// the built-in's keyword, e.g. {"SE3d": "se3"}.
llvm::StringMap<std::string> collectGroupSpecializations(mlir::ModuleOp module);

/// The manifest of the model in `module` for `target` ("cpu" or "nvptx"),
/// as JSON text; std::nullopt when the module has no model function.
/// Emits an error and fails on a malformed model signature.
mlir::FailureOr<std::optional<std::string>>
buildManifest(mlir::ModuleOp module, llvm::StringRef target);

/// As above, for a target whose models have ABI `abiVersion` and whose
/// manifest carries `targetFields` too (NVPTX: "gpu_arch").
mlir::FailureOr<std::optional<std::string>>
buildManifest(mlir::ModuleOp module, llvm::StringRef target, int abiVersion,
              llvm::json::Object targetFields);

/// Adds `"prepare": {"entry": "torsor_prepare", "bytes": bytes}` to the
/// manifest text `manifest` (the params' packed copies of
/// `--compute=bf16`, docs/runtime.md).
void addPrepareToManifest(std::string &manifest, int64_t bytes);

} // namespace torsor

#endif // TORSOR_COMPILER_TARGET_MANIFEST_H
