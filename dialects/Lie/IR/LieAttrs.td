//===- LieAttrs.td - Lie dialect attributes ----------------*- tablegen -*-===//
//
// `#lie.group<...>`: which group an op works in.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_LIE_ATTRS
#define TORSOR_LIE_ATTRS

include "dialects/Lie/IR/LieDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Lie_GroupAttr : AttrDef<Lie_Dialect, "Group"> {
  let mnemonic = "group";
  let summary = "a matrix Lie group";
  let description = [{
    A built-in group is named by a keyword:

    ```mlir
    #lie.group<se3>    // also so2, se2, so3, aff2, sim3
    ```

    The group's behaviour (matrix size, algebra dimension, blocks, exp/log
    builders) comes from its group model, found through
    `torsor::lie::getGroupModel(GroupAttr)`.
  }];
  let parameters = (ins "::mlir::StringAttr":$name);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The model implementing this group's math. Never null for a verified
    /// attribute.
    const ::torsor::lie::GroupModel &getModel() const;
  }];
}

#endif // TORSOR_LIE_ATTRS
