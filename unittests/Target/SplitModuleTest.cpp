//===- SplitModuleTest.cpp - Cutting an LLVM module into parts
//-------------===//
//
// splitModule on small hand-written modules shaped like a compiled model:
// an entry that hands its tasks to the dispatcher by address, tasks that
// call internal helpers. Checks where each function lands and what is
// copied.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/ParallelCodegen.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

/// `count` chained adds on %x, ending in %v<count>.
std::string adds(int count) {
  std::string body;
  std::string prev = "%x";
  for (int i = 1; i <= count; ++i) {
    std::string value = "%v" + std::to_string(i);
    body +=
        "  " + value + " = add i64 " + prev + ", " + std::to_string(i) + "\n";
    prev = value;
  }
  return body;
}

/// A task of about 40 instructions that allocates through @__torsor_alloc.
std::string task(const std::string &name) {
  return "define internal void @" + name + "(i64 %x) {\n" +
         "  %p = call ptr @__torsor_alloc(i64 %x)\n" + adds(40) +
         "  store i64 %v40, ptr %p\n"
         "  call void @free(ptr %p)\n"
         "  ret void\n"
         "}\n";
}

/// The entry hands both tasks to the dispatcher by address, as the lowered
/// parallel launches do.
const char *kEntry = R"(
declare ptr @malloc(i64)
declare void @free(ptr)
declare void @dispatch(ptr)

define void @entry() {
  call void @dispatch(ptr @task0)
  call void @dispatch(ptr @task1)
  ret void
}
)";

/// The parts of `source` split `options`-fine, each parsed back into
/// `context`.
std::vector<std::unique_ptr<llvm::Module>>
split(const std::string &source, llvm::LLVMContext &context,
      torsor::SplitOptions options = {/*maxParts=*/8,
                                      /*minPartInstructions=*/10}) {
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module =
      llvm::parseAssemblyString(source, diagnostic, context);
  EXPECT_TRUE(module) << diagnostic.getMessage().str();
  std::vector<std::unique_ptr<llvm::Module>> modules;
  if (!module)
    return modules;
  for (const torsor::ModulePart &part : torsor::splitModule(*module, options)) {
    llvm::MemoryBufferRef buffer(llvm::StringRef(part.data(), part.size()),
                                 "part");
    llvm::Expected<std::unique_ptr<llvm::Module>> parsed =
        llvm::parseBitcodeFile(buffer, context);
    EXPECT_TRUE(static_cast<bool>(parsed));
    if (parsed)
      modules.push_back(std::move(*parsed));
    else
      llvm::consumeError(parsed.takeError());
  }
  return modules;
}

/// The index of the one part that defines `name`; -1 when none or several.
int definingPart(const std::vector<std::unique_ptr<llvm::Module>> &parts,
                 llvm::StringRef name) {
  int found = -1;
  for (size_t i = 0; i < parts.size(); ++i) {
    const llvm::Function *function = parts[i]->getFunction(name);
    if (!function || function->isDeclaration())
      continue;
    if (found != -1)
      return -1;
    found = static_cast<int>(i);
  }
  return found;
}

/// How many parts define `name`.
int definingPartCount(const std::vector<std::unique_ptr<llvm::Module>> &parts,
                      llvm::StringRef name) {
  int count = 0;
  for (const auto &part : parts) {
    const llvm::Function *function = part->getFunction(name);
    count += function && !function->isDeclaration();
  }
  return count;
}

// Every task calls the allocation helper; each part with a task gets its
// own internal copy, so the tasks are cut apart.
TEST(SplitModule, CopiesSmallHelpersIntoEachCaller) {
  llvm::LLVMContext context;
  std::string source = std::string(kEntry) +
                       "define internal ptr @__torsor_alloc(i64 %n) {\n"
                       "  %p = call ptr @malloc(i64 %n)\n"
                       "  ret ptr %p\n"
                       "}\n" +
                       task("task0") + task("task1");
  auto parts = split(source, context);
  ASSERT_EQ(parts.size(), 3u);
  int task0 = definingPart(parts, "task0");
  int task1 = definingPart(parts, "task1");
  int entry = definingPart(parts, "entry");
  ASSERT_NE(task0, -1);
  ASSERT_NE(task1, -1);
  ASSERT_NE(entry, -1);
  EXPECT_NE(task0, task1);
  EXPECT_NE(task0, entry);
  EXPECT_NE(task1, entry);
  for (int part : {task0, task1}) {
    const llvm::Function *helper = parts[part]->getFunction("__torsor_alloc");
    ASSERT_TRUE(helper && !helper->isDeclaration()) << "part " << part;
    EXPECT_TRUE(helper->hasLocalLinkage());
  }
  // The entry never calls the helper: no copy there.
  EXPECT_EQ(definingPartCount(parts, "__torsor_alloc"), 2);
  const llvm::Function *unused = parts[entry]->getFunction("__torsor_alloc");
  EXPECT_TRUE(!unused || unused->isDeclaration());
  // A task reached only through its address becomes a hidden global.
  const llvm::Function *moved = parts[task0]->getFunction("task0");
  EXPECT_EQ(moved->getVisibility(), llvm::GlobalValue::HiddenVisibility);
}

// A helper that reaches a definition (here a counter it updates) is one
// function for the whole library: it is not copied, so its callers share a
// part with it.
TEST(SplitModule, KeepsHelpersThatReachDefinitions) {
  llvm::LLVMContext context;
  std::string source = std::string(kEntry) +
                       "@allocations = internal global i64 0\n"
                       "define internal ptr @__torsor_alloc(i64 %n) {\n"
                       "  %c = load i64, ptr @allocations\n"
                       "  %d = add i64 %c, 1\n"
                       "  store i64 %d, ptr @allocations\n"
                       "  %p = call ptr @malloc(i64 %n)\n"
                       "  ret ptr %p\n"
                       "}\n" +
                       task("task0") + task("task1");
  auto parts = split(source, context);
  ASSERT_EQ(parts.size(), 2u);
  int task0 = definingPart(parts, "task0");
  ASSERT_NE(task0, -1);
  EXPECT_EQ(definingPart(parts, "task1"), task0);
  EXPECT_EQ(definingPart(parts, "__torsor_alloc"), task0);
  EXPECT_NE(definingPart(parts, "entry"), task0);
}

// A helper above the copy limit (32 instructions) is not duplicated either.
TEST(SplitModule, KeepsLargeHelpers) {
  llvm::LLVMContext context;
  std::string source = std::string(kEntry) +
                       "define internal ptr @__torsor_alloc(i64 %x) {\n" +
                       adds(40) +
                       "  %p = call ptr @malloc(i64 %v40)\n"
                       "  ret ptr %p\n"
                       "}\n" +
                       task("task0") + task("task1");
  auto parts = split(source, context);
  ASSERT_EQ(parts.size(), 2u);
  int task0 = definingPart(parts, "task0");
  ASSERT_NE(task0, -1);
  EXPECT_EQ(definingPart(parts, "task1"), task0);
  EXPECT_EQ(definingPart(parts, "__torsor_alloc"), task0);
}

// Below two parts' worth of instructions the module stays whole.
TEST(SplitModule, LeavesSmallModulesWhole) {
  llvm::LLVMContext context;
  std::string source = std::string(kEntry) +
                       "define internal ptr @__torsor_alloc(i64 %n) {\n"
                       "  %p = call ptr @malloc(i64 %n)\n"
                       "  ret ptr %p\n"
                       "}\n" +
                       task("task0") + task("task1");
  EXPECT_TRUE(split(source, context,
                    {/*maxParts=*/8,
                     /*minPartInstructions=*/1000})
                  .empty());
}

} // namespace
