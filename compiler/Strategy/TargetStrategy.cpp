//===- TargetStrategy.cpp - Tile sizes and vector widths per target -------===//
//
// The choices and their reasons. Numbers here are the only tile-size
// constants in the compiler.
//
//===----------------------------------------------------------------------===//

#include "compiler/Strategy/TargetStrategy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <algorithm>

using namespace mlir;
using namespace torsor;

unsigned TargetStrategy::attentionQueryRows(int64_t valueDim,
                                            unsigned bits) const {
  // Accumulators per row: ceil(D / lanes) vectors.
  int64_t perRow = (valueDim + lanes(bits) - 1) / lanes(bits);
  int64_t budget = vectorRegisters / 2;
  int64_t rows = perRow > 0 ? budget / perRow : attentionMaxQueryRows;
  return static_cast<unsigned>(
      std::clamp<int64_t>(rows, 1, attentionMaxQueryRows));
}

TargetStrategy TargetStrategy::forCPU(unsigned vectorBits) {
  TargetStrategy s;
  s.target = "cpu";
  s.vectorBits = std::max(vectorBits, 128u);
  // AVX-512 doubles the register file as well as its width.
  s.vectorRegisters = s.vectorBits >= 512 ? 32 : 16;
  s.attentionMaxQueryRows = 4;
  s.attentionKeyVectors = 2;
  return s;
}

DictionaryAttr TargetStrategy::toAttr(MLIRContext *context) const {
  Builder b(context);
  auto i64 = [&](unsigned v) { return b.getI64IntegerAttr(v); };
  return b.getDictionaryAttr({
      b.getNamedAttr("target", b.getStringAttr(target)),
      b.getNamedAttr("vector_bits", i64(vectorBits)),
      b.getNamedAttr("vector_registers", i64(vectorRegisters)),
      b.getNamedAttr("attention_max_query_rows", i64(attentionMaxQueryRows)),
      b.getNamedAttr("attention_key_vectors", i64(attentionKeyVectors)),
  });
}

TargetStrategy TargetStrategy::get(Operation *op) {
  TargetStrategy s = forCPU(128);
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  if (!module)
    return s;
  auto dict = module->getAttrOfType<DictionaryAttr>(kStrategyAttrName);
  if (!dict)
    return s;
  auto read = [&](StringRef name, unsigned &field) {
    if (auto attr = dict.getAs<IntegerAttr>(name))
      field = static_cast<unsigned>(std::max<int64_t>(attr.getInt(), 1));
  };
  if (auto target = dict.getAs<StringAttr>("target"))
    s.target = target.str();
  read("vector_bits", s.vectorBits);
  read("vector_registers", s.vectorRegisters);
  read("attention_max_query_rows", s.attentionMaxQueryRows);
  read("attention_key_vectors", s.attentionKeyVectors);
  return s;
}
