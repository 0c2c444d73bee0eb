//===- VerifyGPUHostCode.cpp - No tensor data on an NVPTX model's host ----===//
//
// The guarantee `torsorc --target=nvptx` gives: every read and write of
// tensor data happens in a kernel. The passes before this one move all of
// it there; this one checks that they did, after kernel outlining, and
// fails the compile with the location of anything left over, rather than
// let the host code dereference a device pointer at run time.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/GPUHostCode.h"
#include "compiler/Transforms/Passes.h"

namespace torsor {
#define GEN_PASS_DEF_TORSORVERIFYGPUHOSTCODE
#include "compiler/Transforms/Passes.h.inc"
} // namespace torsor

using namespace mlir;
using namespace torsor;

namespace {

struct TorsorVerifyGPUHostCode
    : torsor::impl::TorsorVerifyGPUHostCodeBase<TorsorVerifyGPUHostCode> {
  void runOnOperation() override {
    bool failed = false;
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      // Device code and kernels yet to be outlined are the device's.
      if (isa<gpu::GPUModuleOp, gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (isa<ModuleOp, func::FuncOp>(op))
        return WalkResult::advance();
      // A stack buffer on the host is host memory a kernel cannot see.
      if (isa<memref::AllocaOp>(op) || accessesBufferContents(op)) {
        op->emitError() << "NVPTX host code would read or write tensor data "
                           "here ('"
                        << op->getName()
                        << "'); every buffer of an nvptx model is device "
                           "memory, so this must run in a kernel";
        failed = true;
      }
      return WalkResult::advance();
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
