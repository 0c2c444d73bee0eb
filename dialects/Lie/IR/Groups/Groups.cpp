//===- Groups.cpp - The list of built-in group models ---------------------===//
//
// The registry GroupModel.cpp searches (order: the order diagnostics list
// the group keywords in), and the hosts of declared groups (GroupStructure.h).
//
//===----------------------------------------------------------------------===//

#include "dialects/Lie/IR/Groups/Groups.h"

using namespace torsor::lie;

llvm::ArrayRef<const GroupModel *> torsor::lie::getBuiltinGroupModels() {
  static const GroupModel *const models[] = {
      &getSO2Model(), &getSE2Model(),  &getSO3Model(),
      &getSE3Model(), &getAff2Model(), &getSim3Model(),
  };
  return models;
}

const GroupModel *torsor::lie::lookupHostGroupModel(llvm::StringRef name) {
  static const GroupModel *const hosts[] = {
      &getSim2ClosedFormModel(), &getGL2ClosedFormModel(),
      &getCO3ClosedFormModel(), &getSE2TranslationsModel()};
  for (const GroupModel *m : hosts)
    if (m->getName() == name)
      return m;
  return lookupBuiltinGroupModel(name);
}
