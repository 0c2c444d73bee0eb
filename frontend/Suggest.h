//===- Suggest.h - "Did you mean" for misspelled names ---------*- C++ -*-===//
//
// Picks the closest candidate to a misspelled name by edit distance, so an
// error such as `unknown function 'lie_atention'` can end with a fix the
// user can apply. MLIR-free: the lexer, parser and Sema all use it.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_SUGGEST_H
#define TORSOR_FRONTEND_SUGGEST_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace torsor::frontend {

/// Collects candidates and keeps the one closest to `name`.
class Suggester {
public:
  explicit Suggester(llvm::StringRef name) : name(name) {}

  /// Considers one candidate; ties keep the first one seen.
  void add(llvm::StringRef candidate) {
    if (candidate.empty() || candidate == name)
      return;
    // Distances count in half edits: a case-only difference (`se3` for
    // `SE3`) is half an edit, so it beats any real typo.
    unsigned d = name.equals_insensitive(candidate)
                     ? 1
                     : 2 * name.edit_distance(candidate,
                                              /*AllowReplacements=*/true,
                                              /*MaxEditDistance=*/4);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate.str();
      tied = false;
    } else if (d == bestDistance && candidate != best) {
      tied = true;
    }
  }

  /// "; did you mean 'X'?" when a candidate is close enough, else "".
  /// Close enough: about a third of the name's length in edits (at most
  /// 3), so names of one or two letters only match up to case. Two equally
  /// close candidates (`SE4`: SE2 or SE3?) give no hint at all.
  std::string hint() const {
    unsigned limit =
        name.size() < 3
            ? 1
            : 2 * std::min<unsigned>(3, (unsigned(name.size()) + 2) / 3);
    if (best.empty() || tied || bestDistance > limit)
      return "";
    return "; did you mean '" + best + "'?";
  }

private:
  llvm::StringRef name;
  std::string best;
  unsigned bestDistance = 9;
  bool tied = false;
};

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_SUGGEST_H
