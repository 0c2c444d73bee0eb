//===- BuiltinFacts.h - Built-in models read GroupFacts.def ----*- C++ -*-===//
//
// The built-in group models take their name, sizes and λ blocks from the one
// table of group facts (runtime/include/torsor/GroupFacts.def) that the
// frontend and the runtime read too, so the facts cannot drift apart.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_DIALECTS_LIE_IR_GROUPS_BUILTINFACTS_H
#define TORSOR_DIALECTS_LIE_IR_GROUPS_BUILTINFACTS_H

#include "dialects/Lie/IR/GroupModel.h"
#include "torsor/GroupFacts.h"

#include <vector>

namespace torsor::lie {

/// A table string as an llvm::StringRef.
inline llvm::StringRef toRef(std::string_view s) {
  return llvm::StringRef(s.data(), s.size());
}

/// The GroupFacts.def row of built-in group `mnemonic` (e.g. "se3").
inline const facts::Group &builtinFacts(llvm::StringRef mnemonic) {
  const facts::Group *g =
      facts::findGroup(std::string_view(mnemonic.data(), mnemonic.size()));
  assert(g && "not a built-in group");
  return *g;
}

/// The λ blocks of built-in `mnemonic` as AlgebraBlocks (built once).
inline llvm::ArrayRef<AlgebraBlock> builtinBlocks(llvm::StringRef mnemonic) {
  static const std::vector<std::vector<AlgebraBlock>> all = [] {
    std::vector<std::vector<AlgebraBlock>> table;
    for (const facts::Group &g : facts::kGroups) {
      std::vector<AlgebraBlock> blocks;
      for (size_t i = 0; i < g.numBlocks; ++i)
        blocks.push_back(
            {toRef(g.blocks[i].name), g.blocks[i].offset, g.blocks[i].size});
      table.push_back(std::move(blocks));
    }
    return table;
  }();
  return all[&builtinFacts(mnemonic) - facts::kGroups];
}

} // namespace torsor::lie

#endif // TORSOR_DIALECTS_LIE_IR_GROUPS_BUILTINFACTS_H
