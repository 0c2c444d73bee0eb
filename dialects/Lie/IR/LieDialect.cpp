//===- LieDialect.cpp - Lie dialect and its attributes --------------------===//
//
// Dialect registration and the `#lie.group<...>` attribute's syntax and
// verifier. The attribute is the only place a group keyword is resolved to
// a model; everything downstream asks the model.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/LieDialect.h"
#include "dialects/Lie/IR/LieAttrs.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace torsor::lie;

#include "dialects/Lie/IR/LieOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Lie/IR/LieAttrs.cpp.inc"

void LieDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Lie/IR/LieOps.cpp.inc"
      >();
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

/// `#lie.group<se3>`: the keyword of a built-in group.
Attribute GroupAttr::parse(AsmParser &parser, Type) {
  std::string name;
  if (parser.parseLess())
    return {};
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeywordOrString(&name) || parser.parseGreater())
    return {};
  if (!lookupBuiltinGroupModel(name)) {
    parser.emitError(loc) << "unknown group '" << name << "'; expected one of "
                          << llvm::join(getBuiltinGroupNames(), ", ");
    return {};
  }
  return GroupAttr::get(parser.getContext(),
                        StringAttr::get(parser.getContext(), name));
}

void GroupAttr::print(AsmPrinter &printer) const {
  printer << "<" << getName().getValue() << ">";
}

LogicalResult GroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringAttr name) {
  if (!lookupBuiltinGroupModel(name.getValue()))
    return emitError() << "unknown group '" << name.getValue()
                       << "'; expected one of "
                       << llvm::join(getBuiltinGroupNames(), ", ");
  return success();
}

const GroupModel &GroupAttr::getModel() const {
  const GroupModel *model = lookupBuiltinGroupModel(getName().getValue());
  assert(model && "verified group attribute without a model");
  return *model;
}
