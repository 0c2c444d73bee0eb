//===- Types.cpp - Semantic types and built-in groups ---------------------===//
//
// Printing and comparison of frontend types, and the table of built-in
// groups with the algebra blocks of docs/math.md §1 (the order of the blocks is
// the order of `lambda` entries).
//
//===----------------------------------------------------------------------===//

#include "frontend/Types.h"
#include "torsor/GroupFacts.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace torsor::frontend;
using llvm::StringRef;

std::optional<DType> torsor::frontend::parseDType(StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("f16", DType::F16)
      .Case("bf16", DType::BF16)
      .Case("f32", DType::F32)
      .Case("f64", DType::F64)
      .Case("i32", DType::I32)
      .Case("i64", DType::I64)
      .Default(std::nullopt);
}

StringRef torsor::frontend::getDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

bool torsor::frontend::isFloatDType(DType dtype) {
  return dtype != DType::I32 && dtype != DType::I64;
}

/// Built-in groups, built once from the shared table of group facts
/// (runtime/include/torsor/GroupFacts.def; docs/math.md §1).
static const std::vector<GroupInfo> &builtinTable() {
  static const std::vector<GroupInfo> table = [] {
    std::vector<GroupInfo> groups;
    for (const torsor::facts::Group &g : torsor::facts::kGroups) {
      GroupInfo info;
      info.name = std::string(g.name);
      info.mnemonic = std::string(g.mnemonic);
      info.builtin = true;
      info.matrixSize = g.n;
      info.algebraDim = g.k;
      info.pointDim = g.pointDim;
      for (size_t i = 0; i < g.numBlocks; ++i)
        info.blocks.push_back(
            {std::string(g.blocks[i].name), g.blocks[i].size});
      groups.push_back(std::move(info));
    }
    return groups;
  }();
  return table;
}

const GroupInfo *torsor::frontend::lookupBuiltinGroup(StringRef name) {
  for (const GroupInfo &g : builtinTable())
    if (g.name == name)
      return &g;
  return nullptr;
}

llvm::ArrayRef<GroupInfo> torsor::frontend::getBuiltinGroups() {
  return builtinTable();
}

std::string Dim::str() const { return symbolic ? name : std::to_string(value); }

bool Type::operator==(const Type &o) const {
  if (kind != o.kind)
    return false;
  if (kind != Tensor && kind != Group)
    return true;
  return dtype == o.dtype && group == o.group && shape == o.shape;
}

std::string Type::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  switch (kind) {
  case Invalid:
    return "<invalid>";
  case List:
    return "list";
  case Bool:
    return "bool";
  case GroupName:
    return "group";
  case Group:
    os << group->name;
    if (dtype != DType::F32)
      os << "<" << getDTypeName(dtype) << ">";
    break;
  case Tensor:
    os << getDTypeName(dtype);
    if (shape.empty())
      return s;
    break;
  }
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i].str();
  os << "]";
  return s;
}
