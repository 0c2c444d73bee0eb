//===- FuzzSupport.cpp - Shared pieces of the compiler fuzz targets -------===//
//
// One context per process, the front end run as torsorc runs it, and the
// back end short of machine code. Diagnostics are captured, not printed:
// a fuzzer executes millions of inputs and only a bug should make noise.
//
//===----------------------------------------------------------------------===//

#include "fuzz/compiler/FuzzSupport.h"

#include "compiler/InitAll.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Target/Manifest.h"
#include "frontend/MLIRGen.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

MLIRContext &torsor::fuzz::getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    torsor::registerAllDialects(registry);
    auto *ctx = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
    ctx->printOpOnDiagnostic(false);
    return ctx;
  }();
  return *context;
}

namespace {
/// Collects error diagnostics of one run into a FrontendResult.
struct Capture {
  Capture(MLIRContext &ctx, std::string &errors, bool &any, bool &unlocated,
          bool &verifier)
      : handler(&ctx, [&](Diagnostic &diag) {
          if (diag.getSeverity() != DiagnosticSeverity::Error)
            return success();
          any = true;
          bool located =
              isa<FileLineColLoc>(diag.getLocation()) ||
              isa<NameLoc, CallSiteLoc, FusedLoc>(diag.getLocation());
          if (!located)
            unlocated = true;
          std::string message = diag.str();
          // Op verifiers phrase their errors "'dialect.op' op ..."; Sema's
          // messages never do.
          if (StringRef(message).starts_with("'") &&
              StringRef(message).contains("' op "))
            verifier = true;
          errors += (located ? "[located] " : "[unlocated] ") + message + "\n";
          return success();
        }) {}
  ScopedDiagnosticHandler handler;
};
} // namespace

torsor::fuzz::FrontendResult torsor::fuzz::runFrontend(StringRef source,
                                                       unsigned dtype) {
  FrontendResult result;
  MLIRContext &ctx = getContext();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "fuzz.tsr"), llvm::SMLoc());
  Capture capture(ctx, result.errors, result.anyError, result.anyUnlocatedError,
                  result.verifierRejected);
  using torsor::frontend::FloatDType;
  result.module = torsor::frontend::importTorsorSource(
      sourceMgr, ctx,
      dtype == 1   ? FloatDType::F32
      : dtype == 2 ? FloatDType::F64
                   : FloatDType::AsWritten);
  return result;
}

std::string torsor::fuzz::runBackend(ModuleOp module, unsigned optLevel) {
  MLIRContext &ctx = getContext();
  std::string errors;
  bool any = false, unlocated = false, verifier = false;
  Capture capture(ctx, errors, any, unlocated, verifier);
  (void)torsor::collectGroupSpecializations(module);
  // The manifest rejects, at their declarations, types the runtime cannot
  // pass (f16 inputs, ...): a located refusal is the documented answer.
  if (failed(torsor::buildManifest(module, "cpu")))
    return unlocated || !any ? "manifest: " + errors : "";
  PassManager pm(&ctx, module->getName().getStringRef());
  torsor::PipelineOptions options;
  options.optLevel = optLevel;
  options.vectorBits = 256;
  torsor::buildTorsorOptimizationPipeline(pm, options);
  torsor::buildCPULoweringPipeline(pm, options);
  if (failed(pm.run(module)))
    return "pipeline: " + errors;
  llvm::LLVMContext llvmContext;
  if (!translateModuleToLLVMIR(module, llvmContext))
    return "translation to LLVM IR: " + errors;
  return "";
}

void torsor::fuzz::reportBug(StringRef what, StringRef source,
                             StringRef details) {
  llvm::errs() << "==== torsor fuzz: " << what << "\n---- input ----\n"
               << source << "\n---- diagnostics ----\n"
               << details << "\n";
  llvm::errs().flush();
  std::abort();
}
