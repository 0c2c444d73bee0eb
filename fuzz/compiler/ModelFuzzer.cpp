//===- ModelFuzzer.cpp - torsor-fuzz-model: generated models, end to end --===//
//
// A grammar-aware target: the fuzz input is a stream of choices from which
// a well-formed `.tsr` model is generated (declared groups, dims, inputs,
// params, blocks, `repeat`, every built-in with its keyword arguments, and
// the boundary values: huge and zero dims, head counts, repeat counts,
// offsets, λ and τ). Byte mutations of a source file rarely get past the
// parser; these programs mostly reach Sema, and the ones Sema accepts go
// through the whole back end (manifest, optimization and CPU lowering
// pipelines, translation to LLVM IR), which must then succeed: a model the
// front end accepts but the compiler cannot build is a bug.
//
// TORSOR_FUZZ_PRINT=1 in the environment prints each generated model, which
// is how a crash input becomes a readable `.tsr` regression test.
//
//===----------------------------------------------------------------------===//

#include "fuzz/compiler/FuzzSupport.h"

#include "llvm/Support/raw_ostream.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// A named value of the model with the type the generator believes it has.
struct Value {
  std::string name;
  /// Group name for group-element sequences, empty for tensors.
  std::string group;
  /// Dims as written (`L`, `D`, `4`).
  std::vector<std::string> dims;
};

/// Built-in groups with their algebra dims and point dims (docs/language.md).
struct GroupFacts {
  const char *name;
  unsigned algebra, blocks, points;
};
constexpr GroupFacts kGroups[] = {{"SO2", 1, 1, 2},  {"SE2", 3, 2, 2},
                                  {"SO3", 3, 1, 3},  {"SE3", 6, 2, 3},
                                  {"Aff2", 6, 2, 2}, {"Sim3", 7, 3, 3}};

/// Emits a model from fuzz choices.
class Generator {
public:
  explicit Generator(FuzzedDataProvider &fdp) : fdp(fdp) {}

  std::string generate() {
    if (pick(4) == 0)
      declareGroup();
    os << "model M {\n  dim L;\n";
    fixedDims();
    inputs();
    unsigned lets = pick(7);
    for (unsigned i = 0; i < lets && fdp.remaining_bytes(); ++i)
      let();
    outputs();
    os << "}\n";
    return text;
  }

private:
  FuzzedDataProvider &fdp;
  std::string text;
  llvm::raw_string_ostream os{text};
  std::vector<Value> values;
  std::vector<std::string> fixed; // fixed dim names
  std::vector<int64_t> fixedValues;
  std::string declared; // declared group name, if any
  unsigned declaredDim = 0, declaredBlocks = 0, declaredPoints = 0;
  unsigned counter = 0;
  std::string params; // model-level params, written before use

  unsigned pick(unsigned n) {
    return n ? fdp.ConsumeIntegralInRange<unsigned>(0, n - 1) : 0;
  }
  bool coin() { return fdp.ConsumeBool(); }
  std::string fresh(const char *stem) {
    return std::string(stem) + std::to_string(counter++);
  }

  /// Mostly small integers, sometimes the boundaries the limits name.
  int64_t count(int64_t typical) {
    static const int64_t edges[] = {0,
                                    -1,
                                    1,
                                    2,
                                    7,
                                    8,
                                    9,
                                    64,
                                    1023,
                                    1024,
                                    1025,
                                    65536,
                                    int64_t(1) << 31,
                                    int64_t(1) << 32,
                                    (int64_t(1) << 32) + 1,
                                    INT64_MAX};
    if (pick(8) != 0)
      return typical;
    return edges[pick(sizeof(edges) / sizeof(edges[0]))];
  }

  std::string number() {
    static const char *nums[] = {"1",     "0.5",  "2",         "0",      "-1",
                                 "1e-30", "1e30", "1e300",     "1e-300", "3.5",
                                 "100",   "1e38", "4294967296"};
    return nums[pick(sizeof(nums) / sizeof(nums[0]))];
  }

  void declareGroup() {
    // A few closed algebras, sometimes damaged.
    declared = "G";
    os << "group G {\n";
    unsigned kind = pick(3);
    if (kind == 0) { // Heisenberg, nilpotent
      os << "  matrix 3;\n  generator X = [[0, 1, 0], [0, 0, 0], [0, 0, 0]];\n"
            "  generator Y = [[0, 0, 0], [0, 0, 1], [0, 0, 0]];\n"
            "  generator Z = [[0, 0, 1], [0, 0, 0], [0, 0, 0]];\n";
      declaredDim = 3;
      declaredPoints = 2;
      switch (pick(5)) {
      case 0:
        os << "  norm plane = X, Y;\n  norm center = Z;\n";
        declaredBlocks = 2;
        break;
      case 1:
        os << "  norm a = X, X;\n  norm b = Y, Z;\n";
        declaredBlocks = 2;
        break;
      case 2:
        os << "  norm a = X;\n  norm a = Y, Z;\n";
        declaredBlocks = 2;
        break;
      default:
        declaredBlocks = 1;
      }
    } else if (kind == 1) { // rotations of the plane, affine points
      os << "  matrix 3;\n  generator R = [[0, -1, 0], [1, 0, 0], [0, 0, 0]];\n"
            "  generator T = [[0, 0, 1], [0, 0, 0], [0, 0, 0]];\n"
            "  generator U = [[0, 0, 0], [0, 0, 1], [0, 0, 0]];\n";
      declaredDim = 3;
      declaredPoints = 2;
      declaredBlocks = 1;
      if (coin()) {
        os << "  norm rot = R;\n  norm trans = T, U;\n";
        declaredBlocks = 2;
      }
    } else { // diagonal scalings of size n
      int64_t n = pick(4) == 0 ? count(9) : 2 + pick(3);
      os << "  matrix " << n << ";\n";
      int64_t k = n < 1 || n > 8 ? 1 : n;
      for (int64_t g = 0; g < k; ++g) {
        os << "  generator S" << g << " = [";
        for (int64_t r = 0; r < k; ++r) {
          os << (r ? ", [" : "[");
          for (int64_t c = 0; c < k; ++c)
            os << (c ? ", " : "") << (r == c && r == g ? number() : "0");
          os << "]";
        }
        os << "];\n";
      }
      declaredDim = k;
      declaredPoints = k;
      declaredBlocks = 1;
    }
    os << "}\n";
  }

  void fixedDims() {
    unsigned n = 1 + pick(3);
    for (unsigned i = 0; i < n; ++i) {
      std::string name = "D" + std::to_string(i);
      int64_t typical[] = {4, 8, 6, 2, 16, 1, 12};
      int64_t v = count(typical[pick(7)]);
      os << "  dim " << name << " = " << v << ";\n";
      fixed.push_back(name);
      fixedValues.push_back(v);
    }
  }

  std::string groupName() {
    if (!declared.empty() && coin())
      return declared;
    return kGroups[pick(6)].name;
  }

  std::string dtypeSuffix() {
    switch (pick(6)) {
    case 0:
      return "f64";
    case 1:
      return "f16";
    default:
      return "f32";
    }
  }

  std::vector<std::string> randomDims(bool leadL) {
    std::vector<std::string> dims;
    if (leadL)
      dims.push_back("L");
    unsigned rank = pick(6) == 0 ? pick(10) : 1 + pick(2);
    for (unsigned i = 0; i < rank; ++i) {
      switch (pick(4)) {
      case 0:
        dims.push_back(std::to_string(count(1 + pick(4))));
        break;
      case 1:
        dims.push_back("L");
        break;
      default:
        dims.push_back(fixed[pick(fixed.size())]);
      }
    }
    return dims;
  }

  static std::string typeText(const std::string &elt,
                              const std::vector<std::string> &dims) {
    std::string s = elt;
    if (dims.empty() && elt.size() > 3)
      return s;
    s += "[";
    for (size_t i = 0; i < dims.size(); ++i)
      s += (i ? ", " : "") + dims[i];
    return s + "]";
  }

  void inputs() {
    unsigned n = 1 + pick(4);
    for (unsigned i = 0; i < n; ++i) {
      Value v;
      v.name = fresh("in");
      if (coin()) {
        v.group = groupName();
        v.dims = {"L"};
        if (pick(6) == 0)
          v.dims.push_back(coin() ? "L" : fixed[0]);
        std::string elt = v.group + (pick(4) == 0 ? "<f64>" : "");
        os << "  input " << v.name << ": " << typeText(elt, v.dims) << ";\n";
      } else {
        v.dims = randomDims(true);
        os << "  input " << v.name << ": " << typeText(dtypeSuffix(), v.dims)
           << ";\n";
      }
      values.push_back(v);
    }
  }

  /// A new param with the given dims, declared before the statement that
  /// uses it.
  std::string param(const std::vector<std::string> &dims) {
    std::string name = fresh("p");
    os << "  param " << name << ": " << typeText("f32", dims) << ";\n";
    return name;
  }

  const Value *anyOf(bool group) {
    std::vector<const Value *> c;
    for (const Value &v : values)
      if (v.group.empty() != group)
        c.push_back(&v);
    if (c.empty())
      return nullptr;
    return c[pick(c.size())];
  }

  std::string lastDim(const Value &v) {
    return v.dims.empty() ? "1" : v.dims.back();
  }

  std::string listOf(unsigned n) {
    std::string s = "[";
    for (unsigned i = 0; i < n; ++i)
      s += (i ? ", " : "") + number();
    return s + "]";
  }

  unsigned algebraOf(const std::string &g, unsigned *blocks, unsigned *points) {
    for (const GroupFacts &f : kGroups)
      if (g == f.name) {
        *blocks = f.blocks;
        *points = f.points;
        return f.algebra;
      }
    *blocks = declaredBlocks;
    *points = declaredPoints;
    return declaredDim;
  }

  /// Appends one `let` and records its value.
  void let() {
    const Value *t = anyOf(false);
    const Value *g = anyOf(true);
    Value out;
    out.name = fresh("v");
    std::string expr;
    unsigned op = pick(20);
    if (!t && op < 12)
      op = 12;
    if (!g && op >= 12 && op < 17)
      op = 0;
    if (!t && !g)
      return;
    if (!t && op >= 17)
      op = 12;
    static const char *unary[] = {"relu", "gelu", "sigmoid",
                                  "tanh", "exp",  "relational_norm"};
    switch (op) {
    case 0:
    case 1:
      expr = std::string(unary[pick(6)]) + "(" + t->name + ")";
      out.dims = t->dims;
      break;
    case 2: {
      static const char *ops[] = {" + ", " - ", " * ", " / "};
      const Value *u = anyOf(false);
      std::string rhs = coin() ? u->name : number();
      expr = t->name + ops[pick(4)] + rhs;
      out.dims = t->dims;
      if (u && rhs == u->name && u->dims.size() > t->dims.size())
        out.dims = u->dims;
      if (coin())
        expr = "-" + expr;
      break;
    }
    case 3: {
      std::string e = fixed[pick(fixed.size())];
      std::string w = param({lastDim(*t), e});
      expr = t->name + " @ " + w;
      out.dims = t->dims;
      if (!out.dims.empty())
        out.dims.back() = e;
      break;
    }
    case 4:
      expr = "softmax(" + t->name +
             (coin() ? ", axis = " + std::to_string(int64_t(pick(5)) - 3)
                     : std::string()) +
             ")";
      out.dims = t->dims;
      break;
    case 5: {
      std::string gm = param({lastDim(*t)});
      if (coin()) {
        std::string bt = param({lastDim(*t)});
        expr = "layer_norm(" + t->name + ", " + gm + ", " + bt +
               (coin() ? ", eps = " + number() : std::string()) + ")";
      } else {
        expr = "rms_norm(" + t->name + ", " + gm + ")";
      }
      out.dims = t->dims;
      break;
    }
    case 6: {
      const Value *u = anyOf(false);
      expr = "concat(" + t->name + ", " + u->name +
             (coin() ? ", axis = " + std::to_string(int64_t(pick(4)) - 2)
                     : std::string()) +
             ")";
      out.dims = t->dims; // approximate
      break;
    }
    case 7: {
      int64_t h = count(1 + pick(4));
      expr = "heads(" + t->name + ", " + std::to_string(h) + ")";
      if (coin()) {
        expr = "merge_heads(" + expr + ")";
        out.dims = t->dims;
      } else {
        out.dims = {std::to_string(h), "L", "1"};
      }
      break;
    }
    case 8:
      expr = "transpose(" + t->name + ")";
      out.dims = t->dims;
      if (out.dims.size() >= 2)
        std::swap(out.dims[out.dims.size() - 1], out.dims[out.dims.size() - 2]);
      break;
    case 9:
    case 10: { // grassmann_mix on [L, d]
      std::string d = lastDim(*t);
      int64_t r = count(2 + pick(3));
      std::string rs = std::to_string(r);
      // Unsigned: r may be a boundary value whose C(r, 2) wraps, which
      // is fine for a generator (Sema must reject the result).
      std::string pc = std::to_string(uint64_t(r) * (uint64_t(r) - 1) / 2);
      std::string wr = param({rs, d}), br = param({rs});
      std::string wp = param({d, pc}), bp = param({d});
      // [d, 2d] needs a numeric 2d; use a fixed dim when d is one.
      std::string twoD = d;
      for (size_t i = 0; i < fixed.size(); ++i)
        if (fixed[i] == d)
          twoD = std::to_string(2 * uint64_t(fixedValues[i]));
      std::string wg = param({d, twoD}), bg = param({d});
      unsigned noffs = pick(4) == 0 ? pick(120) : 1 + pick(4);
      std::string offs = "[";
      for (unsigned i = 0; i < noffs; ++i)
        offs += (i ? ", " : "") +
                std::to_string(pick(8) == 0 ? count(i + 1) : int64_t(i + 1));
      offs += "]";
      expr = "grassmann_mix(" + t->name + ", w_red = " + wr +
             ", b_red = " + br + ", w_plucker = " + wp + ", b_plucker = " + bp +
             ", w_gate = " + wg + ", b_gate = " + bg + ", offsets = " + offs +
             (coin() ? ", causal = true" : "") +
             (pick(4) == 0 ? ", eps = " + number() : std::string()) + ")";
      out.dims = t->dims;
      break;
    }
    case 11: {
      std::string d = lastDim(*t);
      int64_t h = count(1 + pick(2));
      std::string hs = std::to_string(h);
      std::string qk = param({hs, d, d}), vo = param({hs, d, d});
      expr = "relational_attention(" + t->name + ", g_qk = " + qk +
             ", g_vo = " + vo +
             (coin() ? ", heads = " + std::to_string(count(h)) : "") +
             (coin() ? ", scale = " + number() : "") +
             (coin() ? ", causal = true" : "") + ")";
      out.dims = t->dims;
      break;
    }
    case 12: {
      const Value *g2 = anyOf(true);
      expr = "compose(" + g->name + ", " +
             (coin() ? "inverse(" + g2->name + ")" : g2->name) + ")";
      out.group = g->group;
      out.dims = g->dims;
      break;
    }
    case 13: {
      unsigned blocks, points;
      unsigned k = algebraOf(g->group, &blocks, &points);
      if (coin()) {
        expr = "log(" + g->name + ")";
        out.dims = g->dims;
        out.dims.push_back(std::to_string(k));
      } else {
        std::vector<std::string> dims = g->dims;
        dims.push_back(std::to_string(k));
        Value p;
        p.name = fresh("in");
        p.dims = dims;
        // Inputs may appear after lets; Sema declares in order.
        os << "  input " << p.name << ": " << typeText("f32", dims) << ";\n";
        expr = "exp(" + p.name + ", group = " + g->group + ")";
        out.group = g->group;
        out.dims = g->dims;
      }
      break;
    }
    case 14: {
      unsigned blocks, points;
      algebraOf(g->group, &blocks, &points);
      std::vector<std::string> dims = g->dims;
      dims.push_back(std::to_string(points));
      Value p;
      p.name = fresh("in");
      os << "  input " << p.name << ": " << typeText("f32", dims) << ";\n";
      expr = "act(" + g->name + ", " + p.name + ")";
      out.dims = dims;
      break;
    }
    case 15: {
      unsigned blocks, points;
      algebraOf(g->group, &blocks, &points);
      const Value *g2 = anyOf(true);
      bool pairwise = coin();
      expr = "dist2(" + g->name + ", " + g2->name +
             (pairwise ? ", pairwise = true" : "") +
             (coin() ? ", lambda = " + listOf(pick(3) == 0 ? pick(8) : blocks)
                     : std::string()) +
             ")";
      out.dims = pairwise ? std::vector<std::string>{"L", "L"} : g->dims;
      if (pick(4) == 0) {
        expr = "membership_residual(" + g->name + ")";
        out.dims = g->dims;
      }
      break;
    }
    case 16:
    case 17:
    case 18: {
      if (!g || !t)
        return;
      unsigned blocks, points;
      algebraOf(g->group, &blocks, &points);
      int64_t h = count(1 + pick(4));
      std::string args = "lie_attention(" + g->name + ", " + t->name;
      if (coin())
        args += ", heads = " + std::to_string(h);
      if (coin())
        args += ", tau = " + (coin() ? number() : listOf(pick(5)));
      if (coin())
        args += ", lambda = " +
                (coin() ? number() : listOf(blocks * (1 + pick(2))));
      if (coin())
        args += ", causal = true";
      expr = args + ")";
      out.dims = t->dims;
      break;
    }
    default: { // a block, called once or repeated
      std::string b = fresh("B");
      std::string ty = typeText("f32", t->dims);
      os << "  block " << b << "(h: " << ty << ") -> " << ty << " {\n";
      if (coin()) {
        std::string d = lastDim(*t);
        os << "    param W: f32[" << d << ", " << d << "];\n";
        os << "    return h + relu(h @ W);\n  }\n";
      } else {
        os << "    return " << (coin() ? "gelu(h)" : "h") << ";\n  }\n";
      }
      if (coin())
        expr = b + "(" + t->name + ")";
      else
        expr = "repeat " + std::to_string(count(1 + pick(3))) + " " + b + "(" +
               t->name + ")" + (coin() ? " as layers" + b : "");
      out.dims = t->dims;
    }
    }
    os << "  let " << out.name << " = " << expr << ";\n";
    values.push_back(out);
  }

  void outputs() {
    unsigned n = 1 + pick(3);
    for (unsigned i = 0; i < n; ++i) {
      std::string rhs;
      switch (pick(8)) {
      case 0:
        rhs = number(); // a constant output
        break;
      case 1:
        rhs = fixed[pick(fixed.size())] + " * 2";
        break;
      default:
        rhs = values[pick(values.size())].name;
      }
      os << "  output out" << i << " = " << rhs << ";\n";
    }
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  unsigned dtype = fdp.ConsumeIntegralInRange<unsigned>(0, 2);
  unsigned optLevel = fdp.ConsumeBool() ? 2 : 0;
  std::string source = Generator(fdp).generate();
  static bool print = std::getenv("TORSOR_FUZZ_PRINT") != nullptr;
  if (print)
    llvm::errs() << "// dtype " << dtype << ", -O" << optLevel << "\n"
                 << source;
  torsor::fuzz::FrontendResult result =
      torsor::fuzz::runFrontend(source, dtype);
  if (result.verifierRejected)
    torsor::fuzz::reportBug("Sema accepted a program the IR verifier rejects",
                            source, result.errors);
  if (!result.module) {
    if (!result.anyError || result.anyUnlocatedError)
      torsor::fuzz::reportBug("rejected without a located error", source,
                              result.errors);
    return 0;
  }
  std::string failure = torsor::fuzz::runBackend(*result.module, optLevel);
  if (!failure.empty())
    torsor::fuzz::reportBug("a model the front end accepts does not compile",
                            source, failure);
  return 0;
}
