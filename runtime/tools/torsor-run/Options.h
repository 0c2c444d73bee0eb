//===- Options.h - torsor-run command-line options ------------*- C++ -*-===//
//
// The command line of torsor-run (docs/runtime.md), parsed strictly: an
// unknown flag, a missing value or a malformed number is an error that
// names the flag, never a crash or a silent default.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUN_OPTIONS_H
#define TORSOR_RUN_OPTIONS_H

#include "Support.h"

#include <string>
#include <utility>
#include <vector>

namespace torsor::run {

/// Parsed command line.
struct Options {
  std::string model;                                        ///< OUT.so
  std::vector<std::pair<std::string, std::string>> inputs;  ///< NAME=FILE
  std::vector<std::pair<std::string, std::string>> outputs; ///< NAME=FILE
  std::vector<std::pair<std::string, std::string>> params;  ///< NAME=FILE
  /// --cotangent OUTPUT=FILE and --gradient grad.NAME=FILE (torsorc --grad).
  std::vector<std::pair<std::string, std::string>> cotangents, gradients;
  std::string weights; ///< .safetensors bundle, optional
  int threads = 0;     ///< 0: hardware concurrency
  std::string device = "cpu";
  int timeRuns = 0;        ///< --time N
  bool checkGroups = true; ///< --no-check-groups turns it off
  double groupTol = 1e-4;
  uint64_t memoryLimit = 0; ///< --memory-limit; 0: none
  bool bufferCache = true;  ///< --no-buffer-cache turns it off
  bool help = false;
  bool version = false; ///< --version
};

/// The --help text.
const char *usage();

/// Parses argv into `out`.
rt::Status parseOptions(int argc, char **argv, Options &out);

} // namespace torsor::run

#endif // TORSOR_RUN_OPTIONS_H
