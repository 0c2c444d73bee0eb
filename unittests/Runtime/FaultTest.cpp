//===- FaultTest.cpp - The runtime under faults ---------------------------===//
//
// Issue 15's runtime faults, each with the exact message: safetensors whose
// tensors overlap or leave gaps, huge and many-keyed headers, devices and
// directories given as files, truncated model files, out-of-range enums
// through the C API, concurrent calls on one module, allocation failure
// inside model code (through the fake model's torsor_alloc scratch), NaN
// and Inf inputs, all-or-nothing output files, and the reproducers the
// fuzzers found (fuzz/runtime/, docs/reliability.md).
//
//===----------------------------------------------------------------------===//

#include "torsor/runtime.h"

#include "ElfCheck.h"
#include "FakeModelFixture.h"
#include "Npy.h"
#include "SafeTensors.h"
#include "StagedFiles.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace torsor::rt;
using namespace torsor::fake;

namespace {

/// A .safetensors file from a JSON header and `dataBytes` zero bytes.
std::string safetensors(const std::string &header, size_t dataBytes) {
  std::string out;
  for (int i = 0; i < 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + std::string(dataBytes, '\0');
}

/// Parses `bytes` and returns the error message ("" on success).
std::string parseError(const std::string &bytes) {
  TensorBundle b;
  return parseSafeTensors(bytes, "w.st", b).message;
}

TEST(SafeTensorsFaults, OverlapsGapsAndTrailingBytesAreRejected) {
  const char *f32x2 = "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":";
  EXPECT_EQ(
      parseError(safetensors(std::string("{\"a\":") + f32x2 +
                                 "[0,8]},\"b\":" + f32x2 + "[4,12]}}",
                             12)),
      "w.st: tensors 'a' (data bytes [0, 8)) and 'b' (data bytes [4, 12)) "
      "overlap");
  // The same range twice aliases two tensors.
  EXPECT_EQ(parseError(safetensors(std::string("{\"a\":") + f32x2 +
                                       "[0,8]},\"b\":" + f32x2 + "[0,8]}}",
                                   8)),
            "w.st: tensors 'a' (data bytes [0, 8)) and 'b' (data bytes [0, "
            "8)) overlap");
  EXPECT_EQ(parseError(safetensors(std::string("{\"a\":") + f32x2 +
                                       "[0,8]},\"b\":" + f32x2 + "[12,20]}}",
                                   20)),
            "w.st: data bytes [8, 12) before tensor 'b' belong to no tensor "
            "(a gap in data_offsets)");
  EXPECT_EQ(
      parseError(safetensors(std::string("{\"a\":") + f32x2 + "[0,8]}}", 9)),
      "w.st: the last 1 data bytes belong to no tensor (data_offsets "
      "end at 8, the file has 9 data bytes)");
  // Order in the header does not matter; only the layout does.
  EXPECT_EQ(parseError(safetensors(std::string("{\"b\":") + f32x2 +
                                       "[8,16]},\"a\":" + f32x2 + "[0,8]}}",
                                   16)),
            "");
}

TEST(SafeTensorsFaults, TwoHundredThousandKeysParseInLinearTime) {
  // Used to take minutes (a quadratic duplicate-key check). Empty tensors
  // all at offset 0 tile an empty data section.
  std::string header = "{";
  for (int i = 0; i < 200000; ++i)
    header += (i ? ",\"t" : "\"t") + std::to_string(i) +
              "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}";
  header += "}";
  TensorBundle b;
  ASSERT_EQ(parseSafeTensors(safetensors(header, 0), "w.st", b).message, "");
  EXPECT_EQ(b.size(), 200000u);
}

TEST(SafeTensorsFaults, HugeHeadersAreRefusedBeforeParsing) {
  std::string bytes(8, '\0');
  uint64_t len = kMaxSafeTensorsHeader + 8;
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>((len >> (8 * i)) & 0xFF);
  bytes += std::string(len, ' ');
  EXPECT_EQ(parseError(bytes),
            "w.st: header of 16777224 bytes is larger than the 16777216 bytes "
            "this reader accepts (the safetensors format allows 100 MB; real "
            "headers are a few KB per 100 tensors)");
}

TEST(FileFaults, DevicesAndDirectoriesAreNotRead) {
  std::string bytes;
  EXPECT_EQ(readFile("/dev/zero", bytes).message,
            "cannot read '/dev/zero': it is a character device, not a "
            "regular file");
  EXPECT_EQ(readFile("/", bytes).message,
            "cannot read '/': it is a directory, not a regular file");
  HostTensor t;
  EXPECT_EQ(readNpy("/dev/zero", t).message,
            "cannot read '/dev/zero': it is a character device, not a "
            "regular file");
  TensorBundle b;
  EXPECT_EQ(readSafeTensors("/dev/zero", b).message,
            "cannot read '/dev/zero': it is a character device, not a "
            "regular file");
  EXPECT_EQ(readFile(kModel, bytes, 1).message.substr(0, kModel.size() + 29),
            "cannot read '" + kModel + "': the file has ");
}

TEST(FileFaults, NpyDimsOverflowingSizeT) {
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, "
      "4294967296, 16), }";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(dict.size() & 0xFF);
  bytes += static_cast<char>(dict.size() >> 8);
  bytes += dict;
  HostTensor t;
  EXPECT_EQ(parseNpy(bytes, "x.npy", t).message,
            "x.npy: shape in .npy header is too large");
}

TEST(ModelFileFaults, TruncatedLibrariesAreRefusedBeforeDlopen) {
  std::string bytes;
  ASSERT_TRUE(readFile(kModel, bytes).ok());
  // Cut inside the segments the loader maps.
  std::string cut = bytes.substr(0, bytes.size() / 2);
  Status s = checkElfBytes(reinterpret_cast<const unsigned char *>(cut.data()),
                           cut.size(), "model 'm.so'");
  EXPECT_EQ(s.message.substr(0, 35), "model 'm.so' is truncated: segment ")
      << s.message;
  EXPECT_TRUE(
      checkElfBytes(reinterpret_cast<const unsigned char *>(bytes.data()),
                    bytes.size(), "model 'm.so'")
          .ok());
  EXPECT_EQ(checkElfBytes(reinterpret_cast<const unsigned char *>("\x7f"
                                                                  "ELF"),
                          4, "model 'm.so'")
                .message,
            "model 'm.so' is not a shared library (no ELF header)");
}

/// Fixture: the fake model with valid data for L rows, bound.
class ModuleFaults : public FakeModelFixture<6> {
protected:
  /// Loads the model, fills x with 1 and w with 2 (identity poses), binds.
  void SetUp() override {
    FakeModelFixture::SetUp();
    if (HasFatalFailure())
      return;
    x.assign(L * 8, 1.0f);
    w.assign(8, 2.0f);
    bindAll();
  }
  /// Removes the forward hook, then frees the module.
  void TearDown() override {
    setHook(nullptr, nullptr);
    FakeModelFixture::TearDown();
  }
  /// Installs the fake model's forward hook.
  void setHook(void (*hook)(void *), void *ctx) {
    void *h = dlopen(kModel.c_str(), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr);
    auto set = reinterpret_cast<void (*)(void (*)(void *), void *)>(
        dlsym(h, "torsor_fake_set_hook"));
    ASSERT_NE(set, nullptr);
    set(hook, ctx);
    dlclose(h);
  }
};

TEST_F(ModuleFaults, InvalidEnumsThroughTheCApiAreCheckedErrors) {
  // Values C callers can pass; UBSan flagged loading them before the
  // enums were widened to int32_t.
  for (int32_t k : {-1, 3, 7, INT32_MIN, INT32_MAX}) {
    auto kind = static_cast<TorsorTensorKind>(k);
    EXPECT_EQ(torsorModuleNumTensors(module, kind), 0);
    EXPECT_EQ(torsorModuleTensorName(module, kind, 0), nullptr);
    EXPECT_EQ(torsorModuleTensorRank(module, kind, 0), -1);
  }
  EXPECT_STREQ(torsorDTypeName(-7), "?");
}

/// Hook state: a second call on the module while the first one runs.
struct Reentry {
  TorsorModule *module;
  std::string fromOtherThread, fromSameThread, bindWhileRunning,
      backwardWhileRunning;
  bool done = false;
};

TEST_F(ModuleFaults, ConcurrentCallsOnOneModuleAreRefused) {
  Reentry r{module};
  setHook(
      [](void *ctx) {
        auto &r = *static_cast<Reentry *>(ctx);
        if (r.done)
          return;
        r.done = true;
        std::thread other(
            [&] { r.fromOtherThread = msg(torsorModuleRun(r.module)); });
        other.join();
        r.fromSameThread = msg(torsorModuleRun(r.module));
        float one = 1;
        int64_t shape[1] = {8};
        TorsorTensor t{&one, shape, nullptr, 1, TORSOR_DTYPE_F32};
        r.bindWhileRunning = msg(torsorModuleBindParam(r.module, "w", &t));
        r.backwardWhileRunning =
            msg(torsorModuleRunBackward(r.module, nullptr, 0));
      },
      &r);
  EXPECT_EQ(msg(torsorModuleRun(module)), "");
  const char *busy = "the module is busy: another call is running it (a "
                     "module runs one call at a time; load the model once "
                     "per thread to run it concurrently)";
  EXPECT_EQ(r.fromOtherThread, busy);
  EXPECT_EQ(r.fromSameThread, busy);
  EXPECT_EQ(r.bindWhileRunning, busy);
  // The backward claims the module too (CApi.cpp), before it looks for
  // its entry.
  EXPECT_EQ(r.backwardWhileRunning, busy);
  // Free again afterwards.
  EXPECT_EQ(msg(torsorModuleRun(module)), "");
}

TEST_F(ModuleFaults, SeparateModulesRunConcurrently) {
  TorsorModule *second = nullptr;
  ASSERT_EQ(msg(torsorModuleLoad(kModel.c_str(), &second)), "");
  TorsorTensor tp{pose.data(), poseShape, nullptr, 3, TORSOR_DTYPE_F32};
  TorsorTensor tx{x.data(), xShape, nullptr, 2, TORSOR_DTYPE_F32};
  TorsorTensor tw{w.data(), wShape, nullptr, 1, TORSOR_DTYPE_F32};
  ASSERT_EQ(msg(torsorModuleBindInput(second, "pose", &tp)), "");
  ASSERT_EQ(msg(torsorModuleBindInput(second, "x", &tx)), "");
  ASSERT_EQ(msg(torsorModuleBindParam(second, "w", &tw)), "");
  std::string a, b;
  std::thread t1([&] {
    for (int i = 0; i < 200 && a.empty(); ++i)
      a = msg(torsorModuleRun(module));
  });
  std::thread t2([&] {
    for (int i = 0; i < 200 && b.empty(); ++i)
      b = msg(torsorModuleRun(second));
  });
  t1.join();
  t2.join();
  EXPECT_EQ(a, "");
  EXPECT_EQ(b, "");
  TorsorTensor out;
  ASSERT_EQ(msg(torsorModuleGetOutput(second, "out", &out)), "");
  EXPECT_EQ(static_cast<const float *>(out.data)[0], 2 * 1 + 1 + 2);
  torsorModuleFree(second);
}

TEST_F(ModuleFaults, AllocationFailureInModelCodeIsAnError) {
  ASSERT_EQ(msg(torsorSetNumThreads(1)), "");
  ASSERT_EQ(msg(torsorModuleRun(module)), "");
  // One thread, one chunk: the scratch of all rows, L x 8 f32.
  EXPECT_EQ(torsorModulePeakBytes(module), uint64_t(L * 8 * 4));
  torsorModuleSetMemoryLimit(module, 100);
  TorsorStatus *s = torsorModuleRun(module);
  EXPECT_EQ(torsorStatusCode(s), TORSOR_OUT_OF_MEMORY);
  EXPECT_EQ(msg(s), "out of memory: the model needs 192 bytes (0.2 KiB) more "
                    "for FakeModel.cpp:scratch, beyond the memory limit of "
                    "100 bytes (0.1 KiB) (it already holds 0 bytes (0.0 KiB))");
  TorsorTensor out;
  EXPECT_EQ(msg(torsorModuleGetOutput(module, "out", &out)),
            "output 'out' is not available: the model has not run "
            "successfully");
  // Failures inside parallel chunks unwind too, on every thread count.
  ASSERT_EQ(msg(torsorSetNumThreads(2)), "");
  torsorModuleSetMemoryLimit(module, 40);
  s = torsorModuleRun(module);
  EXPECT_EQ(torsorStatusCode(s), TORSOR_OUT_OF_MEMORY);
  EXPECT_EQ(msg(s).substr(0, 40), "out of memory: the model needs 96 bytes ");
  // The module and the pool still work afterwards.
  torsorModuleSetMemoryLimit(module, 0);
  EXPECT_EQ(msg(torsorModuleRun(module)), "");
  ASSERT_EQ(msg(torsorSetNumThreads(0)), "");
}

TEST_F(ModuleFaults, NonFiniteInputsAreRejectedWhileChecksAreOn) {
  x[2 * 8 + 5] = NAN;
  EXPECT_EQ(msg(torsorModuleRun(module)),
            "input 'x' element 21 (index [2, 5]) is NaN; non-finite values "
            "are rejected while input checks are on (turn them off with "
            "--no-check-groups or torsorModuleSetCheckGroups to pass them "
            "through)");
  x[2 * 8 + 5] = 1;
  w[7] = -INFINITY;
  EXPECT_EQ(msg(torsorModuleRun(module)).substr(0, 42),
            "param 'w' element 7 (index [7]) is -Inf; n");
  // Checks off: passed through, IEEE rules apply.
  torsorModuleSetCheckGroups(module, 0, 0);
  EXPECT_EQ(msg(torsorModuleRun(module)), "");
  TorsorTensor out;
  ASSERT_EQ(msg(torsorModuleGetOutput(module, "out", &out)), "");
  EXPECT_TRUE(std::isinf(static_cast<const float *>(out.data)[7]));
}

TEST(StagedFilesFaults, AFailedOutputLeavesNothingBehind) {
  char dir[] = "/tmp/torsor-staged-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string a = std::string(dir) + "/a.npy";
  {
    StagedFiles files;
    ASSERT_TRUE(files.stage(a, "first").ok());
    Status s = files.stage(std::string(dir) + "/missing/b.npy", "second");
    EXPECT_EQ(s.message, "cannot write '" + std::string(dir) +
                             "/missing/b.npy': No such file or directory");
  } // not committed: the temporary of a.npy goes away
  struct stat st;
  EXPECT_NE(stat(a.c_str(), &st), 0);
  EXPECT_EQ(rmdir(dir), 0) << "temporaries were left in " << dir;
}

// A link that stat follows but realpath cannot name, as /dev/stdout is when
// stdout is a pipe (/proc/self/fd/1 -> "pipe:[N]"): written in place, not
// staged in /proc or replaced. The pipe is this test's own.
TEST(StagedFilesFaults, MagicLinksToPipesAreWrittenInPlace) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::string link = "/proc/self/fd/" + std::to_string(fds[1]);
  struct stat st;
  if (lstat(link.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
    GTEST_SKIP() << "no /proc/self/fd links here";
  Destination d;
  ASSERT_TRUE(resolveDestination(link, d).ok());
  EXPECT_TRUE(d.special);
  EXPECT_EQ(d.target, link);
  Status s = writeFileSafely(link, "bytes");
  EXPECT_TRUE(s.ok()) << s.message;
  char buf[8] = {};
  EXPECT_EQ(read(fds[0], buf, sizeof(buf)), 5);
  EXPECT_STREQ(buf, "bytes");
  close(fds[0]);
  close(fds[1]);
}

// A write error is a status, not a signal: a pipe whose reader is gone
// gives EPIPE (SIGPIPE, which would end this test binary, is held back and
// consumed), the same path as ENOSPC or EIO on a disk.
TEST(StagedFilesFaults, WriteErrorsAreStatusesNotSignals) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(close(fds[0]), 0);
  Status s = writeAll(fds[1], std::string(100, 'x'), "out.npy");
  EXPECT_EQ(s.code, TORSOR_IO_ERROR);
  EXPECT_EQ(s.message, "cannot write 'out.npy': Broken pipe (the reader of "
                       "the pipe closed it)");
  close(fds[1]);
  // A descriptor that refuses writes altogether.
  s = writeAll(-1, "x", "bad.npy");
  EXPECT_EQ(s.message, "cannot write 'bad.npy': Bad file descriptor");
}

} // namespace
