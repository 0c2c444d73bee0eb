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
  let summary = "a matrix Lie group: built in, or declared by generators";
  let description = [{
    A built-in group is named by a keyword:

    ```mlir
    #lie.group<se3>    // also so2, se2, so3, aff2, sim3
    ```

    A declared group (a `group` block of a .tsr model) carries its
    generators: `n` is the matrix size, `generators` the k basis matrices
    of the Lie algebra as k·n·n row-major entries, and `blocks` the λ
    blocks of dist2, each a name and the indices of its generators (the
    blocks list every generator once, in order). The optional keyword
    `generic` keeps the generic model even where the generators are a
    built-in group's own basis (see docs/groups/declared.md).

    ```mlir
    #lie.group<"Heis3", n = 3,
               generators = array<f64: 0, 1, 0, 0, 0, 0, 0, 0, 0,
                                       0, 0, 0, 0, 0, 1, 0, 0, 0,
                                       0, 0, 1, 0, 0, 0, 0, 0, 0>,
               blocks = [["plane", 0, 1], ["center", 2]]>
    ```

    The group's behaviour (matrix size, algebra dimension, blocks, exp/log
    builders) comes from its group model, `GroupAttr::getModel()`.
  }];
  let parameters = (ins "::mlir::StringAttr":$name,
                        DefaultValuedParameter<"unsigned", "0">:$n,
                        OptionalParameter<"::mlir::DenseF64ArrayAttr">:$generators,
                        OptionalParameter<"::mlir::ArrayAttr">:$blocks,
                        DefaultValuedParameter<"bool", "false">:$generic);
  let builders = [
    AttrBuilderWithInferredContext<(ins "::mlir::StringAttr":$name), [{
      return $_get(name.getContext(), name, 0, nullptr, nullptr, false);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The model implementing this group's math. Never null for a verified
    /// attribute.
    const ::torsor::lie::GroupModel &getModel() const;
    /// True for a group declared by its generators.
    bool isDeclared() const { return static_cast<bool>(getGenerators()); }
    /// For a declared group whose model uses a built-in group's closed
    /// forms, that group's keyword (e.g. "se3"); empty otherwise.
    ::llvm::StringRef getSpecialization() const;
  }];
}

#endif // TORSOR_LIE_ATTRS
