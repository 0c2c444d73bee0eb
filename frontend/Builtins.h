//===- Builtins.h - The registry of built-in functions ----------*- C++ -*-===//
//
// One registry (Builtins.def) answers, for Sema, MLIRGen and the
// left-invariance analysis alike, whether a name is a built-in, which
// family lowers it, and what it does with group elements. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_BUILTINS_H
#define TORSOR_FRONTEND_BUILTINS_H

#include "llvm/ADT/StringRef.h"

namespace torsor::frontend {

/// Which family a built-in belongs to (and which MLIRGen path emits it).
enum class BuiltinKind { DENSE, GROUP, LAYER };

/// What a built-in does with its group-element arguments (Builtins.def).
enum class PoseUse { NONE, COMPOSE, INVERSE, RELATIVE, DISTANCE, ABSOLUTE };

/// One registry entry.
struct BuiltinInfo {
  llvm::StringRef name;
  BuiltinKind kind;
  PoseUse poses;
};

/// The entry for `name`, or null when it is not a built-in.
inline const BuiltinInfo *lookupBuiltin(llvm::StringRef name) {
  static const BuiltinInfo table[] = {
#define BUILTIN(NAME, KIND, POSES) {#NAME, BuiltinKind::KIND, PoseUse::POSES},
#include "frontend/Builtins.def"
  };
  for (const BuiltinInfo &info : table)
    if (info.name == name)
      return &info;
  return nullptr;
}

/// The family of a call to built-in `name`: `exp` with a `group` keyword
/// is the group exponential, otherwise the elementwise one.
inline BuiltinKind builtinKind(llvm::StringRef name, bool hasGroupKeyword) {
  if (name == "exp" && hasGroupKeyword)
    return BuiltinKind::GROUP;
  const BuiltinInfo *info = lookupBuiltin(name);
  return info ? info->kind : BuiltinKind::DENSE;
}

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_BUILTINS_H
