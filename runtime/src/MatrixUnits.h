//===- MatrixUnits.h - CPU matrix units a model needs -----------*- C++ -*-===//
//
// Models compiled with `--compute=bf16` for a CPU with AMX run their matrix
// products on AMX tile registers (manifest "amx": true). Linux hands a
// process the large tile state only on request
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); without it the
// first tile instruction kills the process with SIGILL. The runtime asks
// once per process, before such a model is first run, and turns a refusal
// into a load error that names the fix.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_MATRIXUNITS_H
#define TORSOR_RUNTIME_MATRIXUNITS_H

#include "Support.h"

#include <string>

namespace torsor::rt {

/// Requests AMX tile state for this process (once; later calls return
/// the first answer). The error names `soPath` and the two fixes:
/// recompile with --compute=f32, or for a CPU without AMX (--mcpu).
Status requestAMXTiles(const std::string &soPath);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_MATRIXUNITS_H
