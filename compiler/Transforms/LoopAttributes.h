//===- LoopAttributes.h - Loop facts lowerings pass on -----------*- C++
//-*-===//
//
// Attributes a lowering that knows a loop's semantics puts on the loops it
// creates, for later passes that could not prove the fact themselves.
// Header-only and free of generated code, so conversions can include it
// without depending on the Transforms pass declarations.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TRANSFORMS_LOOPATTRIBUTES_H
#define TORSOR_COMPILER_TRANSFORMS_LOOPATTRIBUTES_H

#include "llvm/ADT/StringRef.h"

namespace torsor {

/// Unit attribute on an `scf.for` whose iterations are independent (each
/// touches only its own elements of every buffer it reads or writes).
/// convert-lie-to-arith sets it on its batch loops;
/// torsor-outline-parallel-loops treats such loops, once bufferized and
/// without results, as `scf.parallel`. Only set it where that holds after
/// bufferization too: a loop whose body uses temporaries may see them
/// hoisted into one buffer shared by all iterations.
constexpr llvm::StringLiteral kParallelLoopAttr = "torsor.parallel";

} // namespace torsor

#endif // TORSOR_COMPILER_TRANSFORMS_LOOPATTRIBUTES_H
