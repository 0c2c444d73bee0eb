//===- EmitEntry.h - The manifest embedded in the library -----*- C++ -*-===//
//
// The third export of every model library besides torsor_forward and
// torsor_abi_version (EmitEntry.cpp): `const char *torsor_model_manifest
// (void)`, the manifest text, so the runtime can check OUT.json against
// the library it describes (a tampered or mismatched manifest is refused,
// not obeyed).
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_TRANSFORMS_EMITENTRY_H
#define TORSOR_TRANSFORMS_EMITENTRY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace torsor {

/// Name of the exported function that returns the embedded manifest.
constexpr llvm::StringLiteral kManifestEntryName = "torsor_model_manifest";

/// Adds kManifestEntryName returning `manifest` to a module already lowered
/// to the LLVM dialect. torsorc calls it for --emit=so.
void emitManifestFunction(mlir::ModuleOp module, llvm::StringRef manifest);

} // namespace torsor

#endif // TORSOR_TRANSFORMS_EMITENTRY_H
