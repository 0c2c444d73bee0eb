//===- InitAll.h - Register every Torsor dialect and pass ------*- C++ -*-===//
//
// The tools (torsor-opt, torsorc) register the same set of dialects and
// passes: Torsor's own plus the upstream ones the pipelines use. Adding a
// dialect or pass means adding it here, once.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_INITALL_H
#define TORSOR_COMPILER_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace torsor {

/// Adds Torsor's dialects and the upstream dialects (and their external
/// interface models, e.g. bufferization) the pipelines need.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers Torsor's passes and pipelines and the upstream passes
/// `torsor-opt` exposes.
void registerAllPasses();

} // namespace torsor

#endif // TORSOR_COMPILER_INITALL_H
