//===- torsorc.cpp - The Torsor compiler driver ---------------------------===//
//
// Toy-style driver: reads a model (.tsr) or MLIR (.mlir), and stops at the
// stage --emit names:
//   ast   the parsed model (.tsr only)
//   mlir  the module as MLIRGen (or the input file) gives it
//   opt   after Torsor's optimization passes (still lie/geo/linalg)
//   llvm  LLVM IR after LLVM's optimizations
//   obj   an object file
//   so    a shared library (the default), loadable by the runtime
// Errors are located (`file:line:col: error:`) through MLIR's SourceMgr
// diagnostic handler; --verify-diagnostics checks `expected-error` comments
// instead, so diagnostics are testable.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/Checkpoint.h"
#include "compiler/Analysis/GroupReport.h"
#include "compiler/Analysis/Redundancy.h"
#include "compiler/Autodiff/Passes.h"
#include "compiler/InitAll.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Support/FileIO.h"
#include "compiler/Target/CPUTarget.h"
#include "compiler/Target/Manifest.h"
#include "compiler/Target/ParallelCodegen.h"
#include "compiler/Target/Target.h"
#include "compiler/Transforms/EmitEntry.h"
#include "compiler/Transforms/Passes.h"
#include "frontend/MLIRGen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Pass.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"

#include <csignal>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

namespace {
enum class Emit { AST, MLIR, Opt, LLVM, Obj, SO };
enum class Report { None, Redundancy, Groups };

cl::OptionCategory torsorcCategory("torsorc options");

cl::opt<std::string> inputFilename(cl::Positional,
                                   cl::desc("<model.tsr|.mlir>"), cl::init("-"),
                                   cl::cat(torsorcCategory));
cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                    cl::value_desc("filename"), cl::init(""),
                                    cl::cat(torsorcCategory));
cl::opt<Emit> emitAction(
    "emit", cl::desc("Stage to stop at and print or write"), cl::init(Emit::SO),
    cl::values(clEnumValN(Emit::AST, "ast", "the parsed model (.tsr)"),
               clEnumValN(Emit::MLIR, "mlir", "MLIR as generated"),
               clEnumValN(Emit::Opt, "opt", "MLIR after Torsor's passes"),
               clEnumValN(Emit::LLVM, "llvm", "optimized LLVM IR"),
               clEnumValN(Emit::Obj, "obj", "an object file"),
               clEnumValN(Emit::SO, "so", "a shared library (default)")),
    cl::cat(torsorcCategory));
cl::opt<std::string>
    targetName("target",
               cl::desc("Code generation target: cpu (the host CPU, default) "
                        "or nvptx (NVIDIA GPUs, sm_75 and newer)"),
               cl::value_desc("cpu|nvptx"), cl::init("cpu"),
               cl::cat(torsorcCategory));
cl::opt<std::string> gpuArch("gpu-arch",
                             cl::desc("GPU chip for --target=nvptx (default "
                                      "sm_90; sm_75 or newer)"),
                             cl::init("sm_90"), cl::cat(torsorcCategory));
cl::opt<std::string>
    cudaPath("cuda-path",
             cl::desc("CUDA toolkit root for --target=nvptx (ptxas, "
                      "libdevice; default $CUDA_HOME, else /usr/local/cuda)"),
             cl::init(""), cl::cat(torsorcCategory));
cl::opt<std::string> mcpu("mcpu",
                          cl::desc("CPU: host (default), generic (portable "
                                   "x86-64) or an LLVM CPU name"),
                          cl::init("host"), cl::cat(torsorcCategory));
cl::opt<std::string> mtriple("mtriple",
                             cl::desc("Target triple (default: the host's)"),
                             cl::init(""), cl::cat(torsorcCategory));
cl::opt<std::string> dtype("dtype",
                           cl::desc("Compile every f32 and f64 of the model "
                                    "as f32|f64 (default: as written)"),
                           cl::init(""), cl::cat(torsorcCategory));
cl::opt<std::string> compute(
    "compute",
    cl::desc("Precision of matrix products: f32 (default, the reference) or "
             "bf16 (bf16 operands, f32 accumulation, on AMX or AVX512-BF16 "
             "when --mcpu has them; docs/precision.md)"),
    cl::value_desc("f32|bf16"), cl::init("f32"), cl::cat(torsorcCategory));
cl::opt<std::string> modelName("model",
                               cl::desc("The model to compile when the file "
                                        "has several"),
                               cl::value_desc("name"), cl::init(""),
                               cl::cat(torsorcCategory));
cl::opt<unsigned> optLevel("O",
                           cl::desc("Optimization level 0-3 (-O0 keeps "
                                    "the unfused oracle lowering)"),
                           cl::Prefix, cl::init(2), cl::cat(torsorcCategory));
cl::opt<unsigned> compileThreads(
    "compile-threads",
    cl::desc("Threads for LLVM's optimization and code generation of a "
             "large model's parts (0: one per core; the library is the "
             "same for any value)"),
    cl::init(0), cl::cat(torsorcCategory));
cl::opt<bool> splitLLVMModule(
    "split-llvm-module",
    cl::desc("Optimize and compile a large model's LLVM module in parts "
             "joined only by task pointers (default; =false: as one "
             "module, the same code in one object)"),
    cl::init(true), cl::cat(torsorcCategory));
cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check diagnostics against expected-* comments in the input"),
    cl::init(false), cl::cat(torsorcCategory));
cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("Verify the IR after every pass of the pipeline, not only "
             "after the last (slower; for debugging the compiler)"),
    cl::init(false), cl::cat(torsorcCategory));
cl::opt<std::string> splitInputFile(
    "split-input-file", cl::ValueOptional,
    cl::desc("Split the input at '// -----' and process each chunk alone"),
    cl::init(""), cl::cat(torsorcCategory));

// Relational transformers (docs/relational.md).
cl::opt<Report> report(
    "report", cl::desc("Print an analysis instead of compiling"),
    cl::init(Report::None),
    cl::values(clEnumValN(Report::Redundancy, "redundancy",
                          "parameter redundancy of the attention blocks"),
               clEnumValN(Report::Groups, "groups",
                          "the closed forms each declared group gets")),
    cl::cat(torsorcCategory));
cl::opt<bool> reportJson("report-json",
                         cl::desc("Print the --report data as JSON"),
                         cl::init(false), cl::cat(torsorcCategory));
cl::opt<std::string>
    weightsPath("weights",
                cl::desc("Weights (.safetensors) for --report's ranks and "
                         "for --convert-weights"),
                cl::value_desc("W.safetensors"), cl::init(""),
                cl::cat(torsorcCategory));
cl::opt<double> rankTol("rank-tol",
                        cl::desc("Relative singular-value cut for --report "
                                 "ranks (default max(m, n)·ε of the dtype)"),
                        cl::init(0.0), cl::cat(torsorcCategory));
cl::opt<bool> grad("grad",
                   cl::desc("Also emit the backward entry torsor_backward "
                            "(gradients of every param and float input; "
                            "docs/training.md)"),
                   cl::init(false), cl::cat(torsorcCategory));
cl::list<std::string> gradUnfused(
    "grad-unfused",
    cl::desc("With --grad: differentiate these geo ops (comma-separated, "
             "e.g. geo.grassmann_mix) through their unfused -O0 lowering "
             "instead of their gradient rule (the oracle rules are tested "
             "against)"),
    cl::CommaSeparated, cl::cat(torsorcCategory));
cl::opt<bool> relationalize(
    "relationalize",
    cl::desc("Rewrite standard attention into relational_attention "
             "(geo-relationalize-attention)"),
    cl::init(false), cl::cat(torsorcCategory));
cl::opt<std::string> convertWeights(
    "convert-weights",
    cl::desc("With --relationalize: write --weights converted to the "
             "relational params"),
    cl::value_desc("OUT.safetensors"), cl::init(""), cl::cat(torsorcCategory));

/// Whether the input is a .tsr model (by extension; stdin is MLIR).
bool isModelSource(StringRef filename) {
  return llvm::sys::path::extension(filename) == ".tsr";
}

/// Parses one buffer (a whole file or one split chunk) into a module.
OwningOpRef<ModuleOp> parseInput(llvm::SourceMgr &sourceMgr,
                                 MLIRContext &context) {
  using torsor::frontend::FloatDType;
  if (isModelSource(inputFilename))
    return torsor::frontend::importTorsorSource(
        sourceMgr, context,
        dtype.empty()    ? FloatDType::AsWritten
        : dtype == "f64" ? FloatDType::F64
                         : FloatDType::F32);
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

/// --model NAME: keeps that model and drops the others (several models may
/// share a file; a library holds one).
LogicalResult selectModel(ModuleOp module) {
  if (modelName.empty())
    return success();
  SmallVector<func::FuncOp> models;
  std::string names;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal()) {
      models.push_back(func);
      names += (names.empty() ? "" : ", ") + func.getName().str();
    }
  if (!llvm::any_of(models,
                    [](func::FuncOp f) { return f.getName() == modelName; }))
    return emitError(UnknownLoc::get(module.getContext()))
           << "no model named '" << modelName << "' in " << inputFilename
           << (names.empty() ? "" : "; its models are: ") << names;
  for (func::FuncOp f : models)
    if (f.getName() != modelName)
      f.erase();
  return success();
}

/// The manifest written beside a library: OUT.so -> OUT.json.
std::string manifestPathFor(StringRef library) {
  SmallString<128> path(library);
  llvm::sys::path::replace_extension(path, "json");
  return path.str().str();
}

/// Resolves every file this run writes before anything is compiled, and
/// refuses two that are one file (the library and its manifest for
/// `-o m.json`, an output that is the input, --convert-weights onto the
/// library): one would overwrite the other.
bool checkOutputs(bool binaryOutput) {
  struct Named {
    std::string label;
    std::unique_ptr<torsor::OutputFile> file;
  };
  std::vector<Named> outputs;
  auto add = [&](const std::string &label, StringRef path, bool special,
                 StringRef what) {
    auto file = torsor::OutputFile::resolve(path, special, what);
    if (!file) {
      llvm::errs() << "torsorc: error: " << toString(file.takeError()) << "\n";
      return false;
    }
    outputs.push_back({label, std::move(*file)});
    return true;
  };
  bool text = !binaryOutput;
  if (!outputFilename.empty() && outputFilename != "-" &&
      !add("-o", outputFilename, text,
           emitAction == Emit::SO && binaryOutput ? "a model library"
           : binaryOutput                         ? "an object file"
                                                  : "the output"))
    return false;
  if (binaryOutput && emitAction == Emit::SO && !outputFilename.empty() &&
      !add("the manifest", manifestPathFor(outputFilename), false,
           "a manifest"))
    return false;
  if (!convertWeights.empty() &&
      !add("--convert-weights", convertWeights, false, "a weights file"))
    return false;
  // The input counts too (read before anything is written, but a source
  // overwritten by a library is still lost).
  std::unique_ptr<torsor::OutputFile> input;
  if (inputFilename != "-") {
    auto resolved = torsor::OutputFile::resolve(inputFilename, true, "input");
    if (resolved)
      input = std::move(*resolved);
    else
      llvm::consumeError(resolved.takeError());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (input && outputs[i].file->sameFile(*input) &&
        !outputs[i].file->isSpecial()) {
      llvm::errs() << "torsorc: error: " << outputs[i].label << " '"
                   << outputs[i].file->givenPath()
                   << "' is the input file; writing it would destroy the "
                      "model source: choose another output path\n";
      return false;
    }
    for (size_t j = 0; j < i; ++j)
      if (outputs[i].file->sameFile(*outputs[j].file)) {
        llvm::errs() << "torsorc: error: " << outputs[j].label << " and "
                     << outputs[i].label << " would both be written to '"
                     << outputs[i].file->targetPath()
                     << "'; one would overwrite the other"
                     << (outputs[i].label == "the manifest"
                             ? " (name the library OUT.so: its manifest is "
                               "OUT.json)"
                             : ": give each its own path")
                     << "\n";
        return false;
      }
  }
  return true;
}

/// Runs the stages up to --emit on one buffer and writes the result.
LogicalResult compile(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                      llvm::raw_ostream &os) {
  if (emitAction == Emit::AST && !isModelSource(inputFilename))
    return emitError(UnknownLoc::get(&context))
           << "--emit=ast needs a .tsr model as input";
  if (emitAction == Emit::AST)
    return torsor::frontend::dumpTorsorAST(sourceMgr, context, os);
  // --mlir-timing: every stage below, the MLIR passes one by one, and
  // LLVM's optimization, code generation and linking (printed on exit).
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootTimer = timing.getRootScope();
  TimingScope frontendTimer = rootTimer.nest("frontend (parse, lower to MLIR)");
  OwningOpRef<ModuleOp> module = parseInput(sourceMgr, context);
  if (!module || failed(selectModel(*module)))
    return failure();
  frontendTimer.stop();
  // Say which declared groups run with a built-in's closed forms, in the
  // IR every later stage prints (and, below, in the manifest).
  llvm::StringMap<std::string> special =
      torsor::collectGroupSpecializations(*module);
  if (!special.empty()) {
    SmallVector<NamedAttribute> entries;
    for (const auto &entry : special)
      entries.emplace_back(StringAttr::get(&context, entry.getKey()),
                           StringAttr::get(&context, entry.getValue()));
    (*module)->setAttr("torsor.specialized_groups",
                       DictionaryAttr::get(&context, entries));
  }
  if (relationalize) {
    PassManager rpm(&context, module.get()->getName().getStringRef());
    rpm.addPass(torsor::createGeoRelationalizeAttention());
    if (failed(rpm.run(*module)))
      return failure();
    if (!convertWeights.empty() &&
        failed(torsor::convertCheckpoint(*module, weightsPath, convertWeights)))
      return failure();
  }
  if (grad && report == Report::None) {
    PassManager gpm(&context, module.get()->getName().getStringRef());
    torsor::TorsorDifferentiateOptions differentiate;
    differentiate.unfused.assign(gradUnfused.begin(), gradUnfused.end());
    gpm.addPass(torsor::createTorsorDifferentiate(differentiate));
    TimingScope gradTimer = rootTimer.nest("differentiate (--grad)");
    gpm.enableTiming(gradTimer);
    if (failed(gpm.run(*module)))
      return failure();
  }
  if (report == Report::Groups) {
    torsor::writeGroupReport(*module, os);
    return success();
  }
  if (report == Report::Redundancy)
    return torsor::writeRedundancyReport(
        *module, {reportJson, weightsPath, rankTol, 0.99}, os);
  // --convert-weights without -o only converts the checkpoint.
  if (!convertWeights.empty() && outputFilename.empty() &&
      !emitAction.getNumOccurrences())
    return success();
  if (emitAction == Emit::MLIR) {
    module->print(os);
    return success();
  }

  // The target comes first: its host machine's vector width shapes the
  // CPU kernels, and it says what the manifest holds.
  torsor::TargetOptions targetOptions;
  targetOptions.triple = mtriple;
  targetOptions.cpu = mcpu;
  targetOptions.optLevel = optLevel;
  targetOptions.gpuArch = gpuArch;
  targetOptions.compute = compute;
  targetOptions.cudaPath = cudaPath;
  std::string error;
  std::unique_ptr<torsor::Target> target =
      torsor::createTarget(targetName, targetOptions, error);
  if (!target)
    return emitError(UnknownLoc::get(&context)) << error;
  llvm::TargetMachine &machine = target->getHostMachine();

  // The manifest is read off the model signature before lowering rewrites
  // it; it is written next to the library once that exists.
  std::optional<std::string> manifest;
  if (emitAction == Emit::SO) {
    auto built = torsor::buildManifest(*module, target->getName(),
                                       target->getABIVersion(),
                                       target->getManifestFields());
    if (failed(built))
      return failure();
    manifest = *built;
  }

  torsor::PipelineOptions pipelineOptions;
  target->fillPipelineOptions(pipelineOptions);
  PassManager pm(&context, module.get()->getName().getStringRef());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  // The IR is verified once, after the whole pipeline, unless
  // --verify-each asks for it after every pass (a fifth of a --grad
  // compile's time; the lit suite and torsor-opt verify every pass).
  pm.enableVerifier(verifyEach);
  torsor::buildTorsorOptimizationPipeline(pm, pipelineOptions);
  if (emitAction != Emit::Opt)
    target->buildLoweringPipeline(pm, pipelineOptions);
  TimingScope pipelineTimer = rootTimer.nest("MLIR pipeline");
  pm.enableTiming(pipelineTimer);
  if (failed(pm.run(*module)))
    return failure();
  if (!verifyEach) {
    TimingScope verifyTimer = pipelineTimer.nest("verify");
    if (failed(verify(*module)))
      return failure();
  }
  pipelineTimer.stop();
  if (emitAction == Emit::Opt) {
    module->print(os);
    return success();
  }
  // The library carries its manifest too, so the runtime can check OUT.json.
  // --compute=bf16 may have added the params' prepare entry.
  if (manifest) {
    if (auto bytes = (*module)->getAttrOfType<IntegerAttr>(
            torsor::kPreparedBytesAttrName))
      torsor::addPrepareToManifest(*manifest, bytes.getInt());
    torsor::emitManifestFunction(*module, *manifest);
  }

  llvm::LLVMContext llvmContext;
  TimingScope translateTimer = rootTimer.nest("LLVM IR (translate)");
  auto llvmModule = torsor::translateToLLVMIR(*module, llvmContext, machine);
  translateTimer.stop();
  if (!llvmModule)
    return emitError(UnknownLoc::get(&context))
           << "translation to LLVM IR failed";
  // A library's module is cut into parts joined only by task pointers,
  // optimized and compiled on threads (ParallelCodegen.h); --emit=llvm and
  // --emit=obj show the one whole module.
  SmallVector<torsor::ModulePart> parts;
  if (emitAction == Emit::SO && splitLLVMModule) {
    TimingScope splitTimer = rootTimer.nest("LLVM IR (split)");
    parts = torsor::splitModule(*llvmModule, torsor::SplitOptions());
  }
  if (parts.empty()) {
    TimingScope optimizeTimer = rootTimer.nest("LLVM IR (optimize)");
    torsor::optimizeLLVMModule(*llvmModule, machine, optLevel);
  }
  if (emitAction == Emit::LLVM) {
    llvmModule->print(os, nullptr);
    return success();
  }

  // Object and shared library go to files, never to a terminal. Each is
  // staged beside its real target and renamed into place once complete
  // (compiler/Support/FileIO.h): a failed compile leaves the old files.
  if (outputFilename.empty() || outputFilename == "-")
    return emitError(UnknownLoc::get(&context))
           << "--emit=obj and --emit=so need an output file (-o)";
  auto fileError = [&](llvm::Error e) {
    return emitError(UnknownLoc::get(&context)) << toString(std::move(e));
  };
  if (emitAction == Emit::Obj) {
    auto object = torsor::OutputFile::create(
        outputFilename, /*allowSpecial=*/false, "an object file");
    if (!object)
      return fileError(object.takeError());
    if (failed(torsor::emitObjectFile(*llvmModule, machine,
                                      (*object)->writePath(), error)))
      return emitError(UnknownLoc::get(&context)) << error;
    if (llvm::Error e = (*object)->commit())
      return fileError(std::move(e));
    return success();
  }

  auto library = torsor::OutputFile::create(
      outputFilename, /*allowSpecial=*/false, "a model library");
  if (!library)
    return fileError(library.takeError());
  std::unique_ptr<torsor::OutputFile> manifestFile;
  if (manifest) {
    auto made =
        torsor::OutputFile::create(manifestPathFor(outputFilename),
                                   /*allowSpecial=*/false, "a manifest");
    if (!made)
      return fileError(made.takeError());
    manifestFile = std::move(*made);
  }
  // Removed when this scope ends, and by LLVM's handler on SIGINT, SIGTERM
  // and SIGHUP, registered before the files exist (a killed compile leaves
  // no $TMPDIR/torsor-*.o behind, whenever the signal comes).
  struct RemoveObjects {
    SmallVector<std::string> paths;
    ~RemoveObjects() {
      for (const std::string &path : paths) {
        llvm::sys::fs::remove(path);
        llvm::sys::DontRemoveFileOnSignal(path);
      }
    }
  } objects;
  SmallString<128> objectModel;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, objectModel);
  llvm::sys::path::append(objectModel, "torsor-%%%%%%.o");
  for (size_t i = 0, e = std::max<size_t>(parts.size(), 1); i < e; ++i) {
    SmallString<128> objectPath;
    int fd;
    if (auto ec = torsor::createFileRemovedOnSignal(objectModel, fd, objectPath,
                                                    0600))
      return emitError(UnknownLoc::get(&context))
             << "cannot create a temporary object file: " << ec.message();
    ::close(fd);
    objects.paths.push_back(objectPath.str().str());
  }
  if (parts.empty()) {
    TimingScope codegenTimer = rootTimer.nest("LLVM code generation");
    if (failed(torsor::emitObjectFile(*llvmModule, machine,
                                      objects.paths.front(), error)))
      return emitError(UnknownLoc::get(&context)) << error;
  } else {
    // One target machine per part: code generation keeps state in it.
    SmallVector<std::unique_ptr<llvm::TargetMachine>> machines;
    for (size_t i = 0; i < parts.size(); ++i) {
      machines.push_back(target->createHostMachine(error));
      if (!machines.back())
        return emitError(UnknownLoc::get(&context)) << error;
    }
    // LLVM's pass timers (--time-passes) are not thread-safe.
    unsigned threads = compileThreads;
    if (threads == 0)
      threads = llvm::hardware_concurrency().compute_thread_count();
    if (llvm::TimePassesIsEnabled)
      threads = 1;
    TimingScope codegenTimer =
        rootTimer.nest("LLVM optimize and code generation (" +
                       std::to_string(parts.size()) + " parts)");
    if (failed(torsor::compileParts(parts, machines, optLevel, threads,
                                    objects.paths, error)))
      return emitError(UnknownLoc::get(&context)) << error;
  }
  TimingScope linkTimer = rootTimer.nest("link");
  if (failed(torsor::linkSharedObject(objects.paths, (*library)->writePath(),
                                      error)))
    return emitError(UnknownLoc::get(&context)) << error;
  linkTimer.stop();
  if (manifestFile)
    if (llvm::Error e = torsor::writeBytes(*manifestFile, *manifest))
      return fileError(std::move(e));
  // The library first: a manifest never describes a library not in place.
  if (llvm::Error e = (*library)->commit())
    return fileError(std::move(e));
  if (manifestFile)
    if (llvm::Error e = manifestFile->commit())
      return fileError(std::move(e));
  return success();
}

/// Processes one buffer with the right diagnostic handler installed.
LogicalResult processBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                            llvm::raw_ostream &os,
                            const DialectRegistry &registry) {
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Users read these diagnostics: the located message and caret say it
  // all, the generic-form dump of the op would only add noise.
  context.printOpOnDiagnostic(false);
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(buffer), SMLoc());
  if (!verifyDiagnostics) {
    SourceMgrDiagnosticHandler handler(*sourceMgr, &context);
    // Errors with no source location are the driver's own (files, target,
    // options): print them as `torsorc: error: ...`, not `<unknown>:0:`.
    ScopedDiagnosticHandler driverErrors(&context, [](Diagnostic &diag) {
      if (!isa<UnknownLoc>(diag.getLocation()))
        return failure();
      llvm::errs() << "torsorc: "
                   << (diag.getSeverity() == DiagnosticSeverity::Error ? "error"
                                                                       : "note")
                   << ": " << diag << "\n";
      return success();
    });
    return compile(*sourceMgr, context, os);
  }
  SourceMgrDiagnosticVerifierHandler handler(*sourceMgr, &context);
  (void)compile(*sourceMgr, context, os);
  return handler.verify();
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // A file-size limit (RLIMIT_FSIZE) makes writes fail with EFBIG, reported
  // with the file's name, instead of killing torsorc (and the linker it
  // runs, which inherits this) with SIGXFSZ halfway through a file.
  ::signal(SIGXFSZ, SIG_IGN);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  torsor::registerAllPasses();
  cl::HideUnrelatedOptions(torsorcCategory);
  cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "Torsor version " << TORSOR_VERSION << "\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "torsorc: compile a Torsor model to a shared library\n\n"
      "  torsorc MODEL.tsr -o OUT.so [--target=cpu|nvptx [--gpu-arch=sm_90]]\n"
      "          [--dtype=f32|f64] [--compute=f32|bf16] [-O0..-O3] "
      "[--emit=ast|mlir|opt|llvm|obj|so]\n"
      "          [--model NAME] [--grad]\n"
      "  torsorc MODEL.tsr --report=redundancy [--report-json] "
      "[--weights=W.safetensors]\n"
      "  torsorc MODEL.tsr --report=groups   (the closed forms each declared "
      "group runs on)\n"
      "  torsorc MODEL.tsr --relationalize [--weights=IN.safetensors "
      "--convert-weights=OUT.safetensors] [-o OUT.so]\n"
      "  Without -o, MODEL.so (or MODEL.o) is written next to MODEL.tsr.\n");

  if (optLevel > 3) {
    llvm::errs() << "torsorc: error: -O" << optLevel
                 << " is not an optimization level (use -O0 to -O3)\n";
    return 1;
  }
  if (!dtype.empty() && dtype != "f32" && dtype != "f64") {
    llvm::errs() << "torsorc: error: --dtype must be f32 or f64, got '" << dtype
                 << "'\n";
    return 1;
  }

  if (compute != "f32" && compute != "bf16") {
    llvm::errs() << "torsorc: error: --compute must be f32 or bf16, got '"
                 << compute << "'\n";
    return 1;
  }
  if (compute == "bf16" && optLevel == 0) {
    llvm::errs() << "torsorc: error: --compute=bf16 needs -O1 or higher "
                    "(-O0 is the unfused f32 oracle; drop -O0 or use "
                    "--compute=f32)\n";
    return 1;
  }
  if (compute == "bf16" && targetName == "nvptx") {
    llvm::errs() << "torsorc: error: --compute=bf16 is CPU-only for now "
                    "(use --compute=f32 with --target=nvptx)\n";
    return 1;
  }

  if (reportJson)
    report = Report::Redundancy;
  if (!convertWeights.empty() && (!relationalize || weightsPath.empty())) {
    llvm::errs() << "torsorc: error: --convert-weights needs --relationalize "
                    "and --weights=IN.safetensors\n";
    return 1;
  }

  DialectRegistry registry;
  torsor::registerAllDialects(registry);

  // Regular files (or standard input) of at most 64 MiB: a device such as
  // /dev/zero would be read without end.
  auto input = torsor::readInputFile(inputFilename, torsor::kMaxSourceBytes,
                                     "a model source");
  if (!input) {
    llvm::errs() << "torsorc: error: " << toString(input.takeError()) << "\n";
    return 1;
  }
  bool binaryOutput = (emitAction == Emit::Obj || emitAction == Emit::SO) &&
                      report == Report::None;
  // `torsorc model.tsr` writes model.so (and model.json) next to it.
  if (binaryOutput && outputFilename.empty() && inputFilename != "-") {
    SmallString<128> path(inputFilename.getValue());
    llvm::sys::path::replace_extension(path,
                                       emitAction == Emit::SO ? "so" : "o");
    outputFilename = path.str().str();
  }
  if (!checkOutputs(binaryOutput))
    return 1;
  // Text goes to standard output as it is made, or to a buffer written to
  // -o once everything succeeded (a failed run leaves the old file).
  bool toStdout = outputFilename.empty() || outputFilename == "-";
  std::string text;
  llvm::raw_string_ostream textStream(text);
  llvm::raw_ostream &os = binaryOutput ? llvm::nulls()
                          : toStdout
                              ? static_cast<llvm::raw_ostream &>(llvm::outs())
                              : textStream;

  auto process = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                     const llvm::MemoryBufferRef &, llvm::raw_ostream &os) {
    return processBuffer(std::move(chunk), os, registry);
  };
  // `--split-input-file` alone means the standard `// -----` marker.
  std::string marker;
  if (splitInputFile.getNumOccurrences())
    marker = splitInputFile.empty() ? std::string(kDefaultSplitMarker)
                                    : splitInputFile.getValue();
  if (failed(splitAndProcessBuffer(std::move(*input), process, os, marker,
                                   marker)))
    return 1;
  if (!binaryOutput && !toStdout) {
    textStream.flush();
    if (llvm::Error e = torsor::writeFileSafely(
            outputFilename, text, /*allowSpecial=*/true, "the output")) {
      llvm::errs() << "torsorc: error: " << toString(std::move(e)) << "\n";
      return 1;
    }
  }
  return 0;
}
