//===- CPUTarget.cpp - LLVM IR, objects and shared libraries --------------===//
//
// LLVM-dialect module → LLVM IR → optimized LLVM IR → object → shared object.
// Code generation is LLVM's own (no C source is ever produced); linking is
// lld, invoked as a program because Debian ships no lld library for ELF.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CPUTarget.h"

#include "compiler/Transforms/Passes.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace torsor;

/// Turns on MachineSink's sinking of instructions into loops to avoid
/// spills (`-sink-insts-to-avoid-spills`, off upstream) unless the command
/// line set it. Without it, MachineLICM hoists the vector constants of the
/// fused attention's score loop (the atan2 and exp polynomials' splats)
/// out of the whole key loop, where they hold registers through the P·V
/// loop beside it and push its accumulators onto the stack: 61 instead of
/// 27 instructions per key for SO(2) with one head
/// (docs/compiler.md, "The fused forward's code").
static void tuneCodeGeneration() {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("sink-insts-to-avoid-spills");
  if (it == options.end() || it->second->getNumOccurrences() > 0)
    return;
  // MachineSink.cpp declares it as a cl::opt<bool>.
  static_cast<llvm::cl::opt<bool> *>(it->second)->setValue(true);
}

std::unique_ptr<llvm::TargetMachine>
torsor::createCPUTargetMachine(const CPUTargetOptions &options,
                               std::string &error) {
  llvm::InitializeAllTargetInfos();
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmPrinters();
  tuneCodeGeneration();

  llvm::Triple triple(options.triple.empty()
                          ? llvm::sys::getDefaultTargetTriple()
                          : options.triple);
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;

  std::string cpu = options.cpu;
  std::string features;
  if (cpu == "host") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures subtarget;
    for (const auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
      subtarget.AddFeature(feature, enabled);
    features = subtarget.getString();
  } else if (cpu == "generic") {
    cpu = triple.isX86() ? "x86-64" : "generic";
  }

  llvm::TargetOptions targetOptions;
  auto level = options.optLevel == 0   ? llvm::CodeGenOptLevel::None
               : options.optLevel == 1 ? llvm::CodeGenOptLevel::Less
               : options.optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                       : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(triple, cpu, features, targetOptions,
                                  llvm::Reloc::PIC_, std::nullopt, level));
  if (!machine)
    error = "cannot create a target machine for " + triple.str() + " / " + cpu;
  return machine;
}

unsigned torsor::getVectorBits(const llvm::TargetMachine &machine) {
  const llvm::MCSubtargetInfo *info = machine.getMCSubtargetInfo();
  if (!machine.getTargetTriple().isX86() || !info)
    return 128;
  if (info->checkFeatures("+avx512f"))
    return 512;
  if (info->checkFeatures("+avx"))
    return 256;
  return 128;
}

bool torsor::hasCPUFeatures(const llvm::TargetMachine &machine,
                            llvm::StringRef features) {
  const llvm::MCSubtargetInfo *info = machine.getMCSubtargetInfo();
  return machine.getTargetTriple().isX86() && info &&
         info->checkFeatures(features);
}

/// Whether `function` is one of the serial entries the runtime calls once
/// per run (torsor-emit-entry's trampolines, with the model inlined into
/// them): the launch glue between the thread-pool tasks, where the kernels'
/// loops are not.
static bool isSerialEntry(const llvm::Function &function) {
  if (!function.hasExternalLinkage())
    return false;
  llvm::StringRef name = function.getName();
  return name == kForwardEntryName || name == kBackwardEntryName ||
         name == kPrepareEntryName;
}

/// Skips LLVM's SLP vectorizer on the serial entries. They are
/// straight-line glue (a --grad model's holds hundreds of launches and
/// allocations in a few blocks of thousands of instructions), and SLP's
/// dependence scheduling over such blocks grows faster than their size:
/// 0.23 of grassmann_lm --grad's 0.35 s of SLP went to torsor_backward, to
/// pack a few constant descriptor fields into vector stores, which code
/// generation merges just the same (every example's object code is
/// byte-identical with and without). The tasks, where the kernels' loops
/// are, keep it.
static bool shouldRunOptionalPass(llvm::StringRef pass, llvm::Any ir) {
  if (pass != "SLPVectorizerPass")
    return true;
  const llvm::Function *const *function =
      llvm::any_cast<const llvm::Function *>(&ir);
  return !function || !isSerialEntry(**function);
}

std::unique_ptr<llvm::Module>
torsor::translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context,
                          llvm::TargetMachine &machine) {
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return nullptr;
  // Without a triple and data layout LLVM will not vectorize.
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());
  // Functions carry the CPU and its features so the vectorizer sees the
  // real register width (AVX-512 on -mcpu=host machines that have it).
  for (llvm::Function &function : *llvmModule) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", machine.getTargetCPU());
    if (!machine.getTargetFeatureString().empty())
      function.addFnAttr("target-features", machine.getTargetFeatureString());
    // LLVM splits 512-bit vectors in two on CPUs whose tuning prefers
    // 256-bit ones unless told otherwise; Torsor's kernels choose their
    // width themselves (torsor.strategy), so let them have it.
    if (unsigned bits = getVectorBits(machine); bits >= 512)
      function.addFnAttr("prefer-vector-width", std::to_string(bits));
  }
  return llvmModule;
}

void torsor::optimizeLLVMModule(llvm::Module &module,
                                llvm::TargetMachine &machine,
                                unsigned optLevel) {
  if (optLevel == 0)
    return;
  llvm::LLVMContext &context = module.getContext();

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  // LLVM's own instrumentation: --time-passes reports every optimization
  // pass (code generation's legacy passes report themselves).
  llvm::PassInstrumentationCallbacks instrumentation;
  llvm::StandardInstrumentations standard(context, /*DebugLogging=*/false);
  standard.registerCallbacks(instrumentation, &mam);
  instrumentation.registerShouldRunOptionalPassCallback(shouldRunOptionalPass);
  llvm::PassBuilder builder(&machine, tuning, std::nullopt, &instrumentation);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  builder.buildPerModuleDefaultPipeline(level).run(module, mam);
}

mlir::LogicalResult torsor::emitObjectFile(llvm::Module &module,
                                           llvm::TargetMachine &machine,
                                           llvm::StringRef path,
                                           std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return mlir::failure();
  }
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return mlir::failure();
  }
  pm.run(module);
  // A full disk or a file-size limit is an error, not the fatal "IO
  // failure on output stream" raw_fd_ostream raises for unchecked errors.
  os.close();
  if (os.has_error()) {
    error = "cannot write '" + path.str() + "': " + os.error().message();
    os.clear_error();
    return mlir::failure();
  }
  return mlir::success();
}

mlir::LogicalResult
torsor::linkSharedObject(llvm::ArrayRef<std::string> objectPaths,
                         llvm::StringRef outputPath, std::string &error) {
  std::string lld = TORSOR_LLD_PATH;
  if (!llvm::sys::fs::can_execute(lld)) {
    auto found = llvm::sys::findProgramByName("ld.lld");
    if (!found) {
      error = "cannot find the linker ld.lld (install lld-22)";
      return mlir::failure();
    }
    lld = *found;
  }
  // -Bsymbolic: calls inside the model bind to its own functions, never to
  // a same-named one loaded earlier (a function named `log` vs libm's).
  llvm::SmallVector<llvm::StringRef> args = {
      lld, "-shared", "-Bsymbolic", "--as-needed", "-o", outputPath};
  args.append(objectPaths.begin(), objectPaths.end());
  args.append({"-L/lib64", "-L/usr/lib64", "-L/lib/x86_64-linux-gnu",
               "-L/usr/lib/x86_64-linux-gnu", "-lm"});
  std::string message;
  int rc =
      llvm::sys::ExecuteAndWait(lld, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0) {
    error = "linking '" + outputPath.str() + "' with ld.lld failed" +
            (message.empty() ? "" : ": " + message);
    return mlir::failure();
  }
  return mlir::success();
}
