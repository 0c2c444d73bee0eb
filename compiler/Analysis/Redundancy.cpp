//===- Redundancy.cpp - The parameter redundancy report -------------------===//
//
// Counting (MATH.md §4, docs/relational.md). A standard head stores W_Q^h,
// W_K^h ∈ ℝ^{d×d_h}, but the output sees only G_QK^h = W_Q^h W_K^hᵀ, a d×d
// matrix of rank ≤ r = min(d_h, d). Rank-r d×d matrices form a manifold of
// dimension r(2d − r), so 2·d·d_h − r(2d − r) stored numbers (d_h² when
// d_h ≤ d) are the GL(d_h) gauge W_Q → W_Q A, W_K → W_K A⁻ᵀ. The same holds
// for (W_V, W_O) with G_VO^h ∈ ℝ^{d×d_out}. Head permutations are a
// discrete symmetry (no dimension). O(d) on the hidden space also acts on
// the inputs, so it is listed as a declared invariance that removes no
// parameter. The relational form stores G_QK and G_VO as full d×d
// matrices: no continuous gauge is left, and more numbers are stored when
// d_h < d/2 (the report says so rather than hiding it).
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/Redundancy.h"

#include "compiler/Analysis/AttentionMatch.h"
#include "compiler/Analysis/Checkpoint.h"
#include "compiler/Analysis/Spectral.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

using namespace mlir;
using namespace torsor;
namespace json = llvm::json;

namespace {

/// One count with the formula it comes from.
struct Count {
  std::string formula;
  int64_t value = 0;
};

/// One symmetry of a block's parameters.
struct Gauge {
  std::string symmetry, formula;
  int64_t dimension = 0;
  int64_t order = 0; ///< for a discrete symmetry (0 when too large to print)
};

/// Per-head numerics from actual weights.
struct HeadNumerics {
  int64_t rankQK = 0, rankVO = 0;
  std::vector<double> sigmaQK, sigmaVO;
};

/// A pair of heads whose G_QK nearly coincide.
struct Duplicate {
  int64_t a, b;
  double cosQK, cosVO;
};

/// Everything the report says about one block.
struct BlockReport {
  std::string form, location;
  std::vector<std::pair<std::string, std::string>> params; // role, name
  int64_t d = 0, heads = 0, dh = 0, dOut = 0;
  Count storedQK, dofQK, storedVO, dofVO;
  std::vector<Gauge> gauges;
  int64_t stored = 0, dof = 0;
  bool hasNumerics = false;
  std::string tolerance; // the stated rule
  double relTol = 0;
  std::vector<HeadNumerics> perHead;
  int64_t numericalDof = 0;
  double maxCosQK = 0;
  std::vector<Duplicate> duplicates;
};

/// "file:line:col" of an op.
std::string locationString(Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()));
  return "<unknown>";
}

/// Count of a rank-≤r family of m×n matrices: r(m + n − r).
int64_t rankManifold(int64_t r, int64_t m, int64_t n) {
  return r * (m + n - r);
}

/// The symbolic counts of one block.
BlockReport countBlock(const AttentionBlock &block) {
  BlockReport r;
  r.location = locationString(block.root->getLoc());
  r.d = block.d;
  r.heads = block.heads;
  r.dOut = block.dOut;
  int64_t h = block.heads, d = block.d, dOut = block.dOut;
  if (block.form == AttentionBlock::Form::Relational) {
    r.form = "relational";
    r.params = {{"g_qk", paramName(block.gqk)}, {"g_vo", paramName(block.gvo)}};
    r.storedQK = {"H·d²", h * d * d};
    r.dofQK = {"H·d² (G_QK^h is a free d×d matrix)", h * d * d};
    r.storedVO = {"H·d²", h * d * dOut};
    r.dofVO = {"H·d² (G_VO^h is a free d×d matrix)", h * d * dOut};
  } else {
    r.form = "standard";
    r.dh = block.dh;
    int64_t dh = block.dh;
    r.params = {{"W_Q", paramName(block.wq)},
                {"W_K", paramName(block.wk)},
                {"W_V", paramName(block.wv)},
                {"W_O", paramName(block.wo)}};
    r.storedQK = {"2·d·H·d_h", 2 * d * h * dh};
    int64_t rq = std::min(dh, d);
    r.dofQK = {rq == dh ? "H·(2·d·d_h − d_h²)" : "H·d² (d_h ≥ d: full rank)",
               h * rankManifold(rq, d, d)};
    r.storedVO = {dOut == d ? "2·d·H·d_h" : "(d + d_out)·H·d_h",
                  (d + dOut) * h * dh};
    int64_t rv = std::min({dh, d, dOut});
    r.dofVO = {rv == dh ? (dOut == d ? "H·(2·d·d_h − d_h²)"
                                     : "H·((d + d_out)·d_h − d_h²)")
                        : "H·r·(d + d_out − r), r = min(d, d_out)",
               h * rankManifold(rv, d, dOut)};
    r.gauges.push_back({"GL(d_h) per head on (W_Q, W_K)",
                        rq == dh ? "H·d_h²" : "stored − dof",
                        r.storedQK.value - r.dofQK.value, 0});
    r.gauges.push_back({"GL(d_h) per head on (W_V, W_O)",
                        rv == dh ? "H·d_h²" : "stored − dof",
                        r.storedVO.value - r.dofVO.value, 0});
  }
  int64_t order = 1;
  for (int64_t i = 2; i <= h && order; ++i)
    order = order > std::numeric_limits<int64_t>::max() / i ? 0 : order * i;
  r.gauges.push_back({"head permutations S_H (discrete)", "0", 0, order});
  r.stored = r.storedQK.value + r.storedVO.value;
  r.dof = r.dofQK.value + r.dofVO.value;
  return r;
}

/// Frobenius cosine of two equal-size slices.
double cosine(const double *a, const double *b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return aa == 0 || bb == 0 ? 0.0 : ab / std::sqrt(aa * bb);
}

/// Adds ranks and duplicates from the weights; fails with a located error.
LogicalResult addNumerics(BlockReport &r, const AttentionBlock &block,
                          const WeightFile &file, StringRef path,
                          const RedundancyOptions &options) {
  bool relational = block.form == AttentionBlock::Form::Relational;
  SmallVector<Value> sources =
      relational ? SmallVector<Value>{block.gqk, block.gvo}
                 : SmallVector<Value>{block.wq, block.wk, block.wv, block.wo};
  SmallVector<const WeightTensor *> tensors;
  bool f64 = true;
  for (Value v : sources) {
    if (paramName(v).empty())
      return success(); // computed weights: no file holds them
    auto t = lookupParam(file, path, v);
    if (failed(t))
      return failure();
    // A NaN or Inf would give "rank 0, σ = nan" and count in the totals.
    const std::vector<double> &data = (*t)->data;
    for (size_t e = 0; e < data.size(); ++e) {
      if (std::isfinite(data[e]))
        continue;
      std::string index;
      int64_t rest = static_cast<int64_t>(e);
      for (size_t k = (*t)->shape.size(); k-- > 0;) {
        int64_t extent = std::max<int64_t>((*t)->shape[k], 1);
        index =
            std::to_string(rest % extent) + (index.empty() ? "" : ", ") + index;
        rest /= extent;
      }
      return emitError(v.getLoc())
             << "tensor '" << paramName(v) << "' in '" << path << "' is "
             << (std::isnan(data[e]) ? "NaN"
                 : data[e] > 0       ? "+Inf"
                                     : "-Inf")
             << " at element " << e << " (index [" << index
             << "]); the redundancy report needs finite weights (a diverged "
                "checkpoint? use the last finite one)";
    }
    tensors.push_back(*t);
    f64 = f64 && (*t)->dtype == "F64";
  }
  int64_t h = block.heads, d = block.d, dOut = block.dOut;
  std::vector<double> gqk =
      relational ? tensors[0]->data : formQK(*tensors[0], *tensors[1], h);
  std::vector<double> gvo =
      relational ? tensors[1]->data : formVO(*tensors[2], *tensors[3], h);
  // Finite weights whose products overflow are as meaningless.
  for (const std::vector<double> *g : {&gqk, &gvo})
    if (!llvm::all_of(*g, [](double x) { return std::isfinite(x); }))
      return emitError(block.root->getLoc())
             << "the products of the weights in '" << path << "' ("
             << (g == &gqk ? "G_QK" : "G_VO")
             << ") overflow to Inf; the redundancy report needs weights "
                "whose products are finite";
  double eps = f64 ? std::numeric_limits<double>::epsilon()
                   : double(std::numeric_limits<float>::epsilon());
  r.relTol = options.rankTolerance > 0 ? options.rankTolerance
                                       : double(std::max(d, dOut)) * eps;
  r.tolerance = options.rankTolerance > 0
                    ? "σ > rank-tol·σ_max (given)"
                    : std::string("σ > max(d, d_out)·ε_") +
                          (f64 ? "f64" : "f32") + "·σ_max";
  r.hasNumerics = true;
  for (int64_t k = 0; k < h; ++k) {
    HeadNumerics head;
    std::vector<double> qk(gqk.begin() + k * d * d,
                           gqk.begin() + (k + 1) * d * d);
    std::vector<double> vo(gvo.begin() + k * d * dOut,
                           gvo.begin() + (k + 1) * d * dOut);
    head.sigmaQK = singularValues(qk, d, d);
    head.sigmaVO = singularValues(vo, d, dOut);
    head.rankQK = numericalRank(head.sigmaQK, r.relTol);
    head.rankVO = numericalRank(head.sigmaVO, r.relTol);
    r.numericalDof +=
        rankManifold(head.rankQK, d, d) + rankManifold(head.rankVO, d, dOut);
    r.perHead.push_back(std::move(head));
  }
  for (int64_t a = 0; a < h; ++a)
    for (int64_t b = a + 1; b < h; ++b) {
      double cq = cosine(&gqk[a * d * d], &gqk[b * d * d], d * d);
      double cv = cosine(&gvo[a * d * dOut], &gvo[b * d * dOut], d * dOut);
      r.maxCosQK = std::max(r.maxCosQK, cq);
      if (cq >= options.duplicateCos)
        r.duplicates.push_back({a, b, cq, cv});
    }
  return success();
}

/// Total numbers in the model's params (those with a static shape).
int64_t modelParams(func::FuncOp func) {
  int64_t total = 0;
  for (BlockArgument arg : func.getArguments()) {
    auto kind =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "torsor.kind");
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (kind && kind.getValue() == "param" && type && type.hasStaticShape())
      total += type.getNumElements();
  }
  return total;
}

json::Value countJson(const Count &c) {
  return json::Object{{"formula", c.formula}, {"value", c.value}};
}

/// The JSON form of one block.
json::Value blockJson(const BlockReport &r, size_t index) {
  json::Object params, o;
  for (const auto &[role, name] : r.params)
    params[role] = name;
  json::Array gauges;
  for (const Gauge &g : r.gauges) {
    json::Object go{{"symmetry", g.symmetry},
                    {"formula", g.formula},
                    {"dimension", g.dimension}};
    if (g.order)
      go["order"] = g.order;
    gauges.push_back(std::move(go));
  }
  o = json::Object{{"index", int64_t(index)},
                   {"form", r.form},
                   {"location", r.location},
                   {"params", std::move(params)},
                   {"d", r.d},
                   {"heads", r.heads},
                   {"d_out", r.dOut},
                   {"qk", json::Object{{"stored", countJson(r.storedQK)},
                                       {"dof", countJson(r.dofQK)}}},
                   {"vo", json::Object{{"stored", countJson(r.storedVO)},
                                       {"dof", countJson(r.dofVO)}}},
                   {"gauge", std::move(gauges)},
                   {"stored", r.stored},
                   {"dof", r.dof},
                   {"redundant", r.stored - r.dof},
                   {"redundant_fraction",
                    r.stored ? double(r.stored - r.dof) / r.stored : 0.0}};
  if (r.form == "standard")
    o["d_h"] = r.dh;
  if (r.hasNumerics) {
    json::Array heads, dups;
    for (const HeadNumerics &hn : r.perHead)
      heads.push_back(json::Object{{"rank_qk", hn.rankQK},
                                   {"rank_vo", hn.rankVO},
                                   {"sigma_qk", json::Array(hn.sigmaQK)},
                                   {"sigma_vo", json::Array(hn.sigmaVO)}});
    for (const Duplicate &dup : r.duplicates)
      dups.push_back(json::Object{{"heads", json::Array{dup.a, dup.b}},
                                  {"cos_qk", dup.cosQK},
                                  {"cos_vo", dup.cosVO}});
    o["weights"] = json::Object{
        {"tolerance", r.tolerance},  {"relative_tolerance", r.relTol},
        {"heads", std::move(heads)}, {"numerical_dof", r.numericalDof},
        {"max_cos_qk", r.maxCosQK},  {"near_duplicates", std::move(dups)}};
  }
  return o;
}

/// "25.00 %".
std::string percent(int64_t part, int64_t whole) {
  std::string s;
  llvm::raw_string_ostream(s)
      << llvm::format("%.2f %%", whole ? 100.0 * part / whole : 0.0);
  return s;
}

/// The text form of one block.
void printBlock(const BlockReport &r, size_t index, llvm::raw_ostream &os) {
  os << "block " << index << ": " << r.form << " attention at " << r.location
     << "\n  params:";
  for (size_t i = 0; i < r.params.size(); ++i)
    os << (i ? ", " : " ") << r.params[i].first << " = "
       << (r.params[i].second.empty() ? "<computed>" : r.params[i].second);
  os << "\n  d = " << r.d << ", H = " << r.heads;
  if (r.form == "standard")
    os << ", d_h = " << r.dh;
  os << ", d_out = " << r.dOut << "\n";
  auto pair = [&](StringRef what, const Count &s, const Count &f) {
    os << "  " << what << "  stored " << s.formula << " = " << s.value
       << "; degrees of freedom " << f.formula << " = " << f.value << "\n";
  };
  pair(r.form == "standard" ? "(W_Q, W_K)" : "G_QK", r.storedQK, r.dofQK);
  pair(r.form == "standard" ? "(W_V, W_O)" : "G_VO", r.storedVO, r.dofVO);
  for (const Gauge &g : r.gauges) {
    os << "  gauge  " << g.symmetry << ": ";
    if (g.formula == "0") {
      os << "order H! = " << (g.order ? std::to_string(g.order) : "huge")
         << ", dimension 0\n";
      continue;
    }
    os << "dimension " << g.formula << " = " << g.dimension << "\n";
  }
  os << "  total  stored " << r.stored << ", degrees of freedom " << r.dof
     << ", redundant " << (r.stored - r.dof) << " ("
     << percent(r.stored - r.dof, r.stored) << ")\n";
  if (!r.hasNumerics)
    return;
  os << "  weights: rank tolerance " << r.tolerance << " = "
     << llvm::format("%.3g", r.relTol) << "·σ_max\n";
  auto sig = [&](const std::vector<double> &s, int64_t rank) {
    std::string out;
    llvm::raw_string_ostream so(out);
    if (rank > 0)
      so << ", σ_" << rank << " = " << llvm::format("%.3g", s[rank - 1]);
    if (rank < int64_t(s.size()))
      so << ", σ_" << rank + 1 << " = " << llvm::format("%.3g", s[rank]);
    return out;
  };
  for (size_t k = 0; k < r.perHead.size(); ++k) {
    const HeadNumerics &hn = r.perHead[k];
    os << "    head " << k << ": rank G_QK " << hn.rankQK << " of "
       << hn.sigmaQK.size() << sig(hn.sigmaQK, hn.rankQK) << "; rank G_VO "
       << hn.rankVO << " of " << hn.sigmaVO.size() << sig(hn.sigmaVO, hn.rankVO)
       << "\n";
  }
  os << "    numerical degrees of freedom Σ_h r(m + n − r) = " << r.numericalDof
     << "\n";
  os << "    largest G_QK cosine between heads "
     << llvm::format("%.6f", r.maxCosQK) << "; near-duplicate heads:";
  if (r.duplicates.empty())
    os << " none";
  for (const Duplicate &dup : r.duplicates)
    os << " (" << dup.a << ", " << dup.b << ": cos G_QK "
       << llvm::format("%.6f", dup.cosQK) << ", cos G_VO "
       << llvm::format("%.6f", dup.cosVO) << ")";
  os << "\n";
}

} // namespace

LogicalResult torsor::writeRedundancyReport(ModuleOp module,
                                            const RedundancyOptions &options,
                                            llvm::raw_ostream &os) {
  std::optional<WeightFile> weights;
  if (!options.weights.empty()) {
    auto file = readSafetensors(options.weights);
    if (!file)
      return emitError(module.getLoc()) << toString(file.takeError());
    weights = std::move(*file);
  }
  json::Array models;
  bool anyModel = false;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || func.getNumArguments() == 0 ||
        !func.getArgAttr(0, "torsor.name"))
      continue;
    anyModel = true;
    SmallVector<AttentionBlock> blocks = findAttentionBlocks(func);
    if (blocks.empty())
      return emitError(func.getLoc())
             << "model '" << func.getName()
             << "' has no attention block to report on; the report covers "
                "relational_attention and standard attention written as "
                "merge_heads(softmax(heads(x @ Wq, H) @ "
                "transpose(heads(x @ Wk, H)) * s) @ heads(x @ Wv, H)) @ Wo";
    std::vector<BlockReport> reports;
    int64_t stored = 0, dof = 0;
    std::set<int64_t> dims;
    for (const AttentionBlock &block : blocks) {
      reports.push_back(countBlock(block));
      if (weights && failed(addNumerics(reports.back(), block, *weights,
                                        options.weights, options)))
        return failure();
      stored += reports.back().stored;
      dof += reports.back().dof;
      dims.insert(block.d);
    }
    int64_t total = modelParams(func);
    if (options.json) {
      json::Array blockArray, invariances;
      for (size_t i = 0; i < reports.size(); ++i)
        blockArray.push_back(blockJson(reports[i], i + 1));
      for (int64_t d : dims)
        invariances.push_back(json::Object{
            {"symmetry", "O(d)"},
            {"d", d},
            {"formula", "d·(d − 1)/2"},
            {"dimension", d * (d - 1) / 2},
            {"removes", 0},
            {"why", "acts on the hidden states (inputs) as well as the "
                    "weights: a declared invariance, not a parameter gauge"}});
      models.push_back(json::Object{
          {"model", func.getName()},
          {"location", locationString(func.getLoc())},
          {"blocks", std::move(blockArray)},
          {"declared_invariances", std::move(invariances)},
          {"totals",
           json::Object{{"attention_stored", stored},
                        {"attention_dof", dof},
                        {"attention_redundant", stored - dof},
                        {"attention_redundant_fraction",
                         stored ? double(stored - dof) / stored : 0.0},
                        {"model_params", total},
                        {"model_redundant_fraction",
                         total ? double(stored - dof) / total : 0.0}}}});
      continue;
    }
    os << "redundancy report for model " << func.getName() << " ("
       << locationString(func.getLoc()) << "): " << blocks.size()
       << " attention block" << (blocks.size() == 1 ? "" : "s") << "\n";
    for (size_t i = 0; i < reports.size(); ++i)
      printBlock(reports[i], i + 1, os);
    for (int64_t d : dims)
      os << "declared invariance  O(d), d = " << d
         << ": dimension d·(d − 1)/2 = " << d * (d - 1) / 2
         << "; removes 0 parameters (it acts on the hidden states too)\n";
    os << "totals  attention: stored " << stored << ", degrees of freedom "
       << dof << ", redundant " << (stored - dof) << " ("
       << percent(stored - dof, stored) << " of attention, "
       << percent(stored - dof, total) << " of all " << total
       << " model parameters)\n";
  }
  if (!anyModel)
    return emitError(module.getLoc()) << "no model function to report on";
  if (options.json)
    os << llvm::formatv(
              "{0:2}", json::Value(json::Object{{"report", "redundancy"},
                                                {"models", std::move(models)}}))
       << "\n";
  return success();
}
