//===- LieDialect.cpp - Lie dialect and its attributes --------------------===//
//
// Dialect registration and the `#lie.group<...>` attribute's syntax and
// verifier. The attribute is the only place a group keyword (or a group
// declaration) is resolved to a model; everything downstream asks the model.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/LieDialect.h"
#include "dialects/Lie/IR/Groups/Generic.h"
#include "dialects/Lie/IR/LieAttrs.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace torsor::lie;

#include "dialects/Lie/IR/LieOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Lie/IR/LieAttrs.cpp.inc"

namespace {
/// lie ops are pure and region-free, so inlining a call never changes what
/// they compute. Without this interface the inliner leaves every function
/// holding a lie op alone: the model stayed a call from its runtime
/// wrapper, returning every output through one aggregate and copying it.
struct LieInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void LieDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Lie/IR/LieOps.cpp.inc"
      >();
  addInterfaces<LieInlinerInterface>();
  registerAttributes();
}

void LieDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Lie/IR/LieAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// GroupAttr
//===----------------------------------------------------------------------===//

/// Decodes the `blocks` parameter: each entry `["name", i, i+1, …]` lists
/// the generators of one block, in order, continuing where the previous
/// block stopped. Reports through `emitError` and fails otherwise.
static FailureOr<SmallVector<DeclaredBlock>>
decodeBlocks(function_ref<InFlightDiagnostic()> emitError, ArrayAttr blocks) {
  SmallVector<DeclaredBlock> result;
  int64_t next = 0;
  for (Attribute entry : blocks) {
    auto list = dyn_cast<ArrayAttr>(entry);
    StringAttr name =
        list && !list.empty() ? dyn_cast<StringAttr>(list[0]) : StringAttr();
    if (!name)
      return emitError() << "expects each block as [\"name\", generator "
                            "indices...], found "
                         << entry;
    if (list.size() < 2)
      return emitError() << "expects block '" << name.getValue()
                         << "' to list at least one generator, found none";
    for (Attribute index : list.getValue().drop_front()) {
      auto i = dyn_cast<IntegerAttr>(index);
      if (!i || i.getValue().getSExtValue() != next)
        return emitError() << "expects block '" << name.getValue()
                           << "' to list generator " << next
                           << " next (blocks cover the generators in order), "
                              "found "
                           << index;
      ++next;
    }
    result.push_back({name.getValue().str(), unsigned(list.size() - 1)});
  }
  return result;
}

/// The model of a declared group, or null after reporting why not.
static const GenericGroupModel *
getDeclaredModel(function_ref<InFlightDiagnostic()> emitError, StringAttr name,
                 unsigned n, DenseF64ArrayAttr generators, ArrayAttr blocks,
                 bool generic) {
  if (!blocks) {
    emitError() << "expects 'blocks' for declared group '" << name.getValue()
                << "'";
    return nullptr;
  }
  FailureOr<SmallVector<DeclaredBlock>> decoded =
      decodeBlocks(emitError, blocks);
  if (failed(decoded))
    return nullptr;
  std::string error;
  const GenericGroupModel *model = GenericGroupModel::get(
      name.getValue(), n, generators.asArrayRef(), *decoded, generic, error);
  if (!model)
    emitError() << "declared group '" << name.getValue() << "' " << error;
  return model;
}

/// `#lie.group<se3>` for a built-in group, or
/// `#lie.group<"Heis3", n = 3, generators = array<f64: …>,
///             blocks = [["plane", 0, 1], ["center", 2]] (, generic)?>`
/// for a declared one.
Attribute GroupAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  std::string name;
  if (parser.parseLess())
    return {};
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeywordOrString(&name))
    return {};
  if (succeeded(parser.parseOptionalGreater())) {
    if (!lookupBuiltinGroupModel(name)) {
      parser.emitError(loc)
          << "unknown group '" << name << "'; expected one of "
          << llvm::join(getBuiltinGroupNames(), ", ")
          << ", or a declared group with n, generators and blocks";
      return {};
    }
    return GroupAttr::get(StringAttr::get(ctx, name));
  }
  uint64_t n = 0;
  DenseF64ArrayAttr generators;
  ArrayAttr blocks;
  bool generic = false;
  if (parser.parseComma() || parser.parseKeyword("n") || parser.parseEqual() ||
      parser.parseInteger(n) || parser.parseComma() ||
      parser.parseKeyword("generators") || parser.parseEqual() ||
      parser.parseAttribute(generators) || parser.parseComma() ||
      parser.parseKeyword("blocks") || parser.parseEqual() ||
      parser.parseAttribute(blocks))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("generic"))
      return {};
    generic = true;
  }
  if (parser.parseGreater())
    return {};
  return GroupAttr::getChecked([&] { return parser.emitError(loc); }, ctx,
                               StringAttr::get(ctx, name), unsigned(n),
                               generators, blocks, generic);
}

void GroupAttr::print(AsmPrinter &printer) const {
  if (!isDeclared()) {
    printer << "<" << getName().getValue() << ">";
    return;
  }
  printer << "<";
  printer.printString(getName().getValue());
  printer << ", n = " << getN() << ", generators = ";
  printer.printAttribute(getGenerators());
  printer << ", blocks = ";
  printer.printAttribute(getBlocks());
  if (getGeneric())
    printer << ", generic";
  printer << ">";
}

LogicalResult GroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringAttr name, unsigned n,
                                DenseF64ArrayAttr generators, ArrayAttr blocks,
                                bool generic) {
  if (!generators) {
    if (n != 0 || blocks || generic)
      return emitError() << "expects 'n', 'blocks' and 'generic' only with "
                            "'generators' (a declared group)";
    if (!lookupBuiltinGroupModel(name.getValue()))
      return emitError() << "unknown group '" << name.getValue()
                         << "'; expected one of "
                         << llvm::join(getBuiltinGroupNames(), ", ");
    return success();
  }
  if (name.getValue().empty())
    return emitError() << "expects a non-empty name for a declared group";
  return success(
      getDeclaredModel(emitError, name, n, generators, blocks, generic));
}

const GroupModel &GroupAttr::getModel() const {
  if (isDeclared()) {
    const GroupModel *model = getDeclaredModel(
        []() -> InFlightDiagnostic {
          llvm::report_fatal_error("unverified declared group attribute");
        },
        getName(), getN(), getGenerators(), getBlocks(), getGeneric());
    return *model;
  }
  const GroupModel *model = lookupBuiltinGroupModel(getName().getValue());
  assert(model && "verified group attribute without a model");
  return *model;
}

StringRef GroupAttr::getSpecialization() const {
  if (!isDeclared())
    return {};
  return static_cast<const GenericGroupModel &>(getModel()).getSpecialization();
}
