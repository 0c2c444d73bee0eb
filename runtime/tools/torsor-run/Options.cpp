//===- Options.cpp - torsor-run command-line options ----------------------===//
//
// Accepts both "--flag value" and "--flag=value" spellings, except for
// --check-groups whose tolerance is only given as "--check-groups=TOL" (so a
// following positional argument is never swallowed).
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace torsor::run {

using rt::format;
using rt::invalidArg;
using rt::Status;

const char *usage() {
  return "usage: torsor-run MODEL.so [options]\n"
         "\n"
         "Runs a model compiled by torsorc (MODEL.so with MODEL.json next to "
         "it).\n"
         "\n"
         "options:\n"
         "  --input NAME=FILE.npy     bind input NAME (repeat per input)\n"
         "  --weights W.safetensors   bind params by name from a bundle\n"
         "  --param NAME=FILE.npy     bind one param (repeat per param;\n"
         "                            overrides --weights)\n"
         "  --output NAME=FILE.npy    write output NAME (default: print a\n"
         "                            summary of every output)\n"
         "  --cotangent OUT=FILE.npy  after the run, run the backward entry\n"
         "                            (torsorc --grad) with this cotangent\n"
         "                            of output OUT (one per output)\n"
         "  --gradient G=FILE.npy     write gradient G (grad.NAME; default\n"
         "                            with --cotangent: print a summary of\n"
         "                            every gradient)\n"
         "  --threads N               thread-pool size (default: all cores)\n"
         "  --device cpu|cuda         where to run (default: cpu)\n"
         "  --time N                  after a warm-up run, time N runs and\n"
         "                            print the median and min wall time\n"
         "  --check-groups[=TOL]      check that group inputs are group\n"
         "                            elements (on by default; tolerance\n"
         "                            1e-4)\n"
         "  --no-check-groups         skip that check (it reads every\n"
         "                            group input once per run); with it,\n"
         "                            NaN and Inf inputs pass through\n"
         "  --memory-limit SIZE       most bytes the model's own buffers may\n"
         "                            hold during a run (e.g. 512M, 4G);\n"
         "                            more is an out-of-memory error\n"
         "  --no-buffer-cache         free the model's large buffers after\n"
         "                            every run instead of keeping them\n"
         "                            for the next (docs/runtime.md)\n"
         "  --version                 print Torsor's version\n"
         "  --help                    print this help\n";
}

namespace {

/// Parses a whole string as an integer in [lo, hi].
Status parseInt(const std::string &flag, const std::string &text, long lo,
                long hi, int &out) {
  errno = 0;
  char *end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || v < lo || v > hi)
    return invalidArg(format("%s expects an integer in [%ld, %ld], got '%s'",
                             flag.c_str(), lo, hi, text.c_str()));
  out = static_cast<int>(v);
  return Status();
}

/// Parses a byte count with an optional K, M or G suffix (powers of 1024).
Status parseBytes(const std::string &flag, const std::string &text,
                  uint64_t &out) {
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  int shift = 0;
  if (end && (*end == 'K' || *end == 'M' || *end == 'G')) {
    shift = *end == 'K' ? 10 : *end == 'M' ? 20 : 30;
    ++end;
  }
  if (text.empty() || text[0] == '-' || *end || errno || v == 0 ||
      v > (~0ull >> shift))
    return invalidArg(format("%s expects a positive byte count such as "
                             "1048576, 512M or 4G, got '%s'",
                             flag.c_str(), text.c_str()));
  out = static_cast<uint64_t>(v) << shift;
  return Status();
}

/// Splits "NAME=FILE".
Status parsePair(const std::string &flag, const std::string &text,
                 std::vector<std::pair<std::string, std::string>> &out) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return invalidArg(format("%s expects NAME=FILE.npy, got '%s'", flag.c_str(),
                             text.c_str()));
  std::string name = text.substr(0, eq);
  for (const auto &p : out)
    if (p.first == name)
      return invalidArg(
          format("%s '%s' given more than once", flag.c_str(), name.c_str()));
  out.emplace_back(name, text.substr(eq + 1));
  return Status();
}

} // namespace

Status parseOptions(int argc, char **argv, Options &out) {
  out = Options();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      return Status();
    }
    if (arg == "--version") {
      out.version = true;
      return Status();
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
      if (arg.size() > 1 && arg[0] == '-')
        return invalidArg("unknown option '" + arg + "' (see --help)");
      if (!out.model.empty())
        return invalidArg("more than one model given: '" + out.model +
                          "' and '" + arg + "'");
      out.model = arg;
      continue;
    }
    std::string flag = arg, value;
    bool hasValue = false;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    if (arg == "--no-check-groups") {
      out.checkGroups = false;
      continue;
    }
    if (arg == "--no-buffer-cache") {
      out.bufferCache = false;
      continue;
    }
    if (flag == "--check-groups") {
      out.checkGroups = true;
      if (hasValue) {
        char *end = nullptr;
        errno = 0;
        out.groupTol = std::strtod(value.c_str(), &end);
        if (value.empty() || *end || errno || !(out.groupTol >= 0) ||
            std::isinf(out.groupTol))
          return invalidArg("--check-groups expects a non-negative "
                            "tolerance, got '" +
                            value + "'");
      }
      continue;
    }
    static const char *const kValued[] = {
        "--input", "--output", "--weights",      "--threads",   "--device",
        "--time",  "--param",  "--memory-limit", "--cotangent", "--gradient"};
    bool known = false;
    for (const char *k : kValued)
      known |= flag == k;
    if (!known)
      return invalidArg("unknown option '" + flag + "' (see --help)");
    if (!hasValue) {
      if (i + 1 >= argc)
        return invalidArg(flag + " expects a value");
      value = argv[++i];
    }
    Status s;
    if (flag == "--input")
      s = parsePair(flag, value, out.inputs);
    else if (flag == "--output")
      s = parsePair(flag, value, out.outputs);
    else if (flag == "--param")
      s = parsePair(flag, value, out.params);
    else if (flag == "--cotangent")
      s = parsePair(flag, value, out.cotangents);
    else if (flag == "--gradient")
      s = parsePair(flag, value, out.gradients);
    else if (flag == "--weights") {
      if (!out.weights.empty())
        return invalidArg("--weights given more than once");
      out.weights = value;
    } else if (flag == "--threads")
      s = parseInt(flag, value, 1, 4096, out.threads);
    else if (flag == "--memory-limit")
      s = parseBytes(flag, value, out.memoryLimit);
    else if (flag == "--time")
      s = parseInt(flag, value, 1, 1000000, out.timeRuns);
    else if (flag == "--device") {
      if (value != "cpu" && value != "cuda")
        return invalidArg("--device expects cpu or cuda, got '" + value + "'");
      out.device = value;
    }
    if (!s.ok())
      return s;
  }
  if (!out.gradients.empty() && out.cotangents.empty())
    return invalidArg("--gradient needs the backward run: give a --cotangent "
                      "OUTPUT=FILE.npy for every output");
  if (out.model.empty())
    return invalidArg("no model given (usage: torsor-run MODEL.so --input "
                      "NAME=FILE.npy ...; see --help)");
  return Status();
}

} // namespace torsor::run
