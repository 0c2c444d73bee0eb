//===- Groups.cpp - The list of built-in group models ---------------------===//
//
// The registry GroupModel.cpp searches. Order is the order diagnostics list
// the group keywords in.
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
