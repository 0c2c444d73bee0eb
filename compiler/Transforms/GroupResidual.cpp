//===- GroupResidual.cpp - Membership check of declared-group inputs ------===//
//
// The runtime checks built-in group inputs with closed-form tests of its
// own (runtime/src/GroupCheck.cpp). A group declared by generators has no
// such test, but the compiler can measure membership for any group: the
// `lie.membership_residual` op (the part of log g outside the algebra).
// So a model with declared-group inputs gets a second exported function,
// `torsor_group_residual`, that computes one residual per element of each
// such input; the manifest names it and marks the inputs (`"residual":
// true`), and the runtime calls it before each run when group checks are on.
//
// A group on the generic builders (neither specialised nor recognised)
// measures membership by the off-span part of its matrix log, which near a
// rotation by π carries the log's rounding error amplified by its
// conditioning; its inputs are marked `"residual_conditioned": true`, and
// the runtime compares their residuals with a tolerance scaled by the dtype
// and that conditioning (docs/groups/declared.md, "Membership check").
// Recognised groups use their host's round trip, which needs no scaling.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Lie/IR/Groups/Generic.h"
#include "dialects/Lie/IR/LieOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace torsor;

SmallVector<ResidualCheck> torsor::collectResidualChecks(func::FuncOp model) {
  SmallVector<ResidualCheck> checks;
  if (model.isExternal())
    return checks;
  for (unsigned i = 0; i < model.getNumArguments(); ++i) {
    auto kind = model.getArgAttrOfType<StringAttr>(i, "torsor.kind");
    auto group = model.getArgAttrOfType<StringAttr>(i, "torsor.group");
    if (!group || (kind && kind.getValue() != "input"))
      continue;
    // The group attribute comes from the ops that use the input; an
    // unused input has none and needs no check.
    lie::GroupAttr found;
    // On the user itself or inside another attribute (#geo.scores).
    for (Operation *user : model.getArgument(i).getUsers()) {
      user->getAttrDictionary().walk([&](lie::GroupAttr g) {
        if (g.isDeclared() && g.getName() == group)
          found = g;
      });
      if (found)
        break;
    }
    if (!found)
      continue;
    const auto &model =
        static_cast<const lie::GenericGroupModel &>(found.getModel());
    bool conditioned = !model.hasClosedForms();
    checks.push_back({i, found, conditioned});
  }
  return checks;
}

LogicalResult torsor::buildGroupResidualWrapper(ModuleOp module,
                                                func::FuncOp model) {
  SmallVector<ResidualCheck> checks = collectResidualChecks(model);
  if (checks.empty())
    return success();
  if (module.lookupSymbol(kResidualWrapperName))
    return model.emitError() << "the symbol '" << kResidualWrapperName
                             << "' is reserved for the group check";
  SmallVector<Type> groupTypes, residualTypes, bufferTypes;
  for (const ResidualCheck &check : checks) {
    auto type = cast<RankedTensorType>(model.getArgumentTypes()[check.input]);
    groupTypes.push_back(type);
    residualTypes.push_back(RankedTensorType::get(type.getShape().drop_back(2),
                                                  type.getElementType()));
  }
  for (Type t : llvm::concat<Type>(groupTypes, residualTypes)) {
    auto tensor = cast<RankedTensorType>(t);
    bufferTypes.push_back(
        MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  OpBuilder builder(module.getBodyRegion());
  builder.setInsertionPointToEnd(module.getBody());
  Location loc = model.getLoc();
  auto wrapper = func::FuncOp::create(builder, loc, kResidualWrapperName,
                                      builder.getFunctionType(bufferTypes, {}));
  wrapper->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  Block *body = wrapper.addEntryBlock();
  builder.setInsertionPointToStart(body);
  for (auto [i, check] : llvm::enumerate(checks)) {
    Value g = bufferization::ToTensorOp::create(
        builder, loc, groupTypes[i], body->getArgument(i),
        /*restrict=*/true, /*writable=*/false);
    Value r = lie::MembershipResidualOp::create(builder, loc, residualTypes[i],
                                                g, check.group);
    auto store = bufferization::MaterializeInDestinationOp::create(
        builder, loc, r, body->getArgument(checks.size() + i));
    store.setRestrict(true);
    store.setWritable(true);
  }
  func::ReturnOp::create(builder, loc);
  return success();
}
