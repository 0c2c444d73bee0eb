//===- GroupFacts.h - Lookups into GroupFacts.def ---------------*- C++ -*-===//
//
// C++17 accessors for the table of built-in group facts (GroupFacts.def):
// the frontend, the group models and the runtime all read the same rows.
// Header-only, no MLIR, no allocation.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_GROUPFACTS_H
#define TORSOR_GROUPFACTS_H

#include <cstddef>
#include <string_view>

namespace torsor::facts {

/// One λ block: a contiguous run of algebra coordinates.
struct Block {
  std::string_view group; ///< the group's NAME
  std::string_view name;
  unsigned offset, size;
};

/// One built-in group.
struct Group {
  std::string_view name;     ///< SE3
  std::string_view mnemonic; ///< se3
  unsigned n, k, pointDim;
  const Block *blocks; ///< into kBlocks
  std::size_t numBlocks;
};

/// Every block of every group, grouped by group in table order.
inline constexpr Block kBlocks[] = {
#define TORSOR_GROUP_BLOCK(NAME, BLOCK, OFFSET, SIZE)                          \
  {#NAME, #BLOCK, OFFSET, SIZE},
#include "torsor/GroupFacts.def"
};

namespace detail {
/// Index of the first block of group `name` in kBlocks.
constexpr std::size_t firstBlock(std::string_view name) {
  for (std::size_t i = 0; i < sizeof(kBlocks) / sizeof(kBlocks[0]); ++i)
    if (kBlocks[i].group == name)
      return i;
  return 0;
}
/// Number of blocks of group `name`.
constexpr std::size_t countBlocks(std::string_view name) {
  std::size_t count = 0;
  for (const Block &b : kBlocks)
    count += b.group == name;
  return count;
}
} // namespace detail

/// Every built-in group, in table order.
inline constexpr Group kGroups[] = {
#define TORSOR_GROUP(NAME, MNEMONIC, N, K, POINT_DIM)                          \
  {#NAME,                                                                      \
   #MNEMONIC,                                                                  \
   N,                                                                          \
   K,                                                                          \
   POINT_DIM,                                                                  \
   kBlocks + detail::firstBlock(#NAME),                                        \
   detail::countBlocks(#NAME)},
#include "torsor/GroupFacts.def"
};

/// The group whose NAME (`SE3`) or MNEMONIC (`se3`) is `key`, or null.
constexpr const Group *findGroup(std::string_view key) {
  for (const Group &g : kGroups)
    if (g.name == key || g.mnemonic == key)
      return &g;
  return nullptr;
}

} // namespace torsor::facts

#endif // TORSOR_GROUPFACTS_H
