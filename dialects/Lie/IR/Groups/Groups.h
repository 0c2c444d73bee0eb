//===- Groups.h - The built-in group models ---------------------*- C++ -*-===//
//
// One accessor per built-in model (each defined in its own Groups/<G>.cpp)
// and the list the registry searches. Adding a built-in group: add its file,
// its accessor here, and one line in getBuiltinGroupModels().
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_GROUPS_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_GROUPS_H

#include "dialects/Lie/IR/GroupModel.h"

namespace torsor::lie {

const GroupModel &getSO2Model();
const GroupModel &getSE2Model();
const GroupModel &getSO3Model();
const GroupModel &getSE3Model();
const GroupModel &getAff2Model();
const GroupModel &getSim3Model();

/// Closed forms that serve declared groups only (GroupStructure.h), not
/// keywords of `#lie.group<...>`: the planar similarities Sim(2), GL⁺(2)
/// (2×2), rotations × scale of ℝ³ (3×3), and SE(2) (as 3×3 linear maps)
/// ⋉ ℝ³, e.g. the 2-D Galilean group.
const GroupModel &getSim2ClosedFormModel();
const GroupModel &getGL2ClosedFormModel();
const GroupModel &getCO3ClosedFormModel();
const GroupModel &getSE2TranslationsModel();

/// The gl2 model's log of a 2×2 `g` (its buildLog), with the trace part
/// ½ ln det g·I left out (0) when `traceless`: for declared subalgebras of
/// sl(2), whose coordinates T⁺ do not read it (one log1p and one log per
/// pair fewer in their pair form).
Scalars buildGL2Log(ScalarBuilder &m, mlir::ValueRange g, bool traceless);

/// The model of a host GroupStructure.h names: a built-in keyword, or one
/// of the closed forms above (sim2, gl2, co3, se2x); null for any other
/// name.
const GroupModel *lookupHostGroupModel(llvm::StringRef name);

/// Every built-in model, in the order diagnostics list them.
llvm::ArrayRef<const GroupModel *> getBuiltinGroupModels();

} // namespace torsor::lie

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_GROUPS_H
