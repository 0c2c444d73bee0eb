//===- GPUHostCode.h - What NVPTX host code may do -------------*- C++ -*-===//
//
// In an ABI 2 (NVPTX) model every tensor buffer is device memory, so the
// host code may allocate, free, look at shapes and launch kernels, but
// never read or write a buffer's contents. One predicate says which
// operations do, shared by the pass that moves them into kernels
// (torsor-map-serial-code-to-gpu) and the one that fails the compile if
// any is left (torsor-verify-gpu-host-code), so the two cannot disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_COMPILER_TRANSFORMS_GPUHOSTCODE_H
#define TORSOR_COMPILER_TRANSFORMS_GPUHOSTCODE_H

namespace mlir {
class DialectRegistry;
class Operation;
} // namespace mlir

namespace torsor {

/// Whether `op` itself (not counting the ops nested in its regions) reads
/// or writes memory, or may (unknown effects, a call of an external
/// function): everything host code of an NVPTX model must not do. GPU
/// dialect ops (allocation, copies, launches), allocation and
/// deallocation, view and shape ops, and calls of functions defined in
/// the module (host code too, checked on their own) are fine.
bool accessesBufferContents(mlir::Operation *op);

/// Whether `op` or an op nested in it, outside any gpu.launch, does.
bool containsBufferAccess(mlir::Operation *op);

/// Gives gpu.barrier its memory effects (reads and writes memory), which
/// upstream leaves undeclared (GPUBarrierEffects.cpp says why it matters).
void registerGPUBarrierEffects(mlir::DialectRegistry &registry);

} // namespace torsor

#endif // TORSOR_COMPILER_TRANSFORMS_GPUHOSTCODE_H
