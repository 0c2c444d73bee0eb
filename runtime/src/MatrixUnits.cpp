//===- MatrixUnits.cpp - CPU matrix units a model needs -------------------===//
//
// Implements MatrixUnits.h with the OS alone: cpuid says whether the CPU
// has AMX at all (so the message can say which of CPU or kernel refused),
// and arch_prctl asks the kernel for the tile data state. The permission
// is per process and inherited by every thread created after it; each
// kernel configures its own thread's tiles (ldtilecfg, emitted by LLVM at
// the entry of every function that uses tiles), so thread-pool workers
// need nothing more.
//
//===----------------------------------------------------------------------===//

#include "MatrixUnits.h"

#include <mutex>

#if defined(__linux__) && defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace torsor::rt {

namespace {

#if defined(__linux__) && defined(__x86_64__)
/// arch_prctl codes and the tile-data feature (asm/prctl.h; spelled out
/// because older kernel headers lack them).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr unsigned long kXFeatureXTileData = 18;

/// Whether cpuid reports AMX-TILE and AMX-BF16 (leaf 7, EDX bits 24, 22).
bool cpuHasAMX() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return false;
  return (d & (1u << 24)) && (d & (1u << 22));
}
#endif

/// The first request's answer: "" when granted, else why not.
std::string askOnce() {
#if defined(__linux__) && defined(__x86_64__)
  if (!cpuHasAMX())
    return "this CPU has no AMX-BF16 tiles";
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXFeatureXTileData) != 0)
    return "the Linux kernel refused AMX tile state "
           "(arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) failed; "
           "Linux 5.16 or newer grants it)";
  return "";
#else
  return "AMX tiles need Linux on x86-64";
#endif
}

} // namespace

Status requestAMXTiles(const std::string &soPath) {
  static std::once_flag once;
  static std::string refusal;
  std::call_once(once, [] { refusal = askOnce(); });
  if (refusal.empty())
    return Status();
  return Status(TORSOR_UNAVAILABLE,
                "model '" + soPath +
                    "' runs its matrix products on AMX tiles, but " + refusal +
                    "; recompile it with --compute=f32, or with --mcpu naming "
                    "a CPU without AMX (e.g. --mcpu=cooperlake for "
                    "AVX512-BF16, --mcpu=skylake-avx512 for f32 FMAs)");
}

} // namespace torsor::rt
