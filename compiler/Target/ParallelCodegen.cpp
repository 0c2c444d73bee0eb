//===- ParallelCodegen.cpp - LLVM optimization and codegen in parts -------===//
//
// Splits a model's LLVM module into parts joined only by function pointers
// and optimizes and compiles the parts on threads (ParallelCodegen.h). This
// is the shape of LLVM's own `splitCodeGen` (ParallelCG.h), with two
// differences that keep the code the same as a whole-module compile: the
// cut runs *before* optimization but never between a caller and its callee
// (so inlining and every interprocedural pass see the same call graph), and
// internal constants are copied rather than shared (so loads from them
// still fold), as are the small helpers every task calls (so the tasks that
// call them need not share one part).
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/ParallelCodegen.h"

#include "compiler/Target/CPUTarget.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <algorithm>

using namespace torsor;

namespace {

/// The defined globals whose code or initializer holds `user`: its function
/// for an instruction, the global itself for an initializer, and through a
/// constant expression whatever holds that.
void collectOwners(const llvm::User *user,
                   llvm::SmallPtrSetImpl<const llvm::GlobalValue *> &owners,
                   llvm::SmallPtrSetImpl<const llvm::Constant *> &seen) {
  if (const auto *inst = llvm::dyn_cast<llvm::Instruction>(user)) {
    owners.insert(inst->getFunction());
    return;
  }
  if (const auto *global = llvm::dyn_cast<llvm::GlobalValue>(user)) {
    owners.insert(global);
    return;
  }
  if (const auto *constant = llvm::dyn_cast<llvm::Constant>(user)) {
    if (!seen.insert(constant).second)
      return;
    for (const llvm::User *next : constant->users())
      collectOwners(next, owners, seen);
  }
}

/// Whether `constant` refers to a global value anywhere inside.
bool refersToGlobal(const llvm::Constant *constant,
                    llvm::SmallPtrSetImpl<const llvm::Constant *> &seen) {
  if (llvm::isa<llvm::GlobalValue>(constant))
    return true;
  if (!seen.insert(constant).second)
    return false;
  for (const llvm::Use &operand : constant->operands())
    if (refersToGlobal(llvm::cast<llvm::Constant>(operand.get()), seen))
      return true;
  return false;
}

/// An internal constant that refers to no other global: each part that
/// reads it gets its own copy, which LLVM may fold into the code.
bool isCopiedConstant(const llvm::GlobalValue &global) {
  const auto *variable = llvm::dyn_cast<llvm::GlobalVariable>(&global);
  if (!variable || !variable->hasLocalLinkage() || !variable->isConstant() ||
      !variable->hasInitializer())
    return false;
  llvm::SmallPtrSet<const llvm::Constant *, 8> seen;
  return !refersToGlobal(variable->getInitializer(), seen);
}

/// Whether `constant` refers to a defined global anywhere inside.
bool refersToDefinition(const llvm::Constant *constant,
                        llvm::SmallPtrSetImpl<const llvm::Constant *> &seen) {
  if (const auto *global = llvm::dyn_cast<llvm::GlobalValue>(constant))
    return !global->isDeclaration();
  if (!seen.insert(constant).second)
    return false;
  for (const llvm::Use &operand : constant->operands())
    if (refersToDefinition(llvm::cast<llvm::Constant>(operand.get()), seen))
      return true;
  return false;
}

/// Instructions of the largest function copied into each part that calls it.
constexpr unsigned kMaxCopiedHelperInstructions = 32;

/// A small internal function that refers only to declarations, such as the
/// allocation and dispatch helpers every task calls (RouteAllocations,
/// LowerParallelLaunch): each part that calls it gets its own copy. Were it
/// kept whole, every caller would join one part with it, and a model whose
/// tasks allocate would not be cut at all.
bool isCopiedHelper(const llvm::GlobalValue &global) {
  const auto *function = llvm::dyn_cast<llvm::Function>(&global);
  if (!function || !function->hasLocalLinkage() || function->isDeclaration() ||
      function->getInstructionCount() > kMaxCopiedHelperInstructions)
    return false;
  llvm::SmallPtrSet<const llvm::Constant *, 8> seen;
  for (const llvm::BasicBlock &block : *function)
    for (const llvm::Instruction &inst : block)
      for (const llvm::Value *operand : inst.operands())
        if (const auto *constant = llvm::dyn_cast<llvm::Constant>(operand))
          if (refersToDefinition(constant, seen))
            return false;
  return true;
}

/// Whether each part that uses `global` gets its own copy of it.
bool isCopied(const llvm::GlobalValue &global) {
  return isCopiedConstant(global) || isCopiedHelper(global);
}

/// Whether `use` only takes a function's address in code (a task handed to
/// the dispatcher): the one kind of reference a cut may cross. Calls,
/// aliases and initializers keep their function in the same part.
bool isAddressInCode(const llvm::GlobalValue &global, const llvm::Use &use) {
  if (!llvm::isa<llvm::Function>(global) ||
      !llvm::isa<llvm::Instruction>(use.getUser()))
    return false;
  const auto *call = llvm::dyn_cast<llvm::CallBase>(use.getUser());
  return !call || !call->isCallee(&use);
}

/// The defined globals holding `use`.
llvm::SmallPtrSet<const llvm::GlobalValue *, 4> ownersOf(const llvm::Use &use) {
  llvm::SmallPtrSet<const llvm::GlobalValue *, 4> owners;
  llvm::SmallPtrSet<const llvm::Constant *, 8> seen;
  collectOwners(use.getUser(), owners, seen);
  return owners;
}

} // namespace

llvm::SmallVector<ModulePart> torsor::splitModule(llvm::Module &module,
                                                  const SplitOptions &options) {
  // Defined globals that must share a part: a function with its callees,
  // a global with what its initializer and its users' code need.
  llvm::SmallVector<llvm::GlobalValue *> defined;
  llvm::EquivalenceClasses<const llvm::GlobalValue *> classes;
  for (llvm::GlobalValue &global : module.global_values()) {
    if (global.isDeclaration() || isCopied(global))
      continue;
    defined.push_back(&global);
    classes.insert(&global);
  }
  for (llvm::GlobalValue *global : defined)
    for (const llvm::Use &use : global->uses()) {
      if (isAddressInCode(*global, use))
        continue;
      for (const llvm::GlobalValue *owner : ownersOf(use))
        if (classes.contains(owner))
          classes.unionSets(owner, global);
    }

  // Each class's size, in order of first appearance (deterministic).
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> classIndex;
  llvm::SmallVector<std::pair<uint64_t, unsigned>> sizes; // (size, class)
  uint64_t total = 0;
  for (llvm::GlobalValue *global : defined) {
    const llvm::GlobalValue *leader = classes.getLeaderValue(global);
    auto [it, inserted] = classIndex.try_emplace(leader, sizes.size());
    if (inserted)
      sizes.push_back({0, it->second});
    uint64_t size = 1;
    if (auto *function = llvm::dyn_cast<llvm::Function>(global))
      size = function->getInstructionCount();
    sizes[it->second].first += size;
    total += size;
  }
  unsigned partCount = std::min<uint64_t>(
      {options.maxParts, total / std::max(1u, options.minPartInstructions),
       sizes.size()});
  if (partCount <= 1)
    return {};

  // Largest class first onto the lightest part (ties: the lower part).
  llvm::SmallVector<std::pair<uint64_t, unsigned>> order(sizes);
  std::stable_sort(order.begin(), order.end(),
                   [](auto a, auto b) { return a.first > b.first; });
  llvm::SmallVector<uint64_t> load(partCount, 0);
  llvm::SmallVector<unsigned> classPart(sizes.size(), 0);
  for (auto [size, cls] : order) {
    unsigned part = std::min_element(load.begin(), load.end()) - load.begin();
    classPart[cls] = part;
    load[part] += size;
  }
  auto partOf = [&](const llvm::GlobalValue *global) {
    return classPart[classIndex.lookup(classes.getLeaderValue(global))];
  };

  // Internal globals used from another part become hidden globals there
  // (one library, so the linker resolves them inside it); copied constants
  // go to every part that reads them.
  llvm::DenseMap<const llvm::GlobalValue *, llvm::SmallVector<bool>> readers;
  for (llvm::GlobalValue &global : module.global_values()) {
    if (global.isDeclaration())
      continue;
    bool copied = isCopied(global);
    bool crossed = false;
    for (const llvm::Use &use : global.uses())
      for (const llvm::GlobalValue *owner : ownersOf(use)) {
        if (!classes.contains(owner))
          continue;
        if (copied) {
          auto &parts = readers[&global];
          parts.resize(partCount, false);
          parts[partOf(owner)] = true;
        } else if (partOf(owner) != partOf(&global)) {
          crossed = true;
        }
      }
    if (crossed && global.hasLocalLinkage()) {
      if (!global.hasName())
        global.setName("__torsor_part_global");
      global.setLinkage(llvm::GlobalValue::ExternalLinkage);
      global.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
  }

  llvm::SmallVector<ModulePart> parts(partCount);
  for (unsigned part = 0; part < partCount; ++part) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> clone =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *global) {
          if (isCopied(*global)) {
            auto it = readers.find(global);
            return it != readers.end() && it->second[part];
          }
          return partOf(global) == part;
        });
    llvm::raw_svector_ostream os(parts[part]);
    llvm::WriteBitcodeToFile(*clone, os);
  }
  return parts;
}

mlir::LogicalResult torsor::compileParts(
    llvm::ArrayRef<ModulePart> parts,
    llvm::ArrayRef<std::unique_ptr<llvm::TargetMachine>> machines,
    unsigned optLevel, unsigned threads,
    llvm::ArrayRef<std::string> objectPaths, std::string &error) {
  llvm::SmallVector<std::string> errors(parts.size());
  auto compileOne = [&](size_t i) {
    // Each part has its own context: contexts are not shared by threads.
    llvm::LLVMContext context;
    llvm::MemoryBufferRef buffer(
        llvm::StringRef(parts[i].data(), parts[i].size()), "part");
    llvm::Expected<std::unique_ptr<llvm::Module>> module =
        llvm::parseBitcodeFile(buffer, context);
    if (!module) {
      errors[i] = llvm::toString(module.takeError());
      return;
    }
    optimizeLLVMModule(**module, *machines[i], optLevel);
    (void)emitObjectFile(**module, *machines[i], objectPaths[i], errors[i]);
  };
  if (threads <= 1) {
    for (size_t i = 0; i < parts.size(); ++i)
      compileOne(i);
  } else {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(threads));
    for (size_t i = 0; i < parts.size(); ++i)
      pool.async([&compileOne, i] { compileOne(i); });
    pool.wait();
  }
  for (const std::string &message : errors)
    if (!message.empty()) {
      error = message;
      return mlir::failure();
    }
  return mlir::success();
}
