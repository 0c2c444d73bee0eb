//===- GroupReport.cpp - What the compiler derived for declared groups ----===//
//
// Prints GenericGroupModel's recognition result (GroupStructure.h) and the
// pairwise form that follows from it, so that a user can see whether a
// declared group runs on a built-in's closed forms, e.g.
//
//   group CO3 (3x3, 4 generators; blocks rot[3] scale[1])
//     structure: a subalgebra of sim3 (elements embedded as diag(g, I) ...
//     pair form: sim3's factored form (22 query + 22 key features, straight
//                line); block norms rot = 1·rot, scale = 1·scale
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/GroupReport.h"

#include "dialects/Lie/IR/Groups/Generic.h"
#include "dialects/Lie/IR/LieAttrs.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"

using namespace mlir;

void torsor::writeGroupReport(ModuleOp module, llvm::raw_ostream &os) {
  llvm::SetVector<Attribute> groups;
  // Groups sit on ops directly or inside other attributes (#geo.scores).
  module.walk([&](Operation *op) {
    op->getAttrDictionary().walk([&](lie::GroupAttr group) {
      if (group.isDeclared())
        groups.insert(group);
    });
  });
  if (groups.empty()) {
    os << "no declared groups: built-in groups use their own closed forms\n";
    return;
  }
  for (Attribute attr : groups) {
    auto group = cast<lie::GroupAttr>(attr);
    const auto &model =
        static_cast<const lie::GenericGroupModel &>(group.getModel());
    const lie::algebra::Recognition &r = model.getStructure();
    unsigned n = model.getMatrixSize(), k = model.getAlgebraDim();
    os << "group " << model.getName() << " (" << n << "x" << n << ", " << k
       << " generators; blocks";
    for (const lie::AlgebraBlock &b : model.getBlocks())
      os << ' ' << b.name << '[' << b.size << ']';
    os << ")\n";

    lie::algebra::Facts facts;
    facts.n = n;
    ArrayRef<double> flat = group.getGenerators().asArrayRef();
    for (unsigned a = 0; a < k; ++a)
      facts.generators.emplace_back(flat.begin() + a * n * n,
                                    flat.begin() + (a + 1) * n * n);
    os << "  structure: " << lie::algebra::describe(r, facts) << "\n";

    os << "  pair form: ";
    unsigned nq = model.getQueryFeatureCount(), nk = model.getKeyFeatureCount();
    std::string counts =
        std::to_string(nq) + " query + " + std::to_string(nk) + " key features";
    bool straight = model.hasStraightLinePairForm();
    if (r.kind == lie::algebra::Recognition::Exact) {
      os << r.builtin << "'s pair form, closed form (" << counts << ")\n";
      continue;
    }
    if (r.kind == lie::algebra::Recognition::None &&
        model.getNilpotencyIndex()) {
      os << "the exact series of a⁻¹b − I per pair on its " << nq
         << " non-zero entries, straight line (" << counts << ")\n";
      continue;
    }
    if (r.kind == lie::algebra::Recognition::None) {
      os << (straight ? "generic, straight line"
                      : "generic log per pair, per-lane scalar code")
         << " (" << counts << ")\n";
      continue;
    }
    if (!r.isBlockIsotropic() && r.kind == lie::algebra::Recognition::Product) {
      os << "the factors' closed-form logs of a⁻¹b per pair, straight line ("
         << counts << ")\n";
      continue;
    }
    if (!r.isBlockIsotropic()) {
      os << r.builtin << "'s closed-form log of a⁻¹b per pair, straight line ("
         << counts << ")\n";
      continue;
    }
    // The host blocks the declared norms mix: the host's, or for a direct
    // sum every factor's, named factor.block ("so3.rot", "gl1.s",
    // "nil.0").
    std::vector<std::string> hostBlocks;
    if (r.kind == lie::algebra::Recognition::Product) {
      for (auto [c, f] : llvm::enumerate(r.factors)) {
        std::string prefix = f.host + "#" + std::to_string(c) + ".";
        if (const lie::GroupModel *fh = model.getFactorHost(c)) {
          for (const lie::AlgebraBlock &hb : fh->getBlocks())
            hostBlocks.push_back(prefix + hb.name.str());
        } else {
          for (unsigned i = 0; i < f.hostDim; ++i)
            hostBlocks.push_back(prefix + std::to_string(i));
        }
      }
      os << "the factors' pair forms side by side, closed form (" << counts
         << "); block norms";
    } else {
      for (const lie::AlgebraBlock &hb : model.getHost()->getBlocks())
        hostBlocks.push_back(hb.name.str());
      os << r.builtin << "'s pair form, closed form (" << counts
         << "); block norms";
    }
    for (auto [b, blk] : llvm::enumerate(model.getBlocks())) {
      os << (b ? ", " : " ") << blk.name << " =";
      bool first = true;
      for (auto [beta, hb] : llvm::enumerate(hostBlocks)) {
        double c = r.blockMix[b * hostBlocks.size() + beta];
        if (c == 0)
          continue;
        os << (first ? " " : " + ") << llvm::format("%.4g", c) << "·" << hb;
        first = false;
      }
      if (first)
        os << " 0";
    }
    os << "\n";
  }
}
