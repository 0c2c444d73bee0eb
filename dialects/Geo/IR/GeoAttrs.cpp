//===- GeoAttrs.cpp - Geo dialect attributes ------------------------------===//
//
// `#geo.scores<group = ..., heads = H, tau = [...], lambda = [...], causal>`:
// its parser, printer and its one verifier, which every Lie attention op's
// verifier calls (verifyScores), so that heads, τ and λ are checked in one
// place.
//
//===----------------------------------------------------------------------===//

#include "dialects/Geo/IR/GeoAttrs.h"
#include "dialects/Geo/IR/GeoDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace mlir;
using namespace torsor;
using namespace torsor::geo;

#define GET_ATTRDEF_CLASSES
#include "dialects/Geo/IR/GeoAttrs.cpp.inc"

void GeoDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Geo/IR/GeoAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ScoresAttr
//===----------------------------------------------------------------------===//

int64_t ScoresAttr::getNumBlocks() const {
  return getGroup().getModel().getBlocks().size();
}

/// Parses `[f, f, ...]` (possibly empty) into an f64 array attribute.
static ParseResult parseF64List(AsmParser &parser, DenseF64ArrayAttr &out) {
  SmallVector<double> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        double v;
        if (parser.parseFloat(v))
          return failure();
        values.push_back(v);
        return success();
      }))
    return failure();
  out = DenseF64ArrayAttr::get(parser.getContext(), values);
  return success();
}

/// Parses `key =`, saying which field the attribute expects there.
static ParseResult parseField(AsmParser &parser, StringRef key) {
  if (parser.parseOptionalKeyword(key))
    return parser.emitError(parser.getCurrentLocation())
           << "expects `" << key << " = ...` here (#geo.scores<group = "
           << "#lie.group<...>, heads = H, tau = [...], lambda = [...]"
           << "[, causal]>)";
  return parser.parseEqual();
}

Attribute ScoresAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  lie::GroupAttr group;
  int64_t heads = 0;
  DenseF64ArrayAttr tau, lambda;
  bool causal = false;
  if (parser.parseLess() || parseField(parser, "group") ||
      parser.parseAttribute(group) || parser.parseComma() ||
      parseField(parser, "heads") || parser.parseInteger(heads) ||
      parser.parseComma() || parseField(parser, "tau") ||
      parseF64List(parser, tau) || parser.parseComma() ||
      parseField(parser, "lambda") || parseF64List(parser, lambda))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseOptionalKeyword("causal")) {
      parser.emitError(parser.getCurrentLocation())
          << "expects `causal` or `>` after `lambda`";
      return {};
    }
    causal = true;
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ScoresAttr>(loc, parser.getContext(), group, heads,
                                       tau, lambda, causal);
}

/// Prints `v` as the shortest decimal that reads back to it exactly, with a
/// `.` so that MLIR lexes it as a float (`1.0`, `0.25`, `1.0e-06`);
/// non-finite values (which the verifier refuses) as MLIR's hex form.
static void printF64(AsmPrinter &printer, double v) {
  if (!std::isfinite(v)) {
    printer.printFloat(llvm::APFloat(v));
    return;
  }
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, v);
    if (std::strtod(buffer, nullptr) == v)
      break;
  }
  std::string text = buffer;
  if (text.find('.') == std::string::npos) {
    size_t e = text.find_first_of("eE");
    text.insert(e == std::string::npos ? text.size() : e, ".0");
  }
  printer << text;
}

/// Prints `[f, f, ...]` in the form parseF64List reads back exactly.
static void printF64List(AsmPrinter &printer, ArrayRef<double> values) {
  printer << '[';
  llvm::interleaveComma(values, printer.getStream(),
                        [&](double v) { printF64(printer, v); });
  printer << ']';
}

void ScoresAttr::print(AsmPrinter &printer) const {
  printer << "<group = ";
  printer.printAttribute(getGroup());
  printer << ", heads = " << getHeads() << ", tau = ";
  printF64List(printer, getTau().asArrayRef());
  printer << ", lambda = ";
  printF64List(printer, getLambda().asArrayRef());
  if (getCausal())
    printer << ", causal";
  printer << '>';
}

LogicalResult ScoresAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 lie::GroupAttr group, int64_t heads,
                                 DenseF64ArrayAttr tau,
                                 DenseF64ArrayAttr lambda, bool) {
  if (!group || !tau || !lambda)
    return emitError() << "expects a group, `tau` and `lambda` in the scores";
  if (heads < 1)
    return emitError() << "expects a positive number of heads, got " << heads
                       << "; set `heads` to 1 or more";
  if (static_cast<int64_t>(tau.size()) != heads)
    return emitError() << "expects `tau` with one entry per head (" << heads
                       << "), got " << tau.size()
                       << "; give one temperature per head";
  for (auto [h, t] : llvm::enumerate(tau.asArrayRef()))
    if (!(t > 0.0) || !std::isfinite(t))
      return emitError() << "expects positive, finite `tau` entries, got " << t
                         << " for head " << h;

  const lie::GroupModel &model = group.getModel();
  ArrayRef<lie::AlgebraBlock> blocks = model.getBlocks();
  int64_t numBlocks = blocks.size();
  if (static_cast<int64_t>(lambda.size()) != heads * numBlocks)
    return emitError() << "expects `lambda` with heads x blocks = " << heads
                       << " x " << numBlocks << " = " << heads * numBlocks
                       << " entries (row-major; blocks of "
                       << model.getDisplayName() << ": "
                       << llvm::join(
                              llvm::map_range(blocks,
                                              [](const lie::AlgebraBlock &b) {
                                                return b.name;
                                              }),
                              ", ")
                       << "), got " << lambda.size();
  for (auto [i, l] : llvm::enumerate(lambda.asArrayRef()))
    if (!(l >= 0.0) || !std::isfinite(l))
      return emitError() << "expects non-negative, finite `lambda` entries, "
                            "got "
                         << l << " at index " << i << " (head "
                         << int64_t(i) / std::max<int64_t>(numBlocks, 1) << ")";
  return success();
}

LogicalResult torsor::geo::verifyScores(Operation *op, ScoresAttr scores) {
  return ScoresAttr::verify(
      [op] { return op->emitOpError(); }, scores.getGroup(), scores.getHeads(),
      scores.getTau(), scores.getLambda(), scores.getCausal());
}
